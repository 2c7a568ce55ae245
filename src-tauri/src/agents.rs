//! Settings → Agents: every coding agent zblade knows and its connection to the open project's
//! memory (the rows of `zblade doctor`), with one click to add zblade's MCP server or hooks to
//! the agent's own files. The writers are zblade-mcp's, the same as `zblade mcp install` and
//! `zblade hooks install`; what they run is the `zblade` CLI installed beside the app.

use std::path::{Path, PathBuf};

use zblade_engine::Project;
use zblade_mcp::doctor::agent_health;
use zblade_mcp::install::{self, Client, Launch, Places};

use crate::error::{AppError, AppResult, ErrorCode};
use crate::views::McpClientView;

/// One row per agent zblade knows, for the open project (the rows of `zblade doctor`).
pub fn views(project: &Project) -> Vec<McpClientView> {
    let places = Places::from_env();
    let root = project.layout().root();
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let sources = project.sources();
    let detected = install::detect(&root, &places);
    agent_health(&root, &sources, &places)
        .into_iter()
        .map(|health| {
            let client = Client::parse(&health.agent);
            let mcp_installed = detected.iter().any(|d| d.client == health.agent && d.installed);
            let has_hooks = install::hook_agent(&health.agent).is_some();
            // What can be connected and is not (the row's buttons); not what zblade cannot do.
            let why_not = [(client.is_some(), &health.mcp), (has_hooks, &health.hooks)]
                .into_iter()
                .filter(|(possible, w)| *possible && !w.wired)
                .filter_map(|(_, w)| w.why_not.clone())
                .collect();
            McpClientView {
                installed: mcp_installed || health.sessions_all > 0,
                sessions: health.sessions as u32,
                imported: health.imported as u32,
                has_mcp: client.is_some(),
                configured: health.mcp.wired,
                config_file: client
                    .map(|c| c.config_file(c.default_scope(), &root, &places).display().to_string())
                    .unwrap_or_default(),
                has_hooks,
                hooks_wired: health.hooks.wired,
                why_not,
                client: health.agent,
                label: health.label,
            }
        })
        .collect()
}

/// Adds zblade's hooks for the project at `root` to `agent`'s settings (its default scope),
/// exactly as `zblade hooks install AGENT` does.
pub fn install_hooks(root: &Path, agent: &str) -> AppResult<()> {
    install::install_hooks(agent, None, root, &Places::from_env(), &zblade_cli()?, false)
        .map_err(|e| AppError::new(ErrorCode::InvalidInput, e))?;
    Ok(())
}

/// Adds zblade's server for the project at `root` to `client`'s configuration.
pub fn install(root: &Path, client: &str) -> AppResult<()> {
    let client = Client::parse(client)
        .ok_or_else(|| AppError::new(ErrorCode::InvalidInput, format!("unknown client {client:?}")))?;
    let launch = Launch::for_project(&zblade_cli()?, root);
    install::install(
        client,
        client.default_scope(),
        root,
        &Places::from_env(),
        &launch,
        false,
    )
    .map_err(|e| AppError::new(ErrorCode::InvalidInput, e))?;
    Ok(())
}

/// The `zblade` CLI: beside the app's executable (installed together, and in a build folder),
/// else on `PATH`.
fn zblade_cli() -> AppResult<PathBuf> {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("zblade")))
        .filter(|path| path.is_file());
    let on_path = || {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join("zblade"))
                .find(|path| path.is_file())
        })
    };
    beside.or_else(on_path).ok_or_else(|| {
        AppError::new(
            ErrorCode::NotFound,
            "the zblade command-line tool was not found beside the app or on PATH; agents start it to reach the memory",
        )
    })
}

//! Settings → Agents: the coding agents that reach tools over MCP, and one click to point each
//! at the open project's memory. The config writers are zblade-mcp's, the same as
//! `zblade mcp install`; the server they start is the `zblade` CLI installed beside the app.

use std::path::{Path, PathBuf};

use zblade_mcp::install::{self, Client, Launch, Places, Scope};

use crate::error::{AppError, AppResult, ErrorCode};
use crate::views::McpClientView;

/// One row per client, for the project at `root`.
pub fn views(root: &Path) -> Vec<McpClientView> {
    let places = Places::from_env();
    install::detect(root, &places)
        .into_iter()
        .zip(Client::all())
        .map(|(detected, client)| McpClientView {
            client: detected.client,
            label: client.label().into(),
            installed: detected.installed,
            configured: if client.default_scope() == Scope::User {
                detected.in_user
            } else {
                detected.in_project
            },
            config_file: client
                .config_file(client.default_scope(), root, &places)
                .display()
                .to_string(),
        })
        .collect()
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

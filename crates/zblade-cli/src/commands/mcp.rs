//! `zblade mcp` (serve over stdio or HTTP), `zblade mcp install CLIENT`, `zblade mcp clients`
//! and `zblade hooks install AGENT`. The server and the config writers are in zblade-mcp;
//! this file reads arguments and prints.

use std::path::Path;

use zblade_engine::{Error, Project};
use zblade_mcp::install::{self, Client, Launch, Places, Scope};

use super::Ctx;
use crate::cli::{HooksCommand, McpArgs, McpCommand};
use crate::render::{Clients, ConfigWritten};

/// Serves MCP until the client disconnects (stdio) or Ctrl-C (HTTP). Writes only protocol
/// messages to stdout; everything for people goes to stderr.
pub(crate) fn serve(root: &Path, args: &McpArgs) -> Result<(), Error> {
    let project = Project::open(root)?;
    let settings_token = project.settings().mcp.token.clone();
    let memory = zblade_mcp::Memory::new(project);
    // The project owns LanceDB's own runtime, which may not be dropped inside tokio's (that
    // panics: "Cannot drop a runtime in a context where blocking is not allowed", exit 2 when
    // an agent closed the session). This handle keeps the project alive until tokio is shut
    // down; it is then released here, on the main thread, outside any runtime.
    let kept = memory.clone();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::io("<tokio runtime>", e))?;
    let served = serve_on(&runtime, root, args, settings_token, memory);
    // Tasks still running (a call that was answering when stdin closed) get a moment to end;
    // a blocking call left after that ends on its own thread.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    drop(kept);
    served
}

/// Serves on `runtime` until the client disconnects (stdio) or Ctrl-C (HTTP).
fn serve_on(
    runtime: &tokio::runtime::Runtime,
    root: &Path,
    args: &McpArgs,
    settings_token: String,
    memory: zblade_mcp::Memory,
) -> Result<(), Error> {
    let failed = |e: String| Error::Usage(e);
    match args.http {
        None => runtime.block_on(zblade_mcp::serve_stdio(memory)).map_err(failed),
        Some(addr) => runtime.block_on(async {
            let token = args
                .token
                .clone()
                .or((!settings_token.is_empty()).then_some(settings_token));
            let has_token = token.is_some();
            let listening = zblade_mcp::http::serve(memory, zblade_mcp::http::HttpOptions { addr, token })
                .await
                .map_err(failed)?;
            eprintln!(
                "zblade: MCP for {} on http://{}/mcp{} (Ctrl-C stops)",
                root.display(),
                listening.addr,
                if has_token { ", bearer token required" } else { "" }
            );
            let stop = listening.stop.clone();
            tokio::spawn(async move {
                let _ = tokio::signal::ctrl_c().await;
                stop.cancel();
            });
            listening.wait().await.map_err(failed)
        }),
    }
}

pub(crate) fn run(cx: &mut Ctx, args: McpArgs) -> Result<(), Error> {
    match args.command {
        None => {
            // --list-tools (serving never gets here).
            let tools = zblade_mcp::tool_definitions();
            let text = serde_json::to_string_pretty(&tools).expect("JSON serialises");
            println!("{text}");
            Ok(())
        }
        Some(McpCommand::Clients) => cx.out.print(&Clients(install::detect(&cx.root, &Places::from_env()))),
        Some(McpCommand::Install { client, scope, dry_run }) => {
            let client = Client::parse(&client).ok_or_else(|| {
                let names: Vec<&str> = Client::all().map(Client::as_str).collect();
                Error::Usage(format!("unknown client {client:?}; choose {}", names.join(", ")))
            })?;
            let scope = scope.map_or_else(|| client.default_scope(), Scope::from);
            let root = project_root(cx)?;
            let launch = Launch::for_scope(scope, &zblade_executable()?, &root);
            let written =
                install::install(client, scope, &root, &Places::from_env(), &launch, dry_run).map_err(Error::Usage)?;
            cx.out.print(&ConfigWritten(written))
        }
    }
}

pub(crate) fn hooks(cx: &mut Ctx, command: HooksCommand) -> Result<(), Error> {
    let root = project_root(cx)?;
    let places = Places::from_env();
    let written = match command {
        HooksCommand::Install { agent, scope, dry_run } => {
            install::install_hooks(&agent, scope, &root, &places, &zblade_executable()?, dry_run)
        }
        HooksCommand::Uninstall { agent, scope, dry_run } => {
            install::uninstall_hooks(&agent, scope, &root, &places, dry_run)
        }
    }
    .map_err(Error::Usage)?;
    cx.out.print(&ConfigWritten(written))
}

/// The project's root, which must hold `.zblade/` (a config pointing at no memory helps nobody).
fn project_root(cx: &Ctx) -> Result<std::path::PathBuf, Error> {
    let project = cx.open()?;
    let root = project.layout().root();
    Ok(root.canonicalize().unwrap_or_else(|_| root.to_path_buf()))
}

/// The `zblade` executable's absolute path: what a client's config runs. That is the front
/// door (src/front.rs), which says where it is in `ZBLADE_EXE` when it hands a command to this
/// program, not this program itself (`/usr/lib/zblade/zblade-cli` is no command to type).
fn zblade_executable() -> Result<std::path::PathBuf, Error> {
    if let Some(front) = std::env::var_os("ZBLADE_EXE")
        .map(std::path::PathBuf::from)
        .filter(|p| p.is_absolute() && p.is_file())
    {
        return Ok(front);
    }
    std::env::current_exe().map_err(|e| Error::io("<current executable>", e))
}

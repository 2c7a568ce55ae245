//! The `zblade` command-line interface: a thin face over `zblade-engine`.

mod cli;
mod commands;
#[cfg(test)]
mod doc_commands;
mod progress;
mod render;

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use zblade_engine::Error;

use crate::cli::{Cli, Command};
use crate::commands::Ctx;
use crate::render::Out;
// The Debian package links the engine from one shared library (crates/zblade-shared).
#[cfg(feature = "shared-engine")]
use zblade_shared as _;

fn main() -> ExitCode {
    // Before any thread starts (docs/PRIVACY.md).
    zblade_engine::disable_onnx_telemetry();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let user_asked = matches!(
                err.kind(),
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
            );
            let _ = err.print();
            return if user_asked {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            };
        }
    };
    let json = cli.json;
    // A panic is a bug in zblade, never the user's fault: report it in one line, exit 2.
    std::panic::set_hook(Box::new(|info| {
        eprintln!("zblade: internal error: {info}");
    }));
    match std::panic::catch_unwind(|| run(cli)) {
        Ok(Ok(code)) => code,
        Ok(Err(err)) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Ok(Err(err)) => {
            report(&err, json);
            ExitCode::from(if err.is_user_error() { 1 } else { 2 })
        }
        Err(_) => ExitCode::from(2),
    }
}

fn is_broken_pipe(err: &Error) -> bool {
    matches!(err, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::BrokenPipe)
}

fn report(err: &Error, json: bool) {
    if json {
        let value = serde_json::json!({"error": {"code": err.code(), "message": err.to_string()}});
        eprintln!("{value}");
    } else {
        eprintln!("zblade: error: {err}");
    }
}

/// Runs one command: a dispatch to its module in `commands/`.
fn run(cli: Cli) -> Result<ExitCode, Error> {
    // The MCP server over stdio owns standard output: nothing else may hold or write to it.
    if let Command::Mcp(args) = &cli.command
        && args.command.is_none()
        && !args.list_tools
    {
        commands::mcp::serve(&project_root(cli.project.as_deref())?, args)?;
        return Ok(ExitCode::SUCCESS);
    }
    let stdout = std::io::stdout();
    let mut cx = Ctx {
        root: project_root(cli.project.as_deref())?,
        json: cli.json,
        out: Out::new(stdout.lock(), cli.json, std::io::stdout().is_terminal()),
    };
    let cx = &mut cx;
    match cli.command {
        Command::Init => commands::init::run(cx)?,
        Command::Add(add) => commands::add::run(cx, add)?,
        Command::List(list) => commands::list::run(cx, list)?,
        Command::Show { id } => commands::show::run(cx, &id)?,
        Command::Why { target } => commands::why::run(cx, &target)?,
        Command::Conv(command) => commands::conv::run(cx, command)?,
        Command::History {
            search,
            limit,
            all_projects,
        } => commands::conv::history(cx, search.as_deref(), limit, all_projects)?,
        Command::Stats => commands::conv::stats(cx)?,
        Command::Search(args) => commands::search::run(cx, args)?,
        Command::Context(args) => commands::context::run(cx, args)?,
        Command::Moments(command) => commands::moments::run(cx, command)?,
        Command::Team(command) => commands::team::run(cx, command)?,
        Command::SyncMetadata { token } => commands::sync_metadata::run(cx, token)?,
        Command::Migrate(command) => commands::migrate::run(cx, command)?,
        Command::Archive(command) => return commands::archive::run(cx, command),
        Command::Models(command) => commands::models::run(cx, command)?,
        Command::Summarize { conversation, force } => commands::summarize::run(cx, conversation.as_deref(), force)?,
        Command::Compressor(command) => commands::compressor::run(cx, command)?,
        Command::Gc => commands::gc::run(cx)?,
        Command::Index => commands::index::run(cx)?,
        Command::Reindex => commands::reindex::run(cx)?,
        Command::Fsck { repair } => {
            let code = commands::fsck::run(cx, repair)?;
            cx.out.flush()?;
            return Ok(code);
        }
        Command::Status => commands::status::run(cx)?,
        Command::Doctor => commands::doctor::run(cx)?,
        Command::Refs(command) => commands::refs::run(cx, command)?,
        Command::Import(args) => commands::import::run(cx, args)?,
        Command::Watch { debounce_ms } => commands::watch::run(cx, debounce_ms)?,
        Command::Mcp(args) => commands::mcp::run(cx, args)?,
        Command::Proxy(args) => commands::proxy::run(cx, args)?,
        Command::Chat(args) => commands::chat::run(cx, args)?,
        Command::Serve { idle_exit } => commands::serve::run(cx, idle_exit)?,
        Command::Hooks(command) => commands::mcp::hooks(cx, command)?,
        Command::Hook { event, agent } => commands::hook::run(cx, event, &agent)?,
    }
    cx.out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `--project DIR`, else the nearest ancestor holding `.zblade/`, else the current directory.
fn project_root(explicit: Option<&Path>) -> Result<PathBuf, Error> {
    if let Some(dir) = explicit {
        if !dir.is_dir() {
            return Err(Error::Usage(format!("--project {}: no such directory", dir.display())));
        }
        return Ok(dir.to_path_buf());
    }
    let cwd = std::env::current_dir().map_err(|e| Error::io(".", e))?;
    Ok(zblade_engine::find_project_root(&cwd).unwrap_or(cwd))
}

impl<W: Write> Out<W> {
    fn flush(&mut self) -> Result<(), Error> {
        self.writer().flush().map_err(|e| Error::io("<stdout>", e))
    }
}

//! The `zblade` command-line interface: a thin face over `zblade-engine`.

mod cli;
mod progress;
mod render;

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use zblade_engine::{
    ContextFormat, ContextRequest, ContextTier, Error, IndexStage, MigrationDirection, MigrationPhase, Project,
    SearchFilter, SearchKind, SearchMode, SearchQuery, WatchOptions, parse_conversation, parse_moment,
};

use crate::cli::{
    AddCommand, Cli, Command, CompressorCommand, FormatArg, KindArg, ListCommand, MigrateArgs, MigrateCommand, ModeArg,
    ModelsCommand, MomentsCommand, RefsCommand, TierArg,
};
use crate::render::Out;

fn main() -> ExitCode {
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

fn run(cli: Cli) -> Result<ExitCode, Error> {
    let stdout = std::io::stdout();
    let mut out = Out::new(stdout.lock(), cli.json, std::io::stdout().is_terminal());
    let root = project_root(cli.project.as_deref())?;
    let json = cli.json;
    match cli.command {
        Command::Init => {
            let (_, report) = Project::init(&root)?;
            out.init(&report)?;
        }
        Command::Add(add) => {
            let mut project = Project::open(&root)?;
            let (files, is_moment) = match add {
                AddCommand::Conversation { files } => (files, false),
                AddCommand::Moment { files } => (files, true),
            };
            // Read and parse every file first: one bad file means nothing is added.
            let mut inputs = Vec::with_capacity(files.len());
            for file in &files {
                inputs.push(read_input(file)?);
            }
            let outcomes = if is_moment {
                let parsed = inputs
                    .iter()
                    .map(|(bytes, name)| Ok((parse_moment(bytes, name)?, name.clone())));
                project.add_moments(parsed.collect::<Result<_, Error>>()?)?
            } else {
                let parsed = inputs
                    .iter()
                    .map(|(bytes, name)| Ok((parse_conversation(bytes, name)?, name.clone())));
                project.add_conversations(parsed.collect::<Result<_, Error>>()?)?
            };
            out.added(&outcomes, is_moment)?;
        }
        Command::List(ListCommand::Conversations { limit, offset }) => {
            let project = Project::open(&root)?;
            out.conversations(&project.list_conversations(limit, offset)?)?;
        }
        Command::List(ListCommand::Moments { kind, limit, offset }) => {
            let project = Project::open(&root)?;
            out.moments(&project.list_moments(limit, offset, kind.map(|k| k.as_str()))?)?;
        }
        Command::Show { id } => {
            let project = Project::open(&root)?;
            out.shown(&project.show(&id)?)?;
        }
        Command::Search {
            query,
            limit,
            kind,
            mode,
            conversation,
            path,
            since,
            until,
        } => {
            let mut project = Project::open(&root)?;
            let kind = match kind {
                KindArg::All => SearchKind::All,
                KindArg::Messages => SearchKind::Messages,
                KindArg::Moments => SearchKind::Moments,
                KindArg::Conversations => SearchKind::Conversations,
                KindArg::Code => SearchKind::Code,
            };
            let filter = SearchFilter {
                conversation,
                path_prefix: path,
                since: since.map(|t| parse_time(&t, "--since")).transpose()?,
                until: until.map(|t| parse_time(&t, "--until")).transpose()?,
            };
            let mode = mode.map(|m| match m {
                ModeArg::Keyword => SearchMode::Keyword,
                ModeArg::Semantic => SearchMode::Semantic,
                ModeArg::Hybrid => SearchMode::Hybrid,
            });
            let text = query.join(" ");
            let query = SearchQuery::new(text.clone(), limit, kind).with_filter(filter);
            let results = project.search_fresh(&query, mode)?;
            if let Some(notice) = &results.notice
                && !json
            {
                eprintln!("zblade: note: {notice}");
            }
            out.results(&text, &results)?;
        }
        Command::Context {
            query,
            budget,
            conversation,
            format,
            tier,
            mode,
            receipt,
        } => {
            let project = Project::open(&root)?;
            let request = ContextRequest {
                query: query.join(" "),
                budget: budget.unwrap_or(project.settings().context.max_tokens as usize),
                conversation,
                format: match format {
                    FormatArg::Xml => ContextFormat::Xml,
                    FormatArg::Markdown => ContextFormat::Markdown,
                    FormatArg::Json => ContextFormat::Json,
                },
                tier: match tier {
                    TierArg::Smart => ContextTier::Smart,
                    TierArg::Balanced => ContextTier::Balanced,
                    TierArg::Fast => ContextTier::Fast,
                },
                mode: mode.map(|m| match m {
                    ModeArg::Keyword => SearchMode::Keyword,
                    ModeArg::Semantic => SearchMode::Semantic,
                    ModeArg::Hybrid => SearchMode::Hybrid,
                }),
            };
            let result = project.context(&request)?;
            if !json {
                for notice in &result.notices {
                    eprintln!("zblade: note: {notice}");
                }
            }
            out.context(&result, receipt)?;
        }
        Command::Moments(MomentsCommand::Extract { conversation }) => {
            let mut project = Project::open(&root)?;
            let report = project.extract_moments(conversation.as_deref())?;
            out.extracted(&report)?;
        }
        Command::SyncMetadata { token } => {
            let project = Project::open(&root)?;
            if let Some(token) = token {
                let url = project.settings().storage.server_url.clone();
                if url.is_empty() {
                    return Err(Error::Usage(
                        "set storage.server_url in .zblade/config/settings.json first".into(),
                    ));
                }
                zblade_sync::credentials::save(&url, &token)?;
            }
            let sent = project.sync_metadata()?;
            if json {
                out.value(&serde_json::json!({"sent": sent}))?;
            } else {
                out.note(&format!(
                    "sent titles and tags of {sent} record(s); no content left this machine"
                ))?;
            }
        }
        Command::Migrate(MigrateCommand::Status) => {
            let project = Project::open(&root)?;
            match project.pending_migration()? {
                Some((plan, phase)) if json => out.value(&serde_json::json!({"pending": plan, "phase": phase}))?,
                Some((plan, phase)) => out.note(&format!(
                    "unfinished migration {} to {} ({} items), stopped in phase {phase:?}; run `zblade migrate {}` again to finish it",
                    plan.direction,
                    plan.server,
                    plan.items.len(),
                    plan.direction
                ))?,
                None if json => out.value(&serde_json::json!({"pending": null}))?,
                None => out.note("no migration in progress")?,
            }
        }
        Command::Migrate(MigrateCommand::ToServer(args)) => {
            migrate(&root, MigrationDirection::ToServer, args, json, &mut out)?;
        }
        Command::Migrate(MigrateCommand::ToLocal(args)) => {
            migrate(&root, MigrationDirection::ToLocal, args, json, &mut out)?;
        }
        Command::Models(ModelsCommand::List) => {
            let project = Project::open(&root)?;
            out.models(&project.list_models())?;
        }
        Command::Models(ModelsCommand::Download {
            name,
            allow_network,
            hub,
            force,
            activate,
        }) => {
            let mut project = Project::open(&root)?;
            let mut bar = progress::Bar::new(std::io::stderr().is_terminal() && !json);
            let report =
                project.download_model(&name, &hub, allow_network, force, activate, &mut |file, done, total| {
                    // Bytes shown in KiB so the bar's numbers stay readable.
                    bar.update(file, (done / 1024) as usize, total.map_or(0, |t| (t / 1024) as usize));
                })?;
            bar.finish();
            out.downloaded(&report)?;
        }
        Command::Models(ModelsCommand::Import {
            dir,
            name,
            force,
            activate,
        }) => {
            let mut project = Project::open(&root)?;
            out.imported(&project.import_model(&dir, name.as_deref(), force, activate)?)?;
        }
        Command::Summarize { conversation, force } => {
            let mut project = Project::open(&root)?;
            out.summarized(&project.summarize(conversation.as_deref(), force)?)?;
        }
        Command::Compressor(CompressorCommand::Status) => {
            let project = Project::open(&root)?;
            out.compressor_status(&project.compressor_status())?;
        }
        Command::Compressor(CompressorCommand::List) => {
            let project = Project::open(&root)?;
            out.compressor_models(&project.compressor_models())?;
        }
        Command::Compressor(CompressorCommand::Import {
            file,
            name,
            force,
            activate,
        }) => {
            let mut project = Project::open(&root)?;
            out.compressor_installed(&project.import_compressor_model(&file, name.as_deref(), force, activate)?)?;
        }
        Command::Compressor(CompressorCommand::Download {
            url,
            sha256,
            name,
            allow_network,
            force,
            activate,
        }) => {
            let mut project = Project::open(&root)?;
            let mut bar = progress::Bar::new(std::io::stderr().is_terminal() && !json);
            let label = url.rsplit('/').next().unwrap_or(&url).to_string();
            let report = project.download_compressor_model(
                &url,
                sha256.as_deref(),
                name.as_deref(),
                allow_network,
                force,
                activate,
                &mut |done, total| {
                    // KiB, so the bar's numbers stay readable.
                    bar.update(&label, (done / 1024) as usize, total.map_or(0, |t| (t / 1024) as usize));
                },
            )?;
            bar.finish();
            out.compressor_installed(&report)?;
        }
        Command::Compressor(CompressorCommand::Use { name }) => {
            let mut project = Project::open(&root)?;
            project.use_compressor_model(&name)?;
            if json {
                out.value(&serde_json::json!({"local_model": if name == "none" { "" } else { name.as_str() }}))?;
            } else if name == "none" {
                out.note("The compressor uses no model now: the extractive compressor does every job.")?;
            } else {
                out.note(&format!("The compressor uses {name} now."))?;
            }
        }
        Command::Gc => {
            let mut project = Project::open(&root)?;
            let (dropped, removed) = project.gc()?;
            if json {
                out.value(&serde_json::json!({"dropped_tables": dropped, "removed_vectors": removed}))?;
            } else {
                out.note(&format!(
                    "Removed {removed} unused vector(s) and {} old model table(s){}.",
                    dropped.len(),
                    if dropped.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", dropped.join(", "))
                    }
                ))?;
            }
        }
        Command::Index => {
            let mut project = Project::open(&root)?;
            let mut bar = progress::Bar::new(std::io::stderr().is_terminal() && !json);
            let report = project.update_search_index(&mut |stage, done, total| {
                let what = match stage {
                    IndexStage::Files => "files",
                    IndexStage::Embedding => "embedding",
                    IndexStage::Summaries => "summaries",
                };
                bar.update(what, done, total);
            })?;
            bar.finish();
            if let Some(notice) = &report.notice
                && !json
            {
                eprintln!("zblade: note: {notice}");
            }
            out.indexed(&report)?;
        }
        Command::Reindex => {
            let mut project = Project::open(&root)?;
            let report = project.reindex()?;
            out.reindexed(&report)?;
        }
        Command::Fsck { repair } => {
            let mut project = Project::open(&root)?;
            let report = project.fsck(repair)?;
            out.fsck(&report, repair)?;
            if !report.is_clean() {
                return Ok(ExitCode::from(1));
            }
        }
        Command::Status => {
            let project = Project::open(&root)?;
            // A damaged index shows in the status itself; reference counts are then unknown.
            out.status(&project.status()?, &project.reference_health().unwrap_or_default())?;
        }
        Command::Refs(RefsCommand::Check { problems }) => {
            let mut project = Project::open(&root)?;
            let mut reports = project.check_references()?;
            let total = reports.len();
            if problems {
                reports.retain(|r| r.status != zblade_engine::ReferenceStatus::Ok || r.drift.is_some());
            }
            out.references(&reports, total)?;
        }
        Command::Refs(RefsCommand::Show { key }) => {
            let project = Project::open(&root)?;
            out.reference(&project.reference(&key)?)?;
        }
        Command::Watch { debounce_ms } => {
            let mut project = Project::open(&root)?;
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let flag = stop.clone();
            ctrlc::set_handler(move || flag.store(true, std::sync::atomic::Ordering::Relaxed))
                .map_err(|e| Error::Usage(format!("cannot install the Ctrl-C handler: {e}")))?;
            let options = WatchOptions {
                debounce: std::time::Duration::from_millis(debounce_ms),
                ..Default::default()
            };
            let mut result = Ok(());
            project.watch(options, &stop, |event| {
                if result.is_ok() {
                    result = out.watch_event(&event);
                }
            })?;
            result?;
            if !json {
                eprintln!("zblade: stopped watching");
            }
        }
    }
    out.flush()?;
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

/// Reads a file, or standard input for `-`; returns the bytes and the name for error messages.
fn read_input(file: &str) -> Result<(Vec<u8>, String), Error> {
    if file == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io("<stdin>", e))?;
        return Ok((bytes, "<stdin>".to_string()));
    }
    let path = Path::new(file);
    if path.is_dir() {
        return Err(Error::Usage(format!("{file}: is a directory; give a JSON file")));
    }
    let bytes = std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::NotFound(format!("{file}: no such file")),
        _ => Error::io(path, e),
    })?;
    Ok((bytes, file.to_string()))
}

impl<W: Write> Out<W> {
    fn flush(&mut self) -> Result<(), Error> {
        self.writer().flush().map_err(|e| Error::io("<stdout>", e))
    }
}

/// A `--since`/`--until` value as an index timestamp.
fn parse_time(text: &str, what: &str) -> Result<String, Error> {
    zblade_engine::parse_time_bound(text, what, std::time::SystemTime::now().into())
}

/// Asks a yes/no question on the terminal; anything but y/yes is no.
fn ask(question: &str) -> Result<bool, Error> {
    eprint!("{question} [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin()
        .read_line(&mut answer)
        .map_err(|e| Error::Usage(format!("cannot read the answer: {e}")))?;
    Ok(matches!(answer.trim().to_lowercase().as_str(), "y" | "yes"))
}

/// Says what a cleanup removed and which changed items it kept.
fn note_cleanup(out: &mut Out<std::io::StdoutLock<'_>>, cleanup: &zblade_engine::CleanupReport) -> Result<(), Error> {
    out.note(&format!("cleanup: removed {} copy(ies) at the source", cleanup.removed))?;
    if !cleanup.kept_changed.is_empty() {
        out.note(&format!(
            "cleanup: kept {} item(s) that changed after they were verified (a newer version, not at the destination): {}",
            cleanup.kept_changed.len(),
            cleanup.kept_changed.join(", ")
        ))?;
    }
    Ok(())
}

/// `zblade migrate to-server|to-local`: plan, ask, copy, verify, flip, and cleanup if asked.
fn migrate(
    root: &Path,
    direction: MigrationDirection,
    args: MigrateArgs,
    json: bool,
    out: &mut Out<std::io::StdoutLock<'_>>,
) -> Result<(), Error> {
    let mut project = Project::open(root)?;
    let pending = project.pending_migration()?;
    let server = match (&args.server, &pending) {
        (Some(url), _) => url.trim_end_matches('/').to_string(),
        (None, Some((plan, _))) => plan.server.clone(),
        (None, None) if !project.settings().storage.server_url.is_empty() => {
            project.settings().storage.server_url.clone()
        }
        (None, None) => return Err(Error::Usage("name the server with --server http://HOST:PORT".into())),
    };
    let token = match args.token.clone() {
        Some(token) => token,
        None => zblade_sync::credentials::token(&server)?.ok_or_else(|| {
            Error::Usage(format!(
                "no token for {server}: pass --token (from `zblade-server user add`) or set ZBLADE_TOKEN"
            ))
        })?,
    };
    // The flag, else the choice saved with this very server.
    let transport = if server == project.settings().storage.server_url && !args.allow_insecure_http {
        project.transport()
    } else {
        zblade_sync::Transport::allowing_plain_http(args.allow_insecure_http)
    };
    let client = zblade_sync::Client::with_transport(&server, &token, transport)?;
    if client.is_plain_http_to_another_machine() {
        eprintln!(
            "warning: {server} is plain http to another machine; anyone on the network path can read and change what crosses it, the token included. Use https where you can (docs/SERVER.md)."
        );
    }
    let interactive = std::io::stdin().is_terminal() && !json;
    let target = match direction {
        MigrationDirection::ToServer => zblade_engine::StorageMode::Server,
        MigrationDirection::ToLocal => zblade_engine::StorageMode::Local,
    };
    if pending.is_none() && args.cleanup && project.settings().storage.mode == target {
        // The migration finished earlier; only the cleanup is left.
        let cleanup = project.cleanup_migration_source(&client)?;
        if json {
            return out
                .value(&serde_json::json!({"cleaned_up": cleanup.removed, "kept_changed": cleanup.kept_changed}));
        }
        return note_cleanup(out, &cleanup);
    }
    if pending.is_none() {
        let plan = project.plan_migration(direction, &client)?;
        let (conversations, moments) = plan.counts();
        if args.dry_run {
            if json {
                return out.value(&serde_json::json!({"plan": plan, "bytes": plan.bytes()}));
            }
            out.note(&format!(
                "plan {direction} ({server}, project {}): {conversations} conversation(s), {moments} moment(s), {} bytes; {} file(s) skipped",
                plan.project,
                plan.bytes(),
                plan.skipped.len()
            ))?;
            for (path, why) in &plan.skipped {
                out.note(&format!("  skipped {path}: {why}"))?;
            }
            return Ok(());
        }
        if !args.yes {
            if !interactive {
                return Err(Error::Usage(
                    "a migration asks before it starts; pass --yes to run it without asking (or --dry-run to see the plan)".into(),
                ));
            }
            let question = format!(
                "Copy {conversations} conversation(s) and {moments} moment(s) ({} bytes) {} {server}, verify, then switch storage.mode?",
                plan.bytes(),
                if direction == MigrationDirection::ToServer {
                    "to"
                } else {
                    "from"
                }
            );
            if !ask(&question)? {
                return out.note("nothing was changed");
            }
        }
    } else if args.dry_run {
        return out.note("a migration is in progress; run it without --dry-run to finish it");
    }
    let mut bar = progress::Bar::new(std::io::stderr().is_terminal() && !json);
    let report = project.migrate(direction, &client, &mut |phase, done, total| {
        let stage = match phase {
            MigrationPhase::Copy => "copy",
            MigrationPhase::Verify => "verify",
            _ => "switch",
        };
        bar.update(stage, done, total);
    })?;
    bar.finish();
    if direction == MigrationDirection::ToServer {
        // Server mode reads and writes with this token from now on.
        zblade_sync::credentials::save(&server, &token)?;
    }
    let cleanup = args.cleanup && (args.yes || !interactive || ask("Remove the copies left at the source?")?);
    let removed = if cleanup {
        Some(project.cleanup_migration_source(&client)?)
    } else {
        None
    };
    if json {
        return out.value(&serde_json::json!({
            "migration": report,
            "cleaned_up": removed.as_ref().map(|c| c.removed),
            "kept_changed": removed.as_ref().map(|c| c.kept_changed.clone()),
        }));
    }
    out.note(&format!(
        "{}: {} item(s) verified at the destination ({} copied by this run{}); storage.mode is now {}",
        if report.resumed {
            "resumed and finished"
        } else {
            "finished"
        },
        report.verified,
        report.copied,
        if report.code_blocks_to_references > 0 {
            format!(
                ", {} code block(s) turned into references",
                report.code_blocks_to_references
            )
        } else {
            String::new()
        },
        report.mode
    ))?;
    match removed {
        Some(cleanup) => note_cleanup(out, &cleanup),
        None => out.note(
            "the source still holds its copies; `zblade migrate ... --cleanup` removes them after a finished migration",
        ),
    }
}

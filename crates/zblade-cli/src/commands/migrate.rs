//! `zblade migrate status|to-server|to-local`: move a project's memory between this machine
//! and a sync server — plan, ask, copy, verify, switch, and clean up when asked.

use std::io::{IsTerminal, Write};

use zblade_engine::{Error, MigrationDirection, MigrationPhase, PendingMigration, Project};

use super::Ctx;
use crate::cli::{MigrateArgs, MigrateCommand};
use crate::render::Out;

pub(crate) fn run(cx: &mut Ctx, command: MigrateCommand) -> Result<(), Error> {
    match command {
        MigrateCommand::Status => status(cx),
        MigrateCommand::ToServer(args) => migrate(cx, MigrationDirection::ToServer, args),
        MigrateCommand::ToLocal(args) => migrate(cx, MigrationDirection::ToLocal, args),
    }
}

/// The migration an earlier run left unfinished, if any.
fn status(cx: &mut Ctx) -> Result<(), Error> {
    let project = cx.open()?;
    match project.pending_migration()? {
        Some(PendingMigration { plan, phase, .. }) if cx.json => {
            cx.out.value(&serde_json::json!({"pending": plan, "phase": phase}))
        }
        Some(PendingMigration { plan, phase, .. }) => cx.out.note(&format!(
            "unfinished migration {} to {} ({} items), stopped in phase {phase:?}; run `zblade migrate {}` again to finish it",
            plan.direction,
            plan.server,
            plan.items.len(),
            plan.direction
        )),
        None if cx.json => cx.out.value(&serde_json::json!({"pending": null})),
        None => cx.out.note("no migration in progress"),
    }
}

/// Asks a yes/no question on the terminal; anything but y/yes is no.
fn ask(question: &str) -> Result<bool, Error> {
    eprint!("{question} [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin()
        .read_line(&mut answer)
        .map_err(|e| Error::Environment(format!("cannot read the answer: {e}")))?;
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
fn migrate(cx: &mut Ctx, direction: MigrationDirection, args: MigrateArgs) -> Result<(), Error> {
    let (json, out) = (cx.json, &mut cx.out);
    let mut project = Project::open(&cx.root)?;
    let pending = project.pending_migration()?;
    let server = match (&args.server, &pending) {
        (Some(url), _) => url.trim_end_matches('/').to_string(),
        (None, Some(pending)) => pending.plan.server.clone(),
        (None, None) if !project.settings().storage.server_url.is_empty() => {
            project.settings().storage.server_url.clone()
        }
        (None, None) => return Err(Error::Usage("name the server with --server http://HOST:PORT".into())),
    };
    // The flag, else the choice saved with this very server.
    let transport = project.transport_for(&server, args.allow_insecure_http);
    let (client, _token) = zblade_engine::connect(&server, args.token.as_deref(), transport)?;
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
    let mut bar = crate::progress::Bar::new(std::io::stderr().is_terminal() && !json);
    let report = project.migrate(direction, &client, &mut |phase, done, total| {
        let stage = match phase {
            MigrationPhase::Copy => "copy",
            MigrationPhase::Verify => "verify",
            _ => "switch",
        };
        bar.update(stage, done, total);
    })?;
    bar.finish();
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

//! `zblade archive …`: the permanent archive (docs/ARCHIVE.md). Each subcommand opens the
//! archive (zblade-archive) and, where conversations are concerned, the project (the engine);
//! what is printed is a summary, or with `--json` the report itself.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use zblade_archiving::{Archive, PushOptions, Reindex, RestoreOptions, Retry, ShareSource, Target, Unlock};
use zblade_engine::{Error, Project};

use super::Ctx;
use crate::cli::{ArchiveCommand, PassphraseArgs};

pub(crate) fn run(cx: &mut Ctx, command: ArchiveCommand) -> Result<ExitCode, Error> {
    let code = match command {
        ArchiveCommand::Setup {
            dir,
            arweave,
            wallet,
            vault,
            keyring,
            passphrase,
        } => setup(cx, dir, arweave, wallet, vault, keyring, &passphrase)?,
        ArchiveCommand::Remember {
            background,
            off,
            passphrase,
        } => remember(cx, background, off, &passphrase)?,
        ArchiveCommand::Status { offline, allow_network } => status(cx, offline, allow_network)?,
        ArchiveCommand::Push { snapshot, passphrase } => push(cx, snapshot, &passphrase)?,
        ArchiveCommand::Restore {
            into,
            vault,
            from,
            gateway,
            wallet,
            snapshot,
            no_index,
            passphrase,
        } => restore(cx, into, vault, from, gateway, wallet, snapshot, no_index, &passphrase)?,
        ArchiveCommand::Forget { ids, yes, passphrase } => forget(cx, &ids, yes, &passphrase)?,
        ArchiveCommand::Share { ids, to, passphrase } => share(cx, &ids, &to, &passphrase)?,
        ArchiveCommand::Accept {
            from,
            gateway,
            passphrase,
        } => accept(cx, from, gateway, &passphrase)?,
    };
    cx.out.writer().flush().map_err(|e| Error::io("<stdout>", e))?;
    Ok(code)
}

/// The passphrase: ZBLADE_ARCHIVE_PASSPHRASE, the first line of standard input, or typed at
/// the terminal without echo (twice when `confirm`).
fn passphrase(args: &PassphraseArgs, confirm: bool) -> Result<String, Error> {
    if let Ok(value) = std::env::var("ZBLADE_ARCHIVE_PASSPHRASE")
        && !value.is_empty()
    {
        return Ok(value);
    }
    if args.passphrase_stdin || !std::io::stdin().is_terminal() {
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .map_err(|e| Error::Environment(format!("reading the passphrase from standard input: {e}")))?;
        let line = line.trim_end_matches(['\n', '\r']).to_string();
        if line.is_empty() {
            return Err(Error::Usage(
                "no passphrase: set ZBLADE_ARCHIVE_PASSPHRASE, pass it on standard input, or run in a terminal".into(),
            ));
        }
        return Ok(line);
    }
    let first = read_hidden("Archive passphrase: ")?;
    if confirm && read_hidden("Again: ")? != first {
        return Err(Error::Usage("the two passphrases differ; nothing was set up".into()));
    }
    Ok(first)
}

/// Reads a line from the terminal with echo off (`stty -echo`), restoring it afterwards.
fn read_hidden(prompt: &str) -> Result<String, Error> {
    eprint!("{prompt}");
    let _ = std::io::stderr().flush();
    let stty = |arg: &str| {
        std::process::Command::new("stty")
            .arg(arg)
            .stdin(std::process::Stdio::inherit())
            .status()
    };
    let hidden = stty("-echo").is_ok_and(|s| s.success());
    let mut line = String::new();
    let read = std::io::stdin().lock().read_line(&mut line);
    if hidden {
        let _ = stty("echo");
        eprintln!();
    }
    read.map_err(|e| Error::Environment(format!("reading the passphrase: {e}")))?;
    Ok(line.trim_end_matches(['\n', '\r']).to_string())
}

/// Whether the archive's backend may use the network: the flag, or the project's setting.
fn network_allowed(cx: &Ctx, allow_flag: bool) -> bool {
    allow_flag || Project::open(&cx.root).is_ok_and(|p| p.settings().privacy.allow_network)
}

/// Opens the archive: with the passphrase when one is given (the environment, --passphrase-
/// stdin), else with the key this machine remembers, else with the passphrase typed or read.
fn open(cx: &Ctx, args: &PassphraseArgs) -> Result<Archive, Error> {
    let allowed = network_allowed(cx, args.allow_network);
    let given = args.passphrase_stdin || std::env::var("ZBLADE_ARCHIVE_PASSPHRASE").is_ok_and(|v| !v.is_empty());
    let unlock = if given {
        Unlock::Passphrase(passphrase(args, false)?)
    } else {
        Unlock::RememberedElse {
            ask: &mut || passphrase(args, false),
            said: &mut |why| eprintln!("zblade: {why}"),
        }
    };
    zblade_archiving::open(&cx.root, unlock, allowed)
}

fn remember(cx: &mut Ctx, background: bool, off: bool, args: &PassphraseArgs) -> Result<ExitCode, Error> {
    let dir = zblade_archiving::zblade_dir(&cx.root)?;
    if off {
        zblade_archiving::unremember(&cx.root)?;
    } else {
        // The passphrase proves the key right before it is kept.
        let allowed = network_allowed(cx, args.allow_network);
        zblade_archiving::remember(&cx.root, passphrase(args, false)?, background, allowed)?;
    }
    let status = Archive::status(&dir, false, Retry::default())?;
    if cx.json {
        cx.out.value(&serde_json::to_value(&status).expect("json"))?;
    } else if off {
        cx.out
            .note("The master key is gone from the keyring: archive commands ask for the passphrase again.")?;
    } else {
        cx.out.note(&format!(
            "The master key of archive {} is in the system keyring: push, forget and share need no passphrase on this machine{}.",
            status.archive,
            if background { "; the desktop app pushes in the background while the project is open" } else { "" }
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn bar_progress(cx: &Ctx) -> impl FnMut(&str, usize, usize) + use<> {
    let mut bar = cx.bar();
    move |stage, done, total| bar.update(stage, done, total)
}

fn setup(
    cx: &mut Ctx,
    dir: Option<PathBuf>,
    arweave: Option<String>,
    wallet: Option<PathBuf>,
    vault: Option<PathBuf>,
    keyring: bool,
    args: &PassphraseArgs,
) -> Result<ExitCode, Error> {
    let zdir = zblade_archiving::zblade_dir(&cx.root)?;
    let target = Target::from_choice(dir, arweave.map(|gateway| (gateway, wallet)))?;
    let allowed = network_allowed(cx, args.allow_network);
    let mut archive = zblade_archiving::setup(&cx.root, target, vault, &passphrase(args, true)?, allowed)?;
    // Set up already: a keyring that cannot be reached is said, and the archive stays.
    let kept = keyring
        && archive
            .remember(false)
            .map_err(|e| eprintln!("zblade: the archive is set up, but its key was not kept: {e}"))
            .is_ok();
    let status = Archive::status(&zdir, false, Retry::default())?;
    if cx.json {
        cx.out.value(&serde_json::to_value(&status).expect("json"))?;
    } else {
        cx.out
            .note(&format!("Archive {} set up: {}.", archive.id(), status.backend))?;
        cx.out.note(&format!(
            "Vault (the keys; keep a copy with your passphrase, restores need it): {}",
            status.vault.display()
        ))?;
        cx.out
            .note(&format!("Share key (others share to it): {}", status.share_key))?;
        if kept {
            cx.out.note(
                "The master key is in the system keyring: push, forget and share need no passphrase on this machine.",
            )?;
        }
        cx.out.note("Next: `zblade archive push`.")?;
    }
    Ok(ExitCode::SUCCESS)
}

fn status(cx: &mut Ctx, offline: bool, allow_network: bool) -> Result<ExitCode, Error> {
    let allowed = network_allowed(cx, allow_network);
    let status = zblade_archiving::status(&cx.root, !offline, allowed)?.ok_or_else(zblade_archiving::no_archive)?;
    if cx.json {
        cx.out.value(&serde_json::to_value(&status).expect("json"))?;
        return Ok(ExitCode::SUCCESS);
    }
    let s = &status;
    cx.out.note(&format!("archive    {} on {}", s.archive, s.backend))?;
    cx.out.note(&format!("vault      {}", s.vault.display()))?;
    cx.out.note(&format!("share key  {}", s.share_key))?;
    cx.out.note(&format!(
        "pending    {} file(s), {} byte(s){}",
        s.pending_files,
        s.pending_bytes,
        s.pending_cost
            .as_ref()
            .map(|c| format!(", about {c} to store"))
            .unwrap_or_default()
    ))?;
    cx.out.note(&format!(
        "objects    {} unsent, {} submitted, {} confirmed; {} byte(s) stored{}",
        s.unsent,
        s.submitted,
        s.confirmed,
        s.stored_bytes,
        s.stored_cost
            .as_ref()
            .map(|c| format!(" ({c} at today's price)"))
            .unwrap_or_default()
    ))?;
    cx.out.note(&format!(
        "keyring    {}",
        match (s.remembered, s.auto_push) {
            (false, _) => "not used: commands ask for the passphrase (`zblade archive remember` keeps the key)",
            (true, false) => "the master key is remembered on this machine",
            (true, true) => "the master key is remembered; the desktop app pushes in the background",
        }
    ))?;
    if s.unfinished_forgets > 0 {
        cx.out.note(&format!(
            "{} forget(s) were interrupted; the next `zblade archive push` finishes them",
            s.unfinished_forgets
        ))?;
    }
    if let Some(offline) = &s.offline {
        cx.out.note(&format!("offline    {offline}"))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn push(cx: &mut Ctx, snapshot: bool, args: &PassphraseArgs) -> Result<ExitCode, Error> {
    let mut archive = open(cx, args)?;
    let mut progress = bar_progress(cx);
    let (finished, report) = zblade_archiving::push(&cx.root, &mut archive, &PushOptions { snapshot }, &mut progress)?;
    if finished.destroyed_batches > 0 && !cx.json {
        cx.out.note(&format!(
            "Finished an interrupted forget: {} batch(es) had their keys destroyed.",
            finished.destroyed_batches
        ))?;
    }
    if cx.json {
        cx.out.value(&serde_json::to_value(&report).expect("json"))?;
    } else {
        cx.out.note(&format!(
            "Pushed {} file(s) and {} deletion(s) in {} batch(es), {} object(s), {} byte(s){}{} in {:.1} s.",
            report.files,
            report.deleted,
            report.batches,
            report.objects,
            report.bytes,
            if report.resumed > 0 {
                format!("; resumed {} object(s) of an interrupted push", report.resumed)
            } else {
                String::new()
            },
            report.snapshot.map(|s| format!("; snapshot {s}")).unwrap_or_default(),
            report.elapsed_ms as f64 / 1000.0
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

#[allow(clippy::too_many_arguments)]
fn restore(
    cx: &mut Ctx,
    into: PathBuf,
    vault: Option<PathBuf>,
    from: Option<PathBuf>,
    gateway: Option<String>,
    wallet: Option<PathBuf>,
    snapshot: bool,
    no_index: bool,
    args: &PassphraseArgs,
) -> Result<ExitCode, Error> {
    let options = RestoreOptions {
        vault: zblade_archiving::find_vault(vault, from.as_deref())?,
        into: into.clone(),
        passphrase: passphrase(args, false)?,
        gateway,
        wallet,
        use_snapshot: snapshot,
        retry: Retry::default(),
    };
    let reindex = if no_index {
        Reindex::Nothing
    } else {
        Reindex::CatalogAndVectors
    };
    let mut progress = bar_progress(cx);
    let (report, reindexed) = zblade_archiving::restore(&options, reindex, args.allow_network, &mut progress)?;
    let index = match reindexed {
        None => serde_json::Value::Null,
        Some(r) => serde_json::json!({
            "conversations": r.conversations,
            "messages": r.messages,
            "catalog_ms": r.catalog_ms,
            "vectors": match r.vectors {
                Some(Ok(report)) => serde_json::json!({"chunks": report.chunks, "embedded": report.embedded}),
                Some(Err(error)) => serde_json::json!({"error": error}),
                None => serde_json::Value::Null,
            },
            "embedding_ms": r.embedding_ms,
        }),
    };
    if cx.json {
        let mut value = serde_json::to_value(&report).expect("json");
        value["index"] = index;
        cx.out.value(&value)?;
    } else {
        cx.out.note(&format!(
            "Restored {} file(s) from {} batch(es){} into {} in {:.1} s{}.",
            report.files,
            report.batches,
            report
                .snapshot
                .map(|s| format!(" after snapshot {s}"))
                .unwrap_or_default(),
            into.join(".zblade").display(),
            report.elapsed_ms as f64 / 1000.0,
            if report.forgotten > 0 {
                format!("; {} forgotten batch(es) skipped", report.forgotten)
            } else {
                String::new()
            }
        ))?;
        if !index.is_null() {
            let vectors = &index["vectors"];
            let vectors = match vectors["error"].as_str() {
                Some(error) => format!("not embedded ({error}; `zblade index` embeds later)"),
                None => format!("{} of {} chunk(s) embedded", vectors["embedded"], vectors["chunks"]),
            };
            cx.out.note(&format!(
                "Index rebuilt: {} conversation(s), {} message(s) ({} ms); {vectors} ({} ms).",
                index["conversations"], index["messages"], index["catalog_ms"], index["embedding_ms"]
            ))?;
        }
        for problem in &report.problems {
            cx.out.note(&format!(
                "problem: batch {} object {}: {}",
                problem.seq, problem.object, problem.message
            ))?;
        }
    }
    Ok(if report.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        eprintln!(
            "zblade: {} object(s) could not be restored (listed above); everything else was",
            report.problems.len()
        );
        ExitCode::from(1)
    })
}

fn forget(cx: &mut Ctx, ids: &[String], yes: bool, args: &PassphraseArgs) -> Result<ExitCode, Error> {
    let mut archive = open(cx, args)?;
    if !yes && std::io::stdin().is_terminal() {
        eprint!(
            "Forget {} item(s) for good (here and in every archived copy; this cannot be undone)? [y/N] ",
            ids.len()
        );
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        let _ = std::io::stdin().read_line(&mut answer);
        if !matches!(answer.trim().to_lowercase().as_str(), "y" | "yes") {
            cx.out.note("Nothing forgotten.")?;
            return Ok(ExitCode::SUCCESS);
        }
    }
    let mut project = Project::open(&cx.root)?;
    let mut progress = bar_progress(cx);
    let report = zblade_archiving::forget(&mut project, &mut archive, ids, &mut progress)?;
    if cx.json {
        cx.out.value(&serde_json::to_value(&report).expect("json"))?;
    } else {
        cx.out.note(&format!(
            "Forgot {} item(s): {} batch(es) had their keys destroyed after {} file(s) they held were archived again{}.",
            ids.len(),
            report.destroyed_batches,
            report.rearchived,
            report.tombstone.map(|t| format!("; tombstone {t}")).unwrap_or_default()
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn share(cx: &mut Ctx, ids: &[String], to: &str, args: &PassphraseArgs) -> Result<ExitCode, Error> {
    let project = Project::open(&cx.root)?;
    let mut archive = open(cx, args)?;
    let (grant, count) = zblade_archiving::share(&project, &mut archive, ids, to)?;
    if cx.json {
        cx.out.value(&serde_json::json!({"grant": grant, "items": count}))?;
    } else {
        cx.out.note(&format!(
            "Shared {count} conversation(s); grant {grant}. The recipient runs `zblade archive accept`."
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn accept(
    cx: &mut Ctx,
    from: Option<PathBuf>,
    gateway: Option<String>,
    args: &PassphraseArgs,
) -> Result<ExitCode, Error> {
    let mut archive = open(cx, args)?;
    let source = match (from, gateway) {
        (Some(dir), _) => ShareSource::Dir(dir),
        (None, Some(gateway)) => ShareSource::Arweave(gateway),
        (None, None) => ShareSource::Own,
    };
    let mut project = Project::open(&cx.root)?;
    let accepted = zblade_archiving::accept(&mut project, &mut archive, &source, args.allow_network)?;
    for (sender, name, why) in &accepted.refused {
        eprintln!("zblade: {name} from {sender}: {why}");
    }
    let received = accepted.grants;
    let failed = accepted.refused.len();
    let added: Vec<serde_json::Value> = accepted
        .added
        .iter()
        .map(|(from, id, name)| serde_json::json!({"from": from, "id": id, "name": name}))
        .collect();
    if cx.json {
        cx.out
            .value(&serde_json::json!({"grants": received, "added": added, "failed": failed}))?;
    } else {
        cx.out.note(&format!(
            "Accepted {} grant(s): {} conversation(s) added{}.",
            received,
            added.len(),
            if failed > 0 {
                format!(", {failed} refused")
            } else {
                String::new()
            }
        ))?;
    }
    Ok(if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

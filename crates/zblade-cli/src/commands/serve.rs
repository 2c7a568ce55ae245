//! `zblade serve`: keeps this project's engine warm for short-lived zblade processes (agent
//! hooks, `zblade context`), which ask it over a private local socket (see
//! `zblade_engine::warm`). The embedding model and tokenizer are loaded once, up front. An
//! agent's prompt hook starts one detached when none answers ([`start_detached`]); that one
//! exits after [`HOOK_IDLE_MINUTES`] without a request.

use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zblade_engine::Error;
use zblade_engine::warm;

use super::Ctx;

/// How long an engine a hook started waits for the next prompt before it exits.
pub(crate) const HOOK_IDLE_MINUTES: u64 = 30;

pub(crate) fn run(cx: &mut Ctx, idle_exit: Option<u64>) -> Result<(), Error> {
    // Claimed before the slow warm-up: a hook that finds the project's engine coming does not
    // start another.
    let lock = warm::claim(&cx.root).map_err(|e| Error::Usage(format!("cannot serve this project: {e}")))?;
    let project = cx.open()?;
    let started = Instant::now();
    // Load what a cold process would: the first context request loads the model and tokenizer.
    if let Err(e) = warm::run(&project, &warm::warm_up_request()) {
        cx.notice(&format!("warming up: {e}"));
    }
    if let Some(why) = project.semantic_unavailable() {
        cx.notice(&why);
    }
    let project = Arc::new(Mutex::new(project));
    // Seconds since `started` of the last request, for --idle-exit.
    let last_request = Arc::new(AtomicU64::new(0));
    let seen = Arc::clone(&last_request);
    let server = warm::serve_claimed(lock, move |request| {
        seen.store(started.elapsed().as_secs(), Ordering::Relaxed);
        let project = project.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        warm::handle(&project, &request)
    })
    .map_err(|e| Error::Environment(format!("cannot serve this project: {e}")))?;
    eprintln!(
        "zblade: engine warm for {} in {:.0} ms; serving on {} (Ctrl-C stops{})",
        cx.root.display(),
        started.elapsed().as_secs_f64() * 1000.0,
        server.socket().display(),
        idle_exit.map_or(String::new(), |m| format!("; exits after {m} idle minutes"))
    );
    let (tx, rx) = std::sync::mpsc::channel();
    ctrlc::set_handler(move || {
        let _ = tx.send(());
    })
    .map_err(|e| Error::Environment(format!("cannot handle Ctrl-C: {e}")))?;
    match idle_exit {
        None => {
            let _ = rx.recv();
        }
        Some(minutes) => {
            let idle_limit = minutes.saturating_mul(60);
            // Until Ctrl-C (or the handler is gone), checking every few seconds.
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(Duration::from_secs(5)) {
                let idle = started
                    .elapsed()
                    .as_secs()
                    .saturating_sub(last_request.load(Ordering::Relaxed));
                if idle >= idle_limit {
                    eprintln!("zblade: no request for {minutes} minutes; stopping");
                    break;
                }
            }
        }
    }
    drop(server);
    Ok(())
}

/// Starts `zblade serve --idle-exit 30` for the project at `root` in the background, detached
/// from the hook (its own process group, no terminal, output to `.zblade/cache/serve.log`), and
/// returns at once. Two hooks may both start one: `warm::serve` holds a per-project lock, so
/// the second exits at once and only one engine ever serves a project. `ZBLADE_NO_AUTO_SERVE`
/// set to anything turns this off.
pub(crate) fn start_detached(root: &Path) {
    if std::env::var_os("ZBLADE_NO_AUTO_SERVE").is_some() || warm::engine_starting_or_running(root) {
        return;
    }
    let Ok(exe) = std::env::current_exe() else { return };
    let log_dir = root.join(".zblade/cache");
    let log = std::fs::create_dir_all(&log_dir)
        .and_then(|()| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log_dir.join("serve.log"))
        })
        .map(Stdio::from)
        .unwrap_or_else(|_| Stdio::null());
    use std::os::unix::process::CommandExt;
    let _ = std::process::Command::new(exe)
        .arg("--project")
        .arg(root)
        .arg("serve")
        .arg("--idle-exit")
        .arg(HOOK_IDLE_MINUTES.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .process_group(0)
        .spawn();
}

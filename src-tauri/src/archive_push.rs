//! The background archive push: while a project is open (and indexing is not paused), a
//! thread next to the indexer pushes what changed to the permanent archive — seed 5.2's
//! batches flush at 50 items, after 60 s, or on demand; here every minute, and a minute's
//! changes are cut into batches of 50 by the push itself.
//!
//! It runs only where the user asked for it: the archive's config says `auto_push` (Settings →
//! Archive → "Push in the background", or `zblade archive remember --background`) and this
//! machine's keyring holds the master key, which is checked against the vault before use. A
//! gateway on another machine also needs the app's network consent, read at each push.
//!
//! Like the indexer it knows nothing of Tauri: it reports through the indexer's sink.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use zblade_archive::{Archive, Config, PushOptions, Retry, Vault};

use crate::updates::{ArchiveRound, IndexerUpdate, Sink};
use crate::worker::Worker;

/// How often it pushes: `ZBLADE_ARCHIVE_PUSH_SECONDS`, else every 60 s (seed 5.2).
pub fn interval() -> Duration {
    std::env::var("ZBLADE_ARCHIVE_PUSH_SECONDS")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .filter(|&s| s > 0)
        .map_or(Duration::from_secs(60), Duration::from_secs)
}

/// A running background push; stops (after the push in flight) when stopped or dropped.
pub struct BackgroundPush(Worker);

impl BackgroundPush {
    /// Starts pushing the project at `root` every `every`; the first round comes soon after
    /// the start (what piled up while the app was closed). `allow_network` is the app's
    /// consent, read at each round.
    pub fn start(root: PathBuf, every: Duration, allow_network: Arc<AtomicBool>, sink: Sink) -> BackgroundPush {
        BackgroundPush(Worker::spawn("zblade-archive-push", move |stop| {
            let mut wait = every.min(Duration::from_secs(5));
            loop {
                let until = Instant::now() + wait;
                while Instant::now() < until {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                let round = push_once(&root, allow_network.load(Ordering::Relaxed));
                if round != ArchiveRound::Off {
                    sink(IndexerUpdate::Archive(round));
                }
                wait = every;
            }
        }))
    }

    /// Stops it and waits for the push in flight to end.
    pub fn stop(self) {
        self.0.stop();
    }
}

/// One round: finish an interrupted forget, then push what changed.
pub fn push_once(root: &std::path::Path, allow_network: bool) -> ArchiveRound {
    let dir = root.join(".zblade");
    match Config::load(&dir) {
        Ok(Some(config)) if config.auto_push => match try_push(root, &config, allow_network) {
            Ok(round) => round,
            Err(e) => ArchiveRound::Failed(e.to_string()),
        },
        Ok(_) => ArchiveRound::Off,
        Err(e) => ArchiveRound::Failed(e.to_string()),
    }
}

fn try_push(root: &std::path::Path, config: &Config, allow_network: bool) -> zblade_engine::Result<ArchiveRound> {
    let dir = root.join(".zblade");
    zblade_archive::check_network(&Vault::load(&config.vault)?.backend, None, allow_network)?;
    let Some(mut archive) = Archive::open_remembered(&dir, Retry::default())? else {
        return Ok(ArchiveRound::Failed(
            "background push needs the master key in the system keyring: turn it on again in Settings → Archive".into(),
        ));
    };
    let mut quiet = |_: &str, _: usize, _: usize| {};
    let (_, report) = zblade_archiving::push(root, &mut archive, &PushOptions::default(), &mut quiet)?;
    Ok(ArchiveRound::Pushed {
        files: report.files,
        deleted: report.deleted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project_with_archive() -> (tempfile::TempDir, std::path::PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("p");
        zblade_engine::Project::init(&root).unwrap();
        let spec = zblade_archive::BackendSpec::Dir {
            path: tmp.path().join("backup"),
        };
        Archive::setup(
            &root.join(".zblade"),
            spec,
            None,
            None,
            "a long enough passphrase",
            Retry::default(),
        )
        .unwrap();
        (tmp, root)
    }

    #[test]
    fn nothing_is_tried_unless_the_archive_asks_for_it() {
        let tmp = tempfile::tempdir().unwrap();
        zblade_engine::Project::init(tmp.path()).unwrap();
        assert_eq!(push_once(tmp.path(), false), ArchiveRound::Off, "no archive");
        let (_tmp, root) = project_with_archive();
        assert_eq!(
            push_once(&root, false),
            ArchiveRound::Off,
            "background push not turned on"
        );
    }

    #[test]
    fn without_the_remembered_key_a_round_says_why() {
        let (_tmp, root) = project_with_archive();
        let dir = root.join(".zblade");
        // Turned on, but the key is not (or no longer) kept on this machine.
        let mut config = Config::load(&dir).unwrap().unwrap();
        config.auto_push = true;
        config.save(&dir).unwrap();
        match push_once(&root, false) {
            ArchiveRound::Failed(why) => assert!(why.contains("master key in the system keyring"), "{why}"),
            other => panic!("{other:?}"),
        }
    }
}

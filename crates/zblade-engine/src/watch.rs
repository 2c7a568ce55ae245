//! The engine's watch loop: keeps every reference's live location current while files change
//! and git moves HEAD. The CLI's `zblade watch` runs it in the foreground; the desktop app's
//! tray indexer runs the same loop in the background.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use zblade_core::{Error, Result};
use zblade_refs::GitRepo;
use zblade_refs::watcher::{self, Change, FileEvent, WatchOptions};

use crate::project::Project;
use crate::refs::ReferenceReport;

/// What the watch loop reports.
#[derive(Debug, Clone)]
pub enum WatchEvent {
    /// Watching started; every reference was checked once.
    Ready {
        /// References checked.
        references: usize,
        /// How many are not `ok`.
        not_ok: usize,
    },
    /// References were re-checked after a change.
    Updated {
        /// What caused it: the changed files, or "HEAD moved".
        trigger: String,
        /// References checked.
        checked: usize,
        /// Those whose status or location changed.
        changed: Vec<ReferenceReport>,
        /// Time from the change being delivered to the index being updated.
        elapsed: Duration,
    },
    /// Changed project files were indexed for search again (chunks, and embeddings when a
    /// model is available).
    Indexed {
        /// Files re-read or dropped.
        files: usize,
        /// New chunks embedded.
        embedded: usize,
        /// Time from the change being delivered to the search index being updated.
        elapsed: Duration,
    },
    /// New turns of a followed agent's sessions were imported.
    Imported {
        /// The agent (`claude-code`, ...).
        source: String,
        /// Messages imported.
        messages: usize,
        /// Conversations they went into.
        conversations: usize,
        /// Time from noticing the change to the turns being searchable.
        elapsed: Duration,
    },
    /// Something the user should know, said once (e.g. fallback to periodic rescans).
    Notice(String),
}

type Snapshot = HashMap<String, (zblade_core::ReferenceStatus, Option<crate::refs::Location>)>;

fn snapshot(reports: &[ReferenceReport]) -> Snapshot {
    reports
        .iter()
        .map(|r| (r.key.clone(), (r.status, r.live.clone())))
        .collect()
}

impl Project {
    /// Watches the project until `stop` is set, keeping live locations current and reporting
    /// each update through `on_event`. Returns when stopped; errors only if watching cannot start.
    pub fn watch(
        &mut self,
        options: WatchOptions,
        stop: &AtomicBool,
        mut on_event: impl FnMut(WatchEvent),
    ) -> Result<()> {
        let root = self.layout().root().to_path_buf();
        let git = GitRepo::discover(&root);
        let mut head = git.as_ref().map(GitRepo::head_state);
        let (sender, changes) = mpsc::channel::<Change>();
        let handler: Arc<dyn Fn(Change) + Send + Sync> = Arc::new(move |change| {
            let _ = sender.send(change);
        });
        // Watch first, check second: a change made during the initial check is queued, not lost.
        let _watcher =
            watcher::watch(&root, git.as_ref().map(GitRepo::git_dir), options, handler).map_err(Error::Usage)?;
        let initial = self.check_references()?;
        let mut known = snapshot(&initial);
        // Say what the watcher noticed while starting (e.g. no live events) before "ready";
        // keep any early file changes for the loop.
        let mut pending = std::collections::VecDeque::new();
        for change in changes.try_iter() {
            match change {
                Change::Degraded(message) => on_event(WatchEvent::Notice(message)),
                other => pending.push_back(other),
            }
        }
        on_event(WatchEvent::Ready {
            references: initial.len(),
            not_ok: initial
                .iter()
                .filter(|r| r.status != zblade_core::ReferenceStatus::Ok)
                .count(),
        });

        let mut follower = crate::import::Follower::new();
        while !stop.load(Ordering::Relaxed) {
            self.follow_once(&mut follower, &mut on_event);
            // A watch runs for hours; models it loaded to re-embed a changed file need not stay.
            self.release_idle_models();
            let next = match pending.pop_front() {
                Some(change) => Ok(change),
                None => changes.recv_timeout(Duration::from_millis(100)),
            };
            let change = match next {
                Ok(change) => change,
                Err(mpsc::RecvTimeoutError::Timeout) => continue,
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            };
            let started = Instant::now();
            let (trigger, reports) = match change {
                Change::Degraded(message) => {
                    on_event(WatchEvent::Notice(message));
                    continue;
                }
                Change::Rescan => ("periodic rescan".to_string(), self.check_references()?),
                Change::GitHead => {
                    let now = git.as_ref().map(GitRepo::head_state);
                    if now == head {
                        continue; // a ref other than HEAD's moved (fetch, tag): nothing to do
                    }
                    head = now;
                    // New commits are memory: read them (and attribute their lines) at once.
                    match self.index_history() {
                        Ok(report) if report.read > 0 => on_event(WatchEvent::Notice(format!(
                            "{} new commit(s) read into memory",
                            report.read
                        ))),
                        Ok(_) => {}
                        Err(e) => on_event(WatchEvent::Notice(format!("reading new commits: {e}"))),
                    }
                    ("HEAD moved".to_string(), self.check_references()?)
                }
                Change::Files(events) => {
                    if let Some(event) = self.index_after(&events)? {
                        on_event(event);
                    }
                    match self.check_after(&events)? {
                        Some(found) => found,
                        None => continue,
                    }
                }
            };
            let changed: Vec<ReferenceReport> = reports
                .iter()
                .filter(|r| known.get(&r.key) != Some(&(r.status, r.live.clone())))
                .cloned()
                .collect();
            known.extend(snapshot(&reports));
            on_event(WatchEvent::Updated {
                trigger,
                checked: reports.len(),
                changed,
                elapsed: started.elapsed(),
            });
        }
        Ok(())
    }

    /// Imports new turns of the followed agents, if any wrote since the last look.
    fn follow_once(&mut self, follower: &mut crate::import::Follower, on_event: &mut impl FnMut(WatchEvent)) {
        let started = Instant::now();
        for (source, result) in self.follow_sources(follower) {
            match result {
                Ok(report) if report.messages > 0 => on_event(WatchEvent::Imported {
                    source: source.as_str().to_string(),
                    messages: report.messages,
                    conversations: report.conversations.iter().filter(|c| c.new_messages > 0).count(),
                    elapsed: started.elapsed(),
                }),
                Ok(_) => {}
                Err(e) => on_event(WatchEvent::Notice(format!("importing {source}: {e}"))),
            }
        }
    }

    /// Keeps the search index incremental: re-indexes the files that changed (only when the
    /// project's files have been indexed at all, i.e. `zblade index` ran once).
    fn index_after(&mut self, events: &[FileEvent]) -> Result<Option<WatchEvent>> {
        let started = Instant::now();
        if self.index()?.code_counts()?.0 == 0 {
            return Ok(None);
        }
        let mut paths: Vec<String> = Vec::new();
        for event in events {
            match event {
                FileEvent::Changed(path) | FileEvent::Removed(path) => paths.push(path.clone()),
                FileEvent::Renamed { from, to } => paths.extend([from.clone(), to.clone()]),
            }
        }
        paths.retain(|p| zblade_search::code::is_candidate(std::path::Path::new(p)));
        paths.sort();
        paths.dedup();
        if paths.is_empty() {
            return Ok(None);
        }
        let report = self.index_code_paths(&paths, &mut |_, _| {})?;
        if report.indexed + report.removed == 0 {
            return Ok(None);
        }
        let embedded = self.embed_code_paths(&paths)?;
        Ok(Some(WatchEvent::Indexed {
            files: report.indexed + report.removed,
            embedded,
            elapsed: started.elapsed(),
        }))
    }

    /// Re-checks the references that file events may have affected; `None` when none are.
    fn check_after(&mut self, events: &[FileEvent]) -> Result<Option<(String, Vec<ReferenceReport>)>> {
        let mut files = Vec::new();
        let mut renames = Vec::new();
        let mut created = false;
        for event in events {
            match event {
                FileEvent::Changed(path) => {
                    files.push(path.clone());
                    created = true;
                }
                FileEvent::Removed(path) => files.push(path.clone()),
                FileEvent::Renamed { from, to } => {
                    files.push(from.clone());
                    files.push(to.clone());
                    renames.push((from.clone(), to.clone()));
                }
            }
        }
        let index = self.index()?;
        let mut stored = index.references_in_files(&files)?;
        if created {
            // A file that appeared may be where a "missing" reference went when the rename
            // pair was lost (a move by delete + create): look for those too.
            for reference in index.references_with_status(zblade_core::ReferenceStatus::Missing)? {
                if !stored.iter().any(|s| s.key == reference.key) {
                    stored.push(reference);
                }
            }
        }
        if stored.is_empty() {
            return Ok(None);
        }
        let reports = self.parts.check_and_store(&stored, &renames)?;
        Ok(Some((files.join(", "), reports)))
    }
}

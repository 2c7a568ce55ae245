//! Live import: notice that an enabled agent wrote to its session files and import the new
//! turns. The stores are polled (a folder listing and a `stat` per session file every
//! [`POLL`]) rather than watched: they live outside the project, in folders that may not
//! exist yet, on file systems where inotify may not reach, and a poll this often keeps new
//! turns searchable well within two seconds.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use zblade_import::detect::find_session_files;
use zblade_import::{Source, session_stamp};

use crate::import::ImportReport;
use crate::import::ImportRequest;
use crate::project::Project;
use zblade_core::Result;

/// How often the stores are looked at.
pub const POLL: Duration = Duration::from_millis(300);

/// Follows the sources a project enabled; remembers each session file's size and mtime.
#[derive(Debug, Default)]
pub struct Follower {
    stamps: HashMap<PathBuf, (u64, i64)>,
    last: Option<Instant>,
}

impl Follower {
    /// A follower that has seen nothing yet (its first poll imports what is new since the
    /// last import).
    pub fn new() -> Follower {
        Follower::default()
    }

    /// The sources whose session files changed since the last poll; empty when polled less
    /// than [`POLL`] ago.
    fn changed(&mut self, project: &Project) -> Vec<Source> {
        if self.last.is_some_and(|t| t.elapsed() < POLL) {
            return Vec::new();
        }
        self.last = Some(Instant::now());
        let agents = &project.parts.agents;
        let mut changed = Vec::new();
        for source in project.enabled_sources_now() {
            let stores = agents.stores(source, project.layout().root());
            let mut any = false;
            for file in find_session_files(source, &stores) {
                let Ok(stamp) = session_stamp(source, &file.path) else {
                    continue;
                };
                if self.stamps.insert(file.path, stamp) != Some(stamp) {
                    any = true;
                }
            }
            if any {
                changed.push(source);
            }
        }
        changed
    }
}

impl Project {
    /// One round of live import: imports what is new from each enabled source whose files
    /// changed. Cheap when nothing did (a listing and a `stat` per session file).
    /// What was imported is embedded at once (the watcher and the tray run this), so a turn
    /// an agent just wrote is found by meaning within the round; a model that cannot load
    /// leaves it to keyword search, as `zblade index` would.
    pub fn follow_sources(&mut self, follower: &mut Follower) -> Vec<(Source, Result<ImportReport>)> {
        let rounds: Vec<(Source, Result<ImportReport>)> = follower
            .changed(self)
            .into_iter()
            .map(|source| (source, self.import(&ImportRequest::new(source), &mut |_, _, _| {})))
            .collect();
        let imported = rounds
            .iter()
            .any(|(_, report)| report.as_ref().is_ok_and(|r| r.messages > 0 || r.moments > 0));
        if imported {
            let _ = self.embed_new_memory();
        }
        rounds
    }
}

//! `zblade import`: the sessions of coding agents (Claude Code, Codex, Aider, Continue, Cline)
//! become conversations of this project, with code references for the files the agents read
//! and edited, and moments extracted from them.
//!
//! The formats live in `zblade-import`; this module decides which sessions are this project's,
//! anchors touches against git history ([`anchor`]), merges pieces of a session into one
//! conversation ([`merge`]), stores them through the project's storage, and remembers where
//! each file was read up to ([`state`]) so the next import, or `zblade watch`, reads only
//! what is new.

mod anchor;
mod follow;
pub(crate) mod merge;
mod state;
mod write;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use chrono::{DateTime, Utc};
use serde::Serialize;
use zblade_core::{Conversation, Error, Result};
use zblade_import::{Cursor, Detected, SessionFile, Source, has_news, read_file};

use crate::codeblocks::TreeLines;
use crate::extract::{Extracted, extract_without_model};
use crate::project::Project;
use anchor::Anchorer;
use state::{FileState, ImportLock, ImportState};

pub use follow::Follower;

/// How often an import saves its cursors while it runs.
const SAVE_EVERY: std::time::Duration = std::time::Duration::from_secs(1);
/// Conversations written in one commit (one lock, one batch of atomic writes, one index
/// transaction). A commit per session file made the disk, not the parsing, the import's cost:
/// every commit waits for its fsyncs.
const COMMIT_EVERY: usize = 64;
/// Session files parsed ahead of the one being stored (memory: a few files' sessions).
const READ_AHEAD: usize = 4;
/// Stored conversations waiting for their moments to be extracted, at most (each may hold
/// hundreds of turns).
const EXTRACT_AHEAD: usize = 8;

/// Conversations read but not written yet, and what to remember about each file once they are.
#[derive(Default)]
struct Pending {
    /// The merged conversations, each with the name of the file it came from.
    conversations: Vec<(Conversation, String)>,
    /// Per file read: its cursor after the read, and the conversations it changed.
    files: Vec<(PathBuf, Option<PathBuf>, Cursor, Vec<String>)>,
}
pub use zblade_import::Source as ImportSource;

/// What to import.
#[derive(Debug, Clone)]
pub struct ImportRequest {
    /// The agent.
    pub source: Source,
    /// Store files or folders to read instead of the agent's own store. Files named here are
    /// imported whatever their working directory; folders are searched like a store.
    pub paths: Vec<PathBuf>,
    /// Import sessions of every project, not only this one's.
    pub all_projects: bool,
    /// Only sessions active (file modified) at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// Read and count, write nothing.
    pub dry_run: bool,
}

impl ImportRequest {
    /// Everything new of `source` for this project, from the agent's own store.
    pub fn new(source: Source) -> ImportRequest {
        ImportRequest {
            source,
            paths: Vec::new(),
            all_projects: false,
            since: None,
            dry_run: false,
        }
    }
}

/// One conversation an import created or extended.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ImportedConversation {
    /// `conv_…`
    pub id: String,
    /// Its title.
    pub title: String,
    /// False when it existed and got new turns.
    pub created: bool,
    /// Messages new in this import.
    pub new_messages: usize,
}

/// What an import did.
#[derive(Debug, Clone, Default, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ImportReport {
    /// The agent.
    pub source: String,
    /// Nothing was written.
    pub dry_run: bool,
    /// Session files found in the stores.
    pub files_found: usize,
    /// Of those, read now (the rest were unchanged since the last import, another project's,
    /// or older than `--since`).
    pub files_read: usize,
    /// Session files of other projects, left alone.
    pub other_projects: usize,
    /// Session files that could not be read at all.
    pub files_failed: usize,
    /// Conversations created or extended.
    pub conversations: Vec<ImportedConversation>,
    /// Messages new in this import.
    pub messages: usize,
    /// Code references made from the agents' reads, edits and citations.
    pub references: usize,
    /// Touches of files outside the project (or secrets), not referenced.
    pub touches_outside: usize,
    /// Touches whose file or lines could not be found in any version.
    pub touches_not_found: usize,
    /// Secrets replaced by `[REDACTED:…]` before anything was written.
    pub redacted: usize,
    /// Records skipped on purpose, by kind.
    pub skipped: BTreeMap<String, u64>,
    /// Problems, each naming its file (and line); the rest was imported.
    pub warnings: Vec<String>,
    /// Moment artifacts written from the new conversations.
    pub moments: usize,
    /// Bytes of session files read.
    pub bytes: u64,
    /// Time spent reading and parsing session files (on a reader thread, beside the store).
    pub parse_ms: u64,
    /// Time spent anchoring references and storing conversations.
    pub store_ms: u64,
    /// Time spent on moments after the last conversation was stored: writing those extracted
    /// beside the store (or, with a model configured, extracting them all then).
    pub moments_ms: u64,
}

impl ImportReport {
    /// True when there was something to import and none of it could be.
    pub fn nothing_imported(&self) -> bool {
        self.files_failed > 0 && self.files_read == self.files_failed
    }
}

/// Progress of a long import: `done` of `total` files, the one being read.
pub type ImportProgress<'a> = &'a mut dyn FnMut(usize, usize, &Path);

impl Project {
    /// What each agent has on this machine: stores, session counts, this project's sessions
    /// and their dates. Reads only the first lines of each session file.
    pub fn detect_sources(&self) -> Vec<Detected> {
        self.parts.agents.detect(Some(self.layout().root()))
    }

    /// Imports what is new in `request.source` since the last import.
    pub fn import(&mut self, request: &ImportRequest, progress: ImportProgress<'_>) -> Result<ImportReport> {
        let _lock = ImportLock::acquire(self.layout())?;
        let mut state = ImportState::load(self.layout());
        let mut report = ImportReport {
            source: request.source.as_str().to_string(),
            dry_run: request.dry_run,
            ..ImportReport::default()
        };
        let known_elsewhere = state.other_projects.len();
        let files = self.session_files(request, &mut state, &mut report);
        let mut anchorer = Anchorer::new(self.layout().root(), self.parts.path_guard());
        let mut tree: Option<TreeLines> = None;
        let mut changed: Vec<String> = Vec::new();
        let total = files.len();
        // Cursors are saved about once a second and at the end, not after every file (the state
        // names every file ever imported; rewriting it per file is quadratic). A crash loses at
        // most a second of cursors, and re-reading those files updates the same conversations.
        let mut saved = Instant::now();
        let mut unsaved = state.other_projects.len() != known_elsewhere;
        // Cursors of files whose conversations are not written yet wait in `pending` with them:
        // a crash or an interrupt before the commit re-reads those files next time.
        let mut pending = Pending::default();
        // Each file's cursor is known before any is read (a file appears once in an import),
        // so a reader thread parses the next files while this one anchors and writes: on two
        // cores parsing then costs nothing, where it was a fifth of the import.
        let jobs: Vec<(SessionFile, Option<PathBuf>, Cursor)> = files
            .into_iter()
            .map(|(file, cwd)| {
                let cursor = state
                    .files
                    .get(&file.path)
                    .filter(|f| f.source == request.source)
                    .map(|f| f.cursor.clone())
                    .unwrap_or_default();
                (file, cwd, cursor)
            })
            .collect();
        let source = request.source;
        // Moments of the stored conversations are extracted on another thread while the next
        // ones are written (without a model: a model's extraction runs after the import, as
        // `zblade moments extract` would).
        let extract_here = !request.dry_run && self.local_compressor().is_err();
        let cache_dir = self.moments_cache_dir();
        let mut written: Vec<Conversation> = Vec::new();
        let extracted = std::thread::scope(|scope| -> Result<Option<Vec<Extracted>>> {
            // Bounded: when extraction falls behind, storing waits rather than queueing every
            // conversation of a large import in memory.
            let (to_extractor, stored) = std::sync::mpsc::sync_channel::<Conversation>(EXTRACT_AHEAD);
            let extractor = extract_here.then(|| {
                scope.spawn(move || {
                    // The last version of a conversation written twice (a session spread
                    // over files) is the one that counts.
                    let mut by_id: BTreeMap<String, Option<Extracted>> = BTreeMap::new();
                    for conversation in stored {
                        let found = extract_without_model(&cache_dir, &conversation);
                        by_id.insert(conversation.conversation_id.clone(), found);
                    }
                    by_id.into_values().flatten().collect::<Vec<Extracted>>()
                })
            });
            let hand_over = |written: &mut Vec<Conversation>| {
                for conversation in written.drain(..) {
                    if extract_here {
                        let _ = to_extractor.send(conversation);
                    }
                }
            };
            let (sender, reads) = std::sync::mpsc::sync_channel(READ_AHEAD);
            scope.spawn(move || {
                'files: for (file, cwd, mut cursor) in jobs {
                    let mut continued = false;
                    loop {
                        let started = Instant::now();
                        let read = (continued || has_news(source, &file.path, &cursor))
                            .then(|| read_file(source, &file.path, &cursor));
                        // A read that stopped early (one file holding many sessions) goes on
                        // from where it stopped once this part is handed over.
                        let rest = match &read {
                            Some(Ok(part)) if part.more => Some(part.cursor.clone()),
                            _ => None,
                        };
                        // The receiver is gone when the import stopped (interrupt, error).
                        if sender
                            .send((file.clone(), cwd.clone(), read, started.elapsed(), continued))
                            .is_err()
                        {
                            break 'files;
                        }
                        match rest {
                            Some(next) => (cursor, continued) = (next, true),
                            None => break,
                        }
                    }
                }
            });
            let mut done = 0;
            for (file, cwd, read, parse_time, continued) in reads {
                if let Err(e) = self.check_interrupt() {
                    if unsaved {
                        state.save(self.layout())?;
                    }
                    return Err(e);
                }
                progress(done, total, &file.path);
                done += usize::from(!continued);
                let Some(read) = read else {
                    continue; // nothing new since the last import
                };
                let mut read = match read {
                    Ok(read) => read,
                    Err(e) => {
                        report.files_read += 1;
                        report.files_failed += 1;
                        report.warnings.push(e.to_string());
                        continue;
                    }
                };
                report.parse_ms += parse_time.as_millis() as u64;
                report.files_read += usize::from(!continued);
                report.bytes += read.bytes;
                report.warnings.extend(read.warnings.iter().map(ToString::to_string));
                // Only unreadable records and not one session: not a session file at all (a
                // file given by mistake), which is a failure, not an empty import.
                if read.sessions.is_empty() && !read.warnings.is_empty() {
                    report.files_failed += 1;
                }
                for (kind, n) in &read.skipped {
                    *report.skipped.entry(kind.clone()).or_default() += n;
                }
                let started = Instant::now();
                let stored = self.store_file(
                    &mut read,
                    &file,
                    cwd.as_deref(),
                    &mut anchorer,
                    &mut tree,
                    &mut report,
                    &mut pending.conversations,
                );
                match stored {
                    Ok(ids) => {
                        changed.extend(ids.iter().cloned());
                        if !request.dry_run {
                            pending
                                .files
                                .push((file.path.clone(), cwd.clone(), read.cursor.clone(), ids));
                            if pending.conversations.len() >= COMMIT_EVERY {
                                unsaved |= self.commit_pending(
                                    &mut pending,
                                    &mut state,
                                    request.source,
                                    &mut report,
                                    &mut written,
                                );
                                hand_over(&mut written);
                            }
                            if unsaved && saved.elapsed() >= SAVE_EVERY {
                                state.save(self.layout())?;
                                (saved, unsaved) = (Instant::now(), false);
                            }
                        }
                        report.store_ms += started.elapsed().as_millis() as u64;
                    }
                    Err(Error::Interrupted) => {
                        if unsaved {
                            state.save(self.layout())?;
                        }
                        return Err(Error::Interrupted);
                    }
                    Err(e) => {
                        report.files_failed += 1;
                        report.warnings.push(format!("{}: {e}", file.path.display()));
                    }
                }
            }
            if !request.dry_run {
                let started = Instant::now();
                unsaved |= self.commit_pending(&mut pending, &mut state, request.source, &mut report, &mut written);
                hand_over(&mut written);
                report.store_ms += started.elapsed().as_millis() as u64;
            }
            drop(to_extractor);
            Ok(extractor.map(|worker| worker.join().expect("the moment extractor does not panic")))
        })?;
        progress(total, total, Path::new(""));
        if unsaved {
            state.save(self.layout())?;
        }
        if let Some(extracted) = extracted {
            let started = Instant::now();
            self.write_moments(extracted, &mut report);
            report.moments_ms = started.elapsed().as_millis() as u64;
        } else if !request.dry_run {
            let started = Instant::now();
            changed.sort();
            changed.dedup();
            match self.extract_moments_of(&changed) {
                Ok(extracted) => report.moments += extracted.written.len(),
                // One conversation's failure fails the batch: each is tried alone, so the
                // others still get their moments and the failing one is named.
                Err(_) => {
                    for id in &changed {
                        match self.extract_moments_of(std::slice::from_ref(id)) {
                            Ok(extracted) => report.moments += extracted.written.len(),
                            Err(e) => report.warnings.push(format!("moments of {id}: {e}")),
                        }
                    }
                }
            }
            report.moments_ms = started.elapsed().as_millis() as u64;
        }
        Ok(report)
    }

    /// Turns automatic import of `source` on or off (the privacy wizard and Settings →
    /// Sources; reading another tool's store needs the user's consent).
    pub fn set_source_enabled(&mut self, source: Source, enabled: bool) -> Result<()> {
        let names = &mut self.parts.settings.import.enabled;
        names.retain(|n| n != source.as_str());
        if enabled {
            names.push(source.as_str().to_string());
            names.sort();
        }
        self.settings().save(&self.layout().settings())
    }

    /// The sources enabled for automatic import.
    pub fn enabled_sources(&self) -> Vec<Source> {
        self.settings()
            .import
            .enabled
            .iter()
            .filter_map(|n| Source::parse(n))
            .collect()
    }

    /// The sources enabled now, read from the settings file: another process (the CLI, the
    /// app's window beside its tray indexer) may have switched one on since this project was
    /// opened.
    pub(crate) fn enabled_sources_now(&self) -> Vec<Source> {
        match zblade_core::Settings::load(&self.layout().settings()) {
            Ok(settings) => settings
                .import
                .enabled
                .iter()
                .filter_map(|n| Source::parse(n))
                .collect(),
            Err(_) => self.enabled_sources(),
        }
    }

    /// When each source was last imported, and how many conversations it fed.
    pub fn import_history(&self) -> Vec<(Source, Option<DateTime<Utc>>, usize)> {
        let state = ImportState::load(self.layout());
        Source::all()
            .map(|source| {
                let files: Vec<&FileState> = state.files.values().filter(|f| f.source == source).collect();
                let last = files.iter().map(|f| f.imported_at).max();
                let mut ids: Vec<&String> = files.iter().flat_map(|f| &f.conversations).collect();
                ids.sort();
                ids.dedup();
                (source, last, ids.len())
            })
            .collect()
    }
}

pub(crate) fn empty_conversation(id: &str) -> Conversation {
    let mut conversation: Conversation = serde_json::from_str("{}").expect("an empty conversation parses");
    conversation.conversation_id = id.to_string();
    conversation
}

fn modified(path: &Path) -> Option<DateTime<Utc>> {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .map(DateTime::<Utc>::from)
}

fn since_ok(file: &SessionFile, since: Option<DateTime<Utc>>) -> bool {
    match (since, file.modified) {
        (Some(since), Some(modified)) => modified >= since,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zblade_core::{Message, Role};

    fn conversation(id: &str) -> Conversation {
        let mut c = empty_conversation(id);
        c.messages.push(Message::new(Role::User, format!("hello from {id}")));
        c
    }

    /// One conversation that cannot be stored fails its commit; the others are written one by
    /// one, their files' cursors move, and only the bad one's file keeps its old cursor.
    #[test]
    fn a_bad_conversation_in_a_commit_blocks_only_its_own_file() {
        let dir = tempfile::tempdir().unwrap();
        let (mut project, _) = Project::init(dir.path()).unwrap();
        let mut state = ImportState::load(project.layout());
        let mut report = ImportReport::default();
        let cursor = |n: u64| Cursor {
            offset: n,
            ..Cursor::default()
        };
        let mut pending = Pending {
            conversations: vec![
                (conversation("conv_cc-good"), "a.jsonl".into()),
                (conversation("conv_cc-../bad"), "b.jsonl".into()),
            ],
            files: vec![
                (
                    PathBuf::from("/store/a.jsonl"),
                    None,
                    cursor(10),
                    vec!["conv_cc-good".into()],
                ),
                (
                    PathBuf::from("/store/b.jsonl"),
                    None,
                    cursor(20),
                    vec!["conv_cc-../bad".into()],
                ),
            ],
        };
        let mut written = Vec::new();
        assert!(project.commit_pending(&mut pending, &mut state, Source::CLAUDE_CODE, &mut report, &mut written));
        assert!(
            project.show("conv_cc-good").is_ok(),
            "the good conversation was written"
        );
        // Only what was written goes on to moment extraction.
        let written: Vec<&str> = written.iter().map(|c| c.conversation_id.as_str()).collect();
        assert_eq!(written, ["conv_cc-good"]);
        assert_eq!(state.files[Path::new("/store/a.jsonl")].cursor.offset, 10);
        assert!(
            !state.files.contains_key(Path::new("/store/b.jsonl")),
            "the bad file is read again next time"
        );
        assert_eq!(report.files_failed, 1);
        assert!(
            report.warnings.iter().any(|w| w.contains("b.jsonl")),
            "{:?}",
            report.warnings
        );
        assert!(pending.conversations.is_empty() && pending.files.is_empty());
    }
}

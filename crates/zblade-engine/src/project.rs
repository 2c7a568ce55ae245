//! The [`Project`] handle: init, open, add, list, search, reindex.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{SubsecRound, Utc};
use serde::Serialize;
use zblade_core::{Conversation, Error, Layout, Moment, Result, Settings, fsio, parse_conversation};
use zblade_index::{ConversationSummary, Index, MomentSummary, Page};

use crate::lock::WriteLock;
use crate::parts::Parts;
use crate::scan;
use crate::storage::{self, AddOutcome, Storage};

const DEFAULT_INSTRUCTIONS: &str = "# Project instructions\n\n\
This file is always included in the context zblade assembles for this project.\n\
Write here what every AI assistant should know: conventions, architecture, things to avoid.\n";

const GITIGNORE: &str = "# Rebuildable caches: `zblade reindex` recreates index/ from artifacts/.\nindex/\ncache/\n# Server mode's writes waiting for the server (they belong on the server, not in git).\noutbox/\n";

/// What `init` did.
#[derive(Debug, Clone, Serialize)]
pub struct InitReport {
    /// The project root.
    pub root: PathBuf,
    /// Files and folders created by this call (relative to the root); empty when all existed.
    pub created: Vec<String>,
    /// Whether settings.json was rewritten to add fields it was missing.
    pub settings_completed: bool,
}

/// What `reindex` did.
#[derive(Debug, Clone, Serialize)]
pub struct ReindexReport {
    /// Conversations indexed.
    pub conversations: usize,
    /// Messages indexed.
    pub messages: usize,
    /// Standalone moments indexed.
    pub moments: usize,
    /// Code references checked against the working tree.
    pub references: usize,
    /// Project files indexed for search again.
    pub code_files: usize,
    /// Artifacts left out, with the reason (the file is untouched).
    pub skipped: Vec<(String, String)>,
    /// Whether the old database was unreadable and was recreated.
    pub recreated_database: bool,
    /// Wall time.
    #[serde(serialize_with = "seconds")]
    pub elapsed: Duration,
}

fn seconds<S: serde::Serializer>(d: &Duration, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// A project's memory: the parts this machine holds for it (see [`Parts`]: the layout, settings
/// and index, and one store per concern) and the [`Storage`] its conversations and moments are
/// kept in, chosen once when it opens.
///
/// The operations that go through the storage (add, list, search, context, fork, show, import)
/// are `impl Project` blocks, one module each; work that needs only the parts is `impl Parts`,
/// so the storage can be handed the parts without being handed the project. A face never sees
/// the parts: it calls `Project`'s methods, and the engine reaches each store through an
/// accessor (`self.semantic()`, `self.index()`).
#[derive(Debug)]
pub struct Project {
    pub(crate) parts: Parts,
    /// Where conversations and moments live (`.zblade/` or a sync server), chosen once here.
    pub(crate) storage: Arc<dyn Storage>,
    /// Set by the owner (the app's indexer) to stop long work between two complete batches.
    interrupt: Option<Arc<std::sync::atomic::AtomicBool>>,
}

/// The stores and settings, reached from a project; see [`Project`].
impl Project {
    /// The project's paths.
    pub fn layout(&self) -> &Layout {
        &self.parts.layout
    }

    /// The project's settings as loaded.
    pub fn settings(&self) -> &Settings {
        &self.parts.settings
    }

    pub(crate) fn index(&self) -> Result<&Index> {
        self.parts.index()
    }

    pub(crate) fn index_mut(&mut self) -> Result<&mut Index> {
        self.parts.index_mut()
    }

    /// The semantic search store.
    pub(crate) fn semantic(&self) -> &crate::semantic::Semantic {
        &self.parts.semantic
    }

    /// Makes indexing (files, embeddings, summaries) and the watch loop's re-indexing stop
    /// with [`Error::Interrupted`] between two complete batches once `flag` is set. Every
    /// batch is written whole (one SQLite transaction, one LanceDB append), so a stop never
    /// leaves a half-written index, and the next run picks up where this one stopped.
    pub fn set_interrupt(&mut self, flag: Arc<std::sync::atomic::AtomicBool>) {
        self.interrupt = Some(flag);
    }

    /// `Err(Interrupted)` once the flag given to [`Project::set_interrupt`] is set.
    pub(crate) fn check_interrupt(&self) -> Result<()> {
        match &self.interrupt {
            Some(flag) if flag.load(std::sync::atomic::Ordering::Relaxed) => Err(Error::Interrupted),
            _ => Ok(()),
        }
    }

    /// Embeds with `embedder` instead of the configured local models (a hosted model, or a
    /// [`zblade_search::FakeEmbedder`] in tests), for conversations and code alike. Its
    /// vectors live in a table of their own, named by its model id; chunks are still named by
    /// content digest, so switching back and forth re-embeds nothing twice.
    pub fn use_embedder(&mut self, embedder: Box<dyn zblade_search::Embedder>) {
        self.parts.semantic.use_embedder(embedder);
    }

    /// Lets go of the embedding models and the open vector tables when no search or indexing
    /// used them for `search.release_models_after_minutes` (what a long-running process calls
    /// now and then: the app and the watch loop its tray indexer and `zblade watch` run). The next search
    /// loads them again. Once per such idle period, loaded or not, it also hands the process's
    /// memory back ([`Project::give_memory_back`]). Returns whether anything was let go.
    pub fn release_idle_models(&mut self) -> bool {
        match self.parts.settings.search.release_models_after() {
            Some(idle) => self.release_models_unused_for(idle),
            None => false,
        }
    }

    /// Sets `search.release_models_after_minutes` (0 keeps the models loaded; at most a day)
    /// and saves the settings.
    pub fn set_release_models_after_minutes(&mut self, minutes: u32) -> Result<()> {
        if minutes > zblade_core::settings::MAX_RELEASE_MODELS_AFTER_MINUTES {
            return Err(Error::Usage(format!(
                "search.release_models_after_minutes: {minutes} is more than a day ({} minutes); \
                 0 keeps the models loaded",
                zblade_core::settings::MAX_RELEASE_MODELS_AFTER_MINUTES
            )));
        }
        self.parts.settings.search.release_models_after_minutes = minutes;
        self.settings().save(&self.layout().settings())
    }

    /// [`Project::release_idle_models`] with the idle time given (tests; a benchmark that
    /// cannot wait five minutes).
    pub fn release_models_unused_for(&mut self, idle: std::time::Duration) -> bool {
        let released = self.parts.semantic.release_if_idle(idle);
        // Once per idle period, models or not: a tray whose models were let go after its
        // first pass has run the watch's setup since, and idles on for hours.
        if self.parts.semantic.first_idle_check(idle) || released {
            self.give_memory_back();
        }
        released
    }

    /// Hands back what this project holds only to be faster and what the process freed: SQLite's
    /// page cache, then glibc's free memory (dropping an ONNX Runtime session leaves its memory
    /// in the allocator's arenas until they are trimmed), then the clean pages of mapped files
    /// (`zblade_search::memory::page_out_mapped_files`). What a long-running process calls
    /// before it idles: after models were let go, and after the tray indexer's first pass,
    /// which reads every message. SQLite's write-ahead log is folded back into the database
    /// too, so a process that opens the index next does not read it back first.
    pub fn give_memory_back(&self) {
        if let Ok(index) = self.parts.index() {
            // A cache that cannot be emptied only costs memory, and a log that cannot be folded
            // now (another process is using it) is folded at the next idle period; nothing to
            // report.
            let _ = index.release_memory();
            let _ = index.fold_write_ahead_log();
        }
        zblade_search::memory::return_freed_memory();
        // What stays resident after that is mostly pages of code that ran: the engine library's,
        // ONNX Runtime's. They come back on the next search without reading the disk.
        zblade_search::memory::page_out_mapped_files();
    }

    /// Looks for coding agents' sessions under `places` instead of this process's home and
    /// environment (tests; an app that imports for another user profile).
    pub fn use_agent_places(&mut self, places: zblade_import::detect::Places) {
        self.parts.agents.use_places(places);
    }
}

impl Project {
    /// Creates `.zblade/` in `root` (idempotent: existing instructions and settings are kept,
    /// and settings only gain the fields they lack) and opens the project.
    pub fn init(root: &Path) -> Result<(Project, InitReport)> {
        let layout = Layout::new(root);
        let mut created = Vec::new();
        for dir in [
            layout.dir().to_path_buf(),
            layout.config_dir(),
            layout.conversations_dir(),
            layout.moments_dir(),
            layout.index_dir(),
            layout.cache_dir(),
        ] {
            if !dir.is_dir() {
                std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
                created.push(layout.relative(&dir) + "/");
            }
        }
        for (path, text) in [
            (layout.instructions(), DEFAULT_INSTRUCTIONS),
            (layout.gitignore(), GITIGNORE),
        ] {
            if fsio::create_new_atomic(&path, text.as_bytes())? {
                created.push(layout.relative(&path));
            }
        }
        let mut settings_completed = false;
        if fsio::create_new_atomic(&layout.settings(), &Settings::new_project().to_json())? {
            created.push(layout.relative(&layout.settings()));
        } else {
            // Fill in what an older or hand-written file lacks; keep every value and unknown field.
            let existing = std::fs::read(layout.settings()).map_err(|e| Error::io(layout.settings(), e))?;
            let mut settings = Settings::load(&layout.settings())?;
            if settings.project.id.is_empty() {
                settings.project.id = zblade_core::ids::new_id(zblade_core::ids::PROJECT);
            }
            if settings.to_json() != existing {
                settings.save(&layout.settings())?;
                settings_completed = true;
            }
        }
        let project = Project::open(root)?;
        if !layout.database().exists() {
            created.push(layout.relative(&layout.database()));
        }
        Ok((
            project,
            InitReport {
                root: root.to_path_buf(),
                created,
                settings_completed,
            },
        ))
    }

    /// Opens the project whose root is `root`; it must hold a `.zblade/` folder.
    pub fn open(root: &Path) -> Result<Project> {
        let layout = Layout::new(root);
        if !layout.dir().is_dir() {
            return Err(Error::NotInitialized(format!(
                "{} has no .zblade/ folder; run `zblade init` there first",
                root.display()
            )));
        }
        let settings = if layout.settings().exists() {
            Settings::load(&layout.settings())?
        } else {
            Settings::default()
        };
        let index = match Index::open(&layout.database()) {
            Ok(index) => Ok(index),
            Err(Error::IndexCorrupt { message, .. }) => Err(message),
            Err(err) => return Err(err),
        };
        Ok(Project {
            storage: storage::for_settings(&settings),
            parts: Parts::new(layout, settings, index),
            interrupt: None,
        })
    }

    /// Opens the project that contains `start`: the nearest ancestor with a `.zblade/` folder.
    pub fn discover(start: &Path) -> Result<Project> {
        match Layout::discover(start) {
            Some(layout) => Project::open(layout.root()),
            None => Err(Error::NotInitialized(format!(
                "no .zblade/ folder in {} or any parent; run `zblade init` or pass --project DIR",
                start.display()
            ))),
        }
    }

    /// Adds (or, when its id exists, replaces) a conversation given as RFC-002 JSON.
    /// `source_name` names the input in error messages (a file name or `<stdin>`).
    pub fn add_conversation(&mut self, json: &[u8], source_name: &str) -> Result<AddOutcome> {
        let conv = parse_conversation(json, source_name)?;
        let mut outcomes = self.add_conversations(vec![(conv, source_name.to_string())])?;
        Ok(outcomes.remove(0))
    }

    /// Validates conversations and fills in what `add` fills in (ids, project, times, title,
    /// anchors of code references), the same in local and server mode.
    pub(crate) fn prepare_conversations(
        &self,
        conversations: Vec<(Conversation, String)>,
    ) -> Result<Vec<Conversation>> {
        let now = Utc::now().trunc_subsecs(3);
        let mut prepared = Vec::with_capacity(conversations.len());
        for (mut conv, source) in conversations {
            conv.prepare_for_store(&self.settings().project.id, self.layout().root(), &source, now)?;
            prepared.push(conv);
        }
        self.parts.capture_references(
            prepared
                .iter_mut()
                .flat_map(|c| c.messages.iter_mut())
                .flat_map(|m| m.code_references.iter_mut()),
        );
        Ok(prepared)
    }

    /// Adds several parsed conversations at once: one lock, one batch of atomic file writes
    /// and one index transaction. Each is validated first; if any is invalid nothing is written.
    /// Input a person or an agent wrote must hold messages, and its code references must point
    /// at lines that exist now (a typo in a path would otherwise be a reference to nothing).
    /// Secrets are redacted first.
    pub fn add_conversations(&mut self, mut conversations: Vec<(Conversation, String)>) -> Result<Vec<AddOutcome>> {
        for (conversation, source) in &conversations {
            conversation.check_has_messages(source)?;
            self.parts.check_references_exist(
                source,
                conversation.messages.iter().enumerate().flat_map(|(i, m)| {
                    m.code_references
                        .iter()
                        .enumerate()
                        .map(move |(j, r)| (format!("messages[{i}].code_references[{j}]"), r))
                }),
            )?;
        }
        let redacted = redact_each(&mut conversations, crate::redaction::redact_conversation);
        Ok(counted(self.store_conversations(conversations)?, redacted))
    }

    /// Stores conversations zblade itself assembled (recorded turns, redacted message by
    /// message as they come) or received whole (a teammate's share, redacted by
    /// [`Project::accept_conversation`]): validated like [`Project::add_conversations`], but
    /// their references are kept even where this working tree differs; their status says so.
    pub(crate) fn store_conversations(
        &mut self,
        conversations: Vec<(Conversation, String)>,
    ) -> Result<Vec<AddOutcome>> {
        let prepared = self.prepare_conversations(conversations)?;
        Arc::clone(&self.storage).put_conversations(&mut self.parts, &prepared)
    }

    /// Adds a conversation someone shared (see [`Project::store_conversations`]); secrets are
    /// redacted first.
    pub fn accept_conversation(&mut self, json: &[u8], source_name: &str) -> Result<AddOutcome> {
        let conversation = parse_conversation(json, source_name)?;
        conversation.check_has_messages(source_name)?;
        let mut conversations = vec![(conversation, source_name.to_string())];
        let redacted = redact_each(&mut conversations, crate::redaction::redact_conversation);
        let mut outcomes = counted(self.store_conversations(conversations)?, redacted);
        Ok(outcomes.remove(0))
    }

    /// Validates moments and fills in what `add` fills in (ids, times, anchors of code
    /// references), the same in local and server mode; each keeps its source name.
    pub(crate) fn prepare_moments(&self, moments: Vec<(Moment, String)>) -> Result<Vec<(Moment, String)>> {
        let now = Utc::now().trunc_subsecs(3);
        let mut prepared = Vec::with_capacity(moments.len());
        for (mut moment, source) in moments {
            moment.prepare_for_store(self.layout().root(), &source, now)?;
            prepared.push((moment, source));
        }
        self.parts
            .capture_references(prepared.iter_mut().flat_map(|(m, _)| m.code_references.iter_mut()));
        Ok(prepared)
    }

    /// Adds several parsed moments; each is validated first, and if any is invalid (or names
    /// a conversation this project lacks, or reuses another artifact's id) nothing is written.
    /// Like conversations, their code references must point at lines that exist now, and
    /// secrets are redacted first.
    pub fn add_moments(&mut self, mut moments: Vec<(Moment, String)>) -> Result<Vec<AddOutcome>> {
        for (moment, source) in &moments {
            self.parts.check_references_exist(
                source,
                moment
                    .code_references
                    .iter()
                    .enumerate()
                    .map(|(j, r)| (format!("code_references[{j}]"), r)),
            )?;
        }
        let redacted = redact_each(&mut moments, crate::redaction::redact_moment);
        Ok(counted(self.store_moments(moments)?, redacted))
    }

    /// Stores moments zblade extracted itself from redacted conversations, whose references are
    /// the conversation's.
    pub(crate) fn store_moments(&mut self, moments: Vec<(Moment, String)>) -> Result<Vec<AddOutcome>> {
        let prepared = self.prepare_moments(moments)?;
        Arc::clone(&self.storage).put_moments(&mut self.parts, prepared)
    }

    /// Conversations, most recently updated first (in server mode, in the server's id order);
    /// only those imported from `source` (`claude-code`, `codex`, ...) when one is given.
    pub fn list_conversations(&self, page: Page, source: Option<&str>) -> Result<Vec<ConversationSummary>> {
        self.storage.list_conversations(&self.parts, page, source)
    }

    /// Moments, newest first; optionally of one type (`decision`, `pattern`, ...).
    pub fn list_moments(&self, page: Page, kind: Option<&str>) -> Result<Vec<MomentSummary>> {
        self.storage.list_moments(&self.parts, page, kind)
    }

    /// Rebuilds the index from the artifacts alone. A damaged database file is replaced; an
    /// unreadable artifact is skipped and reported, never deleted.
    pub fn reindex(&mut self) -> Result<ReindexReport> {
        let started = Instant::now();
        let _lock = WriteLock::acquire(self.layout())?;
        let mut recreated_database = false;
        // Project files enter the index through `zblade index`; a rebuild brings them back
        // only if they were there.
        let had_code = self
            .parts
            .index
            .as_ref()
            .ok()
            .and_then(|i| i.code_counts().ok())
            .is_some_and(|(files, _)| files > 0);
        if self.parts.index.is_err() {
            zblade_index::remove_database_files(&self.layout().database())?;
            self.parts.index = Ok(Index::open(&self.layout().database())?);
            recreated_database = true;
        }
        let scan = scan::scan(self.layout())?;
        let conversations: Vec<_> = scan
            .conversations
            .iter()
            .map(|l| (&l.artifact, l.path.as_str(), l.sha256.as_str()))
            .collect();
        let moments: Vec<_> = scan
            .moments
            .iter()
            .map(|l| (&l.artifact, l.path.as_str(), l.sha256.as_str()))
            .collect();
        let clashes = self.index_mut()?.rebuild(&conversations, &moments)?;
        let mut skipped: Vec<(String, String)> = scan
            .unreadable
            .iter()
            .map(|(path, err)| (path.clone(), err.to_string()))
            .collect();
        skipped.extend(clashes.iter().map(|(path, err)| (path.clone(), err.to_string())));
        let messages = scan.conversations.iter().map(|l| l.artifact.messages.len()).sum();
        // Live locations are part of the index too: recompute them from the working tree.
        let references = self.check_references()?.len();
        // So are the project files' chunks (the vectors, keyed by CID, survive the rebuild).
        let code_files = if had_code {
            self.index_code(&mut |_, _| {})?.indexed
        } else {
            0
        };
        Ok(ReindexReport {
            code_files,
            conversations: scan.conversations.len(),
            messages,
            moments: scan.moments.len(),
            references,
            skipped,
            recreated_database,
            elapsed: started.elapsed(),
        })
    }
}

/// Redacts each item with `redact`; the counts, in order.
fn redact_each<T>(items: &mut [(T, String)], redact: fn(&mut T) -> usize) -> Vec<usize> {
    items.iter_mut().map(|(item, _)| redact(item)).collect()
}

/// `outcomes` with the secrets redacted in each (in the order they were added).
fn counted(mut outcomes: Vec<AddOutcome>, redacted: Vec<usize>) -> Vec<AddOutcome> {
    for (outcome, redacted) in outcomes.iter_mut().zip(redacted) {
        outcome.redacted = redacted;
    }
    outcomes
}

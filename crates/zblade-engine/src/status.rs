//! `zblade status`: counts, sizes, storage mode and index health at a glance.

use std::path::Path;

use serde::Serialize;
use zblade_core::Result;
use zblade_index::Counts;

use crate::project::Project;

/// A snapshot of a project's memory.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Status {
    /// The project root.
    pub root: String,
    /// `proj_…`
    pub project_id: String,
    /// `local` or `server`.
    pub storage_mode: String,
    /// Artifact files on disk: conversations.
    pub conversation_artifacts: usize,
    /// Artifact files on disk: standalone moments.
    pub moment_artifacts: usize,
    /// Rows in the index (zero when the index is damaged).
    pub indexed: Counts,
    /// Bytes under `artifacts/`.
    pub artifacts_bytes: u64,
    /// Bytes under `index/` (the SQLite index and the vectors together).
    pub index_bytes: u64,
    /// Bytes under `index/vectors/` (LanceDB, every model's table).
    pub vector_bytes: u64,
    /// Project files and code chunks indexed for search.
    pub code_files: i64,
    /// See `code_files`.
    pub code_chunks: i64,
    /// The embedding model configured, and how many vectors it has (`None`: none yet).
    pub embedding_model: String,
    /// See `embedding_model`.
    pub vectors: Option<usize>,
    /// Why the embedding model cannot load (not installed, no ONNX Runtime), told without
    /// loading it; `None` when its files are there.
    pub embedding_model_problem: Option<String>,
    /// Texts of messages and moments that have no vector yet, so semantic search cannot find
    /// them until they are embedded (`zblade index`); `None` in server mode.
    pub pending_vectors: Option<usize>,
    /// The code model, when code has a model of its own (see docs/SEARCH.md, "The code
    /// model"), and how many vectors it has.
    pub code_model: Option<String>,
    /// See `code_model`.
    pub code_vectors: Option<usize>,
    /// The compressor model configured (`context.compression.local_model`); empty: the
    /// extractive compressor. Not loaded here: `zblade compressor status` checks it loads.
    pub compressor_model: String,
    /// Bytes under `cache/`.
    pub cache_bytes: u64,
    /// Server mode's writes waiting in `.zblade/outbox/` for the sync server (it could not be
    /// reached); the next write sends them first.
    pub outbox_waiting: usize,
    /// Writes the sync server refused for good, kept in `.zblade/outbox/rejected/`.
    pub outbox_rejected: usize,
    /// `ok`, `stale: …` (artifact and index counts differ; run fsck) or `corrupt: …`.
    pub index_health: String,
    /// The index schema version.
    pub schema_version: i64,
}

impl Project {
    /// Gathers the status. Cheap: counts files instead of hashing them (`fsck` does that).
    pub fn status(&self) -> Result<Status> {
        let layout = self.layout();
        let conversation_artifacts = count_json(&layout.conversations_dir());
        let moment_artifacts = count_json(&layout.moments_dir());
        let (code_files, code_chunks) = self.index().ok().and_then(|i| i.code_counts().ok()).unwrap_or_default();
        let vectors = zblade_search::VectorStore::count_in(&layout.vectors_dir(), &self.semantic().model_id())
            .unwrap_or_default();
        let code_model = (self.semantic().code_space() == crate::semantic::Space::Code)
            .then(|| self.semantic().model_id_of(crate::semantic::Space::Code));
        let code_vectors = code_model
            .as_ref()
            .and_then(|model| zblade_search::VectorStore::count_in(&layout.vectors_dir(), model).unwrap_or_default());
        let (indexed, schema_version, index_health) = match self.index() {
            Ok(index) => {
                let counts = index.counts()?;
                let standalone = index.indexed_artifacts()?.len() as i64 - counts.conversations;
                let check = index.quick_check()?;
                let health = if check != "ok" {
                    format!("corrupt: {check}")
                } else if counts.conversations != conversation_artifacts as i64 || standalone != moment_artifacts as i64
                {
                    format!(
                        "stale: {} conversation and {} moment artifacts on disk, {} and {} indexed; run `zblade fsck`",
                        conversation_artifacts, moment_artifacts, counts.conversations, standalone
                    )
                } else {
                    "ok".to_string()
                };
                (counts, index.schema_version()?, health)
            }
            Err(err) => (Counts::default(), 0, format!("corrupt: {err}")),
        };
        Ok(Status {
            root: layout.root().display().to_string(),
            project_id: self.settings().project.id.clone(),
            storage_mode: self.settings().storage.mode.to_string(),
            conversation_artifacts,
            moment_artifacts,
            indexed,
            artifacts_bytes: dir_size(&layout.artifacts_dir()),
            index_bytes: dir_size(&layout.index_dir()),
            vector_bytes: dir_size(&layout.vectors_dir()),
            code_files,
            code_chunks,
            embedding_model: self.settings().search.embedding_model.clone(),
            compressor_model: self.settings().context.compression.local_model.clone(),
            vectors,
            embedding_model_problem: zblade_search::embed::quick_check(&self.semantic().embedding_model_dir())
                .map(|e| e.to_string()),
            pending_vectors: self.parts.memory_without_vectors(),
            code_model,
            code_vectors,
            cache_bytes: dir_size(&layout.cache_dir()),
            outbox_waiting: crate::storage::outbox::Outbox::new(layout.outbox_dir())
                .pending()
                // Records; the vectors that follow a record are part of its write.
                .map(|waiting| waiting.iter().filter(|entry| !entry.vectors).count())
                .unwrap_or_default(),
            outbox_rejected: count_json(&layout.outbox_dir().join("rejected")),
            index_health,
            schema_version,
        })
    }
}

fn count_json(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name.ends_with(".json") && !name.starts_with('.')
                })
                .count()
        })
        .unwrap_or(0)
}

fn dir_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .filter_map(|e| e.ok())
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_size(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map(|m| m.len()).unwrap_or(0),
            _ => 0,
        })
        .sum()
}

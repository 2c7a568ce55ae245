//! [`Parts`]: what this machine holds for a project — its `.zblade/` folder and settings,
//! the SQLite index, the embedding models with their vector tables, the compressor, where
//! coding agents keep their sessions — each loaded once and kept while the project is open.
//!
//! The parts know nothing of the `Project` or of where conversations are stored
//! (`.zblade/` or a sync server): the storage is handed the parts, so operations that only read
//! the working tree, the index or the models are `impl Parts` and any storage can call them.

use zblade_core::{Error, Layout, Result, Settings};
use zblade_index::Index;

/// A project's parts; see the module documentation.
#[derive(Debug)]
pub struct Parts {
    pub(crate) layout: Layout,
    pub(crate) settings: Settings,
    /// `Err` holds why the index could not be opened (damaged file); `reindex` recreates it.
    pub(crate) index: std::result::Result<Index, String>,
    /// The embedding model: the one given to [`Parts::use_embedder`], or else the
    /// configured local model, loaded on first use.
    pub(crate) embedder: std::sync::OnceLock<
        std::result::Result<std::sync::Mutex<Box<dyn zblade_search::Embedder>>, zblade_search::EmbedError>,
    >,
    /// The code model (`search.code_model`), loaded on first use when code has a model of
    /// its own; see `semantic::Space`.
    pub(crate) code_embedder: std::sync::OnceLock<
        std::result::Result<std::sync::Mutex<Box<dyn zblade_search::Embedder>>, zblade_search::EmbedError>,
    >,
    /// The id of the embedder given to [`Parts::use_embedder`], if one was.
    pub(crate) given_embedder: Option<String>,
    /// Embeddings of recent query texts, by model id and text: the same question asked again
    /// (paging, a re-run after re-indexing stale files, context assembly) skips the model.
    pub(crate) query_vectors: std::sync::Mutex<std::collections::HashMap<String, Vec<f32>>>,
    /// The vector tables searches read (one per model: conversations, code), kept open across
    /// searches (opening one costs a runtime, a connection and a manifest read), with the model
    /// id each belongs to.
    pub(crate) vector_readers: std::sync::Mutex<Vec<(String, std::sync::Arc<zblade_search::VectorStore>)>>,
    /// What unrelated prompts score here, for the relevance gate (measured once, kept).
    pub(crate) gate_null: crate::gate_null::NullCache,
    /// The compressor model, loaded on first use; `Err` says why there is none.
    pub(crate) compressor: std::sync::OnceLock<std::result::Result<zblade_llm::Compressor, String>>,
    /// Set by the owner (the app's indexer) to stop long work between two complete batches.
    pub(crate) interrupt: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Where coding agents keep their sessions: the home folder and the agents' environment
    /// overrides, read from the environment unless [`Parts::use_agent_places`] set them.
    pub(crate) agent_places: zblade_import::detect::Places,
}

impl Parts {
    /// Makes indexing (files, embeddings, summaries) and the watch loop's re-indexing stop
    /// with [`Error::Interrupted`] between two complete batches once `flag` is set. Every
    /// batch is written whole (one SQLite transaction, one LanceDB append), so a stop never
    /// leaves a half-written index, and the next run picks up where this one stopped.
    pub fn set_interrupt(&mut self, flag: std::sync::Arc<std::sync::atomic::AtomicBool>) {
        self.interrupt = Some(flag);
    }

    /// Embeds with `embedder` instead of the configured local models (a hosted model, or a
    /// [`zblade_search::FakeEmbedder`] in tests), for conversations and code alike. Its
    /// vectors live in a table of their own, named by its model id; chunks are still named by
    /// content digest, so switching back and forth re-embeds nothing twice.
    pub fn use_embedder(&mut self, embedder: Box<dyn zblade_search::Embedder>) {
        self.given_embedder = Some(embedder.model_id().to_string());
        self.embedder = std::sync::OnceLock::from(Ok(std::sync::Mutex::new(embedder)));
        self.code_embedder = std::sync::OnceLock::new();
        self.query_vectors = Default::default();
        self.vector_readers = Default::default();
    }

    /// Looks for coding agents' sessions under `places` instead of this process's home and
    /// environment (tests; an app that imports for another user profile).
    pub fn use_agent_places(&mut self, places: zblade_import::detect::Places) {
        self.agent_places = places;
    }

    /// `Err(Interrupted)` once the flag given to [`Parts::set_interrupt`] is set.
    pub(crate) fn check_interrupt(&self) -> Result<()> {
        match &self.interrupt {
            Some(flag) if flag.load(std::sync::atomic::Ordering::Relaxed) => Err(Error::Interrupted),
            _ => Ok(()),
        }
    }

    /// The project's name as a sync server lists it: its folder's name.
    pub(crate) fn folder_name(&self) -> String {
        self.layout
            .root()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// The project's paths.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The project's settings as loaded.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The rules for files zblade never reads as project code: built-in secrets and tool
    /// folders plus this project's `privacy.secret_files` ([`zblade_core::protected`]).
    pub(crate) fn path_guard(&self) -> zblade_core::PathGuard {
        zblade_core::PathGuard::new(&self.settings.privacy.secret_files)
    }

    pub(crate) fn index(&self) -> Result<&Index> {
        self.index.as_ref().map_err(|message| Error::IndexCorrupt {
            path: self.layout.database(),
            message: message.clone(),
            source: None,
        })
    }

    pub(crate) fn index_mut(&mut self) -> Result<&mut Index> {
        let path = self.layout.database();
        self.index.as_mut().map_err(|message| Error::IndexCorrupt {
            path,
            message: message.clone(),
            source: None,
        })
    }
}

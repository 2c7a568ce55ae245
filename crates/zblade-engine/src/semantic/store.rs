//! [`Semantic`]: the store of what semantic search holds while a project is open — the
//! embedding models (loaded on first use, or one given), recent query vectors, the open vector
//! tables and the relevance gate's measured null. The work that reads and writes memory with
//! them (embedding, searching) is in the sibling modules; this one only owns the state.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use zblade_core::{Error, Result, Settings};
use zblade_index::SearchKind;
use zblade_search::{EmbedError, Embedder, LocalModel, VectorStore, Workload};

use super::{Space, embed_query, search_error};
use crate::gate_null::NullCache;

/// A model loaded once: the model, or why it does not load.
type Loaded = OnceLock<std::result::Result<Mutex<Box<dyn Embedder>>, EmbedError>>;

/// The semantic search store; see the module documentation.
#[derive(Debug)]
pub(crate) struct Semantic {
    /// `search.embedding_model`: the model directory's name for conversations and moments.
    embedding_model: String,
    /// `search.code_model`: the model directory's name for code.
    code_model: String,
    /// `.zblade/index/vectors/`.
    vectors_dir: PathBuf,
    /// The embedding model: the one given to [`Semantic::use_embedder`], or else the
    /// configured local model, loaded on first use.
    embedder: Loaded,
    /// The code model, loaded on first use when code has a model of its own (see [`Space`]).
    code_embedder: Loaded,
    /// The id of the embedder given to [`Semantic::use_embedder`], if one was.
    given: Option<String>,
    /// Embeddings of recent query texts, by model id and text: the same question asked again
    /// (paging, a re-run after re-indexing stale files, context assembly) skips the model.
    query_vectors: Mutex<HashMap<String, Vec<f32>>>,
    /// The vector tables searches read (one per model: conversations, code), kept open across
    /// searches (opening one costs a runtime, a connection and a manifest read), with the model
    /// id each belongs to.
    vector_readers: Mutex<Vec<(String, Arc<VectorStore>)>>,
    /// What unrelated prompts score here, for the relevance gate (measured once, kept).
    pub(crate) gate_null: NullCache,
    /// When a model or a vector table was last asked for: what [`Semantic::release_if_idle`]
    /// measures idleness from.
    last_used: Mutex<Instant>,
    /// [`Semantic::prepare`] ran and nothing it loaded was let go since.
    prepared: AtomicBool,
    /// The process's memory was handed back since the models or tables were last asked for
    /// ([`Semantic::first_idle_check`]).
    idled: AtomicBool,
}

impl Semantic {
    /// The store for a project with these settings, its vectors in `vectors_dir`; nothing is
    /// loaded until first used.
    pub(crate) fn new(settings: &Settings, vectors_dir: &Path) -> Semantic {
        Semantic {
            embedding_model: settings.search.embedding_model.clone(),
            code_model: settings.search.code_model_in_use().to_string(),
            vectors_dir: vectors_dir.to_path_buf(),
            embedder: OnceLock::new(),
            code_embedder: OnceLock::new(),
            given: None,
            query_vectors: Default::default(),
            vector_readers: Default::default(),
            gate_null: Default::default(),
            last_used: Mutex::new(Instant::now()),
            prepared: AtomicBool::new(false),
            idled: AtomicBool::new(false),
        }
    }

    /// Notes that a model or a vector table is in use now.
    fn touch(&self) {
        *self.last_used.lock().expect("last-used lock") = Instant::now();
        self.idled.store(false, Ordering::Relaxed);
    }

    /// True once per idle period: when nothing asked for a model or a vector table during
    /// `idle`, the first time this is asked since the last use. A long-running process hands
    /// its memory back then, whether or not a model was loaded: what ran since it last did
    /// (a watch's setup, a keyword search) is resident again.
    pub(crate) fn first_idle_check(&self, idle: Duration) -> bool {
        self.last_used.lock().expect("last-used lock").elapsed() >= idle && !self.idled.swap(true, Ordering::Relaxed)
    }

    /// Whether a local model or a vector table is loaded.
    fn holds_anything(&self) -> bool {
        (self.given.is_none() && self.embedder.get().is_some())
            || self.code_embedder.get().is_some()
            || !self.vector_readers.lock().expect("vector reader lock").is_empty()
    }

    /// Lets go of the local models and the open vector tables when none was asked for during
    /// `idle` (an idle app in the tray should not hold a few hundred megabytes for a search that
    /// may not come): the next search loads them again. An embedder given in their place
    /// ([`Semantic::use_embedder`]) is kept, since it cannot be loaded again, and so are the
    /// query vectors (small) and the gate's null. Returns whether anything was let go.
    pub(crate) fn release_if_idle(&mut self, idle: Duration) -> bool {
        if !self.holds_anything() || self.last_used.lock().expect("last-used lock").elapsed() < idle {
            return false;
        }
        if self.given.is_none() {
            self.embedder = OnceLock::new();
        }
        self.code_embedder = OnceLock::new();
        self.vector_readers = Default::default();
        self.prepared = AtomicBool::new(false);
        true
    }

    /// Embeds with `embedder` instead of the configured local models (a hosted model, or a
    /// [`zblade_search::FakeEmbedder`] in tests), for conversations and code alike. Its
    /// vectors live in a table of their own, named by its model id; chunks are still named by
    /// content digest, so switching back and forth re-embeds nothing twice.
    pub(crate) fn use_embedder(&mut self, embedder: Box<dyn Embedder>) {
        self.given = Some(embedder.model_id().to_string());
        self.embedder = OnceLock::from(Ok(Mutex::new(embedder)));
        self.code_embedder = OnceLock::new();
        self.query_vectors = Default::default();
        self.vector_readers = Default::default();
        self.prepared = AtomicBool::new(false);
    }

    /// Embeds conversations and moments with the local model in `dir_name` from now on (a model
    /// just installed and made the project's).
    pub(crate) fn use_embedding_model(&mut self, dir_name: &str) {
        self.embedding_model = dir_name.to_string();
        self.embedder = OnceLock::new();
        self.query_vectors = Default::default();
        self.vector_readers = Default::default();
        self.prepared = AtomicBool::new(false);
    }

    /// Whether an embedder was given ([`Semantic::use_embedder`]) instead of local models.
    pub(crate) fn is_given(&self) -> bool {
        self.given.is_some()
    }

    /// Closes the open vector tables: a reader opened before a write or a dropped table would
    /// not see it.
    pub(crate) fn forget_readers(&self) {
        self.vector_readers.lock().expect("vector reader lock").clear();
    }

    /// The directory of the configured embedding model (conversations and moments).
    pub(crate) fn embedding_model_dir(&self) -> PathBuf {
        crate::model_places::model_dir(&self.embedding_model)
    }

    /// The code model's directory, when code has a model of its own: configured, installed,
    /// different from the conversation model, and no embedder was given for both.
    pub(crate) fn code_model_dir(&self) -> Option<PathBuf> {
        if self.given.is_some() {
            return None;
        }
        let dir = crate::model_places::model_dir(&self.code_model);
        let installed = zblade_search::embed::MODEL_FILES.iter().all(|f| dir.join(f).is_file());
        (installed && dir != self.embedding_model_dir()).then_some(dir)
    }

    /// The space code chunks live in.
    pub(crate) fn code_space(&self) -> Space {
        if self.code_model_dir().is_some() {
            Space::Code
        } else {
            Space::Memory
        }
    }

    /// The id vectors are stored under: the given embedder's, or the model directory's name.
    pub(crate) fn model_id(&self) -> String {
        self.model_id_of(Space::Memory)
    }

    /// The id of the model that embeds `space`.
    pub(crate) fn model_id_of(&self, space: Space) -> String {
        if let Some(id) = &self.given {
            return id.clone();
        }
        let dir = match (space, self.code_model_dir()) {
            (Space::Code, Some(dir)) => dir,
            _ => self.embedding_model_dir(),
        };
        dir.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "model".into())
    }

    /// The embedding model, loaded once; the error says why semantic search is unavailable.
    pub(crate) fn embedder(&self) -> std::result::Result<&Mutex<Box<dyn Embedder>>, EmbedError> {
        self.embedder_for(Space::Memory, Workload::Batches)
    }

    /// The model that embeds `space`, loaded once (for batches, when this loads it).
    pub(crate) fn embedder_of(&self, space: Space) -> std::result::Result<&Mutex<Box<dyn Embedder>>, EmbedError> {
        self.embedder_for(space, Workload::Batches)
    }

    /// The model that embeds `space`, loaded once (for queries, when this loads it).
    pub(crate) fn query_embedder_of(&self, space: Space) -> std::result::Result<&Mutex<Box<dyn Embedder>>, EmbedError> {
        self.embedder_for(space, Workload::Queries)
    }

    /// The model that embeds `space`, loaded once. The first use decides its `workload`: a
    /// model a search loaded also embeds what the same process indexes later, on fewer
    /// threads (what a search process indexes is a few new messages).
    fn embedder_for(
        &self,
        space: Space,
        workload: Workload,
    ) -> std::result::Result<&Mutex<Box<dyn Embedder>>, EmbedError> {
        self.touch();
        let (slot, dir, id) = match (space, self.code_model_dir()) {
            (Space::Code, Some(dir)) => (&self.code_embedder, dir, self.model_id_of(Space::Code)),
            _ => (&self.embedder, self.embedding_model_dir(), self.model_id()),
        };
        slot.get_or_init(|| {
            LocalModel::load(&dir, &id, workload).map(|model| Mutex::new(Box::new(model) as Box<dyn Embedder>))
        })
        .as_ref()
        .map_err(Clone::clone)
    }

    /// `space`'s vector table if it was made already (its vector length is read from it, so
    /// no model is loaded to open it).
    pub(crate) fn existing_vectors_of(&self, space: Space) -> Result<Option<VectorStore>> {
        VectorStore::open_existing(&self.vectors_dir, &self.model_id_of(space)).map_err(search_error)
    }

    /// `space`'s vector table, made when it is not there yet; only then is the model loaded
    /// (for its vector length), and a model that does not load is the inner error.
    pub(crate) fn table_of(&self, space: Space) -> Result<std::result::Result<VectorStore, EmbedError>> {
        if let Some(store) = self.existing_vectors_of(space)? {
            return Ok(Ok(store));
        }
        match self.embedder_of(space) {
            Ok(model) => {
                let dim = model.lock().expect("embedder lock").dim();
                Ok(Ok(self.vectors_of(space, dim)?))
            }
            Err(e) => Ok(Err(e)),
        }
    }

    /// Whether the conversation model is missing, told without loading it (a model that is
    /// there but broken shows only when it loads).
    pub(crate) fn memory_model_missing(&self) -> Option<EmbedError> {
        if self.is_given() {
            return None;
        }
        zblade_search::embed::quick_check(&self.embedding_model_dir())
    }

    pub(crate) fn vectors_of(&self, space: Space, dim: usize) -> Result<VectorStore> {
        VectorStore::open(&self.vectors_dir, &self.model_id_of(space), dim).map_err(search_error)
    }

    /// The conversation model's vector table for searching (see [`Project::vector_reader_of`]).
    pub(crate) fn vector_reader(&self) -> Result<Option<Arc<VectorStore>>> {
        self.vector_reader_of(Space::Memory)
    }

    /// The vector table of `space`'s model for searching, opened on first use and kept;
    /// `None` when nothing has been embedded with that model yet. An empty table counts as
    /// none (`zblade index` makes the code model's table in a project with no code): its
    /// model is then not loaded for nothing.
    pub(crate) fn vector_reader_of(&self, space: Space) -> Result<Option<Arc<VectorStore>>> {
        self.touch();
        let model = self.model_id_of(space);
        let mut cached = self.vector_readers.lock().expect("vector reader lock");
        let store = match cached.iter().find(|(id, _)| *id == model) {
            Some((_, store)) => store.clone(),
            None => {
                let Some(store) = VectorStore::open_existing(&self.vectors_dir, &model).map_err(search_error)? else {
                    return Ok(None);
                };
                let store = Arc::new(store);
                // Two tables at most are in use (conversations, code); a model switched away
                // from is dropped here.
                cached.retain(|(id, _)| *id == self.model_id_of(Space::Memory) || *id == self.model_id_of(Space::Code));
                cached.push((model, store.clone()));
                store
            }
        };
        drop(cached);
        // Counting reads the newest manifest only (LanceDB: ~0.03 ms).
        if store.is_empty().map_err(search_error)? {
            return Ok(None);
        }
        Ok(Some(store))
    }

    /// Loads what a search of every kind needs, each on a thread of its own: each space's
    /// vector table and, when it holds vectors, its model. Opening a table takes LanceDB
    /// ~30 ms, so a model whose table's files say it holds vectors loads beside it rather
    /// than after. Errors are not reported here: the search that needs the model meets the
    /// same error and says it.
    pub(crate) fn prepare(&self) {
        let spaces = self.spaces_for(SearchKind::All);
        std::thread::scope(|scope| {
            for space in spaces {
                let early = VectorStore::probably_holds_vectors(&self.vectors_dir, &self.model_id_of(space));
                if early {
                    scope.spawn(move || self.query_embedder_of(space).is_ok());
                }
                scope.spawn(move || {
                    if let Ok(Some(_)) = self.vector_reader_of(space)
                        && !early
                    {
                        let _ = self.query_embedder_of(space);
                    }
                });
            }
        });
        self.prepared.store(true, Ordering::Relaxed);
    }

    /// Whether [`Semantic::prepare`] ran since the models were last let go (or changed).
    pub(crate) fn is_prepared(&self) -> bool {
        self.prepared.load(Ordering::Relaxed)
    }

    /// The embedding of a query text, from the cache of recent queries or the model.
    pub(crate) fn query_vector(&self, text: &str) -> Result<Vec<f32>> {
        self.query_vector_of(Space::Memory, text)
    }

    /// The recent queries' embeddings, shared with a search's vector half on another thread.
    pub(crate) fn query_cache(&self) -> &Mutex<HashMap<String, Vec<f32>>> {
        &self.query_vectors
    }

    /// The embedding of a query text by `space`'s model.
    pub(crate) fn query_vector_of(&self, space: Space, text: &str) -> Result<Vec<f32>> {
        let embedder = self.query_embedder_of(space).map_err(|e| Error::Usage(e.to_string()))?;
        embed_query(embedder, &self.query_vectors, &self.model_id_of(space), text)
    }

    /// The spaces a query of this kind searches: code, memory, or both.
    pub(crate) fn spaces_for(&self, kind: SearchKind) -> Vec<Space> {
        let code = self.code_space();
        match kind {
            SearchKind::Code => vec![code],
            SearchKind::Messages | SearchKind::Moments | SearchKind::Conversations | SearchKind::Commits => {
                vec![Space::Memory]
            }
            SearchKind::All if code == Space::Code => vec![Space::Memory, Space::Code],
            SearchKind::All => vec![Space::Memory],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_is_handed_back_once_per_idle_period() {
        let dir = tempfile::tempdir().unwrap();
        let semantic = Semantic::new(&Settings::default(), dir.path());
        let hour = Duration::from_secs(3600);
        assert!(!semantic.first_idle_check(hour), "not idle for an hour yet");
        // Idle (nothing loaded counts too): once, then not again until something is used.
        assert!(semantic.first_idle_check(Duration::ZERO));
        assert!(!semantic.first_idle_check(Duration::ZERO));
        semantic.touch();
        assert!(!semantic.first_idle_check(hour));
        assert!(semantic.first_idle_check(Duration::ZERO));
    }
}

//! Semantic and hybrid search through the engine: chunk the memory (`chunks.rs`), embed new
//! chunks with the local model and store their vectors in LanceDB (`embed.rs`), search by meaning
//! (`search.rs`) and merge vector hits with keyword hits (`hybrid.rs`), weighing the keyword list
//! (`strength.rs`). What stays loaded between calls is the [`Semantic`] store (`store.rs`); this
//! file holds the types and helpers they share.

mod chunks;
mod embed;
mod hybrid;
mod search;
mod store;
mod strength;

pub(crate) use store::Semantic;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use zblade_core::{Error, Result};
use zblade_index::{ChunkRow, HeldWords, SearchHit};
use zblade_search::{Embedder, VectorStore};

use crate::hit_details::HitDetails;

/// Held (in `.zblade/index/`) while the vector table is compacted or its ANN index rebuilt:
/// both remove the table's old versions, which must not happen in two processes at once.
const VECTORS_LOCK: &str = "vectors.lock";

/// One vector table's work in an index run: the CIDs it has, those it should have, and the
/// texts to embed into it.
struct TablePlan {
    space: Space,
    store: VectorStore,
    have: HashSet<String>,
    wanted: HashSet<String>,
    todo: Vec<(String, String)>,
}

/// Each searched space's first neighbours of a query.
type SpaceNeighbours = Vec<(Space, Option<Neighbours>)>;

/// Nearest owners in meaning, best first, as (key, similarity), and the similarity the
/// relevance gate reads.
struct SemanticKeys {
    keys: Vec<(String, f64)>,
    nearest: Option<f64>,
    /// The owner of the nearest memory chunk (a turn, moment or commit).
    top: Option<String>,
}

/// One text embedded for a message or moment: its `seq`th piece, as [`Project::refresh_chunks`]
/// names it by CID.
struct EmbeddingChunk {
    key: String,
    kind: &'static str,
    seq: i64,
    text: String,
}

impl EmbeddingChunk {
    /// Its row in the chunk catalog, named by `cid`, the CID of its text.
    fn row(&self, cid: String) -> ChunkRow {
        ChunkRow {
            key: self.key.clone(),
            seq: self.seq,
            cid,
            kind: self.kind.to_string(),
        }
    }
}

/// What [`Project::embed_new_memory`] has to do.
struct MemoryToEmbed {
    /// The catalog rows of every record whose text changed or is new.
    rows: Vec<ChunkRow>,
    /// CID → text, for those rows.
    texts: HashMap<String, String>,
    /// Catalog keys whose record no longer exists.
    gone: Vec<String>,
}

pub use zblade_index::SearchMode;

/// What embedding new chunks did.
#[derive(Debug, Clone, Serialize)]
pub struct EmbedReport {
    /// The embedding model of conversations and moments (and of code without a code model).
    pub model: String,
    /// The code model, when code has a model of its own.
    pub code_model: Option<String>,
    /// Chunks of messages, moments and code.
    pub chunks: usize,
    /// Distinct texts (CIDs) among them.
    pub distinct: usize,
    /// CIDs embedded by this run (the others already had vectors).
    pub embedded: usize,
    /// Of those, code chunks: all of them once after the code model changes.
    pub code_embedded: usize,
    /// Vectors of CIDs no longer in the catalog, removed.
    pub removed: usize,
    /// Whether vector search uses an approximate (ANN) index.
    pub ann_index: bool,
    /// Why the code model did not load, when it was needed and did not (code then stays with
    /// keyword search).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code_model_problem: Option<String>,
    /// Wall time.
    #[serde(serialize_with = "secs")]
    pub elapsed: Duration,
}

pub(crate) fn secs<S: serde::Serializer>(d: &Duration, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

// The hybrid search's shape, decided once in zblade-search: the sync server runs the same one.
pub use zblade_search::fusion::{CANDIDATES, CODE_SEMANTIC_WEIGHT, HYBRID_NEIGHBOUR_WEIGHT, HYBRID_SEMANTIC_WEIGHT};
/// Past this many vectors, vector search goes through an approximate (ANN) index; below it,
/// exact search is fast enough and always right. Exact search scans ~1 M vectors/s here
/// (112 ms at 118k in docs/BENCHMARKS.md, "Semantic and hybrid search"), so 20k keeps it
/// near 20 ms.
pub const ANN_THRESHOLD: usize = 20_000;
/// Texts embedded per call.
const EMBED_BATCH: usize = 256;

/// Query embeddings kept (a few hundred KB at 384 dimensions); the cache starts over when full.
const QUERY_CACHE_SIZE: usize = 256;

pub(crate) fn search_error(e: impl std::fmt::Display) -> Error {
    Error::Index {
        message: format!("vectors: {e}"),
        source: None,
    }
}

/// Which embedding model a text is embedded with, and so which vector table holds it:
/// conversations and moments (`search.embedding_model`) or project code (`search.code_model`).
/// When the code model is not installed, or is the same model, code lives in the memory
/// space: one model, one table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Space {
    /// Messages and moments.
    Memory,
    /// Code chunks.
    Code,
}

/// What one search found, in the mode that ran.
pub(crate) struct ModeSearch {
    /// The hits, best first.
    pub hits: Vec<SearchHit>,
    /// The mode that ran.
    pub mode: SearchMode,
    /// Why the requested (or default) mode could not run, if it could not.
    pub notice: Option<String>,
    /// Cosine similarity of the nearest chunk that passed the query's kind and filter
    /// (semantic and hybrid searches): the relevance gate's semantic evidence.
    pub nearest: Option<f64>,
    /// The owner (search key) of the nearest memory chunk, for the gate's agreement evidence.
    pub semantic_top: Option<String>,
    /// The query's words and whether memory holds each (the gate's wording evidence), when
    /// the search looked them up while its vector half ran; `Some(None)`: it has no words.
    pub held_words: Option<Option<HeldWords>>,
    /// What was read ahead of hydrating the hits (a hybrid search's keyword hits'), for
    /// [`crate::parts::Parts::with_references`].
    pub details: HitDetails,
}

/// Cores from which the two halves of a hybrid search run at the same time: two. With zblade's
/// IVF-RQ index, a context's search left the second core mostly idle while SQLite ran the
/// keyword half and then the query's embedding and ANN query ran; side by side, `Project::context`
/// went from 35–37 / 46–50 to 26–28 / 32–35 ms (p50 / p95) at 118k chunks and from 39–43 /
/// 58–61 to 34 / 50–52 ms at a million (2 cores, interleaved A/B runs of the million bench;
/// docs/BENCHMARKS.md, "The lean install"). With
/// the IVF-SQ index before it, the halves slowed each other down on 2 cores (at 118k: keyword
/// half 4.7 → 9.0 ms, vector half 19 → 30 ms) and ran one after the other.
const PARALLEL_HALVES_FROM_CORES: usize = 2;

pub(crate) fn halves_in_parallel() -> bool {
    std::thread::available_parallelism().is_ok_and(|n| n.get() >= PARALLEL_HALVES_FROM_CORES)
}

/// The first neighbours of a query, with what asking for more needs.
struct Neighbours {
    vector: Vec<f32>,
    store: Arc<VectorStore>,
    fetched: usize,
    list: Vec<zblade_search::vectors::Neighbour>,
}

/// The query's embedding (cached) and its first `fetch` neighbours; `None` when nothing is
/// embedded yet. Touches no SQLite, so it can run on another thread.
fn first_neighbours(
    embedder: &Mutex<Box<dyn Embedder>>,
    cache: &Mutex<std::collections::HashMap<String, Vec<f32>>>,
    model: &str,
    store: Option<Arc<VectorStore>>,
    text: &str,
    fetch: usize,
) -> Result<Option<Neighbours>> {
    // Nothing embedded with this model (a project without code, say): no need to embed the
    // query with it.
    let Some(store) = store else {
        return Ok(None);
    };
    let vector = embed_query(embedder, cache, model, text)?;
    if store.dim() != vector.len() {
        return Err(search_error(format!(
            "the model makes {} dimensions, its vector table holds {}; run `zblade index` again",
            vector.len(),
            store.dim()
        )));
    }
    let list = store.nearest(&vector, fetch).map_err(search_error)?;
    Ok(Some(Neighbours {
        vector,
        store,
        fetched: fetch,
        list,
    }))
}

/// Embeds a batch of (CID, text) and adds the vectors to `store`.
fn embed_into(embedder: &Mutex<Box<dyn Embedder>>, store: &VectorStore, batch: &[(String, String)]) -> Result<()> {
    let texts: Vec<&str> = batch.iter().map(|(_, t)| t.as_str()).collect();
    let vectors = embedder
        .lock()
        .expect("embedder lock")
        .embed(&texts)
        .map_err(search_error)?;
    let rows: Vec<(String, Vec<f32>)> = batch.iter().map(|(c, _)| c.clone()).zip(vectors).collect();
    store.add(&rows).map_err(search_error)
}

/// The embedding of a query text by `model`, from the cache of recent queries or the model.
fn embed_query(
    embedder: &Mutex<Box<dyn Embedder>>,
    cache: &Mutex<std::collections::HashMap<String, Vec<f32>>>,
    model: &str,
    text: &str,
) -> Result<Vec<f32>> {
    let key = format!("{model}\n{text}");
    if let Some(vector) = cache.lock().expect("query cache lock").get(&key) {
        return Ok(vector.clone());
    }
    let vector = {
        let mut model = embedder.lock().expect("embedder lock");
        model.embed(&[text]).map_err(search_error)?.remove(0)
    };
    let mut cache = cache.lock().expect("query cache lock");
    if cache.len() >= QUERY_CACHE_SIZE {
        cache.clear();
    }
    cache.insert(key, vector.clone());
    Ok(vector)
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::atomic::Ordering;

    use crate::project::Project;

    use zblade_index::{SearchKind, SearchQuery};
    use zblade_search::FakeEmbedder;

    use super::*;

    /// A one-message conversation titled `title`, as `add_conversations` takes it.
    pub(crate) fn conversation(title: &str, text: &str) -> (zblade_core::Conversation, String) {
        let json = serde_json::json!({"title": title, "messages": [{"role": "user", "content": text}]});
        (
            zblade_core::parse_conversation(json.to_string().as_bytes(), title).unwrap(),
            title.to_string(),
        )
    }

    /// The engine embeds with whatever embedder it is given: semantic search runs without
    /// ONNX Runtime, vectors are cached by content digest, and query vectors are reused.
    #[test]
    fn an_injected_embedder_serves_semantic_search_and_content_digests_stay_the_cache_key() {
        let dir = tempfile::tempdir().unwrap();
        let (mut project, _) = Project::init(dir.path()).unwrap();
        let fake = FakeEmbedder::new("fake-64", 64);
        let embedded = fake.texts_embedded();
        project.use_embedder(Box::new(fake));
        project
            .add_conversations(vec![
                conversation("keys", "rotate the jwt signing key every month"),
                conversation("bread", "banana bread needs ripe bananas"),
            ])
            .unwrap();
        let first = project.index_semantic(&mut |_, _| {}).unwrap();
        assert_eq!(first.model, "fake-64");
        assert_eq!(first.embedded, 2);
        assert_eq!(embedded.load(Ordering::Relaxed), 2);
        // Nothing changed: every chunk's digest has a vector, so the model is not asked again.
        assert_eq!(project.index_semantic(&mut |_, _| {}).unwrap().embedded, 0);
        assert_eq!(embedded.load(Ordering::Relaxed), 2);

        let query = SearchQuery::new("signing key rotation", 5, SearchKind::All);
        let ModeSearch {
            hits,
            mode,
            notice,
            nearest,
            ..
        } = project
            .parts
            .search_in_mode(&query, Some(SearchMode::Semantic), true)
            .unwrap();
        assert_eq!((mode, notice), (SearchMode::Semantic, None));
        assert!(nearest.is_some_and(|s| s > 0.0 && s <= 1.0001), "{nearest:?}");
        assert_eq!(hits[0].title.as_deref(), Some("keys"), "{hits:?}");
        // The same question again is answered from the query cache.
        project
            .parts
            .search_in_mode(&query, Some(SearchMode::Hybrid), true)
            .unwrap();
        assert_eq!(embedded.load(Ordering::Relaxed), 3);
        assert_eq!(project.semantic_unavailable(), None);
    }
}

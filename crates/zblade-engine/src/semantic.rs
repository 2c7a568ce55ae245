//! Semantic and hybrid search through the engine: chunk the memory, embed new chunks with the
//! local model, store vectors in LanceDB, and merge vector hits with keyword hits.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use zblade_core::{Error, Result};
use zblade_index::{ChunkRow, SearchHit, SearchKind, SearchQuery, hit_key};
use zblade_search::chunk::{cid, embedding_pieces, split_text};
use zblade_search::fusion::hybrid_fusion;
use zblade_search::{EmbedError, Embedder, LocalModel, VectorStore};

use crate::parts::Parts;

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

/// How to search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    /// FTS5 and BM25.
    Keyword,
    /// Nearest neighbours of the query's embedding.
    Semantic,
    /// Both, merged by relative score fusion (the default where vectors exist).
    Hybrid,
}

impl SearchMode {
    /// Its name, as JSON and the command line spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            SearchMode::Keyword => "keyword",
            SearchMode::Semantic => "semantic",
            SearchMode::Hybrid => "hybrid",
        }
    }
}

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

impl Parts {
    /// The directory of the configured embedding model (conversations and moments).
    pub(crate) fn embedding_model_dir(&self) -> PathBuf {
        crate::models::model_dir(&self.settings.search.embedding_model)
    }

    /// The code model's directory, when code has a model of its own: configured, installed,
    /// different from the conversation model, and no embedder was given for both.
    pub(crate) fn code_model_dir(&self) -> Option<PathBuf> {
        if self.given_embedder.is_some() {
            return None;
        }
        let dir = crate::models::model_dir(&self.settings.search.code_model);
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
        if let Some(id) = &self.given_embedder {
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
    pub fn embedder(&self) -> std::result::Result<&Mutex<Box<dyn Embedder>>, EmbedError> {
        self.embedder
            .get_or_init(|| {
                LocalModel::load(&self.embedding_model_dir(), &self.model_id())
                    .map(|model| Mutex::new(Box::new(model) as Box<dyn Embedder>))
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The model that embeds `space`, loaded once.
    pub(crate) fn embedder_of(&self, space: Space) -> std::result::Result<&Mutex<Box<dyn Embedder>>, EmbedError> {
        match (space, self.code_model_dir()) {
            (Space::Code, Some(dir)) => self
                .code_embedder
                .get_or_init(|| {
                    LocalModel::load(&dir, &self.model_id_of(Space::Code))
                        .map(|model| Mutex::new(Box::new(model) as Box<dyn Embedder>))
                })
                .as_ref()
                .map_err(Clone::clone),
            _ => self.embedder(),
        }
    }

    fn vectors_of(&self, space: Space, dim: usize) -> Result<VectorStore> {
        VectorStore::open(&self.layout.vectors_dir(), &self.model_id_of(space), dim).map_err(search_error)
    }

    /// The conversation model's vector table for searching (see [`Project::vector_reader_of`]).
    pub(crate) fn vector_reader(&self) -> Result<Option<Arc<VectorStore>>> {
        self.vector_reader_of(Space::Memory)
    }

    /// The vector table of `space`'s model for searching, opened on first use and kept;
    /// `None` when nothing has been embedded with that model yet.
    pub(crate) fn vector_reader_of(&self, space: Space) -> Result<Option<Arc<VectorStore>>> {
        let model = self.model_id_of(space);
        let mut cached = self.vector_readers.lock().expect("vector reader lock");
        if let Some((_, store)) = cached.iter().find(|(id, _)| *id == model) {
            return Ok(Some(store.clone()));
        }
        let Some(store) = VectorStore::open_existing(&self.layout.vectors_dir(), &model).map_err(search_error)? else {
            return Ok(None);
        };
        let store = Arc::new(store);
        // Two tables at most are in use (conversations, code); a model switched away from is
        // dropped here.
        cached.retain(|(id, _)| *id == self.model_id_of(Space::Memory) || *id == self.model_id_of(Space::Code));
        cached.push((model, store.clone()));
        Ok(Some(store))
    }

    /// Rebuilds the chunk catalog from the indexed messages and moments (deterministic: the
    /// same memory always gives the same chunks and CIDs).
    pub fn refresh_chunks(&mut self) -> Result<Vec<ChunkRow>> {
        let chunks = self.embedding_chunks()?;
        self.store_chunk_rows(&chunks)
    }

    /// Writes the chunk catalog for `chunks` (each named by the CID of its text).
    fn store_chunk_rows(&mut self, chunks: &[EmbeddingChunk]) -> Result<Vec<ChunkRow>> {
        let rows: Vec<ChunkRow> = chunks.iter().map(|chunk| chunk.row(cid(&chunk.text))).collect();
        self.index_mut()?.replace_chunks(&rows)?;
        Ok(rows)
    }

    /// Every message and moment as the texts embedded for it: a message's first piece led by
    /// the end of the message before it in its conversation ([`embedding_pieces`]), moments
    /// alone.
    fn embedding_chunks(&self) -> Result<Vec<EmbeddingChunk>> {
        let sources = self.index()?.chunk_sources()?;
        let mut out = Vec::with_capacity(sources.len());
        // Messages come in insertion order, which is each conversation's order.
        let mut last_message: HashMap<String, String> = HashMap::new();
        for (key, kind, text) in sources {
            let pieces = if kind == "message" {
                let conversation = key.split_once('/').map_or(key.as_str(), |(c, _)| c).to_string();
                let pieces = embedding_pieces(last_message.get(&conversation).map(String::as_str), &text);
                last_message.insert(conversation, text);
                pieces
            } else {
                split_text(&text)
            };
            for (seq, text) in pieces.into_iter().enumerate() {
                out.push(EmbeddingChunk {
                    key: key.clone(),
                    kind,
                    seq: seq as i64,
                    text,
                });
            }
        }
        Ok(out)
    }

    /// Embeds every chunk (messages, moments, indexed code) that has no vector yet for its
    /// model (code with the code model when it has one, see [`Space`]), reporting progress as
    /// (done, total); removes vectors nobody uses any more, compacts the tables and, past
    /// [`ANN_THRESHOLD`] vectors, keeps an ANN index.
    pub fn index_semantic(&mut self, progress: &mut dyn FnMut(usize, usize)) -> Result<EmbedReport> {
        let started = Instant::now();
        let chunks = self.embedding_chunks()?;
        let rows = self.store_chunk_rows(&chunks)?;
        let code_space = self.code_space();
        let memory = self
            .embedder_of(Space::Memory)
            .map_err(|e| Error::Usage(e.to_string()))?;
        let memory_store = self.vectors_of(Space::Memory, memory.lock().expect("embedder lock").dim())?;
        let memory_have = memory_store.cids().map_err(search_error)?;
        // A code model that does not load leaves code to keyword search (the index report says
        // why); conversations and moments are embedded all the same.
        let code_embedder = (code_space == Space::Code).then(|| self.embedder_of(Space::Code));
        let code_model_broken = matches!(code_embedder, Some(Err(_)));
        let code_store = match code_embedder {
            Some(Ok(code)) => Some(self.vectors_of(Space::Code, code.lock().expect("embedder lock").dim())?),
            _ => None,
        };
        let code_have = match &code_store {
            Some(store) => store.cids().map_err(search_error)?,
            None => memory_have.clone(),
        };
        // CID → text, for the CIDs still to embed, per space.
        let mut memory_todo: Vec<(String, String)> = Vec::new();
        let mut seen = HashSet::new();
        for (row, chunk) in rows.iter().zip(chunks) {
            if !memory_have.contains(&row.cid) && seen.insert(row.cid.clone()) {
                memory_todo.push((row.cid.clone(), chunk.text));
            }
        }
        if code_space == Space::Code {
            seen.clear();
        }
        let code_chunks = if code_model_broken {
            Vec::new()
        } else {
            self.index()?.code_chunks()?
        };
        let (mut code_todo, stale_files) = self.code_texts(&code_chunks, &code_have, &mut seen);
        if !stale_files.is_empty() {
            // Files changed since they were indexed: index them again and embed what they hold now.
            self.index_code_paths(&stale_files, &mut |_, _| {})?;
            let fresh: Vec<_> = self
                .index()?
                .code_chunks()?
                .into_iter()
                .filter(|c| stale_files.contains(&c.path))
                .collect();
            code_todo.extend(self.code_texts(&fresh, &code_have, &mut seen).0);
        }
        let memory_wanted: HashSet<String> = rows.iter().map(|r| r.cid.clone()).collect();
        let code_wanted: HashSet<String> = if code_model_broken {
            HashSet::new()
        } else {
            self.index()?.code_chunks()?.into_iter().map(|c| c.vector_cid).collect()
        };
        let distinct = match code_space {
            Space::Memory => memory_wanted.union(&code_wanted).count(),
            Space::Code => memory_wanted.len() + code_wanted.len(),
        };
        let total = memory_todo.len() + code_todo.len();
        let code_embedded = code_todo.len();
        progress(0, total);
        let mut done = 0;
        let plans = match code_store {
            None => {
                memory_todo.extend(code_todo);
                let wanted = memory_wanted.union(&code_wanted).cloned().collect();
                vec![TablePlan {
                    space: Space::Memory,
                    store: memory_store,
                    have: memory_have,
                    wanted,
                    todo: memory_todo,
                }]
            }
            Some(code_store) => vec![
                TablePlan {
                    space: Space::Memory,
                    store: memory_store,
                    have: memory_have,
                    wanted: memory_wanted,
                    todo: memory_todo,
                },
                TablePlan {
                    space: Space::Code,
                    store: code_store,
                    have: code_have,
                    wanted: code_wanted,
                    todo: code_todo,
                },
            ],
        };
        let mut removed = 0;
        let mut ann_index = false;
        for TablePlan {
            space,
            mut store,
            have,
            wanted,
            mut todo,
        } in plans
        {
            let embedder = self.embedder_of(space).map_err(|e| Error::Usage(e.to_string()))?;
            // Similar lengths together: the model pads each batch to its longest text, so
            // mixing a one-line message with a 256-token code chunk costs the one-liner 256
            // tokens of work.
            todo.sort_by_key(|(_, text)| text.len());
            for batch in todo.chunks(EMBED_BATCH) {
                self.check_interrupt()?;
                embed_into(embedder, &store, batch)?;
                done += batch.len();
                progress(done, total);
            }
            let stale: Vec<String> = have.iter().filter(|c| !wanted.contains(c.as_str())).cloned().collect();
            if !stale.is_empty() {
                store.remove(&stale).map_err(search_error)?;
            }
            removed += stale.len();
            // Compaction and index builds prune old versions: one process at a time, or each
            // would remove versions the other is rewriting.
            let _lock = crate::lock::hold(&self.layout, VECTORS_LOCK)?;
            if !todo.is_empty() || !stale.is_empty() {
                store.compact().map_err(search_error)?;
            }
            ann_index |= store.ensure_ann_index(ANN_THRESHOLD).map_err(search_error)?;
        }
        Ok(EmbedReport {
            model: self.model_id(),
            code_model: (code_space == Space::Code).then(|| self.model_id_of(Space::Code)),
            chunks: rows.len() + code_chunks.len(),
            distinct,
            embedded: total,
            code_embedded,
            removed,
            ann_index,
            elapsed: started.elapsed(),
        })
    }

    /// Texts of code chunks whose CIDs have no vector (and are not in `seen`), read from the
    /// working tree and checked against their CIDs; also the files whose chunks no longer
    /// match (changed since indexing).
    fn code_texts(
        &self,
        chunks: &[zblade_index::StoredCodeChunk],
        have: &HashSet<String>,
        seen: &mut HashSet<String>,
    ) -> (Vec<(String, String)>, Vec<String>) {
        let mut todo = Vec::new();
        let mut stale = Vec::new();
        let mut current: Option<(&str, Option<String>)> = None;
        for chunk in chunks {
            if have.contains(&chunk.vector_cid) || seen.contains(&chunk.vector_cid) {
                continue;
            }
            // Chunks come sorted by path: read each file once.
            if current.as_ref().is_none_or(|(p, _)| *p != chunk.path) {
                let full = self.layout.root().join(&chunk.path);
                let text = std::fs::read(&full)
                    .ok()
                    .map(|b| String::from_utf8_lossy(&b).into_owned());
                current = Some((chunk.path.as_str(), text));
            }
            let text = current.as_ref().and_then(|(_, t)| t.as_deref());
            match text.and_then(|t| zblade_search::code::lines_of(t, chunk.start_line, chunk.end_line)) {
                Some(lines) if cid(&lines) == chunk.cid => {
                    seen.insert(chunk.vector_cid.clone());
                    let text = zblade_syntax::embedding_text(&chunk.path, chunk.symbol.as_deref(), &lines);
                    todo.push((chunk.vector_cid.clone(), text));
                }
                _ => {
                    if stale.last() != Some(&chunk.path) {
                        stale.push(chunk.path.clone());
                    }
                }
            }
        }
        (todo, stale)
    }

    /// Embeds the code chunks of these files that have no vector yet; used by the watcher
    /// after re-indexing changed files. Does nothing when no model is available.
    pub(crate) fn embed_code_paths(&mut self, paths: &[String]) -> Result<usize> {
        let space = self.code_space();
        let Ok(embedder) = self.embedder_of(space) else {
            return Ok(0);
        };
        let dim = embedder.lock().expect("embedder lock").dim();
        let store = self.vectors_of(space, dim)?;
        let wanted: HashSet<&str> = paths.iter().map(String::as_str).collect();
        let chunks: Vec<_> = self
            .index()?
            .code_chunks()?
            .into_iter()
            .filter(|c| wanted.contains(c.path.as_str()))
            .collect();
        let cids: Vec<String> = chunks.iter().map(|c| c.vector_cid.clone()).collect();
        let have = store.existing(&cids).map_err(search_error)?;
        let (todo, _) = self.code_texts(&chunks, &have, &mut HashSet::new());
        for batch in todo.chunks(EMBED_BATCH) {
            embed_into(embedder, &store, batch)?;
        }
        Ok(todo.len())
    }

    /// Embeds the messages and moments whose text changed since they were last embedded (what
    /// was just added, imported or recorded), so they are found by meaning at once; returns
    /// how many texts were embedded. The chunk catalog says what each was embedded as: when
    /// nothing differs, no model is loaded. Nothing to do without a model (keyword search
    /// covers them) or in server mode (vectors go to the server with their records). Unlike
    /// [`Project::index_semantic`] it touches no code and removes or compacts nothing: that
    /// stays with `zblade index`.
    pub fn embed_new_memory(&mut self) -> Result<usize> {
        self.embed_new_memory_with(&mut |_, _| {})
    }

    /// [`Project::embed_new_memory`], reporting (done, total) texts as it goes: an import of
    /// thousands of turns takes a while to embed. Ctrl-C stops it between batches; what was
    /// embedded stays, the rest is found again next time.
    pub fn embed_new_memory_with(&mut self, progress: &mut dyn FnMut(usize, usize)) -> Result<usize> {
        // No model here (told without loading one): nothing to do, and nothing to compute.
        let no_model =
            self.given_embedder.is_none() && zblade_search::embed::quick_check(&self.embedding_model_dir()).is_some();
        if !self.storage_is_local() || no_model {
            return Ok(0);
        }
        let MemoryToEmbed { rows, texts, gone } = self.memory_to_embed()?;
        if rows.is_empty() && gone.is_empty() {
            return Ok(0);
        }
        let Ok(embedder) = self.embedder_of(Space::Memory) else {
            return Ok(0);
        };
        let store = self.vectors_of(Space::Memory, embedder.lock().expect("embedder lock").dim())?;
        let cids: Vec<String> = texts.keys().cloned().collect();
        let have = store.existing(&cids).map_err(search_error)?;
        let mut todo: Vec<(String, String)> = texts.into_iter().filter(|(cid, _)| !have.contains(cid)).collect();
        todo.sort_by_key(|(_, text)| text.len());
        progress(0, todo.len());
        for (i, batch) in todo.chunks(EMBED_BATCH).enumerate() {
            self.check_interrupt()?;
            embed_into(embedder, &store, batch)?;
            progress((i * EMBED_BATCH + batch.len()).min(todo.len()), todo.len());
        }
        if !todo.is_empty() {
            // Readers opened before these writes would not see them.
            self.vector_readers.lock().expect("vector reader lock").clear();
        }
        // Recorded only once their vectors are written: a failure above leaves them to be
        // found again next time.
        self.index_mut()?.update_chunks(&rows, &gone)?;
        Ok(todo.len())
    }

    /// The chunks of messages and moments whose text is not in the chunk catalog as it is now
    /// (with each new CID's text), and the catalog's keys whose record is gone.
    fn memory_to_embed(&self) -> Result<MemoryToEmbed> {
        let chunks = self.embedding_chunks()?;
        let catalog = self.index()?.chunk_map()?;
        let mut by_key: HashMap<&str, Vec<&EmbeddingChunk>> = HashMap::new();
        for chunk in &chunks {
            by_key.entry(chunk.key.as_str()).or_default().push(chunk);
        }
        let mut rows = Vec::new();
        let mut texts = HashMap::new();
        for (key, pieces) in &by_key {
            let current: Vec<String> = pieces.iter().map(|c| cid(&c.text)).collect();
            let same = current
                .iter()
                .zip(pieces)
                .all(|(c, piece)| catalog.get(&(key.to_string(), piece.seq)) == Some(c))
                && !catalog.contains_key(&(key.to_string(), pieces.len() as i64));
            if same {
                continue;
            }
            for (c, piece) in current.into_iter().zip(pieces) {
                texts.entry(c.clone()).or_insert_with(|| piece.text.clone());
                rows.push(piece.row(c));
            }
        }
        let mut gone: Vec<String> = catalog
            .keys()
            .filter(|(key, _)| !by_key.contains_key(key.as_str()))
            .map(|(key, _)| key.clone())
            .collect();
        gone.sort();
        gone.dedup();
        Ok(MemoryToEmbed { rows, texts, gone })
    }

    /// Messages and moments with text whose vector is not there yet (written since memory was
    /// last embedded, or while no model could load); `None` in server mode. Cheap: one lookup
    /// per record in the chunk catalog.
    pub(crate) fn memory_without_vectors(&self) -> Option<usize> {
        if !self.storage_is_local() {
            return None;
        }
        self.index().ok()?.memory_without_chunks().ok()
    }

    fn storage_is_local(&self) -> bool {
        self.settings.storage.mode == zblade_core::StorageMode::Local
    }

    /// Removes what search no longer needs: vector tables of models no longer configured
    /// (after switching models), and vectors of CIDs no chunk uses. Returns the tables
    /// dropped and the vectors removed.
    pub fn gc(&mut self) -> Result<(Vec<String>, usize)> {
        let dir = self.layout.vectors_dir();
        let code_space = self.code_space();
        let keep = [
            zblade_search::vectors::table_name(&self.model_id_of(Space::Memory)),
            zblade_search::vectors::table_name(&self.model_id_of(Space::Code)),
        ];
        let mut dropped = Vec::new();
        for table in VectorStore::tables(&dir).map_err(search_error)? {
            if !keep.contains(&table) {
                VectorStore::drop_table(&dir, &table).map_err(search_error)?;
                dropped.push(table);
            }
        }
        self.vector_readers.lock().expect("vector reader lock").clear();
        let memory_wanted: HashSet<String> = self.refresh_chunks()?.into_iter().map(|r| r.cid).collect();
        let code_wanted: HashSet<String> = self.index()?.code_chunks()?.into_iter().map(|c| c.vector_cid).collect();
        let spaces = match code_space {
            Space::Memory => vec![(Space::Memory, memory_wanted.union(&code_wanted).cloned().collect())],
            Space::Code => vec![(Space::Memory, memory_wanted), (Space::Code, code_wanted)],
        };
        let mut removed = 0;
        for (space, wanted) in spaces {
            let Ok(model) = self.embedder_of(space) else {
                continue;
            };
            let dim = model.lock().expect("embedder lock").dim();
            let store = self.vectors_of(space, dim)?;
            let stale: Vec<String> = store
                .cids()
                .map_err(search_error)?
                .into_iter()
                .filter(|c| !wanted.contains(c.as_str()))
                .collect();
            removed += stale.len();
            if !stale.is_empty() {
                store.remove(&stale).map_err(search_error)?;
            }
            let _lock = crate::lock::hold(&self.layout, VECTORS_LOCK)?;
            store.compact().map_err(search_error)?;
        }
        Ok((dropped, removed))
    }

    /// The embedding of a query text, from the cache of recent queries or the model.
    pub fn query_vector(&self, text: &str) -> Result<Vec<f32>> {
        self.query_vector_of(Space::Memory, text)
    }

    /// The embedding of a query text by `space`'s model.
    pub(crate) fn query_vector_of(&self, space: Space, text: &str) -> Result<Vec<f32>> {
        let embedder = self.embedder_of(space).map_err(|e| Error::Usage(e.to_string()))?;
        embed_query(embedder, &self.query_vectors, &self.model_id_of(space), text)
    }

    /// How many neighbours the first vector query asks for, so that usually `limit` pass the
    /// query's kind and filter.
    fn first_fetch(query: &SearchQuery, limit: usize) -> usize {
        // Unfiltered, every neighbour counts (a few CIDs may have no owner until `gc`, and
        // asking again covers that); with a kind or filter, most may not, so start wider.
        if query.filter.is_empty() && query.kind == SearchKind::All {
            limit + 5
        } else {
            (limit * 4).max(20)
        }
    }

    /// The spaces a query of this kind searches: code, memory, or both.
    fn spaces_for(&self, kind: SearchKind) -> Vec<Space> {
        let code = self.code_space();
        match kind {
            SearchKind::Code => vec![code],
            SearchKind::Messages | SearchKind::Moments | SearchKind::Conversations => vec![Space::Memory],
            SearchKind::All if code == Space::Code => vec![Space::Memory, Space::Code],
            SearchKind::All => vec![Space::Memory],
        }
    }

    /// The first neighbours of the query in each space it searches (embedding the query
    /// with each space's model). Touches no SQLite: the result is a closure that can run on
    /// another thread.
    fn vector_half<'a>(
        &'a self,
        query: &'a SearchQuery,
        fetch: usize,
    ) -> Result<impl FnOnce() -> Result<SpaceNeighbours> + Send + 'a> {
        let mut lookups = Vec::new();
        for space in self.spaces_for(query.kind) {
            // A model with nothing embedded yet is not even loaded.
            let Some(store) = self.vector_reader_of(space)? else {
                continue;
            };
            let embedder = self.embedder_of(space).map_err(|e| Error::Usage(e.to_string()))?;
            lookups.push((space, embedder, self.model_id_of(space), Some(store)));
        }
        let cache = &self.query_vectors;
        Ok(move || {
            lookups
                .into_iter()
                .map(|(space, embedder, model, store)| {
                    Ok((
                        space,
                        first_neighbours(embedder, cache, &model, store, &query.text, fetch)?,
                    ))
                })
                .collect()
        })
    }

    /// Messages, moments and code chunks nearest to the query in meaning that pass its kind
    /// and filter, as (key, similarity), best first.
    fn semantic_keys(&self, query: &SearchQuery, limit: usize) -> Result<SemanticKeys> {
        let firsts = self.vector_half(query, Self::first_fetch(query, limit))?()?;
        self.keys_in_spaces(query, limit, firsts)
    }

    /// The owners of each space's neighbours, merged by similarity, and the similarity the
    /// relevance gate reads: the nearest memory chunk's when memory was searched (its null
    /// is measured with the memory model), else the nearest code chunk's.
    fn keys_in_spaces(&self, query: &SearchQuery, limit: usize, firsts: SpaceNeighbours) -> Result<SemanticKeys> {
        let separate = self.code_space() == Space::Code;
        let mut all: Vec<(String, f64)> = Vec::new();
        let mut nearest = None;
        for (space, first) in firsts {
            let keys = self.keys_of_neighbours(query, limit, first, separate.then_some(space))?;
            if nearest.is_none() || space == Space::Memory {
                nearest = keys.first().map(|(_, similarity)| *similarity).or(nearest);
            }
            all.extend(keys);
        }
        // Similarities of two models are not on one scale; within a kind each list is one
        // model's, and hybrid search rescales the merged list anyway.
        all.sort_by(|a, b| b.1.total_cmp(&a.1));
        all.truncate(limit);
        Ok(SemanticKeys { keys: all, nearest })
    }

    /// The owners (messages, moments, code chunks) of `first`'s neighbours that pass the
    /// query's kind and filter; asks for more neighbours while fewer than `limit` pass.
    fn keys_of_neighbours(
        &self,
        query: &SearchQuery,
        limit: usize,
        first: Option<Neighbours>,
        only: Option<Space>,
    ) -> Result<Vec<(String, f64)>> {
        let Some(Neighbours {
            vector,
            store,
            mut fetched,
            mut list,
        }) = first
        else {
            return Ok(Vec::new());
        };
        let index = self.index()?;
        let wanted_kind = |key: &str| {
            let is_code = key.starts_with("code:");
            let is_message = !is_code && key.contains('/');
            // A text in two spaces (the same words in a message and a code chunk) counts
            // only where its kind is embedded.
            match only {
                Some(Space::Code) if !is_code => return false,
                Some(Space::Memory) if is_code => return false,
                _ => {}
            }
            match query.kind {
                SearchKind::Messages => is_message,
                SearchKind::Moments => !is_code && !is_message,
                SearchKind::Code => is_code,
                _ => true,
            }
        };
        // Vector rows carry no metadata (one row per CID, shared by every place the text
        // occurs), so kinds and filters are applied after the search: fetch more neighbours
        // until enough pass, or every vector has been seen. The table's size is asked only
        // then: each LanceDB call checks for a newer table version, which is not free.
        let mut total = None;
        loop {
            let cids: Vec<String> = list.iter().map(|n| n.cid.clone()).collect();
            let owners = index.keys_for_cids(&cids)?;
            let mut out: Vec<(String, f64)> = Vec::new();
            for n in &list {
                for key in owners.get(&n.cid).into_iter().flatten() {
                    if wanted_kind(key) && !out.iter().any(|(k, _)| k == key) && index.key_passes(key, &query.filter)? {
                        out.push((key.clone(), 1.0 - n.distance as f64));
                    }
                }
            }
            if out.len() >= limit {
                out.truncate(limit);
                return Ok(out);
            }
            let total = match total {
                Some(total) => total,
                None => *total.insert(store.len().map_err(search_error)?),
            };
            if fetched >= total {
                return Ok(out);
            }
            fetched *= 8;
            list = store.nearest(&vector, fetched).map_err(search_error)?;
        }
    }

    /// Why semantic search cannot run now, if it cannot: no runtime or model, or nothing
    /// embedded yet.
    pub fn semantic_unavailable(&self) -> Option<String> {
        self.semantic_unavailable_for(SearchKind::All)
    }

    /// Why semantic search of this kind cannot run now: it can when one of the spaces the kind
    /// searches has vectors and its model loads.
    pub(crate) fn semantic_unavailable_for(&self, kind: SearchKind) -> Option<String> {
        let spaces = self.spaces_for(kind);
        // Ask the vector tables first: it is cheap, and loading a model is not.
        let mut embedded = Vec::new();
        for &space in &spaces {
            match self
                .vector_reader_of(space)
                .and_then(|r| r.map(|s| s.len().map_err(search_error)).transpose())
            {
                Ok(Some(n)) if n > 0 => embedded.push(space),
                Ok(_) => {}
                Err(e) => return Some(format!("vectors: {e}; using keyword search")),
            }
        }
        if embedded.is_empty() {
            // Say the root cause: "run zblade index" does not help without a runtime or model.
            // A code model that does not load leaves its table empty: loading it once says so.
            let local_model_problem = match self.given_embedder {
                Some(_) => None,
                None => zblade_search::embed::quick_check(&self.embedding_model_dir()).or_else(|| {
                    spaces
                        .contains(&Space::Code)
                        .then(|| self.embedder_of(Space::Code).err())
                        .flatten()
                }),
            };
            return Some(match local_model_problem {
                Some(e) => format!("{e}; using keyword search"),
                None => "nothing is embedded yet (run `zblade index`); using keyword search".into(),
            });
        }
        // Only the models of tables that hold vectors are loaded (a search of a project without
        // code never loads the code model).
        embedded
            .iter()
            .find_map(|&space| self.embedder_of(space).err())
            .map(|e| format!("{e}; using keyword search"))
    }

    /// Search in the given mode (`None`: hybrid when a model and vectors are there, else
    /// keyword). Returns the hits and, when the requested or default mode could not run, a
    /// one-line notice saying why. Without `snippets`, message hits come with an empty snippet
    /// (context assembly reads the whole texts, and highlighting fifty hits is not free).
    pub(crate) fn search_in_mode(
        &self,
        query: &SearchQuery,
        mode: Option<SearchMode>,
        snippets: bool,
    ) -> Result<ModeSearch> {
        let unavailable = match mode {
            Some(SearchMode::Keyword) => None,
            _ => self.semantic_unavailable_for(query.kind),
        };
        // Asked for by name, semantic search never quietly becomes keyword search: the answer
        // would look like an answer by meaning and be none.
        if let (Some(SearchMode::Semantic), Some(why)) = (mode, &unavailable)
            && query.kind != SearchKind::Conversations
        {
            let why = why.strip_suffix("; using keyword search").unwrap_or(why);
            return Err(Error::Usage(format!("semantic search cannot run: {why}")));
        }
        let effective = match (mode, &unavailable) {
            (Some(SearchMode::Keyword), _) | (_, Some(_)) => SearchMode::Keyword,
            (Some(m), None) => m,
            (None, None) => SearchMode::Hybrid,
        };
        // Whole conversations are ranked by keywords only.
        let effective = if query.kind == SearchKind::Conversations {
            SearchMode::Keyword
        } else {
            effective
        };
        let index = self.index()?;
        let mut nearest = None;
        let hits = match effective {
            SearchMode::Keyword if snippets => index.search(query)?,
            SearchMode::Keyword => index.search_candidates(query)?,
            SearchMode::Semantic => {
                let SemanticKeys { keys, nearest: best } = self.semantic_keys(query, query.limit)?;
                nearest = best;
                let mut hits = Vec::new();
                for (key, similarity) in keys {
                    hits.extend(index.hit_for_key(&key, similarity)?);
                }
                hits
            }
            SearchMode::Hybrid => {
                let wide = SearchQuery {
                    limit: CANDIDATES,
                    ..query.clone()
                };
                let vector_half = self.vector_half(query, Self::first_fetch(query, CANDIDATES))?;
                let (keyword, firsts) = if halves_in_parallel() {
                    // The vector half (embedding the query, nearest neighbours) runs on a thread
                    // of its own while SQLite runs the keyword half: they share nothing until
                    // the neighbours' owners are looked up. Only what is safe to share goes to
                    // the thread (not `self`: SQLite stays here).
                    std::thread::scope(|scope| {
                        let vectors = scope.spawn(vector_half);
                        let keyword = index.search_candidates(&wide);
                        let firsts = vectors
                            .join()
                            .unwrap_or_else(|_| Err(search_error("the vector search thread panicked")));
                        (keyword, firsts)
                    })
                } else {
                    let keyword = index.search_candidates(&wide);
                    (keyword, vector_half())
                };
                let keyword = keyword?;
                let SemanticKeys {
                    keys: semantic,
                    nearest: best,
                } = self.keys_in_spaces(query, CANDIDATES, firsts?)?;
                nearest = best;
                let keyword_scores: Vec<(String, f64)> = keyword.iter().map(|h| (hit_key(h), h.score)).collect();
                let weight = match query.kind {
                    SearchKind::Code => CODE_SEMANTIC_WEIGHT,
                    _ => HYBRID_SEMANTIC_WEIGHT,
                };
                // A neighbour that was no candidate has passed no filter: with a time or path
                // filter it may only lend score, not join (a conversation filter holds for it).
                let filter = &query.filter;
                let admit_new = filter.path_prefix.is_none() && filter.since.is_none() && filter.until.is_none();
                let fused = hybrid_fusion(&keyword_scores, &semantic, weight, admit_new, |keys| {
                    index.message_neighbours(keys)
                })?;
                let mut hits = Vec::new();
                for (key, score) in fused.into_iter().take(query.limit) {
                    // Prefer the keyword hit: its snippet (added below) highlights the matched words.
                    let hit = match keyword.iter().find(|h| hit_key(h) == key) {
                        Some(hit) => Some(SearchHit { score, ..hit.clone() }),
                        None => index.hit_for_key(&key, score)?,
                    };
                    hits.extend(hit);
                }
                // Snippets for the hits shown only, not for every candidate.
                if snippets {
                    index.highlight(&mut hits, &query.text)?;
                }
                hits
            }
        };
        let notice = match (mode, unavailable) {
            // No code hits because no file was ever indexed: that, not the mode, is the news.
            _ if query.kind == SearchKind::Code && hits.is_empty() && index.code_counts()?.0 == 0 => {
                Some("no project files are indexed yet (run `zblade index`)".to_string())
            }
            (Some(SearchMode::Keyword), _) => None,
            // Asked for by meaning: say what meaning cannot find yet (keyword search can).
            (Some(SearchMode::Semantic), None) if self.storage_is_local() && query.kind != SearchKind::Code => {
                match index.memory_without_chunks()? {
                    0 => None,
                    n => Some(format!(
                        "{n} message(s) or moment(s) are not embedded yet and cannot be found by meaning (run `zblade index`)"
                    )),
                }
            }
            (_, notice) => notice,
        };
        Ok(ModeSearch {
            hits,
            mode: effective,
            notice,
            nearest,
        })
    }
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
}

/// Cores from which the two halves of a hybrid search run at the same time. LanceDB already
/// spreads one ANN query over every core; on 2 cores SQLite running beside it slowed both
/// down (keyword half 4.7 → 9.0 ms, vector half 19 → 30 ms, p50 at 118k chunks), so the
/// halves took longer together than one after the other.
const PARALLEL_HALVES_FROM_CORES: usize = 4;

fn halves_in_parallel() -> bool {
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

    use zblade_index::SearchQuery;
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
        } = project
            .search_in_mode(&query, Some(SearchMode::Semantic), true)
            .unwrap();
        assert_eq!((mode, notice), (SearchMode::Semantic, None));
        assert!(nearest.is_some_and(|s| s > 0.0 && s <= 1.0001), "{nearest:?}");
        assert_eq!(hits[0].title.as_deref(), Some("keys"), "{hits:?}");
        // The same question again is answered from the query cache.
        project.search_in_mode(&query, Some(SearchMode::Hybrid), true).unwrap();
        assert_eq!(embedded.load(Ordering::Relaxed), 3);
        assert_eq!(project.semantic_unavailable(), None);
    }
}

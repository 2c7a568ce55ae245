//! Semantic and hybrid search through the engine: chunk the memory, embed new chunks with the
//! local model, store vectors in LanceDB, and merge vector hits with keyword hits.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;
use zblade_core::{Error, Result};
use zblade_index::{ChunkRow, SearchHit, SearchKind, SearchQuery, hit_key};
use zblade_search::chunk::{cid, split_text};
use zblade_search::fusion::weighted_rank_fusion;
use zblade_search::{EmbedError, Embedder, LocalModel, VectorStore};

use crate::Project;

/// How to search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    /// FTS5 and BM25 only.
    Keyword,
    /// Vectors only.
    Semantic,
    /// Both, merged by reciprocal rank fusion.
    Hybrid,
}

/// What `zblade index` did.
#[derive(Debug, Clone, Serialize)]
pub struct IndexReport {
    /// The embedding model.
    pub model: String,
    /// Chunks of messages and moments.
    pub chunks: usize,
    /// Distinct texts (CIDs) among them.
    pub distinct: usize,
    /// CIDs embedded by this run (the others already had vectors).
    pub embedded: usize,
    /// Vectors of CIDs no longer in the catalog, removed.
    pub removed: usize,
    /// Wall time.
    #[serde(serialize_with = "secs")]
    pub elapsed: Duration,
}

fn secs<S: serde::Serializer>(d: &Duration, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// How many candidates each retriever contributes to a hybrid search.
pub const CANDIDATES: usize = 50;
/// Weights of the keyword and the semantic list in hybrid fusion. Chosen on the LoCoMo
/// development split (docs/BENCHMARKS.md, "Search quality"): BM25 is the stronger retriever
/// on conversation memory, which is full of names and specific terms; vectors add what
/// keywords miss.
pub const HYBRID_WEIGHTS: (f64, f64) = (1.0, 0.5);
/// The rank constant of hybrid fusion; smaller than the customary 60 so that the top of each
/// list counts for more (same sweep).
pub const HYBRID_K: f64 = 20.0;
/// Texts embedded per call.
const EMBED_BATCH: usize = 256;

fn search_error(e: impl std::fmt::Display) -> Error {
    Error::Index(format!("vectors: {e}"))
}

impl Project {
    /// The directory of the configured embedding model.
    pub fn embedding_model_dir(&self) -> PathBuf {
        let name = &self.settings.search.embedding_model;
        if PathBuf::from(name).is_absolute() {
            return PathBuf::from(name);
        }
        let base = std::env::var_os("ZBLADE_MODELS_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
                home.join(".cache/zblade/models")
            });
        base.join(name)
    }

    fn model_id(&self) -> String {
        let dir = self.embedding_model_dir();
        dir.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "model".into())
    }

    /// The embedding model, loaded once; the error says why semantic search is unavailable.
    pub fn embedder(&self) -> std::result::Result<&Mutex<LocalModel>, EmbedError> {
        self.embedder
            .get_or_init(|| LocalModel::load(&self.embedding_model_dir(), &self.model_id()).map(Mutex::new))
            .as_ref()
            .map_err(Clone::clone)
    }

    fn vectors(&self, dim: usize) -> Result<VectorStore> {
        VectorStore::open(&self.layout.vectors_dir(), &self.model_id(), dim).map_err(search_error)
    }

    /// Rebuilds the chunk catalog from the indexed messages and moments (deterministic: the
    /// same memory always gives the same chunks and CIDs).
    pub fn refresh_chunks(&mut self) -> Result<Vec<ChunkRow>> {
        let sources = self.index()?.chunk_sources()?;
        let mut rows = Vec::with_capacity(sources.len());
        for (key, kind, text) in sources {
            for (seq, piece) in split_text(&text).iter().enumerate() {
                rows.push(ChunkRow {
                    key: key.clone(),
                    seq: seq as i64,
                    cid: cid(piece),
                    kind: kind.to_string(),
                });
            }
        }
        self.index_mut()?.replace_chunks(&rows)?;
        Ok(rows)
    }

    /// Embeds every chunk that has no vector yet for the configured model, reporting progress
    /// as (done, total); removes vectors nobody uses any more, and compacts the table.
    pub fn index_semantic(&mut self, progress: &mut dyn FnMut(usize, usize)) -> Result<IndexReport> {
        let started = Instant::now();
        let rows = self.refresh_chunks()?;
        let embedder = self.embedder().map_err(|e| Error::Usage(e.to_string()))?;
        let dim = embedder.lock().expect("embedder lock").dim();
        let store = self.vectors(dim)?;
        let have = store.cids().map_err(search_error)?;
        let sources = self.index()?.chunk_sources()?;
        // CID → text, for the CIDs still to embed.
        let mut todo: Vec<(String, String)> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (_, _, text) in &sources {
            for piece in split_text(text) {
                let id = cid(&piece);
                if !have.contains(&id) && seen.insert(id.clone()) {
                    todo.push((id, piece));
                }
            }
        }
        let wanted: std::collections::HashSet<&str> = rows.iter().map(|r| r.cid.as_str()).collect();
        let stale: Vec<String> = have.iter().filter(|c| !wanted.contains(c.as_str())).cloned().collect();
        let total = todo.len();
        progress(0, total);
        let mut done = 0;
        for batch in todo.chunks(EMBED_BATCH) {
            let texts: Vec<&str> = batch.iter().map(|(_, t)| t.as_str()).collect();
            let vectors = embedder
                .lock()
                .expect("embedder lock")
                .embed(&texts)
                .map_err(search_error)?;
            let rows: Vec<(String, Vec<f32>)> = batch.iter().map(|(c, _)| c.clone()).zip(vectors).collect();
            store.add(&rows).map_err(search_error)?;
            done += batch.len();
            progress(done, total);
        }
        if !stale.is_empty() {
            store.remove(&stale).map_err(search_error)?;
        }
        if total > 0 || !stale.is_empty() {
            store.compact().map_err(search_error)?;
        }
        Ok(IndexReport {
            model: self.model_id(),
            chunks: rows.len(),
            distinct: wanted.len(),
            embedded: total,
            removed: stale.len(),
            elapsed: started.elapsed(),
        })
    }

    /// Removes what search no longer needs: vector tables of models other than the configured
    /// one (after switching models), and vectors of CIDs no chunk uses. Returns the tables
    /// dropped and the vectors removed.
    pub fn gc(&mut self) -> Result<(Vec<String>, usize)> {
        let dir = self.layout.vectors_dir();
        let keep = zblade_search::vectors::table_name(&self.model_id());
        let mut dropped = Vec::new();
        for table in VectorStore::tables(&dir).map_err(search_error)? {
            if table != keep {
                VectorStore::drop_table(&dir, &table).map_err(search_error)?;
                dropped.push(table);
            }
        }
        let mut removed = 0;
        let rows = self.refresh_chunks()?;
        if let Ok(model) = self.embedder() {
            let dim = model.lock().expect("embedder lock").dim();
            let wanted: std::collections::HashSet<&str> = rows.iter().map(|r| r.cid.as_str()).collect();
            let store = self.vectors(dim)?;
            let stale: Vec<String> = store
                .cids()
                .map_err(search_error)?
                .into_iter()
                .filter(|c| !wanted.contains(c.as_str()))
                .collect();
            removed = stale.len();
            if removed > 0 {
                store.remove(&stale).map_err(search_error)?;
            }
            store.compact().map_err(search_error)?;
        }
        Ok((dropped, removed))
    }

    /// Messages and moments nearest to `text` in meaning, as (key, similarity), best first.
    fn semantic_keys(&self, text: &str, limit: usize, kind: SearchKind) -> Result<Vec<(String, f64)>> {
        let embedder = self.embedder().map_err(|e| Error::Usage(e.to_string()))?;
        let query = {
            let mut model = embedder.lock().expect("embedder lock");
            model.embed(&[text]).map_err(search_error)?.remove(0)
        };
        let store = self.vectors(query.len())?;
        let neighbours = store.nearest(&query, limit * 4).map_err(search_error)?;
        let cids: Vec<String> = neighbours.iter().map(|n| n.cid.clone()).collect();
        let owners = self.index()?.keys_for_cids(&cids)?;
        let mut out: Vec<(String, f64)> = Vec::new();
        for n in &neighbours {
            for key in owners.get(&n.cid).into_iter().flatten() {
                let is_message = key.contains('/');
                let wanted = match kind {
                    SearchKind::Messages => is_message,
                    SearchKind::Moments => !is_message,
                    _ => true,
                };
                if wanted && !out.iter().any(|(k, _)| k == key) {
                    out.push((key.clone(), 1.0 - n.distance as f64));
                }
            }
        }
        out.truncate(limit);
        Ok(out)
    }

    /// Why semantic search cannot run now, if it cannot: no runtime or model, or nothing
    /// embedded yet.
    pub fn semantic_unavailable(&self) -> Option<String> {
        // Ask the vector table first: it is cheap, and loading a model is not.
        match VectorStore::count_in(&self.layout.vectors_dir(), &self.model_id()) {
            Ok(Some(n)) if n > 0 => {}
            Ok(_) => return Some("nothing is embedded yet (run `zblade index`); using keyword search".into()),
            Err(e) => return Some(format!("vectors: {e}; using keyword search")),
        }
        self.embedder().err().map(|e| format!("{e}; using keyword search"))
    }

    /// Search in the given mode (`None`: hybrid when a model and vectors are there, else
    /// keyword). Returns the hits and, when the requested or default mode could not run, a
    /// one-line notice saying why.
    pub fn search_mode(
        &self,
        query: &SearchQuery,
        mode: Option<SearchMode>,
    ) -> Result<(Vec<SearchHit>, SearchMode, Option<String>)> {
        let unavailable = match mode {
            Some(SearchMode::Keyword) => None,
            _ => self.semantic_unavailable(),
        };
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
        let hits = match effective {
            SearchMode::Keyword => index.search(query)?,
            SearchMode::Semantic => {
                let keys = self.semantic_keys(&query.text, query.limit, query.kind)?;
                let mut hits = Vec::new();
                for (key, similarity) in keys {
                    hits.extend(index.hit_for_key(&key, similarity)?);
                }
                hits
            }
            SearchMode::Hybrid => {
                let keyword = index.search(&SearchQuery::new(query.text.clone(), CANDIDATES, query.kind))?;
                let semantic = self.semantic_keys(&query.text, CANDIDATES, query.kind)?;
                let keyword_keys: Vec<String> = keyword.iter().map(hit_key).collect();
                let semantic_keys: Vec<String> = semantic.iter().map(|(k, _)| k.clone()).collect();
                let lists = [
                    (keyword_keys.as_slice(), HYBRID_WEIGHTS.0),
                    (semantic_keys.as_slice(), HYBRID_WEIGHTS.1),
                ];
                let mut hits = Vec::new();
                for (key, score) in weighted_rank_fusion(&lists, HYBRID_K).into_iter().take(query.limit) {
                    // Prefer the keyword hit: its snippet highlights the matched words.
                    let hit = match keyword.iter().find(|h| hit_key(h) == key) {
                        Some(hit) => Some(SearchHit { score, ..hit.clone() }),
                        None => index.hit_for_key(&key, score)?,
                    };
                    hits.extend(hit);
                }
                hits
            }
        };
        let notice = match (mode, unavailable) {
            (Some(SearchMode::Keyword), _) => None,
            (_, notice) => notice,
        };
        Ok((hits, effective, notice))
    }
}

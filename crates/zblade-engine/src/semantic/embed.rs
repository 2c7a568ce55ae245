//! Embedding: every chunk without a vector (`zblade index`), what a command just wrote, the
//! code files that changed; and removing what no chunk needs any more.

use std::collections::HashSet;
use std::time::Instant;

use zblade_core::{Error, Result};
use zblade_search::VectorStore;
use zblade_search::chunk::cid;

use super::{
    ANN_THRESHOLD, EMBED_BATCH, EmbedReport, MemoryToEmbed, Space, TablePlan, VECTORS_LOCK, embed_into, search_error,
};
use crate::project::Project;

/// Small appended pieces a vector table may hold before `zblade index` merges them though it
/// embedded nothing itself (each costs a search one more file to open).
const MAX_SMALL_FRAGMENTS: usize = 8;

impl Project {
    /// The conversation model, loaded once; the error says why semantic search is unavailable
    /// (benchmarks compare zblade's embedding with the model's own).
    pub fn embedder(
        &self,
    ) -> std::result::Result<&std::sync::Mutex<Box<dyn zblade_search::Embedder>>, zblade_search::EmbedError> {
        self.semantic().embedder()
    }

    /// The embedding of a query text, from the cache of recent queries or the model.
    pub fn query_vector(&self, text: &str) -> Result<Vec<f32>> {
        self.semantic().query_vector(text)
    }

    /// Rebuilds the chunk catalog from the indexed messages and moments (deterministic: the
    /// same memory always gives the same chunks and CIDs).
    pub fn refresh_chunks(&mut self) -> Result<Vec<zblade_index::ChunkRow>> {
        self.parts.refresh_chunks()
    }

    /// Embeds every chunk (messages, moments, indexed code) that has no vector yet for its
    /// model (code with the code model when it has one, see [`Space`]), reporting progress as
    /// (done, total); removes vectors nobody uses any more, compacts the tables and, past
    /// [`ANN_THRESHOLD`] vectors, keeps an ANN index.
    pub fn index_semantic(&mut self, progress: &mut dyn FnMut(usize, usize)) -> Result<EmbedReport> {
        let started = Instant::now();
        let chunks = self.parts.embedding_chunks()?;
        let rows = self.parts.store_chunk_rows(&chunks)?;
        let code_space = self.semantic().code_space();
        // A model is loaded only to embed something, or to learn the vector length of a table
        // not made yet: an index run with nothing new (each start of the tray app) loads none.
        let memory_store = self
            .semantic()
            .table_of(Space::Memory)?
            .map_err(|e| Error::Usage(e.to_string()))?;
        let memory_have = memory_store.cids().map_err(search_error)?;
        // A code model that does not load leaves code to keyword search (the report says
        // why); conversations and moments are embedded all the same.
        let mut code_model_problem = None;
        let code_store = match code_space {
            Space::Memory => None,
            Space::Code => self
                .semantic()
                .table_of(Space::Code)?
                .map_err(|e| code_model_problem = Some(e.to_string()))
                .ok(),
        };
        let code_model_broken = code_model_problem.is_some();
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
        let mut total = memory_todo.len() + code_todo.len();
        let mut code_embedded = code_todo.len();
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
            let embedder = if todo.is_empty() {
                None
            } else {
                match self.semantic().embedder_of(space) {
                    Ok(embedder) => Some(embedder),
                    // The code model stopped loading after its table was made: code stays
                    // with keyword search, as when it never loaded.
                    Err(e) if space == Space::Code => {
                        code_model_problem = Some(e.to_string());
                        (total, code_embedded) = (total - todo.len(), 0);
                        todo.clear();
                        None
                    }
                    Err(e) => return Err(Error::Usage(e.to_string())),
                }
            };
            if let Some(embedder) = embedder {
                // Similar lengths together: the model pads each batch to its longest text, so
                // mixing a one-line message with a 256-token code chunk costs the one-liner
                // 256 tokens of work.
                todo.sort_by_key(|(_, text)| text.len());
                for batch in todo.chunks(EMBED_BATCH) {
                    self.check_interrupt()?;
                    embed_into(embedder, &store, batch)?;
                    done += batch.len();
                    progress(done, total);
                }
            }
            let stale: Vec<String> = have.iter().filter(|c| !wanted.contains(c.as_str())).cloned().collect();
            if !stale.is_empty() {
                store.remove(&stale).map_err(search_error)?;
            }
            removed += stale.len();
            // Compaction and index builds prune old versions: one process at a time, or each
            // would remove versions the other is rewriting.
            let _lock = crate::lock::hold(self.layout(), VECTORS_LOCK)?;
            // Also when only others wrote: what `zblade add` and the hooks embed arrives in
            // small appends, which nothing else merges (a 26k-vector table left in 100 pieces
            // made a search open 39 of them).
            let fragmented = store.small_fragments().map_err(search_error)? > MAX_SMALL_FRAGMENTS;
            if !todo.is_empty() || !stale.is_empty() || fragmented {
                store.compact().map_err(search_error)?;
            }
            ann_index |= store.ensure_ann_index(ANN_THRESHOLD).map_err(search_error)?;
        }
        Ok(EmbedReport {
            model: self.semantic().model_id(),
            code_model: (code_space == Space::Code).then(|| self.semantic().model_id_of(Space::Code)),
            chunks: rows.len() + code_chunks.len(),
            distinct,
            embedded: total,
            code_embedded,
            removed,
            ann_index,
            code_model_problem,
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
                let full = self.layout().root().join(&chunk.path);
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
        let space = self.semantic().code_space();
        let Ok(embedder) = self.semantic().embedder_of(space) else {
            return Ok(0);
        };
        let dim = embedder.lock().expect("embedder lock").dim();
        let store = self.semantic().vectors_of(space, dim)?;
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
        let no_model = !self.semantic().is_given()
            && zblade_search::embed::quick_check(&self.semantic().embedding_model_dir()).is_some();
        if !self.parts.storage_is_local() || no_model {
            return Ok(0);
        }
        let MemoryToEmbed { rows, texts, gone } = self.parts.memory_to_embed()?;
        if rows.is_empty() && gone.is_empty() {
            return Ok(0);
        }
        let Ok(embedder) = self.semantic().embedder_of(Space::Memory) else {
            return Ok(0);
        };
        let store = self
            .semantic()
            .vectors_of(Space::Memory, embedder.lock().expect("embedder lock").dim())?;
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
            self.semantic().forget_readers();
        }
        // Recorded only once their vectors are written: a failure above leaves them to be
        // found again next time.
        self.index_mut()?.update_chunks(&rows, &gone)?;
        Ok(todo.len())
    }

    /// Removes what search no longer needs: vector tables of models no longer configured
    /// (after switching models), and vectors of CIDs no chunk uses. Returns the tables
    /// dropped and the vectors removed.
    pub fn gc(&mut self) -> Result<(Vec<String>, usize)> {
        let dir = self.layout().vectors_dir();
        let code_space = self.semantic().code_space();
        let keep = [
            zblade_search::vectors::table_name(&self.semantic().model_id_of(Space::Memory)),
            zblade_search::vectors::table_name(&self.semantic().model_id_of(Space::Code)),
        ];
        let mut dropped = Vec::new();
        for table in VectorStore::tables(&dir).map_err(search_error)? {
            if !keep.contains(&table) {
                VectorStore::drop_table(&dir, &table).map_err(search_error)?;
                dropped.push(table);
            }
        }
        self.semantic().forget_readers();
        let memory_wanted: HashSet<String> = self.parts.refresh_chunks()?.into_iter().map(|r| r.cid).collect();
        let code_wanted: HashSet<String> = self.index()?.code_chunks()?.into_iter().map(|c| c.vector_cid).collect();
        let spaces = match code_space {
            Space::Memory => vec![(Space::Memory, memory_wanted.union(&code_wanted).cloned().collect())],
            Space::Code => vec![(Space::Memory, memory_wanted), (Space::Code, code_wanted)],
        };
        let mut removed = 0;
        for (space, wanted) in spaces {
            let Ok(model) = self.semantic().embedder_of(space) else {
                continue;
            };
            let dim = model.lock().expect("embedder lock").dim();
            let store = self.semantic().vectors_of(space, dim)?;
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
            let _lock = crate::lock::hold(self.layout(), VECTORS_LOCK)?;
            store.compact().map_err(search_error)?;
        }
        Ok((dropped, removed))
    }
}

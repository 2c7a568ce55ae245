//! Search by meaning: the query's nearest chunks in each space it searches and their owners
//! that pass the query's kind and filter; and the search in a mode (keyword, semantic or
//! hybrid, `hybrid.rs`) with the notice of why a mode could not run.

use zblade_core::{Error, Result};
use zblade_index::{SearchKind, SearchQuery};

use super::{ModeSearch, Neighbours, SearchMode, SemanticKeys, Space, SpaceNeighbours, first_neighbours, search_error};
use crate::hit_details::HitDetails;
use crate::parts::Parts;
use crate::project::Project;

impl Parts {
    /// How many neighbours the first vector query asks for, so that usually `limit` pass the
    /// query's kind and filter.
    pub(super) fn first_fetch(query: &SearchQuery, limit: usize) -> usize {
        // Unfiltered, every neighbour counts (a few CIDs may have no owner until `gc`, and
        // asking again covers that); with a kind or filter, most may not, so start wider.
        if query.filter.is_empty() && query.kind == SearchKind::All {
            limit + 5
        } else {
            (limit * 4).max(20)
        }
    }

    /// The first neighbours of the query in each space it searches (embedding the query
    /// with each space's model). Touches no SQLite: the result is a closure that can run on
    /// another thread.
    pub(super) fn vector_half<'a>(
        &'a self,
        query: &'a SearchQuery,
        fetch: usize,
    ) -> Result<impl FnOnce() -> Result<SpaceNeighbours> + Send + 'a> {
        let mut lookups = Vec::new();
        for space in self.semantic().spaces_for(query.kind) {
            // A model with nothing embedded yet is not even loaded.
            let Some(store) = self.semantic().vector_reader_of(space)? else {
                continue;
            };
            let embedder = self
                .semantic()
                .query_embedder_of(space)
                .map_err(|e| Error::Usage(e.to_string()))?;
            lookups.push((space, embedder, self.semantic().model_id_of(space), Some(store)));
        }
        let cache = self.semantic().query_cache();
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
    pub(super) fn keys_in_spaces(
        &self,
        query: &SearchQuery,
        limit: usize,
        firsts: SpaceNeighbours,
    ) -> Result<SemanticKeys> {
        let separate = self.semantic().code_space() == Space::Code;
        let mut all: Vec<(String, f64)> = Vec::new();
        let mut nearest = None;
        let mut top = None;
        for (space, first) in firsts {
            let keys = self.keys_of_neighbours(query, limit, first, separate.then_some(space))?;
            if nearest.is_none() || space == Space::Memory {
                nearest = keys.first().map(|(_, similarity)| *similarity).or(nearest);
            }
            if space == Space::Memory {
                top = keys
                    .iter()
                    .find(|(k, _)| !k.starts_with("code:"))
                    .map(|(k, _)| k.clone());
            }
            all.extend(keys);
        }
        // Similarities of two models are not on one scale; within a kind each list is one
        // model's, and hybrid search rescales the merged list anyway.
        all.sort_by(|a, b| b.1.total_cmp(&a.1));
        all.truncate(limit);
        Ok(SemanticKeys {
            keys: all,
            nearest,
            top,
        })
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
            let is_commit = key.starts_with("commit:");
            let is_message = !is_code && !is_commit && key.contains('/');
            // A text in two spaces (the same words in a message and a code chunk) counts
            // only where its kind is embedded.
            match only {
                Some(Space::Code) if !is_code => return false,
                Some(Space::Memory) if is_code => return false,
                _ => {}
            }
            match query.kind {
                SearchKind::Messages => is_message,
                SearchKind::Moments => !is_code && !is_message && !is_commit,
                SearchKind::Code => is_code,
                SearchKind::Commits => is_commit,
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

    /// Why semantic search of this kind cannot run now: it can when one of the spaces the kind
    /// searches has vectors and its model loads.
    pub(crate) fn semantic_unavailable_for(&self, kind: SearchKind) -> Option<String> {
        let spaces = self.semantic().spaces_for(kind);
        // Ask the vector tables first: it is cheap, and loading a model is not.
        let mut embedded = Vec::new();
        for &space in &spaces {
            match self
                .semantic()
                .vector_reader_of(space)
                .and_then(|r| r.map(|s| s.has_vectors().map_err(search_error)).transpose())
            {
                Ok(Some(true)) => embedded.push(space),
                Ok(_) => {}
                Err(e) => return Some(format!("vectors: {e}; using keyword search")),
            }
        }
        if embedded.is_empty() {
            // Say the root cause: "run zblade index" does not help without a runtime or model.
            // A code model that does not load leaves its table empty: loading it once says so.
            let local_model_problem = match self.semantic().is_given() {
                true => None,
                false => zblade_search::embed::quick_check(&self.semantic().embedding_model_dir()).or_else(|| {
                    spaces
                        .contains(&Space::Code)
                        .then(|| self.semantic().query_embedder_of(Space::Code).err())
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
            .find_map(|&space| self.semantic().query_embedder_of(space).err())
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
        let mut semantic_top = None;
        let mut held_words = None;
        let mut details = HitDetails::default();
        let hits = match effective {
            SearchMode::Keyword if snippets => index.search(query)?,
            SearchMode::Keyword => index.search_candidates(query)?,
            SearchMode::Semantic => {
                let SemanticKeys {
                    keys,
                    nearest: best,
                    top,
                } = self.semantic_keys(query, query.limit)?;
                nearest = best;
                semantic_top = top;
                let mut hits = Vec::new();
                for (key, similarity) in keys {
                    hits.extend(index.hit_for_key(&key, similarity)?);
                }
                hits
            }
            SearchMode::Hybrid => {
                let hybrid = self.hybrid_hits(query, snippets)?;
                nearest = hybrid.nearest;
                semantic_top = hybrid.semantic_top;
                held_words = hybrid.held_words;
                details = hybrid.details;
                hybrid.hits
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
                // Only the newest are looked at: counting them all reads every message.
                const WINDOW: usize = 10_000;
                match index.newest_memory_without_chunks(WINDOW)? {
                    0 => None,
                    n => Some(format!(
                        "{}{n} message(s) or moment(s) are not embedded yet and cannot be found by meaning (run `zblade index`)",
                        if n >= WINDOW { "at least " } else { "" }
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
            semantic_top,
            held_words,
            details,
        })
    }
}

impl Project {
    /// Why semantic search cannot run now, if it cannot: no runtime or model, or nothing
    /// embedded yet.
    pub fn semantic_unavailable(&self) -> Option<String> {
        self.parts.semantic_unavailable_for(SearchKind::All)
    }
}

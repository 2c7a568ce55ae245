//! Hybrid search: the keyword half in SQLite and the vector half (the query's embedding and
//! ANN query) side by side, fused into one ranking with the keyword hits' neighbouring turns.

use std::collections::{HashMap, HashSet};

use zblade_core::Result;
use zblade_index::{HeldWords, SearchHit, SearchKind, SearchQuery, hit_key};
use zblade_search::fusion::hybrid_fusion_weighted;

use super::{CANDIDATES, CODE_SEMANTIC_WEIGHT, HYBRID_SEMANTIC_WEIGHT, SemanticKeys, halves_in_parallel, search_error};
use crate::hit_details::HitDetails;
use crate::parts::Parts;

/// The keys whose neighbouring turns were looked up, and the lists found (a key with none has
/// no entry), as `Index::message_neighbours` answers.
type LookedUpNeighbours = (HashSet<String>, HashMap<String, Vec<String>>);

/// A hybrid search's hits and the evidence it gathered for the relevance gate (as in
/// [`super::ModeSearch`]).
pub(super) struct HybridHits {
    pub hits: Vec<SearchHit>,
    pub nearest: Option<f64>,
    pub semantic_top: Option<String>,
    pub held_words: Option<Option<HeldWords>>,
    /// The keyword hits' details, read while the vector half ran.
    pub details: HitDetails,
}

impl Parts {
    /// Hybrid search of `query`: a wide keyword list and the nearest chunks in meaning, fused;
    /// the best `query.limit` hits, with snippets when asked for.
    pub(super) fn hybrid_hits(&self, query: &SearchQuery, snippets: bool) -> Result<HybridHits> {
        let index = self.index()?;
        let mut held_words = None;
        let mut details = HitDetails::default();
        let wide = SearchQuery {
            limit: CANDIDATES,
            ..query.clone()
        };
        // Keyword hits that hold few of the query's words (a bug report in symptom words
        // against a decision in other words) are weak evidence, however they rank.
        // Code queries keep the weights the code-search benchmark chose.
        let strength_of = |keyword: &[SearchHit]| match query.kind {
            SearchKind::Code => Ok(1.0),
            _ => self.keyword_strength(&query.text, keyword),
        };
        let vector_half = self.vector_half(query, Self::first_fetch(query, CANDIDATES))?;
        // The keyword hits' neighbouring turns (fusion below asks for every fused
        // key's), when looked up early.
        let mut early_neighbours: Option<LookedUpNeighbours> = None;
        let (keyword, strength, firsts) = if halves_in_parallel() {
            // The vector half (embedding the query, nearest neighbours) runs on a thread
            // of its own while SQLite runs the keyword half: they share nothing until
            // the neighbours' owners are looked up. Only what is safe to share goes to
            // the thread (not `self`: SQLite stays here). The vector half takes longer
            // (at a million chunks 14 against 5 ms), so this thread goes on with what
            // needs SQLite alone: the keyword list's strength, the query's words for
            // the relevance gate, the keyword hits' neighbouring turns, and what
            // hydrating the keyword hits reads (most of them are among the fused hits).
            std::thread::scope(|scope| {
                let vectors = scope.spawn(vector_half);
                let keyword = index.search_candidates(&wide);
                let strength = keyword.as_deref().map_or(Ok(1.0), strength_of);
                held_words = index.held_words(&query.text).ok();
                if let Ok(hits) = &keyword {
                    let keys: Vec<String> = hits.iter().map(hit_key).collect();
                    early_neighbours = index
                        .message_neighbours(&keys)
                        .ok()
                        .map(|found| (keys.into_iter().collect(), found));
                    // Read ahead only: a failure here is met again, and reported, when
                    // the fused hits are hydrated.
                    let _ = details.read(index, hits);
                }
                let firsts = vectors
                    .join()
                    .unwrap_or_else(|_| Err(search_error("the vector search thread panicked")));
                (keyword, strength, firsts)
            })
        } else {
            let keyword = index.search_candidates(&wide);
            let strength = keyword.as_deref().map_or(Ok(1.0), strength_of);
            (keyword, strength, vector_half())
        };
        let keyword = keyword?;
        let strength = strength?;
        let SemanticKeys {
            keys: semantic,
            nearest,
            top: semantic_top,
        } = self.keys_in_spaces(query, CANDIDATES, firsts?)?;
        let keyword_scores: Vec<(String, f64)> = keyword.iter().map(|h| (hit_key(h), h.score)).collect();
        let weight = match query.kind {
            SearchKind::Code => CODE_SEMANTIC_WEIGHT,
            _ => HYBRID_SEMANTIC_WEIGHT,
        };
        // A neighbour that was no candidate has passed no filter: with a time or path
        // filter it may only lend score, not join (a conversation filter holds for it).
        let filter = &query.filter;
        let admit_new = filter.path_prefix.is_none() && filter.since.is_none() && filter.until.is_none();
        let keyword_weight = (1.0 - weight) * strength;
        let fused = hybrid_fusion_weighted(&keyword_scores, keyword_weight, &semantic, weight, admit_new, |keys| {
            let Some((asked, found)) = early_neighbours else {
                return index.message_neighbours(keys);
            };
            // The same map as asking for every key now: the lookup is key by key,
            // and only keys asked for now may be in it (a neighbour fusion admits
            // has no list of its own).
            let rest: Vec<String> = keys.iter().filter(|k| !asked.contains(k.as_str())).cloned().collect();
            let mut neighbours = index.message_neighbours(&rest)?;
            for key in keys {
                if let Some(list) = found.get(key) {
                    neighbours.insert(key.clone(), list.clone());
                }
            }
            Ok(neighbours)
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
        Ok(HybridHits {
            hits,
            nearest,
            semantic_top,
            held_words,
            details,
        })
    }
}

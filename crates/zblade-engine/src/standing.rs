//! Whether retrieved memory still stands, before it is packed: the marks people made
//! (`zblade moments supersede|reject`) read from the index, what superseded a retrieved
//! decision brought in when the search did not find it, and the amendments nobody marked
//! (`zblade_context::revisits`).

use std::collections::HashSet;

use zblade_context::{Candidate, Item, Source, Standing};
use zblade_core::{Result, ids};
use zblade_index::{SearchFilter, SearchKind, SearchQuery};

use crate::candidates::memory_candidate;
use crate::project::Project;

impl Project {
    /// Marks the retrieved candidates that no longer stand and makes sure what superseded
    /// them is among the candidates, ranked above them.
    pub(crate) fn mark_standing(&self, candidates: &mut Vec<Candidate>, search_text: &str) -> Result<()> {
        if self.storage.on_this_machine() {
            self.apply_marks(candidates, search_text)?;
        }
        zblade_context::revisits::mark_revisits(candidates);
        Ok(())
    }

    /// The marks people made, from the index (local storage keeps them there).
    fn apply_marks(&self, candidates: &mut Vec<Candidate>, search_text: &str) -> Result<()> {
        let retrieved = |c: &Candidate| {
            c.source == Source::Retrieved && matches!(c.item, Item::Message { .. } | Item::Moment { .. })
        };
        let owners: Vec<String> = candidates
            .iter()
            .filter(|c| retrieved(c))
            .filter_map(|c| c.owner().map(String::from))
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        if owners.is_empty() {
            return Ok(());
        }
        let states = self
            .index()?
            .decision_states(&owners.iter().map(String::as_str).collect::<Vec<_>>())?;
        if states.is_empty() {
            return Ok(());
        }
        let mut missing: Vec<(String, f64)> = Vec::new();
        for c in candidates.iter_mut().filter(|c| retrieved(c)) {
            let Some(state) = c.owner().and_then(|o| states.get(o)) else {
                continue;
            };
            let d = &state.decision;
            c.standing = Some(Standing {
                state: d.state.as_str().to_string(),
                by: d.by.clone(),
                reason: d.reason.clone(),
            });
            if let Some(by) = &d.by
                && !owners.contains(by)
            {
                missing.push((by.clone(), c.retrieval));
            }
            c.retrieval *= 0.9;
        }
        for (by, retrieval) in missing {
            if candidates.iter().any(|c| c.owner() == Some(by.as_str())) {
                continue;
            }
            if let Some(candidate) = self.best_turn_of(&by, search_text, retrieval)? {
                candidates.push(candidate);
            }
        }
        Ok(())
    }

    /// The turn of conversation (or the moment) `owner` that best matches the prompt, as a
    /// retrieved candidate: what superseded a decision the search found.
    fn best_turn_of(&self, owner: &str, search_text: &str, retrieval: f64) -> Result<Option<Candidate>> {
        let parts = &self.parts;
        if owner.starts_with(ids::MOMENT) {
            return Ok(self
                .storage
                .moment_text(parts, owner)?
                .map(|t| memory_candidate(&t, Source::Retrieved, retrieval)));
        }
        let filter = SearchFilter {
            conversation: Some(owner.to_string()),
            ..SearchFilter::default()
        };
        let query = SearchQuery::new(search_text, 1, SearchKind::Messages).with_filter(filter);
        let index = self.index()?;
        let key = match index.search_candidates(&query)?.first() {
            Some(hit) => zblade_index::hit_key(hit),
            // No word of the prompt in it: its last turn says where it ended.
            None => match self.storage.recent_turns(parts, owner, 1)? {
                Some((_, turns)) => match turns.last() {
                    Some(t) => t.key.clone(),
                    None => return Ok(None),
                },
                None => return Ok(None),
            },
        };
        Ok(index
            .memory_texts(&[key])?
            .first()
            .map(|t| memory_candidate(t, Source::Retrieved, retrieval)))
    }
}

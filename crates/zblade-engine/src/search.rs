//! Search through the engine: index hits, with their code references hydrated.

use std::collections::HashMap;

use serde::Serialize;
use zblade_core::Result;
use zblade_index::{HitKind, SearchHit, StoredReference, hit_key};

use crate::hit_details::HitDetails;
use crate::parts::Parts;
use crate::refs::ReferenceReport;
use crate::semantic::SearchMode;

/// A search result with the code it references, as the code is now.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Hit {
    /// The index hit.
    #[serde(flatten)]
    pub hit: SearchHit,
    /// Code references of the message or moment, checked now, with current code.
    pub references: Vec<ReferenceReport>,
    /// Other conversations holding this message: forks that share it with the conversation
    /// it was found in, conversations it was merged into. One hit names them all.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub also_in: Vec<String>,
}

/// The outcome of a search in some mode.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SearchResults {
    /// The mode that ran.
    pub mode: SearchMode,
    /// Why the requested (or default) mode could not run, if it could not.
    pub notice: Option<String>,
    /// The hits, best first.
    pub hits: Vec<Hit>,
    /// Files whose indexed chunks no longer match the working tree: their hits were left
    /// out, and the files need indexing again (`Project::search` does it).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stale_files: Vec<String>,
    /// Time the search took in the engine (the storage's search and hydrating the hits), in
    /// milliseconds.
    pub elapsed_ms: f64,
}

impl Parts {
    /// Hydrates hits: message and moment hits get their code references checked now; code
    /// hits get their text from the working tree, verified against the CID they were indexed
    /// with. Code hits that fail the check are dropped and their files returned.
    /// `details` holds what was read of them already; what it lacks is read into it.
    pub(crate) fn with_references(
        &self,
        hits: Vec<SearchHit>,
        details: &mut HitDetails,
    ) -> Result<(Vec<Hit>, Vec<String>)> {
        let mut stale = Vec::new();
        let hits: Vec<SearchHit> = hits
            .into_iter()
            .filter_map(|mut hit| {
                let (Some(path), Some(lines), Some(cid)) = (&hit.path, hit.lines, &hit.cid) else {
                    return Some(hit);
                };
                match self.verified_code(path, lines, cid) {
                    Some(text) => {
                        hit.snippet = text;
                        Some(hit)
                    }
                    None => {
                        if !stale.contains(path) {
                            stale.push(path.clone());
                        }
                        None
                    }
                }
            })
            .collect();
        let index = self.index()?;
        details.read(index, &hits)?;
        // Only messages and moments have references (whole conversations, code and commits
        // own none).
        let stored: Vec<&[StoredReference]> = hits.iter().map(|hit| details.references(&hit_key(hit))).collect();
        let references = self.hydrate_many(&stored);
        // A message merged into other conversations is indexed under each (with its id); it
        // is one hit, in the best-ranked place, naming the others.
        let mut hits: Vec<Hit> = hits
            .into_iter()
            .zip(references)
            .map(|(hit, references)| Hit {
                hit,
                references,
                also_in: Vec::new(),
            })
            .collect();
        // The same message is the same id *and* the same text: ids are unique only within a
        // conversation, so two conversations may use `msg_1` for different messages.
        let mut first_place: HashMap<(String, &str), usize> = HashMap::new();
        let mut kept = Vec::with_capacity(hits.len());
        for hit in hits.drain(..) {
            if hit.hit.kind == HitKind::Message
                && let Some(conv) = hit.hit.conversation_id.clone()
                && let Some(text) = details.text(&hit_key(&hit.hit))
            {
                let key = (hit.hit.id.clone(), text.text.as_str());
                if let Some(&at) = first_place.get(&key) {
                    let first: &mut Hit = &mut kept[at];
                    first.also_in.push(conv);
                    continue;
                }
                first_place.insert(key, kept.len());
            }
            kept.push(hit);
        }
        for hit in &mut kept {
            if hit.hit.kind == HitKind::Message {
                for fork in details.sharing(&hit_key(&hit.hit)) {
                    if !hit.also_in.contains(fork) {
                        hit.also_in.push(fork.clone());
                    }
                }
            }
        }
        Ok((kept, stale))
    }
}

#[cfg(test)]
mod tests {
    use zblade_index::{SearchKind, SearchQuery};
    use zblade_search::FakeEmbedder;

    use super::*;
    use crate::project::Project;

    /// A project with a code file, two conversations that reference it and one that does
    /// not, embedded by a fake model.
    fn project() -> (tempfile::TempDir, Project) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/cache.rs"), "fn evict() {}\nfn insert() {}\n").unwrap();
        let (mut project, _) = Project::init(dir.path()).unwrap();
        project.use_embedder(Box::new(FakeEmbedder::new("fake-64", 64)));
        for (title, text) in [
            ("lru", "evict the cache entries with an lru policy"),
            ("ttl", "expire cache entries after five minutes"),
        ] {
            let json = serde_json::json!({"title": title, "messages": [
                {"role": "user", "content": text, "code_references": [{"file": "src/cache.rs", "lines": [1, 2]}]},
                {"role": "assistant", "content": format!("agreed: {text}")},
            ]});
            project.add_conversation(json.to_string().as_bytes(), title).unwrap();
        }
        let json = serde_json::json!({"title": "bread", "messages": [{"role": "user", "content": "banana bread"}]});
        project.add_conversation(json.to_string().as_bytes(), "bread").unwrap();
        project.index_semantic(&mut |_, _| {}).unwrap();
        (dir, project)
    }

    /// What a hybrid search reads ahead for its keyword hits is what hydrating them would
    /// read: the hits come out the same as hydrated from nothing, and with every text.
    #[test]
    fn details_read_ahead_hydrate_hits_as_reading_them_afresh_does() {
        let (_dir, project) = project();
        let query = SearchQuery::new("cache entries policy", 10, SearchKind::All);
        let found = project
            .parts
            .search_in_mode(&query, Some(SearchMode::Hybrid), false)
            .unwrap();
        assert_eq!(found.mode, SearchMode::Hybrid);
        if crate::semantic::halves_in_parallel() {
            let memory = |h: &&SearchHit| matches!(h.kind, HitKind::Message | HitKind::Moment);
            assert!(
                found
                    .hits
                    .iter()
                    .filter(memory)
                    .any(|h| found.details.is_read(&hit_key(h))),
                "the keyword hits were read ahead"
            );
        }
        let mut ahead = found.details;
        let mut afresh = HitDetails::default();
        let (with_ahead, stale_ahead) = project.parts.with_references(found.hits.clone(), &mut ahead).unwrap();
        let (with_afresh, stale_afresh) = project.parts.with_references(found.hits.clone(), &mut afresh).unwrap();
        assert_eq!(stale_ahead, stale_afresh);
        let summary = |hits: &[Hit]| -> Vec<String> {
            hits.iter()
                .map(|h| {
                    format!(
                        "{} {:?} {:?}",
                        hit_key(&h.hit),
                        h.references.iter().map(|r| &r.code).collect::<Vec<_>>(),
                        h.also_in
                    )
                })
                .collect()
        };
        assert_eq!(summary(&with_ahead), summary(&with_afresh));
        assert!(
            with_ahead.iter().any(|h| !h.references.is_empty()),
            "{:?}",
            summary(&with_ahead)
        );
        for hit in found
            .hits
            .iter()
            .filter(|h| matches!(h.kind, HitKind::Message | HitKind::Moment))
        {
            let key = hit_key(hit);
            assert_eq!(ahead.text(&key), afresh.text(&key), "{key}");
            assert!(ahead.text(&key).is_some(), "{key}");
        }
    }

    /// A key is read once: asking again for hits already read reads only the new ones, and a
    /// hit whose record is gone counts as read, without a text.
    #[test]
    fn details_are_read_once_per_key() {
        let (_dir, project) = project();
        let index = project.parts.index().unwrap();
        let query = SearchQuery::new("cache", 10, SearchKind::Messages);
        let hits = index.search_candidates(&query).unwrap();
        assert!(hits.len() >= 2, "{hits:?}");
        let mut details = HitDetails::default();
        details.read(index, &hits[..1]).unwrap();
        assert!(details.is_read(&hit_key(&hits[0])) && !details.is_read(&hit_key(&hits[1])));
        let mut gone = hits[1].clone();
        gone.id = "msg_gone".into();
        details
            .read(index, &[hits[0].clone(), hits[1].clone(), gone.clone()])
            .unwrap();
        assert!(details.is_read(&hit_key(&hits[1])) && details.is_read(&hit_key(&gone)));
        assert!(details.text(&hit_key(&hits[1])).is_some());
        assert!(details.text(&hit_key(&gone)).is_none());
        assert!(details.references(&hit_key(&gone)).is_empty());
    }
}

//! Search through the engine: index hits, with their code references hydrated.

use serde::Serialize;
use zblade_core::Result;
use zblade_index::{HitKind, SearchHit};

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
    pub(crate) fn with_references(&self, hits: Vec<SearchHit>) -> Result<(Vec<Hit>, Vec<String>)> {
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
        // Whole conversations carry no references of their own: an empty owner matches none.
        let owners: Vec<String> = hits
            .iter()
            .map(|hit| match (hit.kind, &hit.conversation_id) {
                (HitKind::Message, Some(conv)) => format!("{conv}/{}", hit.id),
                (HitKind::Moment, _) => hit.id.clone(),
                _ => String::new(),
            })
            .collect();
        let references = self.references_of_many(&owners)?;
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
        let index = self.index()?;
        let message_keys: Vec<String> = hits
            .iter()
            .filter(|h| h.hit.kind == HitKind::Message)
            .map(|h| zblade_index::hit_key(&h.hit))
            .collect();
        let texts: std::collections::HashMap<String, String> = index
            .memory_texts(&message_keys)?
            .into_iter()
            .map(|t| (t.key, t.text))
            .collect();
        let mut first_place: std::collections::HashMap<(String, &str), usize> = std::collections::HashMap::new();
        let mut kept = Vec::with_capacity(hits.len());
        for hit in hits.drain(..) {
            if hit.hit.kind == HitKind::Message
                && let Some(conv) = hit.hit.conversation_id.clone()
                && let Some(text) = texts.get(&zblade_index::hit_key(&hit.hit))
            {
                let key = (hit.hit.id.clone(), text.as_str());
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
            if let (HitKind::Message, Some(conv)) = (hit.hit.kind, &hit.hit.conversation_id) {
                for fork in index.sharing_message(conv, &hit.hit.id)? {
                    if !hit.also_in.contains(&fork) {
                        hit.also_in.push(fork);
                    }
                }
            }
        }
        Ok((kept, stale))
    }
}

//! Search through the engine: index hits, with their code references hydrated.

use serde::Serialize;
use zblade_core::Result;
use zblade_index::{HitKind, SearchHit, SearchQuery};

use crate::{Project, ReferenceReport};

/// A search result with the code it references, as the code is now.
#[derive(Debug, Clone, Serialize)]
pub struct Hit {
    /// The index hit.
    #[serde(flatten)]
    pub hit: SearchHit,
    /// Code references of the message or moment, checked now, with current code.
    pub references: Vec<ReferenceReport>,
}

impl Project {
    /// Keyword search (FTS5, BM25) over messages, moments and conversations. Message and
    /// moment hits carry their code references, checked against the working tree now.
    pub fn search(&self, query: &SearchQuery) -> Result<Vec<Hit>> {
        let hits = self.index()?.search(query)?;
        hits.into_iter()
            .map(|hit| {
                let owner = match (hit.kind, &hit.conversation_id) {
                    (HitKind::Message, Some(conv)) => Some(format!("{conv}/{}", hit.id)),
                    (HitKind::Moment, _) => Some(hit.id.clone()),
                    _ => None,
                };
                let references = match owner {
                    Some(owner) => self.references_of(&owner)?,
                    None => Vec::new(),
                };
                Ok(Hit { hit, references })
            })
            .collect()
    }
}

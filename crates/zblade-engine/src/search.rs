//! Search through the engine: index hits, with their code references hydrated.

use serde::Serialize;
use zblade_core::Result;
use zblade_index::{HitKind, SearchHit, SearchQuery};

use crate::{Project, ReferenceReport, SearchMode};

/// A search result with the code it references, as the code is now.
#[derive(Debug, Clone, Serialize)]
pub struct Hit {
    /// The index hit.
    #[serde(flatten)]
    pub hit: SearchHit,
    /// Code references of the message or moment, checked now, with current code.
    pub references: Vec<ReferenceReport>,
}

/// The outcome of a search in some mode.
#[derive(Debug, Clone, Serialize)]
pub struct SearchResults {
    /// The mode that ran.
    pub mode: SearchMode,
    /// Why the requested (or default) mode could not run, if it could not.
    pub notice: Option<String>,
    /// The hits, best first.
    pub hits: Vec<Hit>,
}

impl Project {
    /// Keyword search (FTS5, BM25) over messages, moments and conversations. Message and
    /// moment hits carry their code references, checked against the working tree now.
    pub fn search(&self, query: &SearchQuery) -> Result<Vec<Hit>> {
        let hits = self.index()?.search(query)?;
        self.with_references(hits)
    }

    /// Search in `mode` (`None`: hybrid when semantic search is available, else keyword),
    /// with code references hydrated.
    pub fn search_with(&self, query: &SearchQuery, mode: Option<SearchMode>) -> Result<SearchResults> {
        let (hits, mode, notice) = self.search_mode(query, mode)?;
        Ok(SearchResults {
            mode,
            notice,
            hits: self.with_references(hits)?,
        })
    }

    fn with_references(&self, hits: Vec<SearchHit>) -> Result<Vec<Hit>> {
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
        Ok(hits
            .into_iter()
            .zip(references)
            .map(|(hit, references)| Hit { hit, references })
            .collect())
    }
}

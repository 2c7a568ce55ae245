//! A search request as every face sends it ([`SearchQuery`]), checked and completed here: the
//! limit, the path filter, whether the conversation exists, and results that never show code
//! that changed since it was indexed.

use std::time::Instant;

use zblade_core::{Error, Result};
use zblade_index::SearchQuery;

use crate::project::Project;
use crate::search::SearchResults;

impl Project {
    /// Searches the project's memory and code as `query` asks, in `query.mode` (`None`: hybrid
    /// when semantic search is available, else keyword), with code references checked against
    /// the working tree. The one search every face calls: the engine checks the request (see
    /// [`SearchQuery`]) and, when a code hit's file changed since it was indexed, indexes that
    /// file again (and embeds its new chunks) and searches once more, so results never show
    /// code that is no longer there.
    pub fn search(&mut self, query: &SearchQuery) -> Result<SearchResults> {
        let results = self.search_as_indexed(query)?;
        if results.stale_files.is_empty() {
            return Ok(results);
        }
        self.index_code_paths(&results.stale_files, &mut |_, _| {})?;
        self.embed_code_paths(&results.stale_files)?;
        self.search_as_indexed(query)
    }

    /// [`Project::search`] over the index as it stands: stale code hits are left out and
    /// named in `stale_files`, not re-indexed.
    pub(crate) fn search_as_indexed(&self, query: &SearchQuery) -> Result<SearchResults> {
        let started = Instant::now();
        let query = &self.checked_search(query)?;
        let mut results = self.storage.search(&self.parts, query, query.mode, true)?;
        results.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        Ok(results)
    }

    /// `query` as every face may send it, checked once here: a limit of at least one (capped
    /// at [`SearchQuery::MAX_LIMIT`]), a path inside the project (`./` and `.` mean all of
    /// it), a conversation that exists. An impossible request is a usage error rather than
    /// "no results", which would be a lie.
    fn checked_search(&self, query: &SearchQuery) -> Result<SearchQuery> {
        let mut query = query.clone();
        if query.limit == 0 {
            return Err(Error::Usage("the limit must be at least 1".into()));
        }
        query.limit = query.limit.min(SearchQuery::MAX_LIMIT);
        if let Some(prefix) = query.filter.path_prefix.take() {
            let trimmed = prefix.trim();
            let whole_project = matches!(trimmed.trim_end_matches('/'), "" | ".");
            if !whole_project {
                let mut normal = zblade_core::paths::normalize_relative(trimmed)
                    .map_err(|why| Error::Usage(format!("path {why}")))?;
                if trimmed.ends_with('/') {
                    normal.push('/');
                }
                query.filter.path_prefix = Some(normal);
            }
        }
        if let Some(conversation) = &query.filter.conversation
            && self.storage.recent_turns(&self.parts, conversation, 0)?.is_none()
        {
            return Err(Error::NotFound(format!(
                "no conversation {conversation:?} in this project"
            )));
        }
        Ok(query)
    }
}

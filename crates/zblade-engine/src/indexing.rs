//! `zblade index`: the whole search index brought up to date in one run — conversations
//! converted to manifests, project files, embeddings, then summaries.

use serde::Serialize;
use zblade_core::Result;

use crate::code::CodeIndexReport;
use crate::history::HistoryReport;
use crate::project::Project;
use crate::semantic::EmbedReport;
use crate::summaries::SummarizeReport;

/// What `zblade index` did: project files first, then embeddings when a model is available.
#[derive(Debug, Clone, Serialize)]
pub struct IndexReport {
    /// Conversations converted from format 1 (messages inline) to manifests.
    pub converted: usize,
    /// Project files.
    pub code: CodeIndexReport,
    /// The repository's commits.
    pub history: HistoryReport,
    /// Embeddings; `None` when semantic search is unavailable (see `notice`).
    pub semantic: Option<EmbedReport>,
    /// Why embeddings were not computed, if they were not.
    pub notice: Option<String>,
    /// Conversation summaries brought up to date (those 10+ messages behind, or missing).
    pub summaries: SummarizeReport,
}

/// Where a long index run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexStage {
    /// Converting conversations stored with their messages inline (format 1) to manifests
    /// over the message store; once per project.
    Conversations,
    /// Reading and chunking project files.
    Files,
    /// Reading the repository's new commits and attributing their lines.
    History,
    /// Embedding chunks.
    Embedding,
    /// Summarising conversations that grew (see [`crate::summaries::REFRESH_EVERY`]).
    Summaries,
}

impl Project {
    /// Brings the whole search index up to date: project files, then embeddings of every
    /// chunk that has none yet (when a model is available; otherwise keyword search still
    /// covers everything and the report says why embeddings were skipped), then the
    /// summaries of conversations that grew by [`crate::summaries::REFRESH_EVERY`] messages.
    pub fn update_search_index(&mut self, progress: &mut dyn FnMut(IndexStage, usize, usize)) -> Result<IndexReport> {
        let converted =
            self.convert_conversations(&mut |done, total| progress(IndexStage::Conversations, done, total))?;
        let code = self.index_code(&mut |done, total| progress(IndexStage::Files, done, total))?;
        // Before embedding: commit messages are embedded with the rest of memory.
        progress(IndexStage::History, 0, 1);
        let history = self.index_history()?;
        progress(IndexStage::History, 1, 1);
        // Told without loading the model: a run with nothing new to embed loads none.
        let no_model = |e: &dyn std::fmt::Display| Some(format!("{e}; only keyword search is indexed"));
        let (semantic, notice) = match self.semantic().memory_model_missing() {
            Some(e) => (None, no_model(&e)),
            None => match self.index_semantic(&mut |done, total| progress(IndexStage::Embedding, done, total)) {
                Ok(report) => {
                    let notice = report.code_model_problem.as_ref().map(|e| {
                        format!(
                            "code model: {}; code is searched by keyword only",
                            e.trim_end_matches('.')
                        )
                    });
                    (Some(report), notice)
                }
                // The model is there but did not load when it was needed: keyword search
                // only, as when it is missing.
                Err(error) => match self.semantic().embedder() {
                    Err(e) => (None, no_model(&e)),
                    Ok(_) => return Err(error),
                },
            },
        };
        let summaries = self.summarize_with_progress(None, false, &mut |done, total| {
            progress(IndexStage::Summaries, done, total)
        })?;
        Ok(IndexReport {
            converted,
            code,
            history,
            semantic,
            notice,
            summaries,
        })
    }
}

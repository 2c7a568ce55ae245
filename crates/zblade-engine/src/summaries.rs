//! Conversation summaries: a short account of each conversation (goal, decisions, changes,
//! what is open), written by the compressor model when one is configured and extractively
//! otherwise, and refreshed once a conversation has grown by [`REFRESH_EVERY`] messages.
//! Summaries are derived data: they live in `.zblade/cache/summaries/` and can be rebuilt.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use zblade_context::{Cl100k, TokenCounter};
use zblade_core::{Conversation, Error, Result, fsio};
use zblade_llm::Compressor;

use crate::compressor::ModelTokens;
use crate::project::Project;
use zblade_index::Page;

/// A summary is redone once its conversation has this many messages more than when it was
/// written.
pub const REFRESH_EVERY: usize = 10;
/// Longest summary, in tokens.
pub const SUMMARY_TOKENS: usize = 256;
/// Each message enters a transcript with at most this many characters: one pasted log must
/// not crowd out the rest of the conversation.
const MESSAGE_CHARS: usize = 1_500;

/// The summary of one conversation.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SessionSummary {
    /// The conversation.
    pub conversation: String,
    /// Messages the conversation had when this was written.
    pub messages: usize,
    /// Who wrote it: `llama:NAME:SIZE` or `extractive`.
    pub summarizer: String,
    /// The summary.
    pub summary: String,
    /// When it was written.
    pub updated_at: DateTime<Utc>,
}

/// What `zblade summarize` did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SummarizeReport {
    /// `llama:NAME:SIZE` when the model wrote them, else `extractive`.
    pub summarizer: String,
    /// Conversations looked at.
    pub conversations: usize,
    /// Conversations whose summary was (re)written.
    pub refreshed: Vec<String>,
    /// Conversations whose summary was still fresh.
    pub unchanged: usize,
    /// Fallbacks and other things worth knowing.
    pub notices: Vec<String>,
}

/// `role: text` lines, each message cut to [`MESSAGE_CHARS`]: what the model reads of a
/// conversation (summaries and moment extraction).
pub(crate) fn transcript_lines(conversation: &Conversation) -> Vec<String> {
    conversation
        .messages
        .iter()
        .map(|m| {
            let text: String = m.content.chars().take(MESSAGE_CHARS).collect();
            format!("{}: {}", m.role.as_str(), text.trim())
        })
        .collect()
}

/// The transcript to fit `max_tokens`: the first message (it usually states the goal) and as
/// many of the latest messages as fit, with a marker where messages were left out.
pub(crate) fn fitted_transcript(lines: &[String], max_tokens: usize, counter: &dyn TokenCounter) -> String {
    let Some((first, rest)) = lines.split_first() else {
        return String::new();
    };
    let mut used = counter.count(first);
    let mut tail: Vec<&String> = Vec::new();
    for line in rest.iter().rev() {
        let tokens = counter.count(line) + 1;
        if used + tokens > max_tokens {
            break;
        }
        used += tokens;
        tail.push(line);
    }
    let skipped = rest.len() - tail.len();
    let mut out = first.clone();
    if skipped > 0 {
        out.push_str(&format!("\n[... {skipped} earlier messages left out ...]"));
    }
    for line in tail.into_iter().rev() {
        out.push('\n');
        out.push_str(line);
    }
    out
}

impl Project {
    fn summary_path(&self, conversation: &str) -> std::path::PathBuf {
        self.layout()
            .cache_dir()
            .join("summaries")
            .join(format!("{conversation}.json"))
    }

    /// The stored summary of `conversation`, if one was written (a corrupt file counts as none).
    pub(crate) fn conversation_summary(&self, conversation: &str) -> Option<SessionSummary> {
        std::fs::read(self.summary_path(conversation))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
    }

    /// Writes summaries for `conversation` (or every conversation) that have none, or whose
    /// conversation grew by [`REFRESH_EVERY`] messages since; `force` rewrites them all.
    pub fn summarize(&mut self, conversation: Option<&str>, force: bool) -> Result<SummarizeReport> {
        self.summarize_with_progress(conversation, force, &mut |_, _| {})
    }

    /// [`Project::summarize`], reporting (conversations done, total) as it goes.
    pub(crate) fn summarize_with_progress(
        &mut self,
        conversation: Option<&str>,
        force: bool,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<SummarizeReport> {
        let ids = self.conversation_ids(conversation)?;
        let total = ids.len();
        let model = self.local_compressor();
        let mut report = SummarizeReport {
            summarizer: match &model {
                Ok(c) => Project::compressor_id(c),
                Err(_) => "extractive".into(),
            },
            ..SummarizeReport::default()
        };
        report.notices.extend(self.compressor_notice());
        let is_fresh = |summary: Option<SessionSummary>, messages: usize| {
            summary.is_some_and(|s| messages >= s.messages && messages < s.messages + REFRESH_EVERY)
        };
        // Message counts from the index decide which conversations are still fresh, so a run
        // over a project whose summaries are current (what `zblade index` does each time)
        // reads no artifact.
        let indexed = self.indexed_message_counts()?;
        for (done, id) in ids.into_iter().enumerate() {
            self.check_interrupt()?;
            progress(done, total);
            report.conversations += 1;
            if !force
                && let Some(&count) = indexed.get(&id)
                && is_fresh(self.conversation_summary(&id), count)
            {
                report.unchanged += 1;
                continue;
            }
            let conv = self.load_conversation(&id)?;
            let messages = conv.messages.len();
            if (!force && is_fresh(self.conversation_summary(&id), messages)) || messages == 0 {
                report.unchanged += 1;
                continue;
            }
            let lines = transcript_lines(&conv);
            let (summary, summarizer) = match &model {
                Ok(compressor) => match self.model_summary(compressor, &lines) {
                    Ok(text) => (text, Project::compressor_id(compressor)),
                    Err(e) => {
                        report.notices.push(format!(
                            "{id}: the model could not summarise it ({e}); summarised extractively"
                        ));
                        (extractive_summary(&conv, &lines), "extractive".to_string())
                    }
                },
                Err(_) => (extractive_summary(&conv, &lines), "extractive".to_string()),
            };
            let entry = SessionSummary {
                conversation: id.clone(),
                messages,
                summarizer,
                summary,
                updated_at: Utc::now(),
            };
            let path = self.summary_path(&id);
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
            }
            fsio::write_atomic(&path, &serde_json::to_vec_pretty(&entry).expect("a summary serialises"))?;
            report.refreshed.push(id);
        }
        progress(total, total);
        Ok(report)
    }

    fn model_summary(
        &self,
        compressor: &Compressor,
        lines: &[String],
    ) -> std::result::Result<String, zblade_llm::LlmError> {
        // Room for the instructions and the answer inside the model's context window.
        let room = (compressor.info().context_tokens as usize).saturating_sub(SUMMARY_TOKENS + 400);
        let transcript = fitted_transcript(lines, room, &ModelTokens(compressor));
        let request = zblade_llm::jobs::summary_request(&transcript, SUMMARY_TOKENS as u32, self.job_timeout());
        let (text, _) = self.run_model_job(compressor, "summary", request, zblade_llm::jobs::parse_text)?;
        Ok(zblade_context::extractive::truncate(
            &text,
            SUMMARY_TOKENS,
            &ModelTokens(compressor),
        ))
    }

    /// Messages per conversation, as the index counts them.
    fn indexed_message_counts(&self) -> Result<std::collections::HashMap<String, usize>> {
        let mut counts = std::collections::HashMap::new();
        loop {
            let page = self.list_conversations(Page::new(500, counts.len()), None)?;
            if page.is_empty() {
                break;
            }
            counts.extend(page.into_iter().map(|c| (c.id, c.message_count.max(0) as usize)));
        }
        Ok(counts)
    }

    /// Ids of `conversation`, or of every conversation in the project.
    pub(crate) fn conversation_ids(&self, conversation: Option<&str>) -> Result<Vec<String>> {
        if let Some(id) = conversation {
            return Ok(vec![id.to_string()]);
        }
        let mut all = Vec::new();
        loop {
            let page = self.list_conversations(Page::new(500, all.len()), None)?;
            if page.is_empty() {
                break;
            }
            all.extend(page.into_iter().map(|c| c.id));
        }
        Ok(all)
    }
}

/// The extractive summary: the sentences of the transcript that best cover its title and
/// carry paths, numbers and names, in order, within [`SUMMARY_TOKENS`].
fn extractive_summary(conv: &Conversation, lines: &[String]) -> String {
    let counter = Cl100k::new();
    let transcript = fitted_transcript(lines, 6_000, &counter);
    zblade_context::extractive::shrink(&transcript, SUMMARY_TOKENS, &conv.title, &counter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_transcripts_keep_the_first_and_the_latest_messages() {
        let counter = Cl100k::new();
        let lines: Vec<String> = (0..100)
            .map(|i| format!("user: message number {i} about the build"))
            .collect();
        let fitted = fitted_transcript(&lines, 60, &counter);
        assert!(fitted.starts_with("user: message number 0 "), "{fitted}");
        assert!(fitted.ends_with("message number 99 about the build"), "{fitted}");
        assert!(fitted.contains("earlier messages left out"), "{fitted}");
        assert!(counter.count(&fitted) <= 60 + 20, "{}", counter.count(&fitted));
        let short = fitted_transcript(&lines[..3], 1_000, &counter);
        assert_eq!(short.lines().count(), 3);
        assert_eq!(fitted_transcript(&[], 10, &counter), "");
    }
}

//! How much keyword hits say about a query: the keyword list's weight in hybrid fusion,
//! lowered when its best hits hold few of the query's words (docs/SEARCH.md).

use zblade_core::Result;
use zblade_index::{HitKind, SearchHit, hit_key};

use crate::parts::Parts;

/// Keyword hits whose words are compared with the query's to weigh the keyword list.
const STRENGTH_HITS: usize = 5;
/// The share of a query's words a keyword hit must hold for the keyword list to keep its full
/// weight in fusion: half, chosen before measuring. With it, the decision benchmark's search
/// hit@1 rose from 0 to 0.42 (both splits), and LoCoMo's packed evidence recall moved from
/// 0.862 to 0.847 on the gate benchmark's tuning split and from 0.772 to 0.770 on its reported
/// one (docs/BENCHMARKS.md).
const FULL_STRENGTH: f64 = 0.5;

impl Parts {
    /// How much the keyword list may weigh in fusion, 0..1: the largest share of the query's
    /// words that one of its best [`STRENGTH_HITS`] hits holds, over [`FULL_STRENGTH`] (capped
    /// at 1). A list whose best hits match one or two words of a long query — common words
    /// in a big project — says little about the query.
    pub(super) fn keyword_strength(&self, text: &str, keyword: &[SearchHit]) -> Result<f64> {
        let terms: Vec<(String, bool)> = match zblade_index::fts::Terms::parse(text) {
            Some(terms) => terms.each().map(|t| (t.trim_matches('"').to_string(), true)).collect(),
            None => return Ok(1.0),
        };
        // A short query matched at all is matched well enough.
        if terms.len() <= 3 || keyword.is_empty() {
            return Ok(1.0);
        }
        let index = self.index()?;
        let mut texts = Vec::new();
        for hit in keyword.iter().take(STRENGTH_HITS) {
            let text = match hit.kind {
                HitKind::Message | HitKind::Moment => {
                    index.memory_texts(&[hit_key(hit)])?.into_iter().next().map(|t| t.text)
                }
                HitKind::Commit => index
                    .commit(&hit.id)?
                    .map(|c| format!("{}\n{}\n{}", c.subject, c.body, c.paths.join(" "))),
                HitKind::Code => {
                    let (Some(path), Some((start, end))) = (&hit.path, hit.lines) else {
                        continue;
                    };
                    let read = zblade_refs::read_project_file_guarded(self.layout().root(), path, &self.path_guard());
                    read.ok().map(|source| {
                        let body = String::from_utf8_lossy(&source.bytes);
                        let lines: Vec<&str> = body
                            .lines()
                            .skip(start.saturating_sub(1) as usize)
                            .take((end + 1 - start) as usize)
                            .collect();
                        format!(
                            "{path}\n{}\n{}",
                            hit.title.as_deref().unwrap_or_default(),
                            lines.join("\n")
                        )
                    })
                }
                HitKind::Conversation => Some(format!("{}\n{}", hit.title.as_deref().unwrap_or_default(), hit.snippet)),
            };
            texts.extend(text);
        }
        let cover = zblade_context::gate::best_cover(&terms, texts.iter().map(String::as_str)).unwrap_or(1.0);
        Ok((cover / FULL_STRENGTH).min(1.0))
    }
}

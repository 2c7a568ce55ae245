//! How many indexed documents hold each word of a query: the evidence the relevance gate
//! (`zblade_context::gate`) reads to tell whether a project knows anything about a prompt.
//! A word no turn, moment or code chunk holds (a name, a tool, a file) is strong evidence that
//! the memory cannot answer a question about it.

use serde::Serialize;

use crate::{Index, fts};
use zblade_core::Result;

/// The most words of a query counted: each costs one FTS5 lookup per table, and the first
/// words of a long prompt say enough about what it is about.
pub const MAX_COUNTED_TERMS: usize = 16;

/// Documents (turns, moments, code chunks) in the index, and how many hold each query word.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TermCounts {
    /// Turns, moments and code chunks indexed.
    pub documents: u64,
    /// Each searchable word of the query (stop words dropped, as keyword search drops them)
    /// with the number of documents that hold it.
    pub terms: Vec<(String, u64)>,
}

impl Index {
    /// Document counts of the words of `text`; `None` when it holds no searchable word.
    /// Words are cut at every character that is not a letter or digit, as the index's
    /// tokenizer cuts them (so "Caroline's" counts "caroline"); stop words and single
    /// characters are left out.
    pub fn term_counts(&self, text: &str) -> Result<Option<TermCounts>> {
        let mut words: Vec<String> = Vec::new();
        for word in text.split(|c: char| !c.is_alphanumeric()) {
            let word = word.to_lowercase();
            if word.chars().count() > 1 && !fts::is_stopword(&word) && !words.contains(&word) {
                words.push(word);
            }
        }
        if words.is_empty() {
            return Ok(None);
        }
        self.read(|conn| {
            let documents: i64 = conn.query_row(
                "SELECT (SELECT count(*) FROM messages) + (SELECT count(*) FROM moments)
                      + (SELECT count(*) FROM code_chunks)",
                [],
                |r| r.get(0),
            )?;
            let mut counted = Vec::new();
            for word in words.into_iter().take(MAX_COUNTED_TERMS) {
                // Letters and digits only: quoted, it is one plain FTS5 term.
                let term = format!("\"{word}\"");
                let mut holding = 0i64;
                for table in ["messages_fts", "moments_fts", "code_fts"] {
                    holding += conn
                        .prepare_cached(&format!("SELECT count(*) FROM {table} WHERE {table} MATCH ?1"))?
                        .query_row([&term], |r| r.get::<_, i64>(0))?;
                }
                counted.push((word, holding.max(0) as u64));
            }
            Ok(Some(TermCounts {
                documents: documents.max(0) as u64,
                terms: counted,
            }))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_counted_over_every_kind_of_document() {
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(&dir.path().join("conversations.db")).unwrap();
        assert_eq!(index.term_counts("   ").unwrap(), None);
        assert_eq!(index.term_counts("how do we? a b").unwrap(), None);
        let counts = index
            .term_counts("how do we rotate the \"keys\" of Caroline's ROTATE")
            .unwrap()
            .unwrap();
        assert_eq!(counts.documents, 0);
        let words: Vec<&str> = counts.terms.iter().map(|(w, _)| w.as_str()).collect();
        assert_eq!(words, ["rotate", "keys", "caroline"]);
        assert!(counts.terms.iter().all(|(_, n)| *n == 0));
    }
}

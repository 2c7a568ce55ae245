//! Which words of a query the indexed documents hold: the evidence the relevance gate
//! (`zblade_context::gate`) reads to tell whether a project knows anything about a prompt.
//! A word no turn, moment or code chunk holds (a name, a tool, a file) is strong evidence that
//! the memory cannot answer a question about it.

use rusqlite::OptionalExtension;
use serde::Serialize;

use crate::{Index, fts};
use zblade_core::Result;

/// The most words of a query looked up: each costs one FTS5 lookup per table, and the first
/// words of a long prompt say enough about what it is about.
pub const MAX_LOOKED_UP_WORDS: usize = 16;

/// Whether some document (turn, moment, code chunk) holds each word of a query.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HeldWords {
    /// Each searchable word of the query (stop words dropped, as keyword search drops them)
    /// and whether a document holds it.
    pub terms: Vec<(String, bool)>,
}

impl Index {
    /// Which words of `text` some document holds; `None` when it holds no searchable word.
    /// Words are cut at every character that is not a letter or digit, as the index's
    /// tokenizer cuts them (so "Caroline's" looks up "caroline"); stop words and single
    /// characters are left out.
    ///
    /// Only presence is asked: one matching row ends each lookup. Counting the documents
    /// instead read a common word's whole doclist (tens of thousands of rows at a million
    /// chunks), and counting every document scanned each table.
    pub fn held_words(&self, text: &str) -> Result<Option<HeldWords>> {
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
            let mut terms = Vec::new();
            for word in words.into_iter().take(MAX_LOOKED_UP_WORDS) {
                // Letters and digits only: quoted, it is one plain FTS5 term.
                let term = format!("\"{word}\"");
                let mut held = false;
                for table in ["messages_fts", "moments_fts", "code_fts"] {
                    held = conn
                        .prepare_cached(&format!("SELECT rowid FROM {table} WHERE {table} MATCH ?1 LIMIT 1"))?
                        .query_row([&term], |r| r.get::<_, i64>(0))
                        .optional()?
                        .is_some();
                    if held {
                        break;
                    }
                }
                terms.push((word, held));
            }
            Ok(Some(HeldWords { terms }))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_looked_up_in_every_kind_of_document() {
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(&dir.path().join("conversations.db")).unwrap();
        assert_eq!(index.held_words("   ").unwrap(), None);
        assert_eq!(index.held_words("how do we? a b").unwrap(), None);
        let held = index
            .held_words("how do we rotate the \"keys\" of Caroline's ROTATE")
            .unwrap()
            .unwrap();
        let words: Vec<&str> = held.terms.iter().map(|(w, _)| w.as_str()).collect();
        assert_eq!(words, ["rotate", "keys", "caroline"]);
        assert!(held.terms.iter().all(|(_, held)| !held));
    }
}

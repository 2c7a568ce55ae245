//! Turning user text into a safe FTS5 query.
//!
//! No user text may cause an FTS5 syntax error (seed 004, "escapeFTS5Query"): every
//! whitespace-separated word becomes a quoted phrase, so `AND`, `NEAR`, `*`, `(`, `:` and stray
//! quotes are plain text. Unlike seed 004, which quotes the whole query as one phrase, the
//! phrases are joined with `OR`: a multi-word question still finds documents that contain only
//! some of its words, and BM25 ranks the documents holding more (and rarer) words first.

/// The most words of a query we pass to FTS5; a pasted 100 KB log must not become 20,000 ORs.
pub const MAX_TERMS: usize = 32;

/// Very common English words; dropped from multi-word queries because they match nearly every
/// document (slow) and carry no signal (BM25 gives them almost no weight anyway).
const STOPWORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "been", "before", "being",
    "but", "by", "can", "could", "did", "do", "does", "doing", "for", "from", "had", "has", "have", "having", "he",
    "her", "here", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "just", "me", "more", "most", "my",
    "no", "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "out", "over", "own", "same",
    "she", "should", "so", "some", "such", "than", "that", "the", "their", "them", "then", "there", "these", "they",
    "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when",
    "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your",
];

/// Whether `word` (any case) is one of the very common words keyword search drops.
pub fn is_stopword(word: &str) -> bool {
    STOPWORDS.contains(&word.to_lowercase().as_str())
}

/// The searchable words of a query, each already quoted as an FTS5 phrase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Terms(Vec<String>);

impl Terms {
    /// The words of `text`, or `None` when it holds none that could match anything.
    pub fn parse(text: &str) -> Option<Terms> {
        match_expression(text).map(|expr| Terms(expr.split(" OR ").map(String::from).collect()))
    }

    /// How many distinct words.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Always false: a `Terms` holds at least one word.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Documents holding every word.
    pub fn all(&self) -> String {
        self.0.join(" AND ")
    }

    /// The words one by one, each a complete MATCH expression.
    pub fn each(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(String::as_str)
    }

    /// The words whose positions `keep` marks.
    pub fn subset(&self, keep: &[bool]) -> Option<Terms> {
        let kept: Vec<String> = self
            .0
            .iter()
            .zip(keep)
            .filter(|(_, k)| **k)
            .map(|(t, _)| t.clone())
            .collect();
        (!kept.is_empty()).then_some(Terms(kept))
    }

    /// Documents holding any word.
    pub fn any(&self) -> String {
        self.0.join(" OR ")
    }
}

/// Builds an FTS5 MATCH expression (words joined by `OR`) from free text, or `None` when the
/// text holds no word that could match anything (for example only punctuation).
pub fn match_expression(text: &str) -> Option<String> {
    let words: Vec<&str> = text
        .split_whitespace()
        .filter(|word| word.chars().any(char::is_alphanumeric))
        .collect();
    let is_stopword = |w: &&str| STOPWORDS.contains(&w.to_lowercase().as_str());
    let meaningful: Vec<&str> = words.iter().copied().filter(|w| !is_stopword(w)).collect();
    let chosen = if meaningful.is_empty() { words } else { meaningful };
    let mut phrases: Vec<String> = Vec::new();
    for word in chosen {
        let phrase = format!("\"{}\"", word.replace('"', "\"\""));
        if !phrases.contains(&phrase) {
            phrases.push(phrase);
        }
        if phrases.len() == MAX_TERMS {
            break;
        }
    }
    (!phrases.is_empty()).then(|| phrases.join(" OR "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_become_quoted_phrases_joined_by_or() {
        assert_eq!(match_expression("refresh JWT").unwrap(), r#""refresh" OR "JWT""#);
        assert_eq!(match_expression(r#"say "hi"#).unwrap(), r#""say" OR """hi""#);
    }

    #[test]
    fn punctuation_only_and_empty_queries_match_nothing() {
        assert_eq!(match_expression(""), None);
        assert_eq!(match_expression(r#"* " ( ) : ^ - +"#), None);
    }

    #[test]
    fn stopwords_are_dropped_unless_nothing_else_is_left() {
        assert_eq!(
            match_expression("how do we rotate keys").unwrap(),
            r#""rotate" OR "keys""#
        );
        assert_eq!(match_expression("the").unwrap(), r#""the""#);
    }

    #[test]
    fn terms_join_with_and_or_or() {
        let terms = Terms::parse(r#"refresh "jwt" the"#).unwrap();
        assert_eq!(terms.len(), 2);
        assert_eq!(terms.all(), r#""refresh" AND """jwt""""#);
        assert_eq!(terms.any(), r#""refresh" OR """jwt""""#);
        assert_eq!(Terms::parse("(("), None);
    }

    #[test]
    fn long_queries_are_capped() {
        let text = (0..1000).map(|i| format!("w{i}")).collect::<Vec<_>>().join(" ");
        assert_eq!(match_expression(&text).unwrap().matches(" OR ").count(), MAX_TERMS - 1);
    }
}

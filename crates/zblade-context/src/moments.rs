//! Moment extraction without a model: sentences that state a decision, a solution or a
//! pattern, found by the phrases people use for them. Deterministic, so extracting the same
//! conversation twice gives the same moments. The llama.cpp compressor will do this with a
//! grammar-constrained model when one is installed; this is what runs when none is.

use std::collections::HashMap;
use std::sync::LazyLock;

use aho_corasick::AhoCorasick;

use serde::Serialize;

/// A moment found in a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExtractedMoment {
    /// `decision`, `solution` or `pattern`.
    pub moment_type: &'static str,
    /// The sentence that states it.
    pub content: String,
    /// What led to it: the question it answers, when there is one.
    pub context: Option<String>,
    /// Up to three words of the conversation's vocabulary that the sentence uses.
    pub tags: Vec<String>,
    /// The message it came from.
    pub message_id: String,
}

/// Phrases that mark each kind, checked in this order (a sentence that decides on a fix is a
/// decision). Lowercase; matched on word boundaries at the start.
const CUES: [(&str, &[&str]); 3] = [
    (
        "decision",
        &[
            "we decided",
            "decided to",
            "we'll go with",
            "we will go with",
            "let's go with",
            "let's use",
            "we chose",
            "we'll use",
            "we will use",
            "we are going with",
            "we're going with",
            "settled on",
            "instead of",
        ],
    ),
    (
        "solution",
        &[
            "fixed by",
            "the fix is",
            "the fix was",
            "solved by",
            "resolved by",
            "the root cause",
            "the problem was",
            "the issue was",
            "workaround",
            "fixed it",
            "this fixes",
        ],
    ),
    (
        "pattern",
        &[
            "always ",
            "never ",
            "by convention",
            "our convention",
            "the convention",
            "as a rule",
            "the pattern",
            "make sure to",
            "must not",
        ],
    ),
];

/// Longest moment content kept, in characters.
const MAX_CONTENT: usize = 400;

const STOPWORDS: &[&str] = &[
    "about", "after", "again", "also", "because", "before", "being", "could", "does", "doing", "from", "have", "here",
    "into", "just", "like", "make", "more", "most", "much", "must", "need", "only", "other", "over", "should", "some",
    "such", "than", "that", "their", "them", "then", "there", "these", "they", "this", "those", "through", "using",
    "very", "want", "were", "what", "when", "where", "which", "while", "will", "with", "would", "your", "always",
    "never", "decided", "instead", "going", "sure", "issue", "problem", "fixed",
];

fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| w.chars().count() >= 4 && !w.chars().all(|c| c.is_ascii_digit()))
        .map(str::to_lowercase)
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
}

fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_code = false;
    for line in text.lines() {
        // Code blocks state no decisions in prose.
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let mut current = String::new();
        let chars: Vec<char> = line.chars().collect();
        for (i, &c) in chars.iter().enumerate() {
            current.push(c);
            if matches!(c, '.' | '!' | '?') && chars.get(i + 1).is_none_or(|n| n.is_whitespace()) {
                out.push(current.trim().to_string());
                current.clear();
            }
        }
        if !current.trim().is_empty() {
            out.push(current.trim().to_string());
        }
    }
    out.retain(|s| s.chars().count() >= 12);
    out
}

fn clip(text: &str) -> String {
    if text.chars().count() <= MAX_CONTENT {
        return text.to_string();
    }
    text.chars().take(MAX_CONTENT - 1).collect::<String>() + "…"
}

/// All cues in one automaton, so a sentence is scanned once rather than once per cue: this runs
/// for every sentence of every imported message.
static CUE_MATCHER: LazyLock<AhoCorasick> =
    LazyLock::new(|| AhoCorasick::new(CUES.iter().flat_map(|(_, cues)| cues.iter())).expect("cues are valid patterns"));

/// The kind of the first cue group (in [`CUES`] order) with a cue in `lower` at its start or
/// after a space.
fn cue_kind(lower: &str) -> Option<&'static str> {
    let mut earliest_group: Option<usize> = None;
    for found in CUE_MATCHER.find_overlapping_iter(lower) {
        let at = found.start();
        if at > 0 && lower.as_bytes()[at - 1] != b' ' {
            continue;
        }
        let group = group_of(found.pattern().as_usize());
        earliest_group = Some(earliest_group.map_or(group, |g| g.min(group)));
        if group == 0 {
            break;
        }
    }
    earliest_group.map(|g| CUES[g].0)
}

/// Which group of [`CUES`] the `pattern`-th cue (counted across groups) belongs to.
fn group_of(mut pattern: usize) -> usize {
    for (group, (_, cues)) in CUES.iter().enumerate() {
        if pattern < cues.len() {
            return group;
        }
        pattern -= cues.len();
    }
    unreachable!("pattern ids come from CUES")
}

/// Finds moments in `messages` (id, role, text), in order.
pub fn extract(messages: &[(&str, &str, &str)]) -> Vec<ExtractedMoment> {
    let mut frequency: HashMap<String, usize> = HashMap::new();
    for (_, _, text) in messages {
        for word in words(text) {
            *frequency.entry(word).or_default() += 1;
        }
    }
    let mut out: Vec<ExtractedMoment> = Vec::new();
    let mut last_question: Option<String> = None;
    for (id, role, text) in messages {
        for sentence in sentences(text) {
            let lower = sentence.to_lowercase();
            let kind = cue_kind(&lower);
            if let Some(kind) = kind
                && !sentence.ends_with('?')
                && !out.iter().any(|m| m.content == clip(&sentence))
            {
                let mut tags: Vec<(String, usize)> = words(&sentence)
                    .filter_map(|w| frequency.get(&w).map(|&n| (w, n)))
                    .filter(|(_, n)| *n >= 2)
                    .collect();
                tags.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                tags.dedup_by(|a, b| a.0 == b.0);
                out.push(ExtractedMoment {
                    moment_type: kind,
                    content: clip(&sentence),
                    context: last_question.clone(),
                    tags: tags.into_iter().take(3).map(|(w, _)| w).collect(),
                    message_id: id.to_string(),
                });
            }
        }
        if *role == "user"
            && let Some(question) = sentences(text).into_iter().find(|s| s.ends_with('?'))
        {
            last_question = Some(clip(&question));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cues_count_at_word_starts_and_the_earlier_group_wins() {
        assert_eq!(cue_kind("we decided to ship it"), Some("decision"));
        assert_eq!(cue_kind("it was fixed by a retry"), Some("solution"));
        // "undecided to" contains "decided to" but not at a word start.
        assert_eq!(cue_kind("they were undecided to the end"), None);
        // A decision about a fix is a decision, whichever cue comes first in the text.
        assert_eq!(cue_kind("the fix is what we decided to keep"), Some("decision"));
        assert_eq!(cue_kind("always run the linter"), Some("pattern"));
        assert_eq!(cue_kind("nothing to see here"), None);
    }

    #[test]
    fn finds_decisions_solutions_and_patterns_with_their_question() {
        let messages = [
            (
                "m1",
                "user",
                "Where should refresh tokens live? The session table is slow.",
            ),
            (
                "m2",
                "assistant",
                "We decided to keep refresh tokens in Redis with a 7-day TTL. The weather is nice.\n```\nwe decided nothing here\n```",
            ),
            ("m3", "user", "Login broke after the deploy?"),
            (
                "m4",
                "assistant",
                "The root cause was a clock skew; fixed by allowing 30 seconds of leeway in token validation.",
            ),
            (
                "m5",
                "assistant",
                "Always validate tokens in the middleware, never in handlers.",
            ),
            ("m6", "user", "Should we decide to use Redis?"),
        ];
        let found = extract(&messages);
        let kinds: Vec<(&str, &str)> = found.iter().map(|m| (m.moment_type, m.message_id.as_str())).collect();
        assert_eq!(kinds, vec![("decision", "m2"), ("solution", "m4"), ("pattern", "m5")]);
        assert!(
            found[0]
                .content
                .starts_with("We decided to keep refresh tokens in Redis")
        );
        assert_eq!(found[0].context.as_deref(), Some("Where should refresh tokens live?"));
        assert_eq!(found[1].context.as_deref(), Some("Login broke after the deploy?"));
        assert!(found[0].tags.contains(&"tokens".to_string()), "{:?}", found[0].tags);
        // Deterministic.
        assert_eq!(extract(&messages), found);
        // Nothing to find in small talk.
        assert!(extract(&[("m", "user", "Hello there, how are you today? Fine, thanks.")]).is_empty());
    }
}

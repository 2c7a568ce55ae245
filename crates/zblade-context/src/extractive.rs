//! The extractive compressor: deterministic, needs no model, always available. It shrinks a
//! text to a token budget by keeping its most useful sentences, in their original order.
//! "Useful" favours what summarising models are criticised for losing: file paths, numbers,
//! identifiers, and the words of the query.

use std::collections::HashSet;

use crate::tokens::TokenCounter;

/// Marks where text was left out.
pub const ELISION: &str = " … ";

/// Sentences (and lines of code or lists) of `text`, with their byte ranges.
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut start = 0;
        let bytes = line.as_bytes();
        for (i, &b) in bytes.iter().enumerate() {
            // A sentence ends at `.`, `!` or `?` followed by a space (not inside `a.b`).
            if matches!(b, b'.' | b'!' | b'?') && bytes.get(i + 1) == Some(&b' ') {
                let piece = line[start..=i].trim();
                if !piece.is_empty() {
                    out.push(piece);
                }
                start = i + 1;
            }
        }
        let rest = line[start..].trim();
        if !rest.is_empty() {
            out.push(rest);
        }
    }
    out
}

fn lower_words(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() >= 3)
        .map(str::to_lowercase)
        .collect()
}

/// How worth keeping a sentence is.
fn sentence_score(sentence: &str, position: usize, query: &HashSet<String>) -> f64 {
    let mut score = 0.0;
    let words = lower_words(sentence);
    score += 2.0 * words.intersection(query).count() as f64;
    for token in sentence.split_whitespace() {
        let looks_like_path = token.contains('/')
            || (token.contains('.') && token.chars().any(|c| c.is_alphabetic()) && !token.ends_with('.'));
        if looks_like_path {
            score += 1.5;
        }
        if token.chars().any(|c| c.is_ascii_digit()) {
            score += 1.0;
        }
        if token.contains('_') || token.contains("::") || token.contains("()") {
            score += 0.5;
        }
    }
    // Openings state the subject.
    if position == 0 {
        score += 2.0;
    }
    score
}

/// Shrinks `text` to at most `max_tokens` (as `counter` counts) by keeping its best sentences
/// for `query`; returns it unchanged when it fits. Never returns more than `max_tokens`.
pub fn shrink(text: &str, max_tokens: usize, query: &str, counter: &dyn TokenCounter) -> String {
    if counter.count(text) <= max_tokens {
        return text.to_string();
    }
    let query = lower_words(query);
    let pieces = sentences(text);
    // Scored once each: scoring splits and lowercases the sentence, too dear to repeat in every
    // comparison of the sort.
    let scores: Vec<f64> = pieces
        .iter()
        .enumerate()
        .map(|(i, piece)| sentence_score(piece, i, &query))
        .collect();
    let mut order: Vec<usize> = (0..pieces.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    // Each sentence is counted once; a join costs about the sum of its sentences and marks.
    // Best sentences first while the estimate fits, then the joined text is counted and the
    // weakest kept sentence dropped until it truly fits (BPE merges at the seams).
    let mark = counter.count(ELISION).max(1);
    let mut estimate = 2 * mark;
    let mut kept: Vec<usize> = Vec::new();
    for &i in &order {
        let cost = counter.count(pieces[i]) + mark;
        if estimate + cost <= max_tokens {
            estimate += cost;
            kept.push(i);
        }
    }
    // `kept` is in score order here: the last one is the weakest.
    loop {
        let mut in_text_order = kept.clone();
        in_text_order.sort_unstable();
        if kept.is_empty() || counter.count(&join(&pieces, &in_text_order, pieces.len())) <= max_tokens {
            kept = in_text_order;
            break;
        }
        kept.pop();
    }
    if kept.is_empty() {
        return truncate(pieces.first().copied().unwrap_or(text), max_tokens, counter);
    }
    join(&pieces, &kept, pieces.len())
}

/// The kept sentences, with an elision mark wherever something was left out between them.
fn join(pieces: &[&str], kept: &[usize], total: usize) -> String {
    let mut out = String::new();
    let mut next = 0;
    for &i in kept {
        if i > next {
            out.push_str(if out.is_empty() { "… " } else { ELISION });
        } else if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(pieces[i]);
        next = i + 1;
    }
    if next < total {
        out.push_str(" …");
    }
    out
}

/// The longest prefix of `text` that fits `max_tokens` with a closing `…`: cut between words,
/// or inside the first word when even that does not fit (a long path, minified code).
pub fn truncate(text: &str, max_tokens: usize, counter: &dyn TokenCounter) -> String {
    if counter.count(text) <= max_tokens {
        return text.to_string();
    }
    let words: Vec<&str> = text.split_whitespace().collect();
    // Binary search on the number of words kept.
    let (mut low, mut high) = (0usize, words.len());
    while low < high {
        let mid = (low + high).div_ceil(2);
        let candidate = format!("{} …", words[..mid].join(" "));
        if counter.count(&candidate) <= max_tokens {
            low = mid;
        } else {
            high = mid - 1;
        }
    }
    if low > 0 {
        return format!("{} …", words[..low].join(" "));
    }
    let chars: Vec<char> = text.trim_start().chars().collect();
    let (mut low, mut high) = (0usize, chars.len());
    while low < high {
        let mid = (low + high).div_ceil(2);
        let candidate: String = chars[..mid].iter().collect::<String>() + "…";
        if counter.count(&candidate) <= max_tokens {
            low = mid;
        } else {
            high = mid - 1;
        }
    }
    if low == 0 {
        return String::new();
    }
    chars[..low].iter().collect::<String>() + "…"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::Cl100k;

    const TEXT: &str = "We looked at several options for the session store. Redis was fast but adds a server. \
        In the end we decided to keep sessions in SQLite at src/session/store.rs with a TTL of 3600 seconds. \
        Someone mentioned the weather was nice. The migration lives in migrations/0004_sessions.sql.";

    #[test]
    fn keeps_paths_numbers_and_query_words_within_budget() {
        let bpe = Cl100k::new();
        let full = bpe.count(TEXT);
        let short = shrink(TEXT, full / 2, "session store", &bpe);
        assert!(bpe.count(&short) <= full / 2, "{short}");
        assert!(short.contains("src/session/store.rs"), "{short}");
        assert!(short.contains("3600"), "{short}");
        assert!(!short.contains("weather"), "{short}");
        assert!(short.contains('…'));
    }

    #[test]
    fn fits_any_budget_and_leaves_short_text_alone() {
        let bpe = Cl100k::new();
        assert_eq!(shrink("short", 10, "", &bpe), "short");
        for budget in [0, 1, 3, 8, 20, 40] {
            let out = shrink(TEXT, budget, "redis", &bpe);
            assert!(bpe.count(&out) <= budget, "budget {budget}: {out}");
        }
        // One long sentence is cut between words.
        let long = "word ".repeat(500);
        let cut = shrink(&long, 50, "", &bpe);
        assert!(bpe.count(&cut) <= 50 && cut.ends_with('…'));
        // One long word is cut inside it rather than dropped.
        let path = "src/".repeat(200) + "main.rs";
        let cut = truncate(&path, 20, &bpe);
        assert!(
            cut.starts_with("src/src/") && cut.ends_with('…') && bpe.count(&cut) <= 20,
            "{cut}"
        );
    }
}

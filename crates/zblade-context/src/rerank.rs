//! Reranking retrieved candidates: the search score, decayed with age, boosted for the active
//! conversation and for the kinds of moment that matter most; then maximal marginal relevance
//! (MMR), so that near-duplicates do not fill the budget.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::candidate::{Candidate, Item};

/// How much each signal counts. The defaults are documented in docs/CONTEXT.md.
#[derive(Debug, Clone, PartialEq)]
pub struct RerankWeights {
    /// Age, in days, at which the recency factor has fallen halfway.
    pub recency_half_life_days: f64,
    /// Share of the score that recency can take away (0: age does not matter).
    pub recency_share: f64,
    /// Factor for candidates from the active conversation.
    pub session_affinity: f64,
    /// MMR's balance between relevance (1.0) and novelty (0.0).
    pub mmr_lambda: f64,
    /// Similarity (word-set Jaccard) above which a candidate counts as a duplicate of one
    /// already chosen and is dropped.
    pub duplicate_similarity: f64,
}

impl Default for RerankWeights {
    fn default() -> Self {
        RerankWeights {
            recency_half_life_days: 30.0,
            recency_share: 0.3,
            session_affinity: 1.2,
            mmr_lambda: 0.7,
            duplicate_similarity: 0.85,
        }
    }
}

/// Weight of a moment type: decisions and solutions are what people come back for.
pub fn moment_type_weight(moment_type: &str) -> f64 {
    match moment_type {
        "decision" => 1.3,
        "solution" => 1.2,
        "pattern" => 1.1,
        _ => 1.0,
    }
}

/// The parts of a candidate's score, for the receipt.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ScoreParts {
    /// Search score, 0..1.
    pub retrieval: f64,
    /// Recency factor, `1 - share + share · 2^(-age / half-life)`.
    pub recency: f64,
    /// Session affinity factor.
    pub affinity: f64,
    /// Moment type factor.
    pub type_weight: f64,
    /// Product of the above.
    pub relevance: f64,
    /// Highest similarity to a candidate chosen before it (MMR's redundancy term).
    pub redundancy: f64,
}

/// A reranked candidate: its index in the input, its score parts and, when it was dropped as
/// a near-duplicate, the key it duplicates.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranked {
    /// Index into the candidates given to [`rerank`].
    pub index: usize,
    /// Score parts.
    pub score: ScoreParts,
    /// Set when the candidate repeats one ranked before it.
    pub duplicate_of: Option<String>,
}

/// Calls `each` with every word of `text` of 3+ characters, lowercased. Words are split at
/// whatever is not a letter, digit or `_`. This runs over every candidate's whole text in every
/// assembly, so most words (ASCII) are lowercased on the stack, with no allocation per word;
/// others go through Unicode's rules.
pub(crate) fn each_lowercase_word(text: &str, mut each: impl FnMut(&[u8])) {
    let mut ascii = [0u8; 64];
    // Three characters or more; the byte length rules most words out without counting.
    for w in text
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| w.len() >= 3 && w.chars().nth(2).is_some())
    {
        if w.is_ascii() && w.len() <= ascii.len() {
            let lower = &mut ascii[..w.len()];
            lower.copy_from_slice(w.as_bytes());
            lower.make_ascii_lowercase();
            each(lower);
        } else {
            each(w.to_lowercase().as_bytes());
        }
    }
}

/// The distinct words (3+ characters, lowercased) of `text`, as sorted hashes: comparing two
/// texts is then one merge of two sorted lists, with no allocation.
fn words(text: &str) -> Vec<u64> {
    let mut out = Vec::new();
    each_lowercase_word(text, |word| out.push(xxhash_rust::xxh3::xxh3_64(word)));
    out.sort_unstable();
    out.dedup();
    out
}

/// How many items two sorted lists (each item once) have in common, by merging them.
pub(crate) fn shared_sorted<T: Ord>(a: &[T], b: &[T]) -> usize {
    let (mut i, mut j, mut shared) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                shared += 1;
                i += 1;
                j += 1;
            }
        }
    }
    shared
}

fn jaccard(a: &[u64], b: &[u64]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let shared = shared_sorted(a, b);
    shared as f64 / (a.len() + b.len() - shared) as f64
}

/// Reranks `candidates` (retrieved ones) asked at `now`, with `active` the conversation the
/// user is in. Returns every candidate, in MMR order; duplicates come last, marked.
pub fn rerank(
    candidates: &[Candidate],
    now: DateTime<Utc>,
    active: Option<&str>,
    weights: &RerankWeights,
) -> Vec<Ranked> {
    let scored: Vec<ScoreParts> = candidates
        .iter()
        .map(|c| {
            let recency = match c.time {
                Some(time) => {
                    let age_days = (now - time).num_seconds().max(0) as f64 / 86_400.0;
                    let decay = 0.5f64.powf(age_days / weights.recency_half_life_days);
                    1.0 - weights.recency_share + weights.recency_share * decay
                }
                // Code is read from the working tree: it is current by definition.
                None => 1.0,
            };
            let affinity = match (active, c.conversation()) {
                (Some(a), Some(b)) if a == b => weights.session_affinity,
                _ => 1.0,
            };
            let type_weight = match &c.item {
                Item::Moment { moment_type, .. } => moment_type_weight(moment_type),
                _ => 1.0,
            };
            ScoreParts {
                retrieval: c.retrieval,
                recency,
                affinity,
                type_weight,
                relevance: c.retrieval * recency * affinity * type_weight,
                redundancy: 0.0,
            }
        })
        .collect();
    let word_sets: Vec<Vec<u64>> = candidates.iter().map(|c| words(&c.text)).collect();
    let mut remaining: Vec<usize> = (0..candidates.len()).collect();
    let mut chosen: Vec<Ranked> = Vec::new();
    let mut duplicates: Vec<Ranked> = Vec::new();
    // Per candidate: its highest similarity to a chosen one, and which. Updated as each
    // candidate is chosen, so every pair is compared once.
    let mut most_similar_chosen: Vec<(f64, Option<usize>)> = vec![(0.0, None); candidates.len()];
    while !remaining.is_empty() {
        // The candidate with the best MMR score: relevant, and unlike what was chosen.
        let mut best: Option<(usize, f64, f64, Option<usize>)> = None;
        for (slot, &i) in remaining.iter().enumerate() {
            let (redundancy, most_similar) = most_similar_chosen[i];
            let mmr = weights.mmr_lambda * scored[i].relevance - (1.0 - weights.mmr_lambda) * redundancy;
            let better = match best {
                None => true,
                Some((_, score, ..)) => mmr > score,
            };
            if better {
                best = Some((slot, mmr, redundancy, most_similar));
            }
        }
        let (slot, _, redundancy, most_similar) = best.expect("remaining is not empty");
        let index = remaining.remove(slot);
        let mut score = scored[index].clone();
        score.redundancy = redundancy;
        let duplicate = redundancy >= weights.duplicate_similarity;
        let ranked = Ranked {
            index,
            score,
            duplicate_of: most_similar.filter(|_| duplicate).map(|j| candidates[j].key.clone()),
        };
        if duplicate {
            duplicates.push(ranked);
        } else {
            for &i in &remaining {
                let similarity = jaccard(&word_sets[i], &word_sets[index]);
                if similarity > most_similar_chosen[i].0 {
                    most_similar_chosen[i] = (similarity, Some(index));
                }
            }
            chosen.push(ranked);
        }
    }
    chosen.extend(duplicates);
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::candidate::Source;

    use crate::test_now as now;

    fn candidate(key: &str, text: &str, item: Item, days_ago: i64, retrieval: f64) -> Candidate {
        Candidate {
            key: key.into(),
            cid: key.into(),
            source: Source::Retrieved,
            item,
            text: text.into(),
            time: Some(now() - chrono::Duration::days(days_ago)),
            retrieval,
            author: None,
            standing: None,
        }
    }

    fn message(conv: &str) -> Item {
        Item::Message {
            conversation: conv.into(),
            title: String::new(),
            message: "m".into(),
            role: "user".into(),
        }
    }

    /// The stack-lowercased ASCII path hashes exactly what Unicode lowercasing does, so word
    /// sets (and so MMR) are what they were: mixed case, non-ASCII words, short and
    /// over-long words, identifiers.
    #[test]
    fn word_sets_lowercase_as_unicode_does() {
        let naive = |text: &str| {
            let mut out: Vec<u64> = text
                .split(|c: char| !c.is_alphanumeric() && c != '_')
                .filter(|w| w.chars().count() >= 3)
                .map(|w| xxhash_rust::xxh3::xxh3_64(w.to_lowercase().as_bytes()))
                .collect();
            out.sort_unstable();
            out.dedup();
            out
        };
        let long = "X".repeat(64) + " " + &"Yz".repeat(40);
        let texts = [
            "The Refresh_Handler RETRIES 3 times; see src/auth.rs and ID ab ABC",
            "Ünïcödé Straße ΣΊΣΥΦΟΣ naïve café 数字です ok éé",
            long.as_str(),
            "",
        ];
        for text in texts {
            assert_eq!(words(text), naive(text), "{text:?}");
        }
        assert_eq!(words("Hello hello HELLO"), naive("hello"));
    }

    #[test]
    fn recency_affinity_and_moment_type_move_ties() {
        let w = RerankWeights::default();
        let old = candidate("old", "alpha beta gamma", message("c1"), 365, 0.8);
        let new = candidate("new", "delta epsilon zeta", message("c1"), 0, 0.8);
        let ranked = rerank(&[old.clone(), new.clone()], now(), None, &w);
        assert_eq!(ranked[0].index, 1, "newer wins a tie");
        assert!((ranked[0].score.recency - 1.0).abs() < 1e-9);
        assert!(ranked[1].score.recency < 0.71 && ranked[1].score.recency >= 0.7);

        let here = candidate("here", "delta epsilon zeta", message("active"), 0, 0.75);
        let ranked = rerank(&[new.clone(), here], now(), Some("active"), &w);
        assert_eq!(ranked[0].index, 1, "the active conversation wins");
        assert_eq!(ranked[0].score.affinity, w.session_affinity);

        let decision = Item::Moment {
            id: "d".into(),
            moment_type: "decision".into(),
            tags: vec![],
        };
        let d = candidate("d", "theta iota kappa", decision, 0, 0.7);
        let ranked = rerank(&[new, d], now(), None, &w);
        assert_eq!(ranked[0].index, 1, "a decision outweighs a slightly better message");
    }

    #[test]
    fn mmr_spreads_results_and_marks_duplicates() {
        let w = RerankWeights::default();
        let a = candidate(
            "a",
            "refresh the jwt token before expiry in the auth service",
            message("c"),
            0,
            1.0,
        );
        let a2 = candidate(
            "a2",
            "refresh the jwt token before expiry in the auth service now",
            message("c"),
            0,
            0.99,
        );
        let b = candidate(
            "b",
            "database migrations run at startup with sqlx",
            message("c"),
            0,
            0.7,
        );
        let ranked = rerank(&[a, a2, b], now(), None, &w);
        let keys: Vec<usize> = ranked.iter().map(|r| r.index).collect();
        assert_eq!(keys, vec![0, 2, 1], "the near-copy goes last");
        assert_eq!(ranked[2].duplicate_of.as_deref(), Some("a"));
        assert!(ranked[2].score.redundancy >= w.duplicate_similarity);
        assert_eq!(ranked[1].duplicate_of, None);
    }
}

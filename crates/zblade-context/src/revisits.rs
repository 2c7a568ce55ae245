//! Amendments nobody marked: among the memory retrieved for a prompt, a turn of an earlier
//! conversation that a later conversation revisits — the same code, or the same words about
//! the same subject — is marked `revisited` by the later one, which is ranked above it. The
//! pack then gives the amendment first and never the earlier rule alone
//! (docs/DECISIONS.md, "Amended decisions").
//!
//! Without an instruct model this works from time, code references and word overlap only: it
//! cannot tell an amendment from a later conversation that merely agrees (both are packed,
//! the earlier labelled as earlier), and it misses an amendment that shares neither code nor
//! words with what it amends.

use std::collections::HashMap;

use crate::candidate::{Candidate, Item, Source, Standing};

/// Share of the smaller turn's content words that the two turns must share to be about the
/// same subject (tuned on the decision benchmark's tuning split; docs/BENCHMARKS.md).
pub const SAME_WORDS: f64 = 0.5;
/// The same, for two turns whose code references overlap: shared code is strong evidence,
/// so fewer shared words suffice.
pub const SAME_WORDS_WITH_CODE: f64 = 0.2;

/// Words too common to say what a turn is about.
const STOPWORDS: &[&str] = &[
    "the", "and", "for", "that", "this", "with", "are", "was", "were", "but", "not", "you", "your", "our", "have",
    "has", "had", "from", "they", "them", "then", "than", "there", "their", "what", "when", "which", "will", "would",
    "should", "could", "can", "its", "it's", "all", "any", "into", "out", "about", "also", "just", "only", "now",
    "let", "lets", "let's", "yes", "okay", "sure", "here", "how", "why", "who", "one", "two", "use", "used", "using",
    "make", "made", "does", "did", "done", "get", "got", "need", "needs", "want", "like", "some", "more", "most",
    "each", "every", "other", "same", "such", "very", "still", "too", "because", "been", "being", "over", "under",
    "after", "before", "again", "way", "thing", "things", "think", "know", "see", "look", "good", "well",
];

/// A turn's content words — lower case, 3+ characters, no stopwords, a plural's `s` dropped —
/// as sorted, distinct numbers (each word's 64-bit hash): the pairs compared below are up to
/// 50 × 50, and counting shared words by merging two sorted lists of numbers costs a fraction
/// of probing a set of strings word by word.
fn content_ids(text: &str) -> Vec<u64> {
    let mut ids = Vec::new();
    crate::rerank::each_lowercase_word(text, |word| {
        if STOPWORDS.iter().any(|stop| stop.as_bytes() == word) {
            return;
        }
        let stem = match word.strip_suffix(b"s") {
            Some(stem) if stem.len() >= 3 && !stem.ends_with(b"s") => stem,
            _ => word,
        };
        ids.push(xxhash_rust::xxh3::xxh3_64(stem));
    });
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Shared words over the smaller set's size (`a` and `b` sorted, each word once).
fn overlap(a: &[u64], b: &[u64]) -> f64 {
    let smaller = a.len().min(b.len());
    if smaller == 0 {
        return 0.0;
    }
    crate::rerank::shared_sorted(a, b) as f64 / smaller as f64
}

/// A file and a line range (first, last).
type CodeRange = (String, (u32, u32));

/// A retrieved turn or moment: its index among the candidates, its owner, its content words
/// ([`content_ids`]) and the code it references.
type Memory<'a> = (usize, String, Vec<u64>, &'a [CodeRange]);

/// The code a retrieved turn points at: reference candidates are keyed `ref:CONV/MSG/N`.
fn referenced_code(candidates: &[Candidate]) -> HashMap<String, Vec<CodeRange>> {
    let mut out: HashMap<String, Vec<CodeRange>> = HashMap::new();
    for c in candidates {
        if let (Some(key), Item::Code { path, lines, .. }) = (c.key.strip_prefix("ref:"), &c.item)
            && let Some((owner, _)) = key.rsplit_once('/')
        {
            out.entry(owner.to_string()).or_default().push((path.clone(), *lines));
        }
    }
    out
}

fn code_overlaps(a: &[CodeRange], b: &[CodeRange]) -> bool {
    a.iter()
        .any(|(pa, la)| b.iter().any(|(pb, lb)| pa == pb && la.0 <= lb.1 && lb.0 <= la.1))
}

/// Marks retrieved turns and moments that a later retrieved conversation or moment revisits,
/// and ranks the later one above them. Memory already marked (superseded or rejected by a
/// person) is left as it is.
pub fn mark_revisits(candidates: &mut [Candidate]) {
    let code = referenced_code(candidates);
    // (index, owner, words, code) of each retrieved turn or moment.
    let memory: Vec<Memory<'_>> = candidates
        .iter()
        .enumerate()
        .filter(|(_, c)| c.source == Source::Retrieved && c.time.is_some())
        .filter_map(|(i, c)| {
            let owner = c.owner()?.to_string();
            let refs = match &c.item {
                Item::Message {
                    conversation, message, ..
                } => code.get(&format!("{conversation}/{message}")),
                Item::Moment { id, .. } => code.get(id.as_str()),
                _ => None,
            };
            Some((
                i,
                owner,
                content_ids(&c.text),
                refs.map(Vec::as_slice).unwrap_or_default(),
            ))
        })
        .collect();
    // Earlier candidate → (later owner, later candidate's retrieval).
    let mut revisited: HashMap<usize, (String, f64, usize)> = HashMap::new();
    for (i, owner_a, words_a, code_a) in &memory {
        for (j, owner_b, words_b, code_b) in &memory {
            // A copy restates, it does not amend.
            if owner_a == owner_b
                || candidates[*i].time >= candidates[*j].time
                || candidates[*i].cid == candidates[*j].cid
            {
                continue;
            }
            let shared_code = code_overlaps(code_a, code_b);
            let needed = if shared_code { SAME_WORDS_WITH_CODE } else { SAME_WORDS };
            if overlap(words_a, words_b) < needed {
                continue;
            }
            // The latest revisit wins: it is what stands now.
            let later = (owner_b.clone(), candidates[*j].retrieval, *j);
            match revisited.get(i) {
                Some((_, _, k)) if candidates[*k].time >= candidates[*j].time => {}
                _ => {
                    revisited.insert(*i, later);
                }
            }
        }
    }
    // Oldest first, so that a chain (A revisited by B, B by C) carries A's rank to B and then
    // B's to C. The order must be fixed: a map's changes from process to process, and with it
    // the ranks of a chain and so the pack (the same prompt packed differently run to run).
    let mut revisited: Vec<(usize, (String, f64, usize))> = revisited.into_iter().collect();
    revisited.sort_by_key(|(i, _)| (candidates[*i].time, *i));
    for (i, (by, _, j)) in revisited {
        if candidates[i].standing.is_some() {
            continue;
        }
        // The amendment ranks at least as high as what it amends; the earlier one a little lower.
        let earlier = candidates[i].retrieval;
        candidates[j].retrieval = candidates[j].retrieval.max(earlier);
        candidates[i].retrieval = earlier * 0.9;
        candidates[i].standing = Some(Standing {
            state: "revisited".into(),
            by: Some(by),
            reason: None,
        });
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use chrono::{TimeZone, Utc};

    use super::*;

    fn turn(conversation: &str, day: u32, text: &str, retrieval: f64) -> Candidate {
        Candidate {
            key: format!("{conversation}/msg_{day}"),
            cid: format!("{conversation}{day}"),
            source: Source::Retrieved,
            item: Item::Message {
                conversation: conversation.into(),
                title: String::new(),
                message: format!("msg_{day}"),
                role: "assistant".into(),
            },
            text: text.into(),
            time: Some(Utc.with_ymd_and_hms(2026, 3, day, 9, 0, 0).unwrap()),
            retrieval,
            author: None,
            standing: None,
        }
    }

    /// Content words as plainly as they are defined: lower case, 3+ characters, no stopwords,
    /// a plural's `s` dropped.
    fn content_words(text: &str) -> HashSet<String> {
        text.split(|c: char| !c.is_alphanumeric() && c != '_')
            .filter(|w| w.chars().count() >= 3)
            .map(str::to_lowercase)
            .filter(|w| !STOPWORDS.contains(&w.as_str()))
            .map(|w| match w.strip_suffix('s') {
                Some(stem) if stem.len() >= 3 && !stem.ends_with('s') => stem.to_string(),
                _ => w,
            })
            .collect()
    }

    #[test]
    fn shared_words_counted_as_numbers_are_those_of_the_word_sets() {
        let texts = [
            "Invoice totals: we round each line item to cents, then sum the rounded lines.",
            "Change of plan on invoice totals: sum the line items unrounded, round the total once.",
            "The CI cache key now includes the toolchain version.",
            "the and for",
            "",
            "Caches, cache keys and KEYS: the toolchain's version (rustc 1.95) in every key.",
            // Words beyond the ASCII fast path: Unicode case rules, long words, plurals of `ss`.
            "Straße STRASSE Cafés CAFÉ naïve Résumés; glass classes buses THE_CACHE_KEYS",
            "averyveryveryveryveryveryveryveryveryveryveryveryveryverylongidentifiers avery",
            "AVERYVERYVERYVERYVERYVERYVERYVERYVERYVERYVERYVERYVERYVERYLONGIDENTIFIER glass",
        ];
        for a in texts {
            for b in texts {
                let (words_a, words_b) = (content_words(a), content_words(b));
                let smaller = words_a.len().min(words_b.len());
                let expected = match smaller {
                    0 => 0.0,
                    n => words_a.intersection(&words_b).count() as f64 / n as f64,
                };
                assert_eq!(overlap(&content_ids(a), &content_ids(b)), expected, "{a:?} / {b:?}");
            }
        }
    }

    #[test]
    fn a_later_conversation_on_the_same_rule_marks_the_earlier_and_outranks_it() {
        let mut candidates = vec![
            turn(
                "conv_a",
                1,
                "Invoice totals: we round each line item to cents, then sum the rounded lines.",
                0.9,
            ),
            turn(
                "conv_b",
                20,
                "Change of plan on invoice totals: sum the line items unrounded, round the total once.",
                0.5,
            ),
            turn(
                "conv_c",
                25,
                "The CI cache key now includes the toolchain version.",
                0.7,
            ),
        ];
        mark_revisits(&mut candidates);
        let standing = candidates[0].standing.as_ref().expect("the earlier rule is marked");
        assert_eq!(
            (standing.state.as_str(), standing.by.as_deref()),
            ("revisited", Some("conv_b"))
        );
        assert!(candidates[1].retrieval > candidates[0].retrieval);
        assert!(candidates[1].standing.is_none() && candidates[2].standing.is_none());
    }

    #[test]
    fn a_chain_of_revisits_ranks_the_same_every_time_and_the_newest_highest() {
        // A is revisited by B only, B by C only (A and C share too few words).
        let chain = vec![
            turn("conv_a", 1, "Invoice totals round each line item to cents.", 0.9),
            turn(
                "conv_b",
                10,
                "Invoice totals round each line item; the ledger queue takes the sum.",
                0.3,
            ),
            turn(
                "conv_c",
                20,
                "The ledger queue takes the sum nightly per line item.",
                0.2,
            ),
        ];
        let mut first = chain.clone();
        mark_revisits(&mut first);
        assert_eq!(first[0].standing.as_ref().and_then(|s| s.by.as_deref()), Some("conv_b"));
        assert_eq!(first[1].standing.as_ref().and_then(|s| s.by.as_deref()), Some("conv_c"));
        assert!(first[2].retrieval >= first[1].retrieval && first[1].retrieval >= first[0].retrieval);
        // Each call builds a map with new random keys: the order it is read in must not matter.
        for _ in 0..32 {
            let mut again = chain.clone();
            mark_revisits(&mut again);
            assert_eq!(again, first);
        }
    }

    #[test]
    fn unrelated_turns_and_turns_of_one_conversation_are_left_alone() {
        let mut candidates = vec![
            turn("conv_a", 1, "Invoice totals round each line item to cents.", 0.9),
            turn(
                "conv_a",
                2,
                "Invoice totals round each line item to cents, confirmed.",
                0.8,
            ),
            turn("conv_b", 3, "Deploys go out on Tuesdays after the staging soak.", 0.5),
        ];
        let before = candidates.clone();
        mark_revisits(&mut candidates);
        assert_eq!(candidates, before);
    }
}

//! Merging ranked lists from different retrievers (BM25 and vectors) whose scores are not on
//! one scale: reciprocal rank fusion (by rank alone) and relative score fusion (scores scaled
//! to 0..1 within each list, then weighted and summed).

use std::collections::HashMap;

/// How many candidates each retriever contributes to a hybrid search.
pub const CANDIDATES: usize = 50;
/// The semantic list's weight in hybrid search (the keyword list has 1 minus this). Hybrid
/// is relative score fusion: BM25 scores and cosine similarities are each scaled to 0..1
/// within their list, then weighted and summed. Chosen by recall@10 on two LoCoMo
/// conversations and reported on three others (docs/BENCHMARKS.md, "Search quality"), where
/// it beat reciprocal rank fusion: BM25 is the stronger retriever on conversation memory, full
/// of names and specific terms, and keeping its score gaps lets a clear keyword match stay
/// ahead while vectors reorder near-ties and add what keywords miss.
pub const HYBRID_SEMANTIC_WEIGHT: f64 = 0.4;
/// The semantic list's weight when only code is searched (`--kind code`, `search_project`):
/// chosen by recall@10 + MRR@10 on the tuning crates of the code-search benchmark with the code
/// model (docs/BENCHMARKS.md, "Code search"): 0.4 → 0.749 / 0.443, 0.5 → 0.781 / 0.467,
/// 0.6 → 0.775 / 0.485, 0.7 → 0.765 / 0.485. Vectors that understand code earn more weight than
/// on conversation memory, where names and rare words make BM25 the stronger half.
pub const CODE_SEMANTIC_WEIGHT: f64 = 0.6;
/// After fusion, each message gains this share of the best score of the messages just before
/// and after it ([`spread_to_neighbours`]): an answer sits next to the question that matched.
/// Chosen with [`HYBRID_SEMANTIC_WEIGHT`] on the same tuning split.
pub const HYBRID_NEIGHBOUR_WEIGHT: f64 = 0.4;
/// The usual constant: it damps the weight of the very first ranks so that one list cannot
/// dominate (Cormack et al., 2009).
pub const RRF_K: f64 = 60.0;

/// Fuses ranked lists of ids; each id scores Σ 1 / (k + rank) over the lists it appears in.
/// Ties keep the order in which ids were first seen, so results are deterministic.
pub fn reciprocal_rank_fusion(lists: &[Vec<String>], k: f64) -> Vec<(String, f64)> {
    let weighted: Vec<(&[String], f64)> = lists.iter().map(|l| (l.as_slice(), 1.0)).collect();
    weighted_rank_fusion(&weighted, k)
}

/// Like [`reciprocal_rank_fusion`], with a weight per list: Σ w / (k + rank).
pub fn weighted_rank_fusion(lists: &[(&[String], f64)], k: f64) -> Vec<(String, f64)> {
    let mut scores: HashMap<&str, (f64, usize)> = HashMap::new();
    let mut order = 0;
    for (list, weight) in lists {
        for (rank, id) in list.iter().enumerate() {
            let entry = scores.entry(id.as_str()).or_insert_with(|| {
                order += 1;
                (0.0, order)
            });
            entry.0 += weight / (k + rank as f64 + 1.0);
        }
    }
    let mut fused: Vec<(String, f64, usize)> = scores.into_iter().map(|(id, (s, o))| (id.to_string(), s, o)).collect();
    fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)));
    fused.into_iter().map(|(id, s, _)| (id, s)).collect()
}

/// Relative score fusion: each list's scores are scaled to 0..1 by min–max within the list
/// (best 1, worst 0; a list whose scores are all equal counts 1 for each), and an id scores
/// Σ weight × scaled score over the lists it is in. Unlike rank fusion it keeps how far apart
/// results are: a clear keyword winner stays ahead of a near-tie among vector neighbours.
/// Ties keep the order in which ids were first seen.
pub fn relative_score_fusion(lists: &[(&[(String, f64)], f64)]) -> Vec<(String, f64)> {
    let mut scores: HashMap<&str, (f64, usize)> = HashMap::new();
    let mut order = 0;
    for (list, weight) in lists {
        let (low, high) = list
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), (_, s)| {
                (lo.min(*s), hi.max(*s))
            });
        for (id, score) in list.iter() {
            let scaled = if high > low { (score - low) / (high - low) } else { 1.0 };
            let entry = scores.entry(id.as_str()).or_insert_with(|| {
                order += 1;
                (0.0, order)
            });
            entry.0 += weight * scaled;
        }
    }
    let mut fused: Vec<(String, f64, usize)> = scores.into_iter().map(|(id, (s, o))| (id.to_string(), s, o)).collect();
    fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)));
    fused.into_iter().map(|(id, s, _)| (id, s)).collect()
}

/// Lets fused results lend score to the messages next to them: each id gains `weight` × the
/// best score among its neighbours (`neighbours`: id → the ids just before and after it).
/// Neighbours that were not results become results when `admit_new` is true.
///
/// In a conversation the words of a question and the facts of its answer sit in adjacent
/// messages: the question matches the query, the answer is what was asked for. Measured on
/// LoCoMo (conversations never tuned on) this raised hybrid recall@10 of the evidence turns
/// from 0.718 to 0.750 (docs/BENCHMARKS.md, "Search quality"). Ties keep the order of `fused`,
/// then the order neighbours were first named.
pub fn spread_to_neighbours(
    fused: &[(String, f64)],
    neighbours: &HashMap<String, Vec<String>>,
    weight: f64,
    admit_new: bool,
) -> Vec<(String, f64)> {
    let own: HashMap<&str, f64> = fused.iter().map(|(id, s)| (id.as_str(), *s)).collect();
    let mut ids: Vec<&str> = fused.iter().map(|(id, _)| id.as_str()).collect();
    if admit_new {
        let mut named: std::collections::HashSet<&str> = ids.iter().copied().collect();
        for (id, _) in fused {
            for n in neighbours.get(id).into_iter().flatten() {
                if named.insert(n.as_str()) {
                    ids.push(n.as_str());
                }
            }
        }
    }
    // Neighbourhood is symmetric: the ids next to `id` are those that name `id` as theirs, and
    // those `id` names (a neighbour admitted above has no list of its own).
    let mut lent: HashMap<&str, f64> = HashMap::new();
    for (id, score) in fused {
        for n in neighbours.get(id).into_iter().flatten() {
            let best = lent.entry(n.as_str()).or_insert(0.0);
            *best = best.max(*score);
        }
    }
    let mut out: Vec<(usize, &str, f64)> = ids
        .iter()
        .enumerate()
        .map(|(order, id)| {
            let from_neighbours = neighbours
                .get(*id)
                .into_iter()
                .flatten()
                .filter_map(|n| own.get(n.as_str()).copied())
                .chain(lent.get(id).copied())
                .fold(0.0, f64::max);
            (
                order,
                *id,
                own.get(id).copied().unwrap_or(0.0) + weight * from_neighbours,
            )
        })
        .collect();
    out.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
    out.into_iter().map(|(_, id, s)| (id.to_string(), s)).collect()
}

/// The hybrid search of conversation memory and code, local and on the sync server alike:
/// relative score fusion of the keyword list (weight 1 − `semantic_weight`) and the semantic
/// list, then [`spread_to_neighbours`] with [`HYBRID_NEIGHBOUR_WEIGHT`]. `neighbours` is asked
/// once, for the fused ids, and answers the messages next to each.
pub fn hybrid_fusion<E>(
    keyword: &[(String, f64)],
    semantic: &[(String, f64)],
    semantic_weight: f64,
    admit_new: bool,
    neighbours: impl FnOnce(&[String]) -> Result<HashMap<String, Vec<String>>, E>,
) -> Result<Vec<(String, f64)>, E> {
    hybrid_fusion_weighted(
        keyword,
        1.0 - semantic_weight,
        semantic,
        semantic_weight,
        admit_new,
        neighbours,
    )
}

/// [`hybrid_fusion`] with both weights given: the keyword list's weight may be lowered when its
/// best hits hold few of the query's words (see the engine's `keyword_strength`).
pub fn hybrid_fusion_weighted<E>(
    keyword: &[(String, f64)],
    keyword_weight: f64,
    semantic: &[(String, f64)],
    semantic_weight: f64,
    admit_new: bool,
    neighbours: impl FnOnce(&[String]) -> Result<HashMap<String, Vec<String>>, E>,
) -> Result<Vec<(String, f64)>, E> {
    let fused = relative_score_fusion(&[(keyword, keyword_weight), (semantic, semantic_weight)]);
    let ids: Vec<String> = fused.iter().map(|(id, _)| id.clone()).collect();
    Ok(spread_to_neighbours(
        &fused,
        &neighbours(&ids)?,
        HYBRID_NEIGHBOUR_WEIGHT,
        admit_new,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_matched_question_lends_score_to_the_answer_after_it() {
        let fused = vec![
            ("q".to_string(), 1.0),
            ("other".to_string(), 0.5),
            ("a".to_string(), 0.3),
        ];
        let neighbours: HashMap<String, Vec<String>> = [
            ("q".to_string(), vec!["before".to_string(), "a".to_string()]),
            ("a".to_string(), vec!["q".to_string()]),
        ]
        .into_iter()
        .collect();
        let spread = spread_to_neighbours(&fused, &neighbours, 0.4, true);
        let order: Vec<&str> = spread.iter().map(|(id, _)| id.as_str()).collect();
        // a: 0.3 + 0.4 × 1.0 = 0.7 passes other (0.5); before: 0 + 0.4 × 1.0 enters after other;
        // q: 1.0 + 0.4 × 0.3.
        assert_eq!(order, ["q", "a", "other", "before"]);
        assert!((spread[0].1 - 1.12).abs() < 1e-9 && (spread[1].1 - 0.7).abs() < 1e-9);
        // Not admitting new ids: the same boosts among the results only.
        let kept = spread_to_neighbours(&fused, &neighbours, 0.4, false);
        assert_eq!(
            kept.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(),
            ["q", "a", "other"]
        );
        // Weight 0 changes nothing.
        assert_eq!(spread_to_neighbours(&fused, &neighbours, 0.0, false), fused);
    }

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn documents_found_by_both_retrievers_rise() {
        let keyword = ids(&["a", "b", "c"]);
        let semantic = ids(&["d", "c", "e"]);
        let fused = reciprocal_rank_fusion(&[keyword, semantic], RRF_K);
        assert_eq!(fused[0].0, "c", "{fused:?}");
        assert_eq!(fused.len(), 5);
    }

    #[test]
    fn weights_favour_the_stronger_list() {
        let (a, b) = (ids(&["a", "b"]), ids(&["b", "a"]));
        let fused = weighted_rank_fusion(&[(&a, 1.0), (&b, 0.5)], RRF_K);
        assert_eq!(fused[0].0, "a");
    }

    fn scored(v: &[(&str, f64)]) -> Vec<(String, f64)> {
        v.iter().map(|(id, s)| (id.to_string(), *s)).collect()
    }

    #[test]
    fn relative_fusion_keeps_score_gaps() {
        // Keyword: "a" far ahead of "b". Semantic: "b" barely ahead of "a".
        let keyword = scored(&[("a", 12.0), ("b", 3.0), ("c", 2.0)]);
        let semantic = scored(&[("b", 0.61), ("a", 0.60), ("d", 0.20)]);
        let fused = relative_score_fusion(&[(&keyword, 0.5), (&semantic, 0.5)]);
        assert_eq!(fused[0].0, "a", "{fused:?}");
        // Rank fusion cannot tell: it is a tie broken by first sight.
        let ids = |l: &[(String, f64)]| l.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>();
        let rrf = weighted_rank_fusion(&[(&ids(&keyword), 1.0), (&ids(&semantic), 1.0)], RRF_K);
        assert_eq!(rrf[0].1, rrf[1].1);
        // Scaled scores: the best of each list counts its weight in full, the worst nothing.
        let only = relative_score_fusion(&[(&semantic, 0.3)]);
        assert!((only[0].1 - 0.3).abs() < 1e-9 && only[2].1 == 0.0, "{only:?}");
        // A list of equal scores (or one item) does not divide by zero.
        let flat = relative_score_fusion(&[(&scored(&[("x", 1.0), ("y", 1.0)]), 1.0)]);
        assert_eq!(flat, scored(&[("x", 1.0), ("y", 1.0)]));
    }

    #[test]
    fn one_list_keeps_its_order() {
        let fused = reciprocal_rank_fusion(&[ids(&["x", "y", "z"])], RRF_K);
        let order: Vec<_> = fused.iter().map(|f| f.0.as_str()).collect();
        assert_eq!(order, ["x", "y", "z"]);
    }
}

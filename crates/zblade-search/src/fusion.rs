//! Reciprocal rank fusion: merging ranked lists from different retrievers (BM25 and vectors)
//! whose scores are not comparable, by rank alone.

use std::collections::HashMap;

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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn one_list_keeps_its_order() {
        let fused = reciprocal_rank_fusion(&[ids(&["x", "y", "z"])], RRF_K);
        let order: Vec<_> = fused.iter().map(|f| f.0.as_str()).collect();
        assert_eq!(order, ["x", "y", "z"]);
    }
}

//! Finding anchored lines in a file as it is now.

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use zblade_core::Anchor;

use crate::SourceFile;
use crate::anchor::{context, line_pairs};

use zblade_core::ReferenceStatus;

/// Where the lines are now.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Found {
    /// Ok, Shifted or Modified (the caller turns a hit in another file into Moved).
    pub status: ReferenceStatus,
    /// First and last line now, 1-based, inclusive.
    pub lines: [u32; 2],
    /// 1.0 for exact matches; the share of lines still matching for Modified.
    pub similarity: f32,
}

/// Lines that occur more often than this in a file (blank lines, lone braces) are useless for
/// locating a range by voting.
const COMMON_LINE: usize = 8;
/// Below this similarity the lines are considered gone from this file.
pub const MIN_SIMILARITY: f32 = 0.34;

/// Finds the anchored lines in `file`. `start` is where the range began at capture (1-based);
/// among several equally good places, the one nearest to it wins. `None` when too little of the
/// range is left in this file.
pub fn resolve(anchor: &Anchor, start: u32, file: &SourceFile) -> Option<Found> {
    let pairs = line_pairs(anchor);
    if pairs.is_empty() {
        return None;
    }
    let len = anchor.len as usize;
    let n = file.line_count();
    let orig = start.max(1) as usize - 1;
    let matches_at = |base: usize| base + len <= n && pairs.iter().all(|&(o, h)| file.hashes[base + o] == h);
    let range = |base: usize, last: usize| [base as u32 + 1, last as u32 + 1];

    if matches_at(orig) {
        return Some(Found {
            status: ReferenceStatus::Ok,
            lines: range(orig, orig + len - 1),
            similarity: 1.0,
        });
    }

    // Where each anchored hash occurs now.
    let wanted: HashSet<u64> = pairs.iter().map(|p| p.1).collect();
    let mut positions: HashMap<u64, Vec<usize>> = HashMap::new();
    for (i, h) in file.hashes.iter().enumerate() {
        if wanted.contains(h) {
            positions.entry(*h).or_default().push(i);
        }
    }
    let occurrences = |h: u64| positions.get(&h).map_or(0, Vec::len);

    // Exact match elsewhere: try the places the range's rarest line points to.
    if pairs.iter().all(|p| occurrences(p.1) > 0) {
        let pivot = pairs
            .iter()
            .min_by_key(|p| occurrences(p.1))
            .expect("pairs is not empty");
        let (before, after) = context(anchor);
        let best = positions[&pivot.1]
            .iter()
            .filter_map(|&p| p.checked_sub(pivot.0))
            .filter(|&base| matches_at(base))
            .min_by_key(|&base| {
                (
                    usize::MAX - context_score(file, base, len, &before, &after),
                    base.abs_diff(orig),
                )
            });
        if let Some(base) = best {
            return Some(Found {
                status: ReferenceStatus::Shifted,
                lines: range(base, base + len - 1),
                similarity: 1.0,
            });
        }
    }

    // Partly changed: vote for the offset most distinctive lines agree on, then align.
    let mut votes: HashMap<isize, usize> = HashMap::new();
    for &(o, h) in &pairs {
        let found = positions.get(&h).map_or(&[][..], Vec::as_slice);
        if found.len() <= COMMON_LINE {
            for &p in found {
                *votes.entry(p as isize - o as isize).or_default() += 1;
            }
        }
    }
    let (&delta, _) = votes
        .iter()
        .max_by_key(|&(&d, &v)| (v, std::cmp::Reverse(d.abs_diff(orig as isize))))?;
    if anchor.tail.is_empty() {
        align(&pairs, file, delta, len)
    } else {
        // Long range with its middle unknown: judge by the stored head and tail.
        let base = delta.max(0) as usize;
        let matched = pairs
            .iter()
            .filter(|&&(o, h)| file.hashes.get(base + o) == Some(&h))
            .count();
        let similarity = matched as f32 / pairs.len() as f32;
        (similarity >= MIN_SIMILARITY && base < n).then(|| Found {
            status: ReferenceStatus::Modified,
            lines: range(base, (base + len - 1).min(n - 1)),
            similarity,
        })
    }
}

/// How many context lines around `base..base+len` still match.
fn context_score(file: &SourceFile, base: usize, len: usize, before: &[u64], after: &[u64]) -> usize {
    let before_ok = before
        .iter()
        .rev()
        .enumerate()
        .filter(|&(i, h)| base.checked_sub(i + 1).and_then(|p| file.hashes.get(p)) == Some(h))
        .count();
    let after_ok = after
        .iter()
        .enumerate()
        .filter(|&(i, h)| file.hashes.get(base + len + i) == Some(h))
        .count();
    before_ok + after_ok
}

/// Aligns the anchored lines with a window of the file around `delta` (longest common
/// subsequence), giving the new range and a Dice similarity.
fn align(pairs: &[(usize, u64)], file: &SourceFile, delta: isize, len: usize) -> Option<Found> {
    let slack = (len / 2).max(8) as isize;
    let lo = (delta - slack).max(0) as usize;
    let hi = ((delta + len as isize + slack).max(0) as usize).min(file.line_count());
    if lo >= hi {
        return None;
    }
    let window = &file.hashes[lo..hi];
    let a: Vec<u64> = pairs.iter().map(|p| p.1).collect();
    // dp[i][j] = LCS of a[i..] and window[j..]
    let (m, w) = (a.len(), window.len());
    let mut dp = vec![0u16; (m + 1) * (w + 1)];
    let at = |i: usize, j: usize| i * (w + 1) + j;
    for i in (0..m).rev() {
        for j in (0..w).rev() {
            dp[at(i, j)] = if a[i] == window[j] {
                dp[at(i + 1, j + 1)] + 1
            } else {
                dp[at(i + 1, j)].max(dp[at(i, j + 1)])
            };
        }
    }
    let lcs = dp[at(0, 0)] as usize;
    if lcs == 0 {
        return None;
    }
    // Walk the table to find the first and last matched window lines.
    let (mut i, mut j, mut first, mut last) = (0, 0, usize::MAX, 0);
    while i < m && j < w {
        if a[i] == window[j] && dp[at(i, j)] == dp[at(i + 1, j + 1)] + 1 {
            first = first.min(j);
            last = j;
            i += 1;
            j += 1;
        } else if dp[at(i + 1, j)] >= dp[at(i, j + 1)] {
            i += 1;
        } else {
            j += 1;
        }
    }
    let new_len = last - first + 1;
    let similarity = 2.0 * lcs as f32 / (m + new_len) as f32;
    (similarity >= MIN_SIMILARITY).then(|| Found {
        status: ReferenceStatus::Modified,
        lines: [(lo + first) as u32 + 1, (lo + last) as u32 + 1],
        similarity,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::anchor::capture;

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("let value_{i} = compute({i});\n")).collect()
    }

    #[test]
    fn unchanged_lines_are_ok() {
        let file = SourceFile::from_text(&numbered(50));
        let anchor = capture(&file, 10, 20).unwrap();
        let found = resolve(&anchor, 10, &file).unwrap();
        assert_eq!((found.status, found.lines), (ReferenceStatus::Ok, [10, 20]));
    }

    #[test]
    fn lines_inserted_above_shift_the_range() {
        let before = SourceFile::from_text(&numbered(50));
        let anchor = capture(&before, 10, 20).unwrap();
        let after = SourceFile::from_text(&format!("// header\n// more\n// and more\n{}", numbered(50)));
        let found = resolve(&anchor, 10, &after).unwrap();
        assert_eq!((found.status, found.lines), (ReferenceStatus::Shifted, [13, 23]));
    }

    #[test]
    fn a_partly_edited_range_is_modified_with_a_similarity() {
        let before = SourceFile::from_text(&numbered(50));
        let anchor = capture(&before, 10, 20).unwrap();
        let mut lines: Vec<String> = numbered(50).lines().map(String::from).collect();
        lines[13] = "let changed = 1;".into();
        lines[14] = "let changed_too = 2;".into();
        lines.insert(16, "// an inserted comment".into());
        let after = SourceFile::from_text(&(lines.join("\n") + "\n"));
        let found = resolve(&anchor, 10, &after).unwrap();
        assert_eq!(found.status, ReferenceStatus::Modified);
        assert_eq!(found.lines, [10, 21]);
        assert!(found.similarity > 0.7 && found.similarity < 1.0, "{}", found.similarity);
    }

    #[test]
    fn a_rewritten_range_is_not_found() {
        let before = SourceFile::from_text(&numbered(50));
        let anchor = capture(&before, 10, 20).unwrap();
        let after = SourceFile::from_text("completely\ndifferent\ncontent\n");
        assert_eq!(resolve(&anchor, 10, &after), None);
    }

    #[test]
    fn repeated_blocks_resolve_to_the_one_with_matching_context() {
        let block = "if x {\n    retry();\n}\n";
        let text = format!("fn a() {{\n{block}}}\nfn b() {{\n{block}}}\n");
        let file = SourceFile::from_text(&text);
        let anchor = capture(&file, 7, 9).unwrap(); // the block inside b()
        let shifted = SourceFile::from_text(&format!("// new line\n{text}"));
        assert_eq!(resolve(&anchor, 7, &shifted).unwrap().lines, [8, 10]);
    }
}

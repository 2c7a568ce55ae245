//! Capturing an [`Anchor`] for a line range, and reading its hashes back.

use zblade_core::Anchor;

use crate::SourceFile;

/// Ranges up to this many lines store every line's hash; longer ones store the first and last
/// `LONG_RANGE_KEEP / 2` lines, which is plenty to find them again.
pub const LONG_RANGE_KEEP: usize = 512;
/// Lines of context kept on each side of the range.
pub const CONTEXT_LINES: usize = 3;

fn hex(h: u64) -> String {
    format!("{h:016x}")
}

fn unhex(s: &str) -> Option<u64> {
    u64::from_str_radix(s, 16).ok()
}

/// Captures an anchor for lines `start..=end` (1-based, inclusive) of `file`. Lines past the end
/// of the file are cut off; `None` when the range starts past the end.
pub fn capture(file: &SourceFile, start: u32, end: u32) -> Option<Anchor> {
    let count = file.line_count();
    let first = start.max(1) as usize - 1;
    if first >= count {
        return None;
    }
    let last = (end as usize).min(count) - 1;
    let range = &file.hashes[first..=last];
    let (head, tail) = if range.len() <= LONG_RANGE_KEEP {
        (range.iter().copied().map(hex).collect(), Vec::new())
    } else {
        let half = LONG_RANGE_KEEP / 2;
        (
            range[..half].iter().copied().map(hex).collect(),
            range[range.len() - half..].iter().copied().map(hex).collect(),
        )
    };
    Some(Anchor {
        len: range.len() as u32,
        head,
        tail,
        before: file.hashes[first.saturating_sub(CONTEXT_LINES)..first]
            .iter()
            .copied()
            .map(hex)
            .collect(),
        after: file.hashes[last + 1..(last + 1 + CONTEXT_LINES).min(count)]
            .iter()
            .copied()
            .map(hex)
            .collect(),
        idents: crate::idents::capture_idents(file, first, last),
    })
}

/// The stored line hashes as (offset in the range, hash); malformed hashes are skipped.
pub fn line_pairs(anchor: &Anchor) -> Vec<(usize, u64)> {
    let mut pairs: Vec<(usize, u64)> = anchor
        .head
        .iter()
        .enumerate()
        .filter_map(|(i, h)| Some((i, unhex(h)?)))
        .collect();
    let tail_start = (anchor.len as usize).saturating_sub(anchor.tail.len());
    pairs.extend(
        anchor
            .tail
            .iter()
            .enumerate()
            .filter_map(|(i, h)| Some((tail_start + i, unhex(h)?))),
    );
    pairs
}

/// The context hashes: (hashes before the range, hashes after it).
pub fn context(anchor: &Anchor) -> (Vec<u64>, Vec<u64>) {
    let parse = |v: &[String]| v.iter().filter_map(|h| unhex(h)).collect();
    (parse(&anchor.before), parse(&anchor.after))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_ranges_keep_every_line_and_context() {
        let file = SourceFile::from_text("1\n2\n3\n4\n5\n6\n7\n8\n");
        let anchor = capture(&file, 4, 5).unwrap();
        assert_eq!(anchor.len, 2);
        assert_eq!(anchor.head.len(), 2);
        assert_eq!(anchor.before.len(), 3);
        assert_eq!(anchor.after.len(), 3);
        assert_eq!(line_pairs(&anchor), vec![(0, file.hashes[3]), (1, file.hashes[4])]);
    }

    #[test]
    fn long_ranges_keep_head_and_tail() {
        let text: String = (0..2000).map(|i| format!("line {i}\n")).collect();
        let file = SourceFile::from_text(&text);
        let anchor = capture(&file, 1, 2000).unwrap();
        let pairs = line_pairs(&anchor);
        assert_eq!(pairs.len(), LONG_RANGE_KEEP);
        assert_eq!(pairs.last().unwrap(), &(1999, file.hashes[1999]));
    }

    #[test]
    fn ranges_past_the_end_are_cut_or_refused() {
        let file = SourceFile::from_text("a\nb\nc\n");
        assert_eq!(capture(&file, 2, 50).unwrap().len, 2);
        assert!(capture(&file, 50, 60).is_none());
    }
}

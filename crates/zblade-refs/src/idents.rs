//! Finding referenced code by its identifiers when none of its lines is left as it was.
//!
//! Line hashes find code that shifted, and code edited in places. Code that moved to another
//! file *and* changed — a function split out into a module, re-indented into an `impl`, its
//! signature reworked on the way — keeps few or none of its lines, so line hashes report it
//! missing although it is still there. What it keeps are its names: the function's, its
//! callees', its types'. An anchor stores hashes of the range's most distinctive identifiers;
//! the checker indexes the project's identifiers once and looks for the window of lines that
//! holds the most of them.

use std::collections::HashMap;

use crate::SourceFile;

/// Identifiers kept per anchor.
pub const IDENTS_KEPT: usize = 16;
/// Identifiers shorter than this say little (`i`, `id`, `ok`).
const MIN_IDENT_LEN: usize = 4;
/// An identifier found at more places than this in the whole project is too common to point
/// anywhere (`self`, `String`, `result`), and indexing all its places costs memory for nothing.
const MAX_PLACES: usize = 256;
/// Fewer distinctive identifiers than this are too little evidence to claim a place.
pub const MIN_IDENTS: usize = 4;

/// Keywords and names so common in every language that they never distinguish one piece of
/// code from another.
const COMMON: &[&str] = &[
    "self",
    "Self",
    "else",
    "true",
    "false",
    "None",
    "Some",
    "return",
    "match",
    "impl",
    "struct",
    "enum",
    "where",
    "const",
    "static",
    "async",
    "await",
    "loop",
    "while",
    "break",
    "continue",
    "crate",
    "super",
    "trait",
    "type",
    "unsafe",
    "extern",
    "from",
    "into",
    "this",
    "null",
    "undefined",
    "function",
    "class",
    "import",
    "export",
    "public",
    "private",
    "protected",
    "void",
    "new",
    "String",
    "Vec",
    "Option",
    "Result",
    "Box",
    "usize",
    "isize",
    "bool",
    "char",
    "with",
    "elif",
    "pass",
    "def",
    "lambda",
    "yield",
    "None",
    "int",
    "float",
    "string",
    "println",
    "format",
    "unwrap",
    "clone",
    "test",
    "assert",
    "assert_eq",
];

/// Hash of an identifier as stored in an anchor.
pub fn ident_hash(ident: &[u8]) -> u32 {
    xxhash_rust::xxh3::xxh3_64(ident) as u32
}

/// The identifiers of one line worth indexing: 4+ characters, not a common keyword.
pub fn line_idents(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
        .filter(|w| w.len() >= MIN_IDENT_LEN && !w[0].is_ascii_digit())
        .filter(|w| !COMMON.iter().any(|c| c.as_bytes() == *w))
}

/// The [`IDENTS_KEPT`] most distinctive identifiers of lines `first..=last` (0-based) of
/// `file`, hashed, as 8 hex digits each. Longer identifiers first (`parse_config_file` says more
/// than `path`), then the rarer in the range, then the earlier; deterministic.
pub fn capture_idents(file: &SourceFile, first: usize, last: usize) -> Vec<String> {
    let mut seen: HashMap<&[u8], (usize, usize)> = HashMap::new(); // ident -> (count, first seen)
    let mut order = 0;
    for index in first..=last {
        for ident in line_idents(file.line_bytes(index)) {
            seen.entry(ident)
                .and_modify(|(count, _)| *count += 1)
                .or_insert_with(|| {
                    order += 1;
                    (1, order)
                });
        }
    }
    let mut ranked: Vec<(&[u8], (usize, usize))> = seen.into_iter().collect();
    ranked.sort_by(|(a, (ca, oa)), (b, (cb, ob))| b.len().cmp(&a.len()).then(ca.cmp(cb)).then(oa.cmp(ob)));
    ranked
        .into_iter()
        .take(IDENTS_KEPT)
        .map(|(ident, _)| format!("{:08x}", ident_hash(ident)))
        .collect()
}

/// Where each identifier of a set of files occurs: (file number, 0-based line) per identifier
/// hash, for identifiers found at no more than [`MAX_PLACES`] places.
pub struct IdentIndex {
    places: HashMap<u32, Vec<(u32, u32)>>,
}

/// A window of lines that holds many of an anchor's identifiers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IdentHit {
    /// Which file (its number in the list the index was built from).
    pub file: usize,
    /// First and last line of the window's hits, 0-based.
    pub lines: [usize; 2],
    /// Share of the anchor's identifiers found in the window.
    pub share: f32,
}

impl IdentIndex {
    /// Indexes `files` (in order; a hit names a file by its position here).
    pub fn build<'a>(files: impl IntoIterator<Item = &'a SourceFile>) -> IdentIndex {
        let mut places: HashMap<u32, Vec<(u32, u32)>> = HashMap::new();
        for (number, file) in files.into_iter().enumerate() {
            for line in 0..file.line_count() {
                for ident in line_idents(file.line_bytes(line)) {
                    let list = places.entry(ident_hash(ident)).or_default();
                    // One entry per line is enough, and a list past the cap is dropped below.
                    if list.len() <= MAX_PLACES && list.last() != Some(&(number as u32, line as u32)) {
                        list.push((number as u32, line as u32));
                    }
                }
            }
        }
        places.retain(|_, list| list.len() <= MAX_PLACES);
        IdentIndex { places }
    }

    /// The window of at most `span` lines holding the largest share of `idents`; `None` when
    /// fewer than [`MIN_IDENTS`] of them are known at all. Among equal shares the window in
    /// `prefer_file` nearest `prefer_line` wins, then the first.
    pub fn best_window(&self, idents: &[u32], span: usize, prefer: Option<(usize, usize)>) -> Option<IdentHit> {
        let mut hits: HashMap<u32, Vec<(u32, usize)>> = HashMap::new(); // file -> (line, ident number)
        let mut known = 0;
        for (n, ident) in idents.iter().enumerate() {
            if let Some(list) = self.places.get(ident) {
                known += 1;
                for &(file, line) in list {
                    hits.entry(file).or_default().push((line, n));
                }
            }
        }
        if known < MIN_IDENTS {
            return None;
        }
        let mut best: Option<(IdentHit, usize)> = None; // (hit, distance to the preferred place)
        let mut files: Vec<_> = hits.into_iter().collect();
        files.sort_by_key(|(file, _)| *file);
        for (file, mut list) in files {
            list.sort_unstable();
            let mut counts = vec![0u32; idents.len()];
            let mut distinct = 0;
            let mut left = 0;
            for right in 0..list.len() {
                let (line, n) = list[right];
                if counts[n] == 0 {
                    distinct += 1;
                }
                counts[n] += 1;
                while line - list[left].0 >= span as u32 {
                    let gone = list[left].1;
                    counts[gone] -= 1;
                    if counts[gone] == 0 {
                        distinct -= 1;
                    }
                    left += 1;
                }
                let hit = IdentHit {
                    file: file as usize,
                    lines: [list[left].0 as usize, line as usize],
                    share: distinct as f32 / idents.len() as f32,
                };
                let distance = match prefer {
                    Some((f, l)) if f == file as usize => hit.lines[0].abs_diff(l),
                    _ => usize::MAX,
                };
                if best
                    .as_ref()
                    .is_none_or(|(b, d)| hit.share > b.share || (hit.share == b.share && distance < *d))
                {
                    best = Some((hit, distance));
                }
            }
        }
        best.map(|(hit, _)| hit)
    }
}

/// The identifier hashes stored in an anchor; malformed entries are skipped.
pub fn anchor_idents(stored: &[String]) -> Vec<u32> {
    let mut idents: Vec<u32> = stored.iter().filter_map(|h| u32::from_str_radix(h, 16).ok()).collect();
    idents.dedup();
    idents
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idents_of(text: &str, first: usize, last: usize) -> Vec<u32> {
        anchor_idents(&capture_idents(&SourceFile::from_text(text), first, last))
    }

    #[test]
    fn common_keywords_and_short_names_are_not_identifiers() {
        let found: Vec<&[u8]> = line_idents(b"    pub fn parse_config(self, id: u32) -> Result<Config> {").collect();
        assert_eq!(found, vec![&b"parse_config"[..], b"Config"]);
    }

    #[test]
    fn a_rewritten_and_reindented_function_is_found_in_another_file() {
        let old = "fn parse_config_file(path: &Path) -> Config {\n    let raw = read_settings(path);\n    merge_defaults(raw, DEFAULT_TIMEOUT)\n}\n";
        let idents = idents_of(old, 0, 3);
        assert!(idents.len() >= MIN_IDENTS, "{idents:?}");
        let unrelated = SourceFile::from_text("fn main() {\n    println!(\"hello world\");\n}\n");
        // Moved into an impl block (re-indented), with its signature and a line changed.
        let moved = SourceFile::from_text(
            "impl Loader {\n    fn other(&self) {}\n\n    pub fn parse_config_file(&self, path: &Path, strict: bool) -> Config {\n        let raw = read_settings(path)?;\n        validate(&raw, strict);\n        merge_defaults(raw, DEFAULT_TIMEOUT)\n    }\n}\n",
        );
        let index = IdentIndex::build([&unrelated, &moved]);
        let hit = index.best_window(&idents, 6, None).unwrap();
        assert_eq!(hit.file, 1);
        assert_eq!(hit.lines, [3, 6]);
        assert!(hit.share > 0.8, "{}", hit.share);
    }

    #[test]
    fn identifiers_from_a_hostile_artifact_are_skipped_or_harmless() {
        // An anchor comes from an artifact anyone may have written: junk, overlong and huge
        // lists must neither panic nor find anything they do not name.
        let mut stored: Vec<String> = vec!["not hex".into(), "ffffffffffffffffff".into(), "".into(), "-1".into()];
        assert!(anchor_idents(&stored).is_empty());
        stored.extend((0..100_000u32).map(|n| format!("{n:08x}")));
        let idents = anchor_idents(&stored);
        assert_eq!(idents.len(), 100_000);
        let file = SourceFile::from_text("fn parse_config_file() {\n    read_settings();\n}\n");
        let index = IdentIndex::build([&file]);
        let hit = index.best_window(&idents, 10, None);
        assert!(hit.is_none_or(|h| h.share < 0.001), "{hit:?}");
    }

    #[test]
    fn too_few_known_identifiers_find_nothing() {
        let idents = idents_of("fn alpha_beta() {\n    gamma_delta();\n}\n", 0, 2);
        let elsewhere = SourceFile::from_text("fn alpha_beta() {}\n");
        assert_eq!(IdentIndex::build([&elsewhere]).best_window(&idents, 10, None), None);
    }
}

//! Source files cut into search chunks along their syntax, the way people read code: a chunk
//! is a function, a method, a type or an impl (a large one split at its inner statements,
//! small neighbours merged), named by its symbol path (`GitignoreBuilder::add_line`) and
//! carrying its signature. Markdown is cut by heading.
//!
//! Chunks are line ranges, like the line windows they replace: the index keeps a path, the
//! lines and the CID of their text, never the text ([`zblade_search::code`] verifies them).
//! Languages without a grammar here return `None` and are cut into line windows by the
//! caller.
//!
//! Grammars are tree-sitter's (C libraries compiled into this crate); they live here, away
//! from the crates that do not need them.

pub mod docs;
mod items;
mod markdown;

use std::path::Path;

pub use items::Language;

/// One chunk: lines `start_line..=end_line` (1-based), the symbols it holds, the signature of
/// the first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxChunk {
    /// First line, 1-based.
    pub start_line: u32,
    /// Last line, inclusive.
    pub end_line: u32,
    /// Symbol paths inside the file (`Type::method`, `Class.method`, `Intro > Setup`), in order;
    /// empty for code between items (imports, statements at the top level).
    pub symbols: Vec<String>,
    /// The declaration of the first symbol up to its body (`pub fn add_line(&mut self, …)`),
    /// whitespace collapsed; empty for Markdown and code between items.
    pub signature: String,
}

impl SyntaxChunk {
    /// The symbols joined for display and storage: `A::new, A::add`.
    pub fn symbol(&self) -> Option<String> {
        (!self.symbols.is_empty()).then(|| self.symbols.join(", "))
    }
}

/// Characters per chunk, at most (about 512 tokens, what embedding models read): the budget
/// the index cuts files with.
pub const CHUNK_CHARS: usize = 2000;

/// What is embedded for a code chunk: for one cut by syntax, its file and symbol path first
/// (`src/gitignore.rs: GitignoreBuilder::add_line`), so the enclosing type and module are
/// part of its meaning; a line window alone. Its CID is the chunk's `vector_cid`, so a function
/// that did not change keeps its vector across re-indexing.
pub fn embedding_text(path: &str, symbol: Option<&str>, lines: &str) -> String {
    match symbol {
        Some(symbol) => format!("{path}: {symbol}\n{lines}"),
        None => lines.to_string(),
    }
}

/// Cuts `text` along its syntax when `path`'s extension names a language this crate knows, in
/// chunks of at most about `budget` characters (one item larger than that is split; a line
/// longer than that stays whole). `None` for other languages, and for files the grammar
/// cannot parse at all.
pub fn chunk(path: &Path, text: &str, budget: usize) -> Option<Vec<SyntaxChunk>> {
    let language = Language::of(path)?;
    let lines: Vec<&str> = text.lines().collect();
    if lines.is_empty() {
        return Some(Vec::new());
    }
    let pieces = match language {
        Language::Markdown => markdown::sections(&lines),
        _ => items::pieces(language, text, &lines, budget)?,
    };
    Some(pack(pieces, &lines, budget))
}

/// The module path of a file, for languages whose files are modules: `src/net/http.rs` →
/// `net::http`, `pkg/util/strings.py` → `pkg.util.strings`; empty for a crate root.
pub fn module_path(path: &Path) -> String {
    let Some(language) = Language::of(path) else {
        return String::new();
    };
    let text = path.to_string_lossy().replace('\\', "/");
    let stem = text.rsplit_once('.').map_or(text.as_str(), |(s, _)| s);
    let mut parts: Vec<&str> = stem.split('/').filter(|p| !p.is_empty()).collect();
    match language {
        Language::Rust => {
            // Everything up to `src/` is the package; `lib`, `main` and `mod` name their folder.
            if let Some(at) = parts.iter().rposition(|p| *p == "src") {
                parts.drain(..=at);
            }
            if matches!(parts.last(), Some(&"lib" | &"main" | &"mod")) {
                parts.pop();
            }
        }
        Language::Python if parts.last() == Some(&"__init__") => {
            parts.pop();
        }
        _ => {}
    }
    parts.join(language.separator())
}

/// A run of lines with what it holds: an item (named), or lines between items.
#[derive(Debug, Clone)]
pub(crate) struct Piece {
    /// First line, 0-based.
    pub start: usize,
    /// Last line, 0-based, inclusive.
    pub end: usize,
    /// Symbol path, if an item.
    pub symbol: Option<String>,
    /// Its declaration up to the body.
    pub signature: String,
    /// Lines (0-based) where a piece too large for one chunk may be cut: starts of inner
    /// statements or members.
    pub cuts: Vec<usize>,
}

/// Pieces under this many characters are merged with small neighbours. On the tuning crates
/// of the code-search benchmark: 300 → hybrid recall@10 0.662, MRR@10 0.397, indexing 1.45×
/// line windows; 600 → 0.675, 0.390, 1.17×; 1000 → 0.691, 0.386, 1.03×.
const SMALL: usize = 1000;

/// Small neighbours are merged up to this many characters, well under the budget: the
/// embedding models read 256 tokens, about 1,000 characters of code, so an item packed past
/// that was never seen by them (the code-search benchmark's pipeline-loss table named it the
/// main loss). Tune crates, hybrid recall@10 / MRR@10 with zblade-code-v2, merged up to 2,000
/// (the budget, before): 0.834 / 0.527; 1,000: 0.853 / 0.543; 800: 0.845 / 0.553; 600:
/// 0.821 / 0.543.
const PACK_CHARS: usize = 1000;

fn chars(lines: &[&str], start: usize, end: usize) -> usize {
    lines[start..=end].iter().map(|l| l.len() + 1).sum()
}

/// Turns pieces (in order, not overlapping) into chunks: large ones split at their cuts (or
/// at line boundaries), small neighbours merged up to the budget, blank-only chunks dropped.
fn pack(pieces: Vec<Piece>, lines: &[&str], budget: usize) -> Vec<SyntaxChunk> {
    let mut split: Vec<Piece> = Vec::new();
    for piece in pieces {
        if chars(lines, piece.start, piece.end) <= budget {
            split.push(piece);
        } else {
            split.extend(split_piece(piece, lines, budget));
        }
    }
    let mut out: Vec<SyntaxChunk> = Vec::new();
    let mut last_small = false;
    for piece in split {
        let (start, end) = trim_blank(lines, piece.start, piece.end);
        let Some((start, end)) = start.zip(end) else {
            continue;
        };
        let size = chars(lines, start, end);
        let small = size < SMALL;
        if let Some(previous) = out.last_mut()
            && last_small
            && small
            && chars(lines, previous.start_line as usize - 1, end) <= PACK_CHARS.min(budget)
        {
            previous.end_line = end as u32 + 1;
            if let Some(symbol) = piece.symbol {
                if previous.symbols.is_empty() {
                    previous.signature = piece.signature;
                }
                if previous.symbols.last() != Some(&symbol) {
                    previous.symbols.push(symbol);
                }
            }
            last_small = chars(lines, previous.start_line as usize - 1, end) < SMALL;
            continue;
        }
        out.push(SyntaxChunk {
            start_line: start as u32 + 1,
            end_line: end as u32 + 1,
            symbols: piece.symbol.into_iter().collect(),
            signature: piece.signature,
        });
        last_small = small;
    }
    out
}

/// The first and last non-blank lines of `start..=end`.
fn trim_blank(lines: &[&str], start: usize, end: usize) -> (Option<usize>, Option<usize>) {
    let first = (start..=end).find(|&i| !lines[i].trim().is_empty());
    let last = (start..=end).rev().find(|&i| !lines[i].trim().is_empty());
    (first, last)
}

/// Cuts a piece larger than the budget into consecutive parts of at most the budget, at its
/// cut lines where it has them, else at blank lines, else anywhere; every part keeps the
/// piece's symbol.
fn split_piece(piece: Piece, lines: &[&str], budget: usize) -> Vec<Piece> {
    let mut parts = Vec::new();
    let mut start = piece.start;
    while start <= piece.end {
        // The longest run from `start` within the budget (at least one line).
        let mut end = start;
        let mut size = lines[start].len() + 1;
        while end < piece.end && size + lines[end + 1].len() < budget {
            end += 1;
            size += lines[end].len() + 1;
        }
        if end < piece.end {
            // Prefer to end just before a cut, then before a blank line, in the last half.
            let floor = start + (end - start) / 2;
            let before_cut = piece.cuts.iter().rev().find(|&&c| c > floor.max(start) && c <= end + 1);
            if let Some(&cut) = before_cut {
                end = cut - 1;
            } else if let Some(blank) = (floor.max(start)..end).rev().find(|&i| lines[i + 1].trim().is_empty()) {
                end = blank;
            }
        }
        parts.push(Piece {
            start,
            end,
            symbol: piece.symbol.clone(),
            signature: piece.signature.clone(),
            cuts: Vec::new(),
        });
        start = end + 1;
    }
    parts
}

#[cfg(test)]
mod tests;

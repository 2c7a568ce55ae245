//! Markdown cut by heading: a section runs from its heading to the next heading, named by the
//! path of headings above it (`Install > From source`). Headings inside fenced code blocks are
//! code, not headings.

use crate::Piece;

/// The sections of a Markdown file; lines before the first heading are an unnamed piece.
pub(crate) fn sections(lines: &[&str]) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::new();
    // The headings above the current line: (level, title).
    let mut path: Vec<(usize, String)> = Vec::new();
    let mut fence: Option<&str> = None;
    let mut start = 0;
    let mut symbol: Option<String> = None;
    let mut paragraphs = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        if let Some(open) = fence {
            if trimmed.starts_with(open) {
                fence = None;
            }
            continue;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = Some(&trimmed[..3]);
            continue;
        }
        let Some((level, title)) = heading(line) else {
            if i > 0 && lines[i - 1].trim().is_empty() && !line.trim().is_empty() {
                paragraphs.push(i);
            }
            continue;
        };
        if i > start {
            out.push(Piece {
                start,
                end: i - 1,
                symbol: symbol.take(),
                signature: String::new(),
                cuts: std::mem::take(&mut paragraphs),
            });
        }
        path.retain(|(l, _)| *l < level);
        path.push((level, title));
        symbol = Some(path.iter().map(|(_, t)| t.as_str()).collect::<Vec<_>>().join(" > "));
        start = i;
        paragraphs.clear();
    }
    if start < lines.len() {
        out.push(Piece {
            start,
            end: lines.len() - 1,
            symbol,
            signature: String::new(),
            cuts: paragraphs,
        });
    }
    out
}

/// `## Title ##` → (2, "Title"); at most three spaces of indent, up to six `#`, then a space.
fn heading(line: &str) -> Option<(usize, String)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let level = rest.len() - rest.trim_start_matches('#').len();
    if !(1..=6).contains(&level) {
        return None;
    }
    let after = &rest[level..];
    if !after.is_empty() && !after.starts_with([' ', '\t']) {
        return None;
    }
    let title = after.trim().trim_end_matches('#').trim().to_string();
    (!title.is_empty()).then_some((level, title))
}

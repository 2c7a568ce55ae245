//! Documented items of a source file: each function, method or type with a doc comment or
//! docstring, the first paragraph of that documentation as plain text, and the lines the
//! documentation sits on (so it can be blanked).
//!
//! Two users need exactly the same answer: the miner of the code model's training pairs
//! (doc → the code it documents, `scripts/models/mine_code_pairs`) and the code-search
//! benchmark (doc → which lines a search must find). Both blank the documentation before the
//! file is chunked, so what is trained on and what is searched is code, not its comments.
//!
//! What counts as documentation, per language: Rust `///` and `/** */`; Python the docstring
//! (first statement of the body); JavaScript, TypeScript, Java, C and C++ a `/** */` block
//! (JSDoc, TSDoc, Javadoc, Doxygen) or `///` lines just above the item; Go the `//` lines just
//! above it. Plain `//` comments elsewhere are not documentation.

use std::path::Path;

use crate::Language;

/// An item with documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Documented {
    /// Its symbol path, as the chunker names it (`Type::method`).
    pub symbol: String,
    /// Whether it is a function or method (rather than a type, module or constant).
    pub function: bool,
    /// First line of the item itself (its declaration, after docs and attributes), 1-based.
    pub start_line: u32,
    /// Last line, inclusive.
    pub end_line: u32,
    /// The first paragraph of its documentation, markup removed, whitespace collapsed.
    pub summary: String,
    /// Lines (0-based) holding documentation, including the rest of the paragraphs.
    pub doc_lines: Vec<usize>,
}

/// The documented items of a file, or `None` when `path`'s language has no grammar here.
pub fn documented(path: &Path, text: &str) -> Option<Vec<Documented>> {
    let language = Language::of(path)?;
    if language == Language::Markdown {
        return None;
    }
    let lines: Vec<&str> = text.lines().collect();
    // A budget of 0 opens every container, so each member is its own piece.
    let pieces = crate::items::pieces(language, text, &lines, 0)?;
    let mut out = Vec::new();
    for piece in pieces {
        let (Some(symbol), false) = (piece.symbol, piece.signature.is_empty()) else {
            continue;
        };
        let found = match language {
            // A class's docstring is not in its header piece (the body's first statement is
            // code between members), so the search may run past the piece.
            Language::Python => python_docstring(&lines, piece.start, lines.len() - 1),
            _ => leading_doc(language, &lines, piece.start, piece.end),
        };
        let Some((declaration, doc_lines, raw)) = found else {
            continue;
        };
        let summary = plain(&first_paragraph(&raw));
        if summary.is_empty() {
            continue;
        }
        out.push(Documented {
            symbol,
            function: is_function(language, &piece.signature),
            start_line: declaration as u32 + 1,
            end_line: piece.end as u32 + 1,
            summary,
            doc_lines,
        });
    }
    Some(out)
}

/// A function or method of a file, documented or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    /// Its symbol path, as the chunker names it (`Type::method`).
    pub symbol: String,
    /// First line of its piece (documentation and attributes included), 1-based.
    pub start_line: u32,
    /// Last line, inclusive.
    pub end_line: u32,
}

/// Every function and method of a file, each whole (never packed with its neighbours or
/// split), or `None` when `path`'s language has no grammar here: the candidates the code-search
/// benchmark ranks when it measures the code model alone.
pub fn functions(path: &Path, text: &str) -> Option<Vec<Function>> {
    let language = Language::of(path)?;
    if language == Language::Markdown {
        return None;
    }
    let lines: Vec<&str> = text.lines().collect();
    let pieces = crate::items::pieces(language, text, &lines, 0)?;
    Some(
        pieces
            .into_iter()
            .filter(|p| !p.signature.is_empty() && is_function(language, &p.signature))
            .filter_map(|p| {
                Some(Function {
                    symbol: p.symbol?,
                    start_line: p.start as u32 + 1,
                    end_line: p.end as u32 + 1,
                })
            })
            .collect(),
    )
}

/// `text` with every documentation line of its items made empty (lines kept, so line numbers
/// stay true), and Rust's inner docs (`//!`, `/*! */`) too. Text in other languages comes back
/// unchanged.
pub fn blank(path: &Path, text: &str) -> String {
    let mut blanked: Vec<bool> = vec![false; text.lines().count()];
    for item in documented(path, text).unwrap_or_default() {
        for line in item.doc_lines {
            blanked[line] = true;
        }
    }
    let rust = Language::of(path) == Some(Language::Rust);
    let mut in_inner_block = false;
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if rust && trimmed.starts_with("/*!") {
            in_inner_block = true;
        }
        let inner = rust && (in_inner_block || trimmed.starts_with("//!"));
        if in_inner_block && line.contains("*/") {
            in_inner_block = false;
        }
        if !(blanked[i] || inner) {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// Whether a signature declares a function.
fn is_function(language: Language, signature: &str) -> bool {
    let s = signature;
    match language {
        Language::Rust => s.contains("fn "),
        Language::Python => s.starts_with("def ") || s.starts_with("async def ") || s.contains("\ndef "),
        Language::Go => s.starts_with("func "),
        _ => s.contains('(') && !s.contains("class ") && !s.contains("interface ") && !s.contains("struct "),
    }
}

/// Documentation above an item (from the piece's first line down to its declaration): the
/// declaration's line, the doc lines and their text without comment markers.
fn leading_doc(language: Language, lines: &[&str], start: usize, end: usize) -> Option<(usize, Vec<usize>, String)> {
    let mut doc_lines = Vec::new();
    let mut raw = Vec::new();
    let mut in_block = false;
    let mut declaration = None;
    for (i, line) in lines.iter().enumerate().take(end + 1).skip(start) {
        let t = line.trim();
        if in_block {
            doc_lines.push(i);
            let body = t.split("*/").next().unwrap_or("");
            raw.push(body.trim_start_matches('*').trim().to_string());
            if t.contains("*/") {
                in_block = false;
            }
            continue;
        }
        let doc_slashes = match language {
            Language::Go => t.starts_with("//"),
            _ => t.starts_with("///") && !t.starts_with("////"),
        };
        if doc_slashes {
            doc_lines.push(i);
            raw.push(t.trim_start_matches('/').trim().to_string());
        } else if t.starts_with("/**") && !t.starts_with("/**/") {
            // A new block replaces anything before it: only the last one documents the item.
            doc_lines.clear();
            raw.clear();
            doc_lines.push(i);
            let body = t.trim_start_matches("/**");
            raw.push(body.split("*/").next().unwrap_or("").trim().to_string());
            in_block = !body.contains("*/");
        } else if t.is_empty() || t.starts_with("//") || t.starts_with("/*") || t.starts_with('*') {
            // A blank line or a plain comment between docs and the item: docs before it
            // belong to something else.
            if !(t.is_empty() && doc_lines.is_empty()) {
                doc_lines.clear();
                raw.clear();
            }
        } else if t.starts_with("#[") || t.starts_with('@') {
            // Attributes and decorators sit between docs and the declaration.
        } else {
            declaration = Some(i);
            break;
        }
    }
    let declaration = declaration?;
    (!doc_lines.is_empty()).then(|| (declaration, doc_lines, raw.join("\n")))
}

/// A Python docstring: the first statement of the body when it is a string literal.
fn python_docstring(lines: &[&str], start: usize, end: usize) -> Option<(usize, Vec<usize>, String)> {
    let mut i = start;
    while i <= end && !is_python_definition(lines[i].trim_start()) {
        i += 1;
    }
    let declaration = i;
    // The signature ends at the first line ending with `:` (outside a comment).
    while i <= end && !lines[i].split(" #").next().unwrap_or("").trim_end().ends_with(':') {
        i += 1;
    }
    i += 1;
    while i <= end && lines[i].trim().is_empty() {
        i += 1;
    }
    if i > end {
        return None;
    }
    let first = lines[i].trim_start();
    let prefix_len = first
        .char_indices()
        .find(|(_, c)| !matches!(c, 'r' | 'R' | 'u' | 'U'))
        .map_or(0, |(at, _)| at);
    let rest = &first[prefix_len..];
    let quote = ["\"\"\"", "'''"].into_iter().find(|q| rest.starts_with(q))?;
    let mut doc_lines = vec![i];
    let mut raw = Vec::new();
    let opened = &rest[3..];
    if let Some(close) = opened.find(quote) {
        raw.push(opened[..close].trim().to_string());
    } else {
        raw.push(opened.trim().to_string());
        i += 1;
        while i <= end {
            doc_lines.push(i);
            match lines[i].find(quote) {
                Some(close) => {
                    raw.push(lines[i][..close].trim().to_string());
                    break;
                }
                None => raw.push(lines[i].trim().to_string()),
            }
            i += 1;
        }
    }
    Some((declaration, doc_lines, raw.join("\n")))
}

fn is_python_definition(line: &str) -> bool {
    line.starts_with("def ") || line.starts_with("async def ") || line.starts_with("class ")
}

/// The lines up to the first blank one, or up to a tag line (`@param`, `Args:`, `# Examples`).
fn first_paragraph(raw: &str) -> String {
    let mut out = Vec::new();
    for line in raw.lines() {
        let t = line.trim();
        if t.is_empty() && !out.is_empty() {
            break;
        }
        if t.starts_with('@') || t.starts_with('#') || t.starts_with(":param") || t.starts_with("Args:") {
            break;
        }
        if !t.is_empty() {
            out.push(t);
        }
    }
    out.join(" ")
}

/// `[`Foo::bar`](crate::Foo)` → `Foo::bar`; backticks, emphasis, `{@link X}` and HTML tags
/// dropped; whitespace collapsed.
pub fn plain(doc: &str) -> String {
    let mut out = String::new();
    let mut chars = doc.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '`' | '*' | '[' => {}
            ']' if chars.peek() == Some(&'(') => {
                // Skip the link target.
                for c in chars.by_ref() {
                    if c == ')' {
                        break;
                    }
                }
            }
            ']' => {}
            '<' if chars.peek().is_some_and(|c| c.is_ascii_alphabetic() || *c == '/') => {
                for c in chars.by_ref() {
                    if c == '>' {
                        break;
                    }
                }
            }
            '{' if chars.peek() == Some(&'@') => {
                // `{@link Foo}` → `Foo`
                for c in chars.by_ref() {
                    if c == ' ' || c == '}' {
                        break;
                    }
                }
            }
            '}' => {}
            c => out.push(c),
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_docs_are_found_and_blanked() {
        let text = "//! Crate docs.\n\nuse std::fmt;\n\n/// Adds two numbers.\n///\n/// More detail.\n#[inline]\npub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\n// not a doc\nfn other() {}\n";
        let items = documented(Path::new("src/lib.rs"), text).unwrap();
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].symbol, "add");
        assert!(items[0].function);
        assert_eq!(items[0].summary, "Adds two numbers.");
        assert_eq!(items[0].start_line, 9);
        assert_eq!(items[0].doc_lines, vec![4, 5, 6]);
        let blanked = blank(Path::new("src/lib.rs"), text);
        assert_eq!(blanked.lines().count(), text.lines().count());
        assert!(!blanked.contains("Adds") && !blanked.contains("Crate docs") && !blanked.contains("More detail"));
        assert!(blanked.contains("#[inline]") && blanked.contains("// not a doc"));
    }

    #[test]
    fn python_docstrings_one_line_and_many() {
        let text = "class Pool:\n    \"\"\"A pool of connections.\"\"\"\n\n    def get(self, key):\n        \"\"\"\n        Return the connection for `key`.\n\n        Args:\n            key: the host.\n        \"\"\"\n        return self.map[key]\n";
        let items = documented(Path::new("pool.py"), text).unwrap();
        let summaries: Vec<(&str, &str, bool)> = items
            .iter()
            .map(|d| (d.symbol.as_str(), d.summary.as_str(), d.function))
            .collect();
        assert_eq!(
            summaries,
            vec![
                ("Pool", "A pool of connections.", false),
                ("Pool.get", "Return the connection for key.", true)
            ]
        );
        assert_eq!(items[1].doc_lines, vec![4, 5, 6, 7, 8, 9]);
        assert_eq!(items[1].start_line, 4);
        let blanked = blank(Path::new("pool.py"), text);
        assert!(!blanked.contains("Return the") && blanked.contains("return self.map[key]"));
    }

    #[test]
    fn jsdoc_only_the_block_just_above() {
        let text = "/** Unrelated. */\n\n// plain\n/**\n * Parses a {@link Url} string.\n * @param s the text\n */\nexport function parse(s) {\n  return s;\n}\n";
        let items = documented(Path::new("url.js"), text).unwrap();
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].symbol, "parse");
        assert_eq!(items[0].summary, "Parses a Url string.");
        assert_eq!(items[0].doc_lines, vec![3, 4, 5, 6]);
        assert_eq!(items[0].start_line, 8);
    }

    #[test]
    fn undocumented_and_unknown_languages() {
        assert!(documented(Path::new("a.rs"), "fn a() {}\n").unwrap().is_empty());
        assert!(documented(Path::new("a.txt"), "hello").is_none());
        assert_eq!(blank(Path::new("a.txt"), "/// x\n"), "/// x\n");
    }
}

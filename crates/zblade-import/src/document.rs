//! Documents: specs, design notes and RFCs the user wants remembered but that do not live in
//! the repository (seed 001's third kind of memory). Markdown, plain text and PDF (text
//! extracted with `lopdf`) are split into sections and stored like a conversation whose
//! messages are the sections, so search, context packing and `show` treat them like all other
//! memory; `metadata.source.tool` is `document`.

use std::path::Path;

use chrono::{DateTime, Utc};
use zblade_core::{Message, Role};

use crate::{ReadError, redact};

/// Characters per section, about 500 tokens: big enough to keep a paragraph's context, small
/// enough to be packed into a budget on its own.
pub const SECTION_CHARS: usize = 2000;
/// Largest document read.
pub const MAX_DOCUMENT_BYTES: u64 = 64 * 1024 * 1024;

/// A document split into sections.
#[derive(Debug, Clone)]
pub struct Document {
    /// The conversation id it is stored under (`conv_doc-…`), stable for one path.
    pub id: String,
    /// Its first heading, else its file name.
    pub title: String,
    /// One message per section (role `system`, ids `msg_doc-N`).
    pub sections: Vec<Message>,
    /// When the file was last modified.
    pub modified: Option<DateTime<Utc>>,
    /// Secrets replaced.
    pub redacted: usize,
}

/// Reads a Markdown, text or PDF file into sections.
pub fn read_document(path: &Path) -> Result<Document, ReadError> {
    let meta = std::fs::metadata(path).map_err(|e| ReadError::new(path, e.to_string()))?;
    if meta.len() > MAX_DOCUMENT_BYTES {
        return Err(ReadError::new(
            path,
            format!("is {} MB; documents over 64 MB are not read", meta.len() / 1_000_000),
        ));
    }
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let text = match extension.as_str() {
        "pdf" => pdf_text(path)?,
        "md" | "markdown" | "txt" | "text" | "rst" | "adoc" | "org" | "" => {
            let bytes = std::fs::read(path).map_err(|e| ReadError::new(path, e.to_string()))?;
            if bytes.contains(&0) {
                return Err(ReadError::new(path, "is a binary file, not text"));
            }
            String::from_utf8_lossy(&bytes).into_owned()
        }
        other => {
            return Err(ReadError::new(
                path,
                format!("`.{other}` files are not supported; add Markdown, plain text or PDF"),
            ));
        }
    };
    if text.trim().is_empty() {
        return Err(ReadError::new(path, "has no text (a scanned PDF needs OCR first)"));
    }
    let (text, redacted) = redact::redact(&text);
    let markdown = matches!(extension.as_str(), "md" | "markdown");
    let title = markdown
        .then(|| {
            text.lines()
                .find_map(|l| l.strip_prefix("# "))
                .map(|t| t.trim().to_string())
        })
        .flatten()
        .unwrap_or_else(|| {
            path.file_name()
                .map_or("document".into(), |n| n.to_string_lossy().into_owned())
        });
    let real = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let id = format!(
        "{}doc-{:016x}",
        zblade_core::ids::CONVERSATION,
        xxhash_rust::xxh3::xxh3_64(real.to_string_lossy().as_bytes())
    );
    let modified = meta.modified().ok().map(DateTime::<Utc>::from);
    let sections = split(&text, markdown)
        .into_iter()
        .enumerate()
        .map(|(i, section)| {
            let mut message = Message::new(Role::System, section);
            message.id = format!("{}doc-{i}", zblade_core::ids::MESSAGE);
            message.timestamp = modified;
            message
        })
        .collect();
    Ok(Document {
        id,
        title,
        sections,
        modified,
        redacted,
    })
}

fn pdf_text(path: &Path) -> Result<String, ReadError> {
    let document = lopdf::Document::load(path).map_err(|e| ReadError::new(path, format!("not a readable PDF: {e}")))?;
    let pages: Vec<u32> = document.get_pages().keys().copied().collect();
    let mut text = String::new();
    for page in pages {
        // A page whose text cannot be decoded (an unusual font encoding) is skipped, not fatal.
        if let Ok(page_text) = document.extract_text(&[page]) {
            text.push_str(&page_text);
            text.push_str("\n\n");
        }
    }
    Ok(text)
}

/// Sections of about [`SECTION_CHARS`]: Markdown at headings (each section starts with its
/// heading), everything at paragraph breaks; a paragraph longer than a section is cut at
/// line ends.
fn split(text: &str, markdown: bool) -> Vec<String> {
    let mut sections = Vec::new();
    let mut current = String::new();
    let flush = |current: &mut String, sections: &mut Vec<String>| {
        let trimmed = current.trim();
        if !trimmed.is_empty() {
            sections.push(trimmed.to_string());
        }
        current.clear();
    };
    for paragraph in text.split("\n\n") {
        let heading = markdown && paragraph.trim_start().starts_with('#');
        if heading || current.chars().count() + paragraph.chars().count() > SECTION_CHARS {
            flush(&mut current, &mut sections);
        }
        if paragraph.chars().count() > SECTION_CHARS {
            for line in paragraph.lines() {
                if current.chars().count() + line.chars().count() > SECTION_CHARS {
                    flush(&mut current, &mut sections);
                }
                current.push_str(line);
                current.push('\n');
            }
            continue;
        }
        current.push_str(paragraph);
        current.push_str("\n\n");
    }
    flush(&mut current, &mut sections);
    sections
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_is_split_at_headings() {
        let sections = split(
            "# Spec\n\nIntro.\n\n## Auth\n\nTokens rotate daily.\n\n## Storage\n\nSQLite.",
            true,
        );
        assert_eq!(
            sections,
            [
                "# Spec\n\nIntro.",
                "## Auth\n\nTokens rotate daily.",
                "## Storage\n\nSQLite."
            ]
        );
    }

    #[test]
    fn long_text_is_cut_into_sections_of_bounded_size() {
        let text = (0..200)
            .map(|i| format!("Line {i} of a long paragraph."))
            .collect::<Vec<_>>()
            .join("\n");
        let sections = split(&text, false);
        assert!(sections.len() > 1);
        assert!(sections.iter().all(|s| s.chars().count() <= SECTION_CHARS));
        assert_eq!(sections.join("\n").lines().count(), 200);
    }
}

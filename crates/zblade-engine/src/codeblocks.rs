//! Code blocks in a message that are copies of lines in the working tree become code
//! references (RFC-002: local memory points at code instead of duplicating it). Used when a
//! server-mode conversation comes home (`zblade migrate to-local`).

use std::collections::HashMap;

use zblade_core::{CodeReference, Result, parse_conversation};
use zblade_search::code::project_files;

use crate::parts::Parts;

/// Blocks shorter than this (non-blank lines) stay inline: a two-line snippet matches too many
/// places to be sure which one it is.
pub const MIN_BLOCK_LINES: usize = 3;
/// Files larger than this are not searched.
const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// Every line of the project's text files, found by its trimmed text.
pub(crate) struct TreeLines {
    /// path → its lines.
    files: Vec<(String, Vec<String>)>,
    /// trimmed line → (file index, 0-based line).
    by_line: HashMap<String, Vec<(usize, usize)>>,
}

impl TreeLines {
    /// Reads the working tree (the files `zblade index` would read).
    pub(crate) fn load(project: &Parts) -> TreeLines {
        let root = project.layout().root();
        let mut files = Vec::new();
        let mut by_line: HashMap<String, Vec<(usize, usize)>> = HashMap::new();
        for relative in project_files(root) {
            let path = root.join(&relative);
            if std::fs::metadata(&path).map_or(true, |m| m.len() > MAX_FILE_BYTES) {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let lines: Vec<String> = text.lines().map(str::to_string).collect();
            let index = files.len();
            for (n, line) in lines.iter().enumerate() {
                let trimmed = line.trim();
                if !trimmed.is_empty() {
                    by_line.entry(trimmed.to_string()).or_default().push((index, n));
                }
            }
            files.push((relative.to_string_lossy().replace('\\', "/"), lines));
        }
        TreeLines { files, by_line }
    }

    /// Where `block` occurs as consecutive lines (compared trimmed), if exactly one place.
    fn find(&self, block: &[&str]) -> Option<(String, u32, u32)> {
        let first = block.first()?.trim();
        let mut found = None;
        for &(file, start) in self.by_line.get(first)? {
            let lines = &self.files[file].1;
            let matches = block.len() <= lines.len() - start
                && block.iter().zip(&lines[start..]).all(|(a, b)| a.trim() == b.trim());
            if matches {
                if found.is_some() {
                    return None; // ambiguous: keep the block inline
                }
                found = Some((
                    self.files[file].0.clone(),
                    start as u32 + 1,
                    (start + block.len()) as u32,
                ));
            }
        }
        found
    }
}

/// `content` with each fenced block found in the tree replaced by a short pointer, and the
/// references for them.
pub(crate) fn convert(content: &str, tree: &TreeLines) -> (String, Vec<CodeReference>) {
    let lines: Vec<&str> = content.split('\n').collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut references = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let opening = lines[i].trim_start();
        if let Some(fence) = ["```", "~~~"].into_iter().find(|f| opening.starts_with(f)) {
            let close = (i + 1..lines.len()).find(|&j| lines[j].trim() == fence);
            if let Some(close) = close {
                let body: Vec<&str> = lines[i + 1..close].to_vec();
                // Blank lines at the edges are not part of the code.
                let start = body.iter().position(|l| !l.trim().is_empty());
                let end = body.iter().rposition(|l| !l.trim().is_empty());
                if let (Some(s), Some(e)) = (start, end) {
                    let code = &body[s..=e];
                    let non_blank = code.iter().filter(|l| !l.trim().is_empty()).count();
                    if non_blank >= MIN_BLOCK_LINES
                        && let Some((file, first, last)) = tree.find(code)
                    {
                        out.push(format!("[code: {file} lines {first}-{last}]"));
                        references.push(CodeReference {
                            file,
                            lines: [first, last],
                            git_hash: None,
                            commit: None,
                            context: Some("code block of the conversation, found in the working tree".into()),
                            purpose: None,
                            diff: None,
                            anchor: None,
                            extra: Default::default(),
                        });
                        i = close + 1;
                        continue;
                    }
                }
                out.extend(lines[i..=close].iter().map(|l| l.to_string()));
                i = close + 1;
                continue;
            }
        }
        out.push(lines[i].to_string());
        i += 1;
    }
    (out.join("\n"), references)
}

impl Parts {
    /// A conversation artifact with its working-tree code blocks turned into references
    /// (anchored like any captured reference); the bytes are unchanged when there were none.
    pub(crate) fn references_for_code_blocks(
        &self,
        bytes: &[u8],
        id: &str,
        tree: &TreeLines,
    ) -> Result<(Vec<u8>, usize)> {
        let mut conv = parse_conversation(bytes, &format!("server record {id}"))?;
        let mut converted = 0;
        for message in &mut conv.messages {
            let (content, references) = convert(&message.content, tree);
            if references.is_empty() {
                continue;
            }
            converted += references.len();
            message.content = content;
            let first_new = message.code_references.len();
            message.code_references.extend(references);
            self.capture_references(message.code_references[first_new..].iter_mut());
        }
        if converted == 0 {
            return Ok((bytes.to_vec(), 0));
        }
        Ok((conv.to_artifact_json(), converted))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> TreeLines {
        let mut t = TreeLines {
            files: Vec::new(),
            by_line: HashMap::new(),
        };
        for (path, text) in files {
            let lines: Vec<String> = text.lines().map(str::to_string).collect();
            for (n, line) in lines.iter().enumerate() {
                if !line.trim().is_empty() {
                    t.by_line
                        .entry(line.trim().to_string())
                        .or_default()
                        .push((t.files.len(), n));
                }
            }
            t.files.push((path.to_string(), lines));
        }
        t
    }

    #[test]
    fn a_block_found_once_becomes_a_reference() {
        let t = tree(&[(
            "src/auth.ts",
            "import x\n\nexport function refresh(token) {\n  const t = rotate(token);\n  return t;\n}\n",
        )]);
        let content = "Here it is:\n```ts\nexport function refresh(token) {\n    const t = rotate(token);\n  return t;\n}\n```\nDone.";
        let (text, refs) = convert(content, &t);
        assert_eq!(text, "Here it is:\n[code: src/auth.ts lines 3-6]\nDone.");
        assert_eq!(refs.len(), 1);
        assert_eq!((refs[0].file.as_str(), refs[0].lines), ("src/auth.ts", [3, 6]));
    }

    #[test]
    fn short_ambiguous_or_absent_blocks_stay_inline() {
        let t = tree(&[
            ("a.rs", "fn a() {\n    1\n}\nfn b() {\n    1\n}\n"),
            ("b.rs", "let x = 1;\nlet y = 2;\nlet z = 3;\n"),
            ("c.rs", "let x = 1;\nlet y = 2;\nlet z = 3;\n"),
        ]);
        for content in [
            "```\nfn a() {\n}\n```",                        // not in the tree as such
            "```\nlet x = 1;\nlet y = 2;\nlet z = 3;\n```", // in two files
            "```\nlet x = 1;\n```",                         // too short
            "```\nunclosed\nfence\nhere",                   // no closing fence
        ] {
            let (text, refs) = convert(content, &t);
            assert_eq!(text, content);
            assert!(refs.is_empty(), "{content}");
        }
    }
}

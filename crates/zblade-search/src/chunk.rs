//! Splitting memory into chunks for embedding, each named by the sha256 of its text (its CID).
//!
//! Identical text has one CID, so it is embedded once per model however often it appears
//! (seed 002, content-addressed chunks). Long messages are split near [`TARGET_CHARS`] at
//! paragraph boundaries, never inside a fenced code block unless the block alone is too long.

use sha2::{Digest, Sha256};

/// About 512 tokens of English at roughly four characters per token; embedding models
/// truncate at 512 tokens, so longer chunks would lose their tail.
pub const TARGET_CHARS: usize = 2000;

/// The content id of a chunk: lowercase hex sha256 of its text.
pub fn cid(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// Splits a message into pieces of at most about [`TARGET_CHARS`] characters, preferring
/// paragraph boundaries outside code fences. Short messages come back whole.
pub fn split_text(text: &str) -> Vec<String> {
    let text = text.trim();
    if text.chars().count() <= TARGET_CHARS {
        return if text.is_empty() {
            Vec::new()
        } else {
            vec![text.to_string()]
        };
    }
    // Blocks: paragraphs, with a fenced code block kept as one block.
    let mut blocks: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut in_fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
        }
        if line.trim().is_empty() && !in_fence {
            if !current.trim().is_empty() {
                blocks.push(std::mem::take(&mut current));
            }
            current.clear();
            continue;
        }
        current.push_str(line);
        current.push('\n');
    }
    if !current.trim().is_empty() {
        blocks.push(current);
    }
    // Pack blocks into pieces; a block that is too long on its own is cut by characters.
    let mut pieces = Vec::new();
    let mut piece = String::new();
    for block in blocks {
        if !piece.is_empty() && piece.chars().count() + block.chars().count() > TARGET_CHARS {
            pieces.push(std::mem::take(&mut piece).trim().to_string());
        }
        if block.chars().count() > TARGET_CHARS {
            let chars: Vec<char> = block.chars().collect();
            for part in chars.chunks(TARGET_CHARS) {
                pieces.push(part.iter().collect::<String>().trim().to_string());
            }
            continue;
        }
        piece.push_str(&block);
        piece.push('\n');
    }
    if !piece.trim().is_empty() {
        pieces.push(piece.trim().to_string());
    }
    pieces.retain(|p| !p.is_empty());
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_one_chunk_and_cids_are_content_addressed() {
        assert_eq!(split_text("  hello  "), vec!["hello"]);
        assert!(split_text("   ").is_empty());
        assert_eq!(cid("hello"), cid("hello"));
        assert_ne!(cid("hello"), cid("hello!"));
        assert_eq!(cid("hello").len(), 64);
    }

    #[test]
    fn long_text_splits_at_paragraphs_and_keeps_code_blocks_whole() {
        let paragraph = "word ".repeat(150); // 750 chars
        let code = format!("```rust\n{}```", "let x = 1;\n\nlet y = 2;\n".repeat(20));
        let text = format!("{paragraph}\n\n{paragraph}\n\n{code}\n\n{paragraph}");
        let pieces = split_text(&text);
        assert!(pieces.len() >= 2, "{}", pieces.len());
        assert!(pieces.iter().all(|p| p.chars().count() <= TARGET_CHARS));
        let with_code: Vec<_> = pieces.iter().filter(|p| p.contains("```rust")).collect();
        assert_eq!(with_code.len(), 1);
        assert!(with_code[0].trim_end().ends_with("```"), "the fence stays in one piece");
    }

    #[test]
    fn a_huge_block_is_cut() {
        let pieces = split_text(&"x".repeat(5000));
        assert_eq!(pieces.len(), 3);
    }
}

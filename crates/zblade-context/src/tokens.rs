//! Token counting. Budgets are in real tokens: the compressor model's own tokenizer when one is
//! loaded, otherwise OpenAI's `cl100k_base` BPE (what most assistants' models count in, give
//! or take a few percent) — never characters divided by four.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// Counts the tokens of a text.
pub trait TokenCounter: Send + Sync {
    /// Tokens in `text`.
    fn count(&self, text: &str) -> usize;
    /// What counts, for receipts ("cl100k_base", a model's name).
    fn name(&self) -> &str;
}

/// The `cl100k_base` BPE tokenizer (built into the binary; nothing is downloaded).
pub struct Cl100k {
    bpe: &'static tiktoken_rs::CoreBPE,
}

impl Cl100k {
    /// The shared tokenizer; built once per process (about 100 ms).
    pub fn new() -> Self {
        static BPE: OnceLock<tiktoken_rs::CoreBPE> = OnceLock::new();
        Cl100k {
            bpe: BPE.get_or_init(|| tiktoken_rs::cl100k_base().expect("the built-in cl100k_base table loads")),
        }
    }
}

impl Default for Cl100k {
    fn default() -> Self {
        Self::new()
    }
}

/// Texts at least this long have their counts remembered: memory texts come back in assembly
/// after assembly, and BPE over them is most of what packing costs.
const REMEMBER_FROM_BYTES: usize = 256;
/// Remembered counts, at most; the table starts over when full.
const REMEMBERED: usize = 100_000;

/// Counts remembered by the text's 64-bit hash (a collision would only skew one budget by a
/// few tokens; the rendered pack is counted exactly anyway).
fn remembered() -> &'static Mutex<HashMap<u64, u32>> {
    static COUNTS: OnceLock<Mutex<HashMap<u64, u32>>> = OnceLock::new();
    COUNTS.get_or_init(Default::default)
}

impl TokenCounter for Cl100k {
    fn count(&self, text: &str) -> usize {
        if text.len() < REMEMBER_FROM_BYTES {
            return self.bpe.encode_ordinary(text).len();
        }
        let key = xxhash_rust::xxh3::xxh3_64(text.as_bytes());
        if let Some(&count) = remembered().lock().ok().as_ref().and_then(|m| m.get(&key)) {
            return count as usize;
        }
        let count = self.bpe.encode_ordinary(text).len();
        if let Ok(mut counts) = remembered().lock() {
            if counts.len() >= REMEMBERED {
                counts.clear();
            }
            counts.insert(key, count as u32);
        }
        count
    }

    fn name(&self) -> &str {
        "cl100k_base"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_real_bpe_tokens() {
        let bpe = Cl100k::new();
        assert_eq!(bpe.count(""), 0);
        // Known cl100k_base counts.
        assert_eq!(bpe.count("hello world"), 2);
        assert_eq!(bpe.count("The quick brown fox jumps over the lazy dog."), 10);
        // Special-token text is counted as ordinary text, not as one control token.
        assert!(bpe.count("<|endoftext|>") > 1);
        // Code tokenises far from chars/4.
        let code = "fn main() { println!(\"{}\", 1 + 2); }";
        assert_ne!(bpe.count(code), code.len() / 4);
    }
}

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

/// The `cl100k_base` BPE tokenizer (built into the binary; nothing is downloaded). Counts
/// with `bpe-openai`, which gives tiktoken's counts several times faster (packing counts tens
/// of thousands of tokens per assembly).
pub struct Cl100k {
    bpe: &'static bpe_openai::Tokenizer,
}

impl Cl100k {
    /// The shared tokenizer; loaded once per process.
    pub fn new() -> Self {
        Cl100k {
            bpe: bpe_openai::cl100k_base(),
        }
    }
}

impl Default for Cl100k {
    fn default() -> Self {
        Self::new()
    }
}

/// Texts at least this long have their counts remembered: memory texts come back in assembly
/// after assembly, and BPE over them is most of what packing costs. Short ones count too: a
/// turn's wrapper and the sentences the compressor weighs are 64–255 bytes, hundreds per
/// assembly, and hashing one is far cheaper than its BPE. Shorter texts are few and tiny (in the
/// pack bench, about 280 per assembly, most under 8 bytes), not worth a table entry each.
const REMEMBER_FROM_BYTES: usize = 64;
/// Remembered counts, at most; the table starts over when full.
const REMEMBERED: usize = 100_000;

/// Counts remembered by the text's 64-bit hash (a collision would only skew one budget by a
/// few tokens; the rendered pack is counted exactly anyway).
fn remembered() -> &'static Mutex<HashMap<u64, u32>> {
    static COUNTS: OnceLock<Mutex<HashMap<u64, u32>>> = OnceLock::new();
    COUNTS.get_or_init(Default::default)
}

impl Cl100k {
    /// Counts `texts` on a thread of its own, the last first, remembering the counts: counting
    /// one of them later is then a lookup. For work that will count the same texts from the
    /// first after doing other things: if it catches up, the two threads meet in the middle
    /// rather than count the same texts. Returns at once; if no thread starts, nothing is
    /// counted ahead.
    pub fn count_ahead(texts: Vec<String>) {
        let texts: Vec<String> = texts
            .into_iter()
            .filter(|text| text.len() >= REMEMBER_FROM_BYTES)
            .collect();
        if texts.is_empty() {
            return;
        }
        let _ = std::thread::Builder::new()
            .name("zblade-count-ahead".into())
            .spawn(move || {
                let counter = Cl100k::new();
                for text in texts.iter().rev() {
                    counter.count(text);
                }
            });
    }

    /// Whether the count of `text` is remembered (tests).
    #[cfg(test)]
    fn remembers(text: &str) -> bool {
        let key = xxhash_rust::xxh3::xxh3_64(text.as_bytes());
        remembered().lock().unwrap().contains_key(&key)
    }
}

impl TokenCounter for Cl100k {
    fn count(&self, text: &str) -> usize {
        if text.len() < REMEMBER_FROM_BYTES {
            return self.bpe.count(text);
        }
        let key = xxhash_rust::xxh3::xxh3_64(text.as_bytes());
        if let Some(&count) = remembered().lock().ok().as_ref().and_then(|m| m.get(&key)) {
            return count as usize;
        }
        let count = self.bpe.count(text);
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

    /// Texts counted ahead are remembered, with the count counting them gives.
    #[test]
    fn counting_ahead_remembers_the_counts() {
        let texts: Vec<String> = (0..20)
            .map(|i| format!("counted ahead {i}: the refresh handler retries three times, then logs a warning."))
            .collect();
        assert!(texts.iter().all(|t| !Cl100k::remembers(t)));
        Cl100k::count_ahead(texts.clone());
        let started = std::time::Instant::now();
        while !texts.iter().all(|t| Cl100k::remembers(t)) {
            assert!(started.elapsed().as_secs() < 30, "the counts were not remembered");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let fresh = bpe_openai::cl100k_base();
        for text in &texts {
            assert_eq!(Cl100k::new().count(text), fresh.count(text));
        }
    }

    /// The fast counter agrees with OpenAI's tiktoken on prose, code, markup, numbers,
    /// whitespace runs and non-Latin text, long (remembered) and short.
    #[test]
    fn counts_exactly_what_tiktoken_counts() {
        let tiktoken = tiktoken_rs::cl100k_base().unwrap();
        let fast = Cl100k::new();
        let samples = [
            "The refresh handler retries 3 times & logs <warn> after 1500 ms.",
            "fn main() {\n    let x: Vec<u8> = vec![1, 2, 3];\n\n\n    println!(\"{x:?}\");\n}\n",
            "<turn role=\"user\">It's what we'd've done; they'll see.</turn>\r\n\t  trailing   ",
            "数字 12345678 と café, naïve — “quotes” 🚀🚀 ∑x² ",
            "    indented\n        more\n\n\n\n   \n",
            "https://example.com/a/b?c=d&e=f#g 0x1F 3.14159 1,000,000",
        ];
        for sample in samples {
            for text in [sample.to_string(), sample.repeat(40)] {
                assert_eq!(fast.count(&text), tiktoken.encode_ordinary(&text).len(), "{text:?}");
            }
        }
    }
}

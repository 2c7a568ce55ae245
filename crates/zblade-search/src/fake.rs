//! A deterministic embedder for tests: no model, no ONNX Runtime, same text → same vector.
//!
//! Each lowercase word is hashed (sha256) to a few signed positions of the vector, so texts
//! that share words point the same way and texts that share none are nearly orthogonal. That
//! is enough to test everything around a model — caching by content digest, the vector
//! table, hybrid fusion, fallbacks — without pretending to test meaning. zed's
//! `FakeEmbeddingProvider` plays the same part there.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use sha2::{Digest, Sha256};

use crate::embed::{EmbedError, Embedder};

/// A bag-of-words embedder with a fixed dimension. It counts the texts it embedded, so tests
/// can check what was (not) sent to the model even after handing it to a project.
#[derive(Debug, Clone)]
pub struct FakeEmbedder {
    id: String,
    dim: usize,
    embedded: Arc<AtomicUsize>,
}

impl FakeEmbedder {
    /// A fake named `id` (vectors of different ids never mix) making `dim`-long vectors.
    pub fn new(id: &str, dim: usize) -> Self {
        assert!(dim >= 8, "a fake embedding needs at least 8 dimensions");
        FakeEmbedder {
            id: id.to_string(),
            dim,
            embedded: Arc::default(),
        }
    }

    /// A handle on the count of texts embedded so far (shared by clones).
    pub fn texts_embedded(&self) -> Arc<AtomicUsize> {
        Arc::clone(&self.embedded)
    }

    /// The vector of one text, L2-normalised (all zeros for a text without words).
    pub fn vector(&self, text: &str) -> Vec<f32> {
        let mut vector = vec![0.0f32; self.dim];
        let lower = text.to_lowercase();
        for word in lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
            let digest = Sha256::digest(word.as_bytes());
            // Three positions per word, each with a sign, from the digest's bytes.
            for pair in digest.chunks(4).take(3) {
                let at = u16::from_le_bytes([pair[0], pair[1]]) as usize % self.dim;
                let sign = if pair[2] & 1 == 0 { 1.0 } else { -1.0 };
                vector[at] += sign;
            }
        }
        let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            vector.iter_mut().for_each(|x| *x /= norm);
        }
        vector
    }
}

impl Embedder for FakeEmbedder {
    fn model_id(&self) -> &str {
        &self.id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embedded.fetch_add(texts.len(), Ordering::Relaxed);
        Ok(texts.iter().map(|t| self.vector(t)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_words_point_the_same_way_and_the_same_text_gives_the_same_vector() {
        let mut fake = FakeEmbedder::new("fake", 64);
        let v = fake
            .embed(&["rotate the signing key", "rotate the signing key", "banana bread"])
            .unwrap();
        assert_eq!(v[0], v[1]);
        let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
        let close = dot(&v[0], &fake.vector("signing key rotation"));
        let far = dot(&v[0], &v[2]);
        assert!(close > far + 0.2, "close {close}, far {far}");
        assert!((dot(&v[0], &v[0]) - 1.0).abs() < 1e-5);
        assert_eq!(fake.texts_embedded().load(Ordering::Relaxed), 3);
    }
}

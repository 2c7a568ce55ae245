//! What unrelated prompts score in a project (the relevance gate's null), as measured and as
//! kept in memory; [`crate::gate`] measures it. Apart from the gate so that the project's
//! [`crate::parts::Parts`] can hold the cache without depending on the gate's work.

use std::time::Instant;

use serde::{Deserialize, Serialize};
use zblade_context::gate::{NULL_PROBES, NullScores};

/// How far the number of vectors may move before the null is measured again.
const NULL_DRIFT: f64 = 0.2;
/// The null as measured, and for what.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct MeasuredNull {
    /// The embedding model's id.
    pub(crate) model: String,
    /// Vectors in its table then.
    pub(crate) vectors: usize,
    /// A digest of the probe prompts (new probes: measured again).
    pub(crate) probes: String,
    /// The scores.
    pub(crate) scores: NullScores,
}

/// The null in memory, with when its size was last checked.
#[derive(Debug, Default)]
pub(crate) struct NullCache(pub(crate) std::sync::Mutex<Option<(MeasuredNull, Instant)>>);

pub(crate) fn probes_digest() -> String {
    let joined = NULL_PROBES.join("\n");
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(joined.as_bytes()))
}

impl MeasuredNull {
    pub(crate) fn fits(&self, model: &str, vectors: usize) -> bool {
        let drift = (vectors as f64 - self.vectors as f64).abs() / (self.vectors.max(1) as f64);
        self.model == model && self.probes == probes_digest() && drift <= NULL_DRIFT
    }
}

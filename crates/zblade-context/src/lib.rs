//! Context assembly: from what the user asks now to the most useful memory that fits a token
//! budget, with a receipt of every choice.
//!
//! The engine gathers candidates (instructions, explicit references, the active
//! conversation's recent turns, hybrid search hits) and hydrates code from the working tree;
//! this crate decides what goes in: [`query::analyse`] reads time phrases and `@` references,
//! [`rerank`] orders retrieved memory (recency, session affinity, moment type, MMR),
//! [`gate`] keeps retrieved memory out when nothing found bears on the prompt,
//! [`pack::pack`] fills the budget in priority order, shrinking what does not fit with a
//! [`pack::Compressor`], and [`format`] renders XML, Markdown or JSON. Tokens are real
//! tokens ([`tokens`]). Nothing here touches the disk or the network.

pub mod candidate;
pub mod extractive;
pub mod format;
pub mod gate;
pub mod moments;
pub mod pack;
pub mod query;
pub mod rerank;
pub mod revisits;
pub mod tokens;

pub use candidate::{Candidate, Item, Source, Standing};
pub use format::{Entry, Format};
pub use gate::{DEFAULT_MIN_RELEVANCE, Evidence, Gate, NullScores};
pub use pack::{Compressor, Extractive, Pack, PackError, PackOptions, ReceiptLine, Tier, pack};
pub use query::{Analysis, FileRef, TimeRange, analyse};
pub use rerank::{RerankWeights, ScoreParts};
pub use tokens::{Cl100k, TokenCounter};

/// The moment the tests take as now: a Sunday noon, UTC.
#[cfg(test)]
pub(crate) fn test_now() -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339("2026-11-22T12:00:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc)
}

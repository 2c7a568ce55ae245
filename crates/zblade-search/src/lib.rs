//! Semantic search for zblade: chunks named by content ([`chunk`]), project files as chunks
//! ([`code`]), local embeddings on ONNX Runtime ([`embed`], its sessions started from a saved
//! optimised copy of the model: [`onnx_cache`]), vectors in LanceDB ([`vectors`]) and reciprocal rank
//! fusion of keyword and vector results ([`fusion`]); and how a process that loads models gives
//! their memory back ([`memory`]).
//!
//! Everything runs on this machine: models load from a local directory, ONNX Runtime is loaded
//! at run time, and when either is missing callers fall back to keyword search.
//!
//! ```
//! use zblade_search::fusion::{RRF_K, reciprocal_rank_fusion};
//! let keyword = vec!["a".to_string(), "b".to_string()];
//! let semantic = vec!["b".to_string(), "c".to_string()];
//! assert_eq!(reciprocal_rank_fusion(&[keyword, semantic], RRF_K)[0].0, "b");
//! ```

pub mod chunk;
pub mod code;
pub mod embed;
pub mod fake;
pub mod fusion;
pub mod memory;
pub mod onnx_cache;
pub mod vectors;

pub use embed::{EmbedError, Embedder, LocalModel, Workload};
pub use fake::FakeEmbedder;
pub use vectors::VectorStore;

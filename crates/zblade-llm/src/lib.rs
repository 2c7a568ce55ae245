//! zblade's local compressor: small GGUF models run by llama.cpp (through `llama-cpp-2`) on
//! this machine, so summaries, moment extraction and shrinking never send memory anywhere.
//!
//! - [`gguf`] checks a file is a GGUF model before llama.cpp sees it.
//! - [`runtime`] loads a model and runs jobs on one dedicated worker thread, fed by a channel,
//!   with cancellation and timeouts; it reports its own throughput next to llama.cpp's.
//! - [`jobs`] holds the prompts and grammars of zblade's three jobs — a conversation summary,
//!   moment extraction as grammar-constrained JSON, and shrinking text to a token budget — and
//!   checks what the model returns.
//!
//! Deciding *whether* to use a model (settings, fallbacks, caches) is the engine's business.

pub mod gguf;
pub mod jobs;
pub mod runtime;

pub use runtime::{Compressor, Generation, JobHandle, LlamaTimings, ModelInfo, Options, Request, Stop, TextSink};

use std::path::PathBuf;
use std::time::Duration;

/// The tiny random-weight GGUF model that tests and smoke benchmarks run through llama.cpp:
/// `$ZBLADE_TEST_GGUF`, which `scripts/setup.sh` builds with
/// `scripts/models/build_tiny_gguf.py`. Panics with what to run when it is missing.
pub fn test_model() -> PathBuf {
    let path = std::env::var_os("ZBLADE_TEST_GGUF")
        .map(PathBuf::from)
        .expect("ZBLADE_TEST_GGUF is not set: source scripts/env.sh (scripts/setup.sh builds the model)");
    assert!(path.is_file(), "{} is missing: run scripts/setup.sh", path.display());
    path
}

/// What can go wrong loading or running a model.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not a GGUF model.
    #[error("{} is not a GGUF model: {why}", path.display())]
    NotGguf {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// llama.cpp could not load the model or create a context for it.
    #[error("llama.cpp could not load {}: {why}", path.display())]
    Load {
        /// The file.
        path: PathBuf,
        /// llama.cpp's answer.
        why: String,
    },
    /// llama.cpp's backend could not start.
    #[error("llama.cpp: {0}")]
    Backend(String),
    /// The grammar did not parse.
    #[error("the output grammar does not parse: {0}")]
    Grammar(String),
    /// The prompt and the output do not fit the context window.
    #[error("the prompt is {tokens} tokens and {output} more are asked for, but the context holds {context}")]
    PromptTooLong {
        /// Prompt tokens.
        tokens: usize,
        /// Output tokens asked for.
        output: usize,
        /// The context window.
        context: usize,
    },
    /// Evaluation failed inside llama.cpp.
    #[error("generation failed: {0}")]
    Generate(String),
    /// The job was cancelled.
    #[error("the job was cancelled")]
    Cancelled,
    /// The job ran past its timeout.
    #[error("the job ran past its {0:?} timeout")]
    TimedOut(Duration),
    /// The worker thread is gone (it panicked, or the compressor was dropped).
    #[error("the compressor's worker thread has stopped")]
    WorkerGone,
    /// The model answered, but not in the shape asked for.
    #[error("the model's output is not usable: {0}")]
    BadOutput(String),
}

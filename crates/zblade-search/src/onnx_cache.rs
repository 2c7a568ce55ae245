//! ONNX Runtime sessions that start fast: the first load of a model saves ONNX Runtime's own
//! optimised copy of it (graph in `model.onnx`, weights in a file of their own), and every
//! later load opens that copy by path, with no optimisation left to do.
//!
//! Why: a cold `zblade context` runs on a fresh process, and making the model's session was its
//! critical path. From the model's bytes (what fastembed takes) ONNX Runtime parses the
//! protobuf, copies every weight out of it, then optimises the graph: 65–70 ms for the default
//! model on this project's two-core machine, and 33,000 page faults. The saved copy's weights
//! are mapped from their file rather than copied, and its graph is already optimised: 16–17 ms
//! and 14,000 faults, with bitwise the same output (measured with ONNX Runtime 1.32;
//! docs/BENCHMARKS.md, "The lean install").
//!
//! The copy lives in the user's cache (`$XDG_CACHE_HOME/zblade/onnx`, else
//! `~/.cache/zblade/onnx`), one folder per model file, named by the model's path and a
//! fingerprint of what the copy depends on: the file's size and modification time, ONNX
//! Runtime's build, and the CPU (the highest optimisation level may lay the graph out for this
//! processor). A copy is written into a temporary folder, flushed, and renamed into place, so a
//! reader sees a whole copy or none; one that fails to load is deleted and made again. When no
//! copy can be written (no cache folder, a full disk), the model loads from its own file.

use std::path::{Path, PathBuf};

use ort::session::Session;
use ort::session::builder::{GraphOptimizationLevel, SessionBuilder};
use sha2::{Digest, Sha256};

use crate::embed::EmbedError;

/// The saved copy's graph; its weights are in [`WEIGHTS`] beside it.
const GRAPH: &str = "model.onnx";
/// The saved copy's weights (the graph names this file, relative to its own folder).
const WEIGHTS: &str = "weights.bin";
/// The model file a copy was made from, written into the copy's folder so that copies of
/// models that are gone can be found and removed.
const SOURCE: &str = "source";
/// Tensors from this size on go to [`WEIGHTS`]; smaller ones (shapes, scales) stay in the
/// graph, where they cost nothing to map.
const MIN_EXTERNAL_BYTES: &str = "1024";

/// A session for the ONNX model at `model`, running on `threads` intra-op threads (`None`: one
/// per core), from the saved optimised copy when there is one.
pub(crate) fn session(model: &Path, threads: Option<usize>) -> Result<Session, EmbedError> {
    let meta = std::fs::metadata(model).map_err(|e| EmbedError::NoModel(format!("{}: {e}", model.display())))?;
    let threads = match threads {
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let source = model.canonicalize().ok();
    let Some((copy, source)) = cache_root()
        .zip(source)
        .and_then(|(root, source)| Some((copy_folder(&root, &source, &meta)?, source)))
    else {
        return made(builder(threads, GraphOptimizationLevel::Level3)?, model);
    };
    if copy.join(GRAPH).is_file() {
        match builder(threads, GraphOptimizationLevel::Disable).and_then(|b| made(b, &copy.join(GRAPH))) {
            Ok(session) => return Ok(session),
            // A copy that does not load (cut short, from a runtime that reads it differently):
            // made again below.
            Err(_) => {
                let _ = std::fs::remove_dir_all(&copy);
            }
        }
    }
    match save_copy(&source, &copy, threads) {
        Some(session) => Ok(session),
        None => made(builder(threads, GraphOptimizationLevel::Level3)?, model),
    }
}

/// Where saved copies live: `$XDG_CACHE_HOME/zblade/onnx`, else `~/.cache/zblade/onnx`
/// (`None` with neither variable set: models then load from their own files).
pub fn cache_root() -> Option<PathBuf> {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    Some(cache.join("zblade").join("onnx"))
}

/// The folder of the copy of the model at `source` (its canonical path) under `root`:
/// `<model path>-<fingerprint>`, each a hash.
fn copy_folder(root: &Path, source: &Path, meta: &std::fs::Metadata) -> Option<PathBuf> {
    let modified = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
    let fingerprint = format!(
        "{}\n{}\n{}\n{}",
        meta.len(),
        modified.as_nanos(),
        ort::info(),
        cpu_name()
    );
    Some(root.join(format!(
        "{}-{}",
        short_hash(source.as_os_str().as_encoded_bytes()),
        short_hash(fingerprint.as_bytes())
    )))
}

/// The first 16 hex digits of SHA-256.
fn short_hash(bytes: &[u8]) -> String {
    hex::encode(&Sha256::digest(bytes)[..8])
}

/// The processor's model name and feature flags, as `/proc/cpuinfo` gives them for its first
/// core (empty where there is no such file).
fn cpu_name() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let first_core = info.split("\n\n").next().unwrap_or_default();
    first_core
        .lines()
        .filter(|line| line.starts_with("model name") || line.starts_with("flags"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A session builder at `level` on `threads` intra-op threads.
fn builder(threads: usize, level: GraphOptimizationLevel) -> Result<SessionBuilder, EmbedError> {
    let failed = |e: ort::Error<SessionBuilder>| EmbedError::Failed(format!("ONNX Runtime's session options: {e}"));
    Session::builder()
        .map_err(|e| EmbedError::Failed(format!("ONNX Runtime's session options: {e}")))?
        .with_optimization_level(level)
        .map_err(failed)?
        .with_intra_threads(threads)
        .map_err(failed)
}

/// The session `builder` makes from the model file at `path`.
fn made(mut builder: SessionBuilder, path: &Path) -> Result<Session, EmbedError> {
    builder
        .commit_from_file(path)
        .map_err(|e| EmbedError::BadModel(format!("{}: {e}", path.display())))
}

/// Makes the session of the model at `source` at the highest optimisation level and has ONNX Runtime save the
/// optimised graph into `copy` on the way; `None` when no copy could be written (the caller
/// then loads the model without one).
fn save_copy(source: &Path, copy: &Path, threads: usize) -> Option<Session> {
    let root = copy.parent()?;
    std::fs::create_dir_all(root).ok()?;
    let name = copy.file_name()?.to_string_lossy();
    let staging = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .tempdir_in(root)
        .ok()?;
    let session = builder(threads, GraphOptimizationLevel::Level3)
        .ok()?
        .with_optimized_model_path(staging.path().join(GRAPH))
        .ok()?
        .with_config_entry("session.optimized_model_external_initializers_file_name", WEIGHTS)
        .ok()?
        .with_config_entry(
            "session.optimized_model_external_initializers_min_size_in_bytes",
            MIN_EXTERNAL_BYTES,
        )
        .ok()?;
    let session = made(session, source).ok()?;
    std::fs::write(staging.path().join(SOURCE), source.as_os_str().as_encoded_bytes()).ok()?;
    // Flushed before the rename: after a crash, the folder under its final name is whole.
    for file in [GRAPH, WEIGHTS, SOURCE] {
        let path = staging.path().join(file);
        if path.exists() {
            std::fs::File::open(&path).and_then(|f| f.sync_all()).ok()?;
        }
    }
    let staged = staging.keep();
    if std::fs::rename(&staged, copy).is_err() {
        // Another process saved the same copy first: its copy is as good as this one.
        let _ = std::fs::remove_dir_all(&staged);
    }
    remove_outdated(root, copy, source);
    Some(session)
}

/// Removes the copies under `root` that nothing will load again: other copies of `source`
/// (the model changed, or ONNX Runtime did), and copies of model files that are gone.
fn remove_outdated(root: &Path, kept: &Path, source: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path == kept {
            continue;
        }
        if entry.file_name().to_string_lossy().starts_with('.') {
            // A staging folder: another process's at work, or one left by a process that
            // ended half way (an hour is far more than any save takes).
            let abandoned = entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|at| at.elapsed().is_ok_and(|age| age.as_secs() > 3_600));
            if abandoned {
                let _ = std::fs::remove_dir_all(&path);
            }
            continue;
        }
        let made_from = std::fs::read(path.join(SOURCE))
            .ok()
            .map(|bytes| PathBuf::from(String::from_utf8_lossy(&bytes).into_owned()));
        let outdated = match made_from {
            Some(from) => from == source || !from.exists(),
            None => true,
        };
        if outdated {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

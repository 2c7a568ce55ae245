//! Local text embeddings: fastembed running an ONNX model from a directory, on ONNX Runtime
//! loaded at run time.
//!
//! A model directory holds `model.onnx`, `tokenizer.json`, `config.json`,
//! `special_tokens_map.json` and `tokenizer_config.json` (what `scripts/models/build_bert_onnx.py`
//! writes). Nothing is downloaded here, and when ONNX Runtime or the model is missing, loading
//! fails with an error that says so: callers fall back to keyword search.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use fastembed::{InitOptionsUserDefined, Pooling, TextEmbedding, TokenizerFiles, UserDefinedEmbeddingModel};

/// Why embeddings are not available.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmbedError {
    /// No ONNX Runtime library was found (or it failed to load).
    NoRuntime(String),
    /// The model directory is missing or incomplete.
    NoModel(String),
    /// The model is present but cannot be used (corrupt file, wrong shape).
    BadModel(String),
    /// Embedding failed.
    Failed(String),
}

impl std::fmt::Display for EmbedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EmbedError::NoRuntime(m) => write!(f, "ONNX Runtime is not available: {m}"),
            EmbedError::NoModel(m) => write!(f, "no embedding model: {m}"),
            EmbedError::BadModel(m) => write!(f, "the embedding model cannot be used: {m}"),
            EmbedError::Failed(m) => write!(f, "embedding failed: {m}"),
        }
    }
}

impl std::error::Error for EmbedError {}

/// Turns texts into vectors. The engine receives one as a trait object: the local ONNX model
/// ([`LocalModel`]) in use, a [`crate::fake::FakeEmbedder`] in tests.
pub trait Embedder: Send + std::fmt::Debug {
    /// A stable name of the model; vectors of different models never mix.
    fn model_id(&self) -> &str;
    /// Vector length.
    fn dim(&self) -> usize;
    /// One vector per text, L2-normalised.
    fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
}

/// What to tell a user whose machine has no ONNX Runtime zblade can find.
const NO_RUNTIME_HINT: &str =
    "set ORT_DYLIB_PATH to libonnxruntime.so (pip install onnxruntime ships one), or run scripts/setup.sh";

/// Where `libonnxruntime.so` is, found the same way by every binary, test and benchmark of
/// zblade, so none depends on a variable a script may or may not have set. In order:
/// 1. `ORT_DYLIB_PATH`, the override (ONNX Runtime's own variable);
/// 2. beside the running executable, or in `../lib/zblade/` from it (an installed package);
/// 3. the Python environment `scripts/setup.sh` creates from the `onnxruntime` wheel:
///    `$ZBLADE_PY_ENV`, by default `~/.cache/zblade-py`.
///
/// The path is returned even when it does not exist (an override pointing nowhere is reported
/// as such, not silently replaced).
pub fn find_onnx_runtime() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("ORT_DYLIB_PATH").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let beside_executable = std::env::current_exe().ok().and_then(|exe| {
        let dir = exe.parent()?.to_path_buf();
        [dir.clone(), dir.join("../lib/zblade")]
            .into_iter()
            .find_map(|d| newest_runtime_in(&d))
    });
    beside_executable.or_else(|| {
        let env = match std::env::var_os("ZBLADE_PY_ENV").filter(|p| !p.is_empty()) {
            Some(env) => PathBuf::from(env),
            None => Path::new(&std::env::var_os("HOME")?).join(".cache/zblade-py"),
        };
        let mut found: Vec<PathBuf> = std::fs::read_dir(env.join("lib"))
            .ok()?
            .flatten()
            .filter_map(|python| newest_runtime_in(&python.path().join("site-packages/onnxruntime/capi")))
            .collect();
        found.sort();
        found.pop()
    })
}

/// The `libonnxruntime.so*` in `dir` with the highest name (`.so.1.23.2` over `.so`), if any.
fn newest_runtime_in(dir: &Path) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("libonnxruntime.so"))
        })
        .collect();
    found.sort();
    found.pop()
}

/// Why no model could load from `dir`, found without loading anything (no runtime library,
/// or model files missing); `None` when both look present.
pub fn quick_check(dir: &Path) -> Option<EmbedError> {
    match find_onnx_runtime() {
        None => return Some(EmbedError::NoRuntime(NO_RUNTIME_HINT.into())),
        Some(path) if !path.exists() => {
            return Some(EmbedError::NoRuntime(format!("{} does not exist", path.display())));
        }
        Some(_) => {}
    }
    MODEL_FILES
        .iter()
        .map(|name| dir.join(name))
        .find(|path| !path.exists())
        .map(|path| EmbedError::NoModel(format!("{}: not found", path.display())))
}

/// The variable ONNX Runtime reads before it starts its telemetry (its Linux builds send
/// Microsoft usage events unless told otherwise; docs/PRIVACY.md).
pub const ORT_TELEMETRY_OFF: (&str, &str) = ("ORT_DISABLE_TELEMETRY", "1");

/// Turns ONNX Runtime's telemetry off for this process and the processes it starts. Every
/// binary calls it first thing in `main`, before it starts threads; [`load_onnx_runtime`] calls
/// it again (then a no-op) for test and benchmark harnesses. The runtime's own API switch
/// (`DisableTelemetryEvents`, set in [`load_onnx_runtime`]) still let it create its device id
/// and event store under `~/.cache/Microsoft`; this variable stops that too.
#[allow(unsafe_code)]
pub fn disable_onnx_telemetry() {
    let (name, value) = ORT_TELEMETRY_OFF;
    if std::env::var_os(name).is_some_and(|v| v == value) {
        return;
    }
    // SAFETY: changing the environment races with other threads reading it through libc. The
    // binaries call this before they start any thread; in a test harness the only other readers
    // are Rust's (serialised by std's environment lock) and glibc's getenv, which tolerates a
    // concurrent setenv (glibc never frees an environment array it replaced).
    unsafe { std::env::set_var(name, value) };
}

/// Loads ONNX Runtime from [`find_onnx_runtime`], once per process; later calls return the
/// first outcome. Anything that uses fastembed or `ort` directly (the benchmarks' raw
/// baselines) calls this first: without it `ort` would look for `libonnxruntime.so` on the
/// loader's path only, and fail on a machine where setup just created the Python environment.
pub fn load_onnx_runtime() -> Result<(), EmbedError> {
    static RESULT: OnceLock<Result<(), EmbedError>> = OnceLock::new();
    RESULT
        .get_or_init(|| {
            disable_onnx_telemetry();
            let path = find_onnx_runtime().ok_or_else(|| EmbedError::NoRuntime(NO_RUNTIME_HINT.into()))?;
            if !path.exists() {
                return Err(EmbedError::NoRuntime(format!("{} does not exist", path.display())));
            }
            let builder =
                ort::init_from(&path).map_err(|e| EmbedError::NoRuntime(format!("{}: {e}", path.display())))?;
            // ONNX Runtime's Linux builds carry Microsoft's telemetry, on unless told otherwise
            // (docs/PRIVACY.md). This turns its events off through the runtime's own API.
            builder.with_telemetry(false).commit();
            Ok(())
        })
        .clone()
}

/// What a model is loaded for, which decides how many threads ONNX Runtime runs it on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// Search queries, one short text at a time: one thread. A second thread makes a query of
    /// a few dozen tokens no faster, and ONNX Runtime's idle worker threads spin, taking a core
    /// from the search running beside the model (on two cores, a cold `zblade context` lost a
    /// whole core to a spinning worker for most of its run; docs/BENCHMARKS.md, "The lean
    /// install").
    Queries,
    /// Indexing, batches of texts: a thread per core.
    Batches,
}

impl Workload {
    /// ONNX Runtime's intra-op threads for this workload (`None`: one per core).
    fn threads(self) -> Option<usize> {
        match self {
            Workload::Queries => Some(1),
            Workload::Batches => None,
        }
    }
}

/// An ONNX sentence-embedding model from a local directory, with mean pooling.
pub struct LocalModel {
    id: String,
    dim: usize,
    model: TextEmbedding,
}

impl std::fmt::Debug for LocalModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalModel")
            .field("id", &self.id)
            .field("dim", &self.dim)
            .finish()
    }
}

/// Files a model directory must hold.
pub const MODEL_FILES: [&str; 5] = [
    "model.onnx",
    "tokenizer.json",
    "config.json",
    "special_tokens_map.json",
    "tokenizer_config.json",
];

/// Texts per inference batch. Small: ONNX Runtime's memory grows with its largest batch (64
/// texts of 256 tokens peaked zblade's first index of a 68k-line code base at 1.9 GB; 4 at
/// 350 MB), and on CPUs larger batches were no faster (64: 44.8, 16: 45.4, 8: 48.5, 4: 50.4
/// chunks/s with the int8 model; docs/BENCHMARKS.md, "Indexing speed and memory").
pub const EMBED_BATCH: usize = 4;

/// Tokens the model reads per text: `max_seq_length` from sentence-transformers'
/// `sentence_bert_config.json` when the directory has one (all-MiniLM-L6-v2 was trained on
/// 256), else 512. Longer texts are truncated; attention costs grow with the square of this.
fn max_length(dir: &Path) -> usize {
    std::fs::read(dir.join("sentence_bert_config.json"))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .and_then(|config| config["max_seq_length"].as_u64())
        .map_or(512, |n| n.clamp(8, 8192) as usize)
}

/// The vector length a BERT-style model with mean pooling returns: `hidden_size` in its
/// `config.json`. Read instead of embedding a probe text at load (a few milliseconds of every
/// cold search); the first embedding checks it.
fn hidden_size(config: &[u8]) -> Option<usize> {
    let config: serde_json::Value = serde_json::from_slice(config).ok()?;
    config["hidden_size"].as_u64().filter(|&n| n > 0).map(|n| n as usize)
}

/// The smallest tokenizer fastembed accepts, which it configures while the model's own is
/// parsed (see [`LocalModel::load`]); it never tokenizes anything.
const PLACEHOLDER_TOKENIZER: &str = r#"{"version": "1.0", "added_tokens": [], "normalizer": null,
  "pre_tokenizer": null, "post_processor": null, "decoder": null, "truncation": null,
  "padding": null, "model": {"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"}}"#;

/// `parsed` with the padding, truncation and special tokens fastembed gave `configured` (what
/// it derives from the model's config files), so it tokenizes as fastembed's own would.
fn configured_like(
    mut parsed: tokenizers::Tokenizer,
    configured: &tokenizers::Tokenizer,
) -> tokenizers::Result<tokenizers::Tokenizer> {
    parsed.with_padding(configured.get_padding().cloned());
    parsed.with_truncation(configured.get_truncation().cloned())?;
    let mut special: Vec<(u32, tokenizers::AddedToken)> = configured
        .get_added_tokens_decoder()
        .into_iter()
        .filter(|(_, token)| token.special)
        .collect();
    special.sort_by_key(|(id, _)| *id);
    let special: Vec<tokenizers::AddedToken> = special.into_iter().map(|(_, token)| token).collect();
    parsed.add_special_tokens(&special);
    Ok(parsed)
}

impl LocalModel {
    /// Loads the model in `dir`, naming it `id`, to run `workload`.
    pub fn load(dir: &Path, id: &str, workload: Workload) -> Result<Self, EmbedError> {
        let read = |name: &str| {
            std::fs::read(dir.join(name)).map_err(|e| EmbedError::NoModel(format!("{}: {e}", dir.join(name).display())))
        };
        let onnx = read("model.onnx")?;
        let tokenizer_path = dir.join("tokenizer.json");
        let tokenizer_json = read("tokenizer.json")?;
        // Parsing the tokenizer (~15 ms for BERT's vocabulary) and making the ONNX Runtime
        // session (~25 ms) are independent, yet fastembed does one after the other: the
        // tokenizer is parsed here on a thread of its own, and fastembed gets a placeholder
        // that it configures (padding, truncation, special tokens) as it would the real one.
        let parsing = std::thread::spawn(move || tokenizers::Tokenizer::from_bytes(&tokenizer_json));
        let files = TokenizerFiles {
            tokenizer_file: PLACEHOLDER_TOKENIZER.as_bytes().to_vec(),
            config_file: read("config.json")?,
            special_tokens_map_file: read("special_tokens_map.json")?,
            tokenizer_config_file: read("tokenizer_config.json")?,
        };
        let dim = hidden_size(&files.config_file);
        load_onnx_runtime()?;
        let user_model = UserDefinedEmbeddingModel::new(onnx, files).with_pooling(Pooling::Mean);
        let mut options = InitOptionsUserDefined::new().with_max_length(max_length(dir));
        if let Some(threads) = workload.threads() {
            options = options.with_intra_threads(threads);
        }
        let mut model = TextEmbedding::try_new_from_user_defined(user_model, options)
            .map_err(|e| EmbedError::BadModel(format!("{}: {e}", dir.display())))?;
        let parsed = parsing
            .join()
            .map_err(|_| EmbedError::BadModel(format!("{}: parsing it panicked", tokenizer_path.display())))?
            .map_err(|e| EmbedError::BadModel(format!("{}: {e}", tokenizer_path.display())))?;
        model.tokenizer = configured_like(parsed, &model.tokenizer)
            .map_err(|e| EmbedError::BadModel(format!("{}: {e}", tokenizer_path.display())))?;
        let mut loaded = LocalModel {
            id: id.to_string(),
            dim: dim.unwrap_or(0),
            model,
        };
        if dim.is_none() {
            let probe = loaded
                .model
                .embed(["dimension probe"], None)
                .map_err(|e| EmbedError::BadModel(e.to_string()))?;
            loaded.dim = probe.first().map_or(0, Vec::len);
        }
        if loaded.dim == 0 {
            return Err(EmbedError::BadModel("the model returns empty vectors".into()));
        }
        Ok(loaded)
    }
}

impl Embedder for LocalModel {
    fn model_id(&self) -> &str {
        &self.id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        // Length-bucketed batches: every batch is padded to its longest text, so texts of
        // similar length go together (sorted by length) and the vectors are put back in order.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let sorted: Vec<&str> = order.iter().map(|&i| texts[i]).collect();
        let embedded = self
            .model
            .embed(sorted, Some(EMBED_BATCH))
            .map_err(|e| EmbedError::Failed(e.to_string()))?;
        if embedded.len() != texts.len() {
            return Err(EmbedError::Failed(format!(
                "the model returned {} vectors for {} texts",
                embedded.len(),
                texts.len()
            )));
        }
        if let Some(wrong) = embedded.iter().find(|v| v.len() != self.dim) {
            return Err(EmbedError::BadModel(format!(
                "{}: the model returned vectors of {} numbers where its config.json says {}",
                self.id,
                wrong.len(),
                self.dim
            )));
        }
        let mut vectors = vec![Vec::new(); texts.len()];
        for (vector, &i) in embedded.into_iter().zip(&order) {
            vectors[i] = vector;
        }
        for v in &mut vectors {
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            if norm > 0.0 {
                v.iter_mut().for_each(|x| *x /= norm);
            }
        }
        Ok(vectors)
    }
}

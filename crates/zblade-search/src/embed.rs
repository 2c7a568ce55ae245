//! Local text embeddings: an ONNX sentence-embedding model from a directory, run on ONNX
//! Runtime loaded at run time (through `ort`), with the model's own tokenizer.
//!
//! A model directory holds `model.onnx`, `tokenizer.json`, `config.json`,
//! `special_tokens_map.json` and `tokenizer_config.json` (what `scripts/models/build_bert_onnx.py`
//! writes). Nothing is downloaded here, and when ONNX Runtime or the model is missing, loading
//! fails with an error that says so: callers fall back to keyword search.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

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

/// An ONNX sentence-embedding model from a local directory, with mean pooling: the model's
/// tokenizer, configured as its config files say, and an ONNX Runtime session made from the
/// saved optimised copy of the model ([`crate::onnx_cache`]).
pub struct LocalModel {
    id: String,
    dim: usize,
    tokenizer: tokenizers::Tokenizer,
    session: ort::session::Session,
    /// The graph takes `token_type_ids` (BERT does; some models do not).
    token_type_ids: bool,
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
fn hidden_size(config: &serde_json::Value) -> Option<usize> {
    config["hidden_size"].as_u64().filter(|&n| n > 0).map(|n| n as usize)
}

/// The model's own config files beside `tokenizer.json`, parsed.
struct TokenizerConfig {
    config: serde_json::Value,
    special_tokens_map: serde_json::Value,
    tokenizer_config: serde_json::Value,
}

/// `tokenizer` padded, truncated and given special tokens as the model's config files say
/// (the rules of fastembed's user-defined models, which indexes made by earlier zblade
/// versions were embedded with; tests/tests/search.rs compares the two): padding to the
/// batch's longest text with the configured pad token, truncation at `max_length` or the
/// model's own limit, and every token of `special_tokens_map.json` marked special.
fn configure(
    mut tokenizer: tokenizers::Tokenizer,
    files: &TokenizerConfig,
    max_length: usize,
) -> Result<tokenizers::Tokenizer, String> {
    use tokenizers::{AddedToken, PaddingParams, PaddingStrategy, TruncationParams};
    let model_max_length = files.tokenizer_config["model_max_length"]
        .as_f64()
        .ok_or("tokenizer_config.json has no number `model_max_length`")?;
    // Some models say 1e30 here ("no limit"); the cast saturates.
    let max_length = max_length.min(model_max_length as usize);
    let pad_token = files.tokenizer_config["pad_token"]
        .as_str()
        .ok_or("tokenizer_config.json has no string `pad_token`")?
        .to_string();
    let pad_id = files.config["pad_token_id"].as_u64().unwrap_or(0) as u32;
    tokenizer.with_padding(Some(PaddingParams {
        strategy: PaddingStrategy::BatchLongest,
        pad_token,
        pad_id,
        ..Default::default()
    }));
    tokenizer
        .with_truncation(Some(TruncationParams {
            max_length,
            ..Default::default()
        }))
        .map_err(|e| e.to_string())?;
    if let serde_json::Value::Object(tokens) = &files.special_tokens_map {
        for value in tokens.values() {
            let token = match value {
                serde_json::Value::String(content) => Some(AddedToken {
                    content: content.clone(),
                    special: true,
                    ..Default::default()
                }),
                serde_json::Value::Object(_) => match (
                    value["content"].as_str(),
                    value["single_word"].as_bool(),
                    value["lstrip"].as_bool(),
                    value["rstrip"].as_bool(),
                    value["normalized"].as_bool(),
                ) {
                    (Some(content), Some(single_word), Some(lstrip), Some(rstrip), Some(normalized)) => {
                        Some(AddedToken {
                            content: content.to_string(),
                            single_word,
                            lstrip,
                            rstrip,
                            normalized,
                            special: true,
                        })
                    }
                    _ => None,
                },
                _ => None,
            };
            if let Some(token) = token {
                tokenizer.add_special_tokens(&[token]);
            }
        }
    }
    Ok(tokenizer)
}

impl LocalModel {
    /// Loads the model in `dir`, naming it `id`, to run `workload`.
    pub fn load(dir: &Path, id: &str, workload: Workload) -> Result<Self, EmbedError> {
        if let Some(missing) = MODEL_FILES
            .iter()
            .map(|name| dir.join(name))
            .find(|path| !path.is_file())
        {
            return Err(EmbedError::NoModel(format!("{}: not found", missing.display())));
        }
        let read = |name: &str| {
            std::fs::read(dir.join(name)).map_err(|e| EmbedError::NoModel(format!("{}: {e}", dir.join(name).display())))
        };
        let json = |name: &str| {
            serde_json::from_slice::<serde_json::Value>(&read(name)?)
                .map_err(|e| EmbedError::BadModel(format!("{}: {e}", dir.join(name).display())))
        };
        let tokenizer_path = dir.join("tokenizer.json");
        let tokenizer_json = read("tokenizer.json")?;
        // Parsing the tokenizer (~15 ms for BERT's vocabulary) and making the ONNX Runtime
        // session are independent: the tokenizer is parsed on a thread of its own.
        let parsing = std::thread::spawn(move || tokenizers::Tokenizer::from_bytes(&tokenizer_json));
        let files = TokenizerConfig {
            config: json("config.json")?,
            special_tokens_map: json("special_tokens_map.json")?,
            tokenizer_config: json("tokenizer_config.json")?,
        };
        let dim = hidden_size(&files.config);
        load_onnx_runtime()?;
        let session = crate::onnx_cache::session(&dir.join("model.onnx"), workload.threads())?;
        let token_type_ids = session.inputs().iter().any(|input| input.name() == "token_type_ids");
        let parsed = parsing
            .join()
            .map_err(|_| EmbedError::BadModel(format!("{}: parsing it panicked", tokenizer_path.display())))?
            .map_err(|e| EmbedError::BadModel(format!("{}: {e}", tokenizer_path.display())))?;
        let tokenizer = configure(parsed, &files, max_length(dir))
            .map_err(|e| EmbedError::BadModel(format!("{}: {e}", dir.display())))?;
        let mut loaded = LocalModel {
            id: id.to_string(),
            dim: dim.unwrap_or(0),
            tokenizer,
            session,
            token_type_ids,
        };
        if dim.is_none() {
            let probe = loaded
                .run(&["dimension probe"])
                .map_err(|e| EmbedError::BadModel(e.to_string()))?;
            loaded.dim = probe.first().map_or(0, Vec::len);
        }
        if loaded.dim == 0 {
            return Err(EmbedError::BadModel("the model returns empty vectors".into()));
        }
        Ok(loaded)
    }

    /// One batch through the model: tokenized, padded to its longest text, run, and mean-pooled
    /// over the tokens the attention mask keeps, each vector scaled to unit length. The sums
    /// run token by token in order, as fastembed's did, so the vectors are bitwise those of
    /// indexes it made.
    fn run(&mut self, batch: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        use ort::value::Tensor;
        let failed = |what: &str, e: &dyn std::fmt::Display| EmbedError::Failed(format!("{what}: {e}"));
        let encodings = self
            .tokenizer
            .encode_batch(batch.to_vec(), true)
            .map_err(|e| failed("tokenizing", &e))?;
        let rows = encodings.len();
        let width = encodings.first().map_or(0, |e| e.len());
        let mut ids = Vec::with_capacity(rows * width);
        let mut mask = Vec::with_capacity(rows * width);
        let mut types = Vec::with_capacity(rows * width);
        for encoding in &encodings {
            if encoding.len() != width {
                return Err(EmbedError::BadModel(format!("{}: its tokenizer does not pad", self.id)));
            }
            ids.extend(encoding.get_ids().iter().map(|&x| i64::from(x)));
            mask.extend(encoding.get_attention_mask().iter().map(|&x| i64::from(x)));
            types.extend(encoding.get_type_ids().iter().map(|&x| i64::from(x)));
        }
        let shape = [rows as i64, width as i64];
        let tensor =
            |values: Vec<i64>| Tensor::from_array((shape, values)).map_err(|e| failed("the model's input", &e));
        let mut inputs = ort::inputs![
            "input_ids" => tensor(ids)?,
            "attention_mask" => tensor(mask.clone())?,
        ];
        if self.token_type_ids {
            inputs.push(("token_type_ids".into(), tensor(types)?.into()));
        }
        let id = self.id.clone();
        let outputs = self.session.run(inputs).map_err(|e| failed("running the model", &e))?;
        // The output that holds the embeddings: the only one, else the first of these names.
        let output = if outputs.len() == 1 {
            Some(&outputs[0])
        } else {
            ["text_embeds", "last_hidden_state", "sentence_embedding"]
                .iter()
                .find_map(|name| outputs.get(*name))
        }
        .ok_or_else(|| EmbedError::BadModel(format!("{id}: no output holds the embeddings")))?;
        let (out_shape, values) = output
            .try_extract_tensor::<f32>()
            .map_err(|e| EmbedError::BadModel(format!("{id}: {e}")))?;
        let pooled: Vec<Vec<f32>> = match **out_shape {
            // One vector per text already.
            [r, d] if r as usize == rows => values.chunks(d as usize).map(<[f32]>::to_vec).collect(),
            [r, t, d] if r as usize == rows && t as usize == width => {
                let (t, d) = (t as usize, d as usize);
                (0..rows)
                    .map(|row| {
                        let kept = &mask[row * t..(row + 1) * t];
                        let mut sum = vec![0f32; d];
                        for (token, &keep) in kept.iter().enumerate() {
                            let at = (row * t + token) * d;
                            for (s, &x) in sum.iter_mut().zip(&values[at..at + d]) {
                                *s += keep as f32 * x;
                            }
                        }
                        let count = kept.iter().fold(0f32, |n, &keep| n + keep as f32);
                        let count = if count == 0.0 { 1.0 } else { count };
                        sum.iter().map(|s| s / count).collect()
                    })
                    .collect()
            }
            ref other => {
                return Err(EmbedError::BadModel(format!(
                    "{id}: the model's output has shape {other:?} for {rows} texts of {width} tokens"
                )));
            }
        };
        Ok(pooled
            .into_iter()
            .map(|v| {
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.iter().map(|x| x / (norm + 1e-12)).collect()
            })
            .collect())
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
        let mut embedded = Vec::with_capacity(texts.len());
        for batch in sorted.chunks(EMBED_BATCH) {
            embedded.extend(self.run(batch)?);
        }
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

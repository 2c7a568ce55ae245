//! The model and its worker thread.
//!
//! llama.cpp contexts are not thread-safe and generation keeps a core busy, so one dedicated
//! thread owns the context and takes jobs from a channel, one at a time. Callers get a
//! [`JobHandle`] they can wait on or cancel; a cancelled or timed-out job stops between two
//! tokens. The model weights are shared (llama.cpp models are read-only once loaded), so token
//! counting runs on the caller's thread without queueing behind a long generation.

use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;

use crate::LlmError;

/// How the model is run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Context window in tokens (prompt + output); capped at what the model was trained on.
    pub context_tokens: u32,
    /// CPU threads for llama.cpp; 0 means all cores.
    pub threads: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            context_tokens: 8192,
            threads: 0,
        }
    }
}

/// One generation job.
#[derive(Debug, Clone)]
pub struct Request {
    /// Instructions, sent as the system message of the model's chat template.
    pub system: String,
    /// Earlier turns of a chat, sent between the system and the user message: `(role, text)`
    /// with role `user` or `assistant`. Empty for the compressor's one-shot jobs.
    pub turns: Vec<(String, String)>,
    /// The material and the task, sent as the user message.
    pub user: String,
    /// A GBNF grammar the output must match (root rule `root`); `None` for free text.
    pub grammar: Option<String>,
    /// Tokens to generate at most.
    pub max_tokens: u32,
    /// 0 for greedy decoding; above 0, sampling with this temperature and [`Request::seed`].
    pub temperature: f32,
    /// Seed for sampling, so a job gives the same output every time.
    pub seed: u32,
    /// The job fails with [`LlmError::TimedOut`] when it runs longer than this.
    pub timeout: Duration,
    /// Called on the worker thread with each piece of the output as it is generated (a chat
    /// shows its answer as it grows); `None` for jobs that only want the result.
    pub on_text: Option<TextSink>,
}

/// Where a streaming job's pieces go (see [`Request::on_text`]). A piece is whole UTF-8: bytes
/// of a character split across tokens are held until the character is complete.
#[derive(Clone)]
pub struct TextSink(pub Arc<dyn Fn(&str) + Send + Sync>);

impl std::fmt::Debug for TextSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TextSink")
    }
}

impl Request {
    /// A greedy request with a 60 s timeout.
    pub fn new(system: impl Into<String>, user: impl Into<String>, max_tokens: u32) -> Self {
        Request {
            system: system.into(),
            turns: Vec::new(),
            user: user.into(),
            grammar: None,
            max_tokens,
            temperature: 0.0,
            seed: 0,
            timeout: Duration::from_secs(60),
            on_text: None,
        }
    }
}

/// Why generation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// The model ended its answer (end-of-generation token, or the grammar was complete).
    End,
    /// [`Request::max_tokens`] was reached; a grammar-constrained output may be incomplete.
    MaxTokens,
}

/// llama.cpp's own performance counters for one job (`llama_perf_context`).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct LlamaTimings {
    /// Prompt tokens evaluated, and the milliseconds llama.cpp counted for them.
    pub prompt_tokens: i32,
    /// Milliseconds of prompt evaluation.
    pub prompt_ms: f64,
    /// Tokens generated (decoded one at a time), and their milliseconds.
    pub generated_tokens: i32,
    /// Milliseconds of generation.
    pub generation_ms: f64,
}

/// A finished job.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Generation {
    /// The output text (the raw bytes decoded as UTF-8, invalid sequences replaced).
    pub text: String,
    /// Why it stopped.
    pub stop: Stop,
    /// Prompt tokens (after the chat template).
    pub prompt_tokens: usize,
    /// Tokens generated, end token excluded.
    pub generated_tokens: usize,
    /// Wall-clock milliseconds this wrapper spent on the prompt (tokenizing and evaluating).
    pub prompt_ms: f64,
    /// Wall-clock milliseconds this wrapper spent generating (sampling, decoding, detokenizing).
    pub generation_ms: f64,
    /// What llama.cpp itself measured for the same job.
    pub llama: LlamaTimings,
}

/// A submitted job: wait for its result or cancel it.
pub struct JobHandle {
    cancel: Arc<AtomicBool>,
    result: mpsc::Receiver<Result<Generation, LlmError>>,
}

impl JobHandle {
    /// Asks the worker to stop this job; it stops before its next token.
    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }

    /// Waits up to `timeout` for the job to end: `None` while it still runs.
    pub fn wait_timeout(&self, timeout: Duration) -> Option<Result<Generation, LlmError>> {
        match self.result.recv_timeout(timeout) {
            Ok(result) => Some(result),
            Err(mpsc::RecvTimeoutError::Timeout) => None,
            Err(mpsc::RecvTimeoutError::Disconnected) => Some(Err(LlmError::WorkerGone)),
        }
    }

    /// Blocks until the job ends.
    pub fn wait(self) -> Result<Generation, LlmError> {
        self.result.recv().unwrap_or(Err(LlmError::WorkerGone))
    }
}

struct Job {
    request: Request,
    cancel: Arc<AtomicBool>,
    reply: mpsc::Sender<Result<Generation, LlmError>>,
}

/// What is known about a loaded model.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ModelInfo {
    /// The GGUF file.
    pub path: PathBuf,
    /// `general.name` from its metadata, or the file name.
    pub name: String,
    /// Parameters.
    pub parameters: u64,
    /// Size of the weights in bytes.
    pub size_bytes: u64,
    /// The context window in use.
    pub context_tokens: u32,
    /// Whether the model carries a chat template (instruct models do).
    pub chat_template: bool,
}

/// A loaded GGUF model and the worker thread that runs it. Dropping it stops the worker after
/// its current job.
pub struct Compressor {
    model: Arc<LlamaModel>,
    info: ModelInfo,
    jobs: Option<mpsc::Sender<Job>>,
    worker: Option<std::thread::JoinHandle<()>>,
}

/// llama.cpp's backend may be initialised once per process.
fn backend() -> Result<&'static LlamaBackend, LlmError> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            let mut backend = LlamaBackend::init().map_err(|e| e.to_string())?;
            // llama.cpp logs every tensor it loads to stderr; keep it for debugging only.
            if std::env::var_os("ZBLADE_LLAMA_LOG").is_none() {
                backend.void_logs();
            }
            Ok(backend)
        })
        .as_ref()
        .map_err(|e| LlmError::Backend(e.clone()))
}

impl Compressor {
    /// Loads `path` and starts the worker thread. The file is checked to be GGUF first; a
    /// file llama.cpp cannot load, or a context it cannot create, is an error naming the file.
    pub fn load(path: &Path, options: &Options) -> Result<Self, LlmError> {
        crate::gguf::read_header(path)?;
        let backend = backend()?;
        let params = LlamaModelParams::default();
        let model = LlamaModel::load_from_file(backend, path, &params).map_err(|e| LlmError::Load {
            path: path.to_path_buf(),
            why: e.to_string(),
        })?;
        let trained = model.n_ctx_train().max(256);
        let context_tokens = options.context_tokens.clamp(256, trained);
        let name = model
            .meta_val_str("general.name")
            .ok()
            .filter(|n| !n.trim().is_empty())
            .unwrap_or_else(|| {
                path.file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default()
            });
        let info = ModelInfo {
            path: path.to_path_buf(),
            name,
            parameters: model.n_params(),
            size_bytes: model.size(),
            context_tokens,
            chat_template: model.chat_template(None).is_ok(),
        };
        let model = Arc::new(model);
        let threads = match options.threads {
            0 => std::thread::available_parallelism().map_or(2, |n| n.get() as i32),
            n => n as i32,
        };
        // The context is created on the worker, but its creation is reported back so a model
        // that loads and yet cannot run fails here, not on the first job.
        let (jobs, inbox) = mpsc::channel::<Job>();
        let (ready_tx, ready_rx) = mpsc::channel::<Result<(), LlmError>>();
        let worker_model = Arc::clone(&model);
        let worker_path = path.to_path_buf();
        let worker = std::thread::Builder::new()
            .name("zblade-compressor".into())
            .spawn(move || worker_loop(&worker_model, &worker_path, context_tokens, threads, inbox, ready_tx))
            .map_err(|e| LlmError::Backend(format!("cannot start the compressor thread: {e}")))?;
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                let _ = worker.join();
                return Err(e);
            }
            Err(_) => {
                let _ = worker.join();
                return Err(LlmError::WorkerGone);
            }
        }
        Ok(Compressor {
            model,
            info,
            jobs: Some(jobs),
            worker: Some(worker),
        })
    }

    /// What was loaded.
    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// Queues a job on the worker thread.
    pub fn submit(&self, request: Request) -> JobHandle {
        let cancel = Arc::new(AtomicBool::new(false));
        let (reply, result) = mpsc::channel();
        let job = Job {
            request,
            cancel: Arc::clone(&cancel),
            reply,
        };
        if let Some(jobs) = &self.jobs
            && let Err(mpsc::SendError(job)) = jobs.send(job)
        {
            let _ = job.reply.send(Err(LlmError::WorkerGone));
        }
        JobHandle { cancel, result }
    }

    /// Runs a job and waits for it.
    pub fn generate(&self, request: Request) -> Result<Generation, LlmError> {
        self.submit(request).wait()
    }

    /// Tokens of `text` in this model's vocabulary (no BOS), counted on the caller's thread.
    pub fn count_tokens(&self, text: &str) -> usize {
        self.model.vocab().tokenize(text.as_bytes(), false, false).len()
    }
}

impl std::fmt::Debug for Compressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compressor")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl Drop for Compressor {
    fn drop(&mut self) {
        // Closing the channel ends the worker's loop once its current job is done.
        self.jobs.take();
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

fn worker_loop(
    model: &LlamaModel,
    path: &Path,
    context_tokens: u32,
    threads: i32,
    inbox: mpsc::Receiver<Job>,
    ready: mpsc::Sender<Result<(), LlmError>>,
) {
    let backend = match backend() {
        Ok(b) => b,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let batch_size = context_tokens.min(512);
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(context_tokens))
        .with_n_batch(batch_size)
        .with_n_threads(threads)
        .with_n_threads_batch(threads)
        // llama.cpp skips its performance counters by default; they are the benchmark's yardstick.
        .with_no_perf(false);
    let mut ctx = match model.new_context(backend, params) {
        Ok(ctx) => ctx,
        Err(e) => {
            let _ = ready.send(Err(LlmError::Load {
                path: path.to_path_buf(),
                why: format!("cannot create a context of {context_tokens} tokens: {e}"),
            }));
            return;
        }
    };
    let _ = ready.send(Ok(()));
    let mut batch = LlamaBatch::new(batch_size as usize, 1);
    while let Ok(job) = inbox.recv() {
        let result = if job.cancel.load(Ordering::Relaxed) {
            Err(LlmError::Cancelled)
        } else {
            run_job(model, &mut ctx, &mut batch, context_tokens, &job)
        };
        let _ = job.reply.send(result);
    }
}

/// The prompt for `request` through the model's chat template, or a plain layout for models
/// that have none (base models, and the generated test models).
fn format_prompt(model: &LlamaModel, request: &Request) -> String {
    let template = model.chat_template(None).ok();
    let turns = request.turns.iter().map(|(role, text)| (role.as_str(), text));
    let messages = std::iter::once(("system", &request.system))
        .chain(turns)
        .chain(std::iter::once(("user", &request.user)))
        .filter(|(_, text)| !text.is_empty())
        .map(|(role, text)| LlamaChatMessage::new(role.into(), text.replace('\0', " ")))
        .collect::<Result<Vec<_>, _>>();
    if let (Some(template), Ok(messages)) = (template, messages)
        && let Ok(prompt) = model.apply_chat_template(&template, &messages, true)
    {
        return prompt;
    }
    let mut plain = format!("{}\n\n", request.system);
    for (role, text) in &request.turns {
        plain.push_str(&format!("{role}: {text}\n\n"));
    }
    plain.push_str(&format!("{}\n\nAnswer:\n", request.user));
    plain
}

fn run_job(
    model: &LlamaModel,
    ctx: &mut llama_cpp_2::context::LlamaContext<'_>,
    batch: &mut LlamaBatch<'_>,
    context_tokens: u32,
    job: &Job,
) -> Result<Generation, LlmError> {
    let request = &job.request;
    let started = Instant::now();
    let check = |started: Instant| -> Result<(), LlmError> {
        if job.cancel.load(Ordering::Relaxed) {
            Err(LlmError::Cancelled)
        } else if started.elapsed() > request.timeout {
            Err(LlmError::TimedOut(request.timeout))
        } else {
            Ok(())
        }
    };
    let decode_error = |e: llama_cpp_2::DecodeError| LlmError::Generate(e.to_string());
    let vocab = model.vocab();
    let prompt = format_prompt(model, request);
    let tokens = vocab.tokenize(prompt.as_bytes(), true, true);
    let limit = context_tokens as usize;
    if tokens.len() + request.max_tokens as usize > limit {
        return Err(LlmError::PromptTooLong {
            tokens: tokens.len(),
            output: request.max_tokens as usize,
            context: limit,
        });
    }
    let mut sampler = {
        let mut chain = Vec::new();
        if let Some(grammar) = &request.grammar {
            chain.push(LlamaSampler::grammar(model, grammar, "root").map_err(|e| LlmError::Grammar(e.to_string()))?);
        }
        if request.temperature > 0.0 {
            chain.push(LlamaSampler::temp(request.temperature));
            chain.push(LlamaSampler::dist(request.seed));
        } else {
            chain.push(LlamaSampler::greedy());
        }
        LlamaSampler::chain_simple(chain)
    };

    ctx.clear_kv_cache();
    ctx.reset_timings();
    let capacity = ctx.n_batch() as usize;
    let mut position = 0i32;
    for chunk in tokens.chunks(capacity) {
        check(started)?;
        batch.clear();
        for token in chunk {
            let last = position as usize == tokens.len() - 1;
            batch
                .add(*token, position, &[0], last)
                .map_err(|e| LlmError::Generate(e.to_string()))?;
            position += 1;
        }
        ctx.decode(batch).map_err(decode_error)?;
    }
    let prompt_ms = started.elapsed().as_secs_f64() * 1000.0;

    let generating = Instant::now();
    let mut bytes = Vec::new();
    let mut generated = 0usize;
    let mut stop = Stop::MaxTokens;
    // How many bytes of `bytes` were handed to `on_text`.
    let mut streamed = 0usize;
    while generated < request.max_tokens as usize {
        check(started)?;
        // `sample` also accepts the token into the chain (the grammar advances); accepting
        // it a second time would corrupt the grammar state.
        let token = sampler.sample(ctx, batch.n_tokens() - 1);
        if vocab.is_eog(token) {
            stop = Stop::End;
            break;
        }
        bytes.extend(vocab.token_to_piece(token, false, None));
        if let Some(sink) = &request.on_text {
            streamed = stream_piece(&bytes, streamed, &sink.0);
        }
        generated += 1;
        batch.clear();
        batch
            .add(token, position, &[0], true)
            .map_err(|e| LlmError::Generate(e.to_string()))?;
        position += 1;
        ctx.decode(batch).map_err(decode_error)?;
    }
    if let Some(sink) = &request.on_text
        && streamed < bytes.len()
    {
        // The tail, even if the model ended inside a character.
        (sink.0)(&String::from_utf8_lossy(&bytes[streamed..]));
    }
    let generation_ms = generating.elapsed().as_secs_f64() * 1000.0;
    let timings = ctx.timings();
    Ok(Generation {
        text: String::from_utf8_lossy(&bytes).into_owned(),
        stop,
        prompt_tokens: tokens.len(),
        generated_tokens: generated,
        prompt_ms,
        generation_ms,
        llama: LlamaTimings {
            prompt_tokens: timings.n_p_eval(),
            prompt_ms: timings.t_p_eval_ms(),
            generated_tokens: timings.n_eval(),
            generation_ms: timings.t_eval_ms(),
        },
    })
}

/// Hands `bytes[from..]` to `sink` up to the last whole UTF-8 character; returns how far it got.
fn stream_piece(bytes: &[u8], from: usize, sink: &Arc<dyn Fn(&str) + Send + Sync>) -> usize {
    let rest = &bytes[from..];
    let whole = match std::str::from_utf8(rest) {
        Ok(text) => text,
        // Only an unfinished character at the end is held back; bytes that can never be
        // UTF-8 are passed on replaced, as the final text will have them.
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&rest[..e.valid_up_to()]).unwrap_or_default(),
        Err(_) => {
            sink(&String::from_utf8_lossy(rest));
            return bytes.len();
        }
    };
    if !whole.is_empty() {
        sink(whole);
    }
    from + whole.len()
}

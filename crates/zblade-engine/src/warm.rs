//! The warm engine: a long-running zblade (the desktop app, or `zblade serve`) answers context
//! requests from short-lived processes over a Unix socket. An agent's prompt hook starts a new
//! `zblade` process per prompt; cold, that process spends most of its time loading the
//! embedding model and the tokenizer for a job of a few milliseconds. Asked over the socket, the
//! engine that already has them loaded answers instead, and the process only prints.
//!
//! One socket per project, named by a hash of the project's canonical root, in a folder only
//! this user can enter (`$XDG_RUNTIME_DIR/zblade-UID`, else the temporary folder): the folder is
//! created 0700 and refused when it is anyone else's or open to others, and the socket is 0600.
//! A request is one JSON line (at most [`MAX_REQUEST`] bytes) — a context request, the same
//! asked for the whole result (`{"whole": {…}}`: what `zblade context --json` and `--receipt`
//! print), a prompt hook's event (`{"prompt_hook": {agent, prompt, …}}`, answered with what
//! the hook prints), or a point-of-action question (`{"action": {file, lines, budget}}`,
//! docs/HOOKS.md) — and the answer one JSON line.
//! Whatever fails — no engine running, a stale socket, a timeout — [`ask`] returns `None` and the
//! caller does the work itself.
//!
//! The client side (the socket's place, the answer, asking) is the `zblade-warm` crate, which
//! this re-exports: the command-line front door asks through it without linking the engine.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::context::ContextRequest;
use crate::project::Project;

// Where the socket is, the answer's shape and the asking live in zblade-warm, so that the
// command-line front door can ask without linking the engine.
pub use zblade_warm::{MAX_REQUEST, PromptHook, WarmAnswer, socket_path};

/// What a short-lived process asks the warm engine.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum WarmRequest {
    /// What memory holds about some lines, before an agent acts on them (a point-of-action
    /// hook: no model needed, but the tokenizer a fresh process would load first).
    Action {
        /// The question.
        action: ActionRequest,
    },
    /// A prompt hook's whole answer: what `zblade hook prompt` prints ([`crate::prompt_hook`]).
    /// Before `Context`, whose fields all have defaults and would read any object.
    PromptHook {
        /// The agent's event.
        prompt_hook: zblade_warm::PromptEvent,
    },
    /// A packed context with everything about it: the result's JSON and its receipt.
    Whole {
        /// The request.
        whole: ContextRequest,
    },
    /// A packed context for a prompt.
    Context(ContextRequest),
}

/// A point-of-action question: [`Project::point_of_action`]'s arguments.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ActionRequest {
    /// The file, absolute or relative to the project's root.
    pub file: String,
    /// The lines (`None`: the whole file).
    pub lines: Option<(u32, u32)>,
    /// Tokens at most.
    pub budget: usize,
}

/// Answers `request` on `project`, as the warm engine does.
pub fn handle(project: &Project, request: &WarmRequest) -> Result<WarmAnswer, String> {
    match request {
        WarmRequest::Context(request) => run(project, request),
        WarmRequest::PromptHook { prompt_hook } => crate::prompt_hook(project, prompt_hook),
        WarmRequest::Whole { whole } => {
            let result = project.context(whole).map_err(|e| e.to_string())?;
            let json = serde_json::to_string_pretty(&result).map_err(|e| e.to_string())?;
            Ok(WarmAnswer {
                receipt: Some(crate::receipt_text(&result)),
                result: Some(json),
                entries: result.pack.entries.len(),
                nothing_relevant: result.pack.nothing_relevant(),
                text: result.pack.text,
                notices: result.notices,
                prompt_hook: false,
            })
        }
        WarmRequest::Action { action } => {
            let answer = project
                .point_of_action(&action.file, action.lines, action.budget)
                .map_err(|e| e.to_string())?;
            Ok(WarmAnswer {
                nothing_relevant: answer.text.is_empty(),
                text: answer.text,
                entries: answer.entries,
                notices: Vec::new(),
                result: None,
                receipt: None,
                prompt_hook: false,
            })
        }
    }
}

/// A small request that loads what the first real one would (tokenizer, embedding model,
/// vector table), for a long-running process to run before it starts answering.
pub fn warm_up_request() -> ContextRequest {
    ContextRequest {
        budget: Some(100),
        ..ContextRequest::new("warm up")
    }
}

/// Runs `request` on `project`, answering as the warm engine does.
pub fn run(project: &Project, request: &ContextRequest) -> Result<WarmAnswer, String> {
    let result = project.context(request).map_err(|e| e.to_string())?;
    Ok(WarmAnswer {
        entries: result.pack.entries.len(),
        nothing_relevant: result.pack.nothing_relevant(),
        text: result.pack.text,
        notices: result.notices,
        result: None,
        receipt: None,
        prompt_hook: false,
    })
}

/// Asks the warm engine of the project at `root`; `None` when none answers within `timeout`
/// (the caller then works in-process). `Some(Err)` is the engine's own error for the request.
pub fn ask(root: &Path, request: &ContextRequest, timeout: Duration) -> Option<Result<WarmAnswer, String>> {
    ask_warm(root, &WarmRequest::Context(request.clone()), timeout)
}

/// Like [`ask`], for the whole result: the answer carries `result` (the JSON `zblade context
/// --json` prints) and `receipt`.
pub fn ask_whole(root: &Path, request: &ContextRequest, timeout: Duration) -> Option<Result<WarmAnswer, String>> {
    ask_warm(root, &WarmRequest::Whole { whole: request.clone() }, timeout)
}

/// Asks the warm engine for a prompt hook's answer ([`crate::prompt_hook`]); `None` as for
/// [`ask`].
pub fn ask_prompt_hook(
    root: &Path,
    event: &zblade_warm::PromptEvent,
    timeout: Duration,
) -> Option<Result<WarmAnswer, String>> {
    zblade_warm::ask_prompt_hook(root, event, timeout)
}

/// Asks the warm engine what memory holds about some lines; `None` as for [`ask`].
pub fn ask_action(root: &Path, action: ActionRequest, timeout: Duration) -> Option<Result<WarmAnswer, String>> {
    ask_warm(root, &WarmRequest::Action { action }, timeout)
}

fn ask_warm(root: &Path, request: &WarmRequest, timeout: Duration) -> Option<Result<WarmAnswer, String>> {
    zblade_warm::ask(root, request, timeout)
}

/// The right to serve one project: an OS lock on a file beside the socket, held from before
/// the engine loads its model until it stops (the kernel drops it if the process dies). Only
/// its holder binds the socket, so two engines never serve, or race for, one project.
pub struct EngineLock {
    socket: PathBuf,
    _file: std::fs::File,
}

fn lock_path(socket: &Path) -> PathBuf {
    socket.with_extension("lock")
}

/// The project's socket and its lock file, locked by this process; `AddrInUse` when another
/// process holds the lock.
fn lock(root: &Path) -> std::io::Result<(PathBuf, std::fs::File)> {
    let socket = socket_path(root).ok_or_else(|| std::io::Error::other("no private folder for the engine's socket"))?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(lock_path(&socket))?;
    match file.try_lock() {
        Ok(()) => Ok((socket, file)),
        Err(std::fs::TryLockError::WouldBlock) => Err(std::io::Error::new(
            std::io::ErrorKind::AddrInUse,
            format!("another zblade already serves this project ({})", socket.display()),
        )),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

/// Claims the right to serve the project at `root`; `AddrInUse` when another process holds it.
pub fn claim(root: &Path) -> std::io::Result<EngineLock> {
    let (socket, file) = lock(root)?;
    // Who serves, for people and tests that want to stop it.
    file.set_len(0)?;
    write!(&file, "{}", std::process::id())?;
    Ok(EngineLock { socket, _file: file })
}

/// Whether some process holds the project's engine lock: an engine is loading or serving.
/// Asking takes the lock for an instant and writes nothing.
pub fn engine_starting_or_running(root: &Path) -> bool {
    lock(root).is_err_and(|e| e.kind() == std::io::ErrorKind::AddrInUse)
}

/// A warm engine listening for this project. Dropping it stops answering, removes the socket
/// and releases the project's engine lock.
pub struct WarmServer {
    socket: PathBuf,
    _lock: EngineLock,
}

impl Drop for WarmServer {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.socket);
    }
}

impl WarmServer {
    /// Where it listens.
    pub fn socket(&self) -> &Path {
        &self.socket
    }
}

/// Starts answering requests for the project at `root` on a thread: `handle` runs each one
/// (it locks whatever holds the project). Fails when another engine already serves there.
pub fn serve(
    root: &Path,
    handle: impl Fn(WarmRequest) -> Result<WarmAnswer, String> + Send + 'static,
) -> std::io::Result<WarmServer> {
    serve_claimed(claim(root)?, handle)
}

/// [`serve`] with the project's lock already claimed (before a slow warm-up, so that a second
/// process started meanwhile sees the engine coming and does not load a model for nothing).
pub fn serve_claimed(
    lock: EngineLock,
    handle: impl Fn(WarmRequest) -> Result<WarmAnswer, String> + Send + 'static,
) -> std::io::Result<WarmServer> {
    let socket = lock.socket.clone();
    // Holding the lock, whatever socket is there was left by an engine that died.
    let _ = std::fs::remove_file(&socket);
    let listener = UnixListener::bind(&socket)?;
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))?;
    std::thread::Builder::new().name("zblade-warm".into()).spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            answer(stream, &handle);
        }
    })?;
    Ok(WarmServer { socket, _lock: lock })
}

/// Reads one request from `stream`, writes one answer.
fn answer(stream: UnixStream, handle: &impl Fn(WarmRequest) -> Result<WarmAnswer, String>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let Ok(mut writer) = stream.try_clone() else { return };
    let mut line = String::new();
    let read = BufReader::new(stream.take(MAX_REQUEST)).read_line(&mut line);
    let outcome = match read {
        Ok(_) if line.ends_with('\n') => match serde_json::from_str::<WarmRequest>(&line) {
            Ok(request) => handle(request),
            Err(e) => Err(format!("bad request: {e}")),
        },
        _ => Err("the request was too long, cut short or not UTF-8".to_string()),
    };
    let mut out = serde_json::to_vec(&outcome).unwrap_or_default();
    out.push(b'\n');
    let _ = writer.write_all(&out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use zblade_context::{Format, Tier};

    /// The front door (zblade-cli's `front.rs`) writes its requests with zblade-warm's own
    /// types, not the engine's: the engine must read them as the requests they stand for.
    #[test]
    fn the_front_doors_requests_are_read_as_context_requests() {
        let prompt = zblade_warm::Prompt {
            query: "why bm25",
            budget: Some(800),
        };
        let expected = ContextRequest {
            budget: Some(800),
            ..ContextRequest::new("why bm25")
        };
        let read = |value| serde_json::from_value::<WarmRequest>(value).unwrap();
        let WarmRequest::Context(plain) = read(serde_json::to_value(&prompt).unwrap()) else {
            panic!("not read as a context request");
        };
        assert_eq!(format!("{plain:?}"), format!("{expected:?}"));
        let whole = zblade_warm::Whole { whole: prompt.clone() };
        let WarmRequest::Whole { whole } = read(serde_json::to_value(&whole).unwrap()) else {
            panic!("not read as a request for the whole result");
        };
        assert_eq!(format!("{whole:?}"), format!("{expected:?}"));
        let no_budget = zblade_warm::Prompt { budget: None, ..prompt };
        let WarmRequest::Context(plain) = read(serde_json::to_value(&no_budget).unwrap()) else {
            panic!("not read as a context request");
        };
        assert_eq!(format!("{plain:?}"), format!("{:?}", ContextRequest::new("why bm25")));
    }

    #[test]
    fn a_request_is_answered_over_the_socket_and_garbage_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let server = serve(root.path(), |request| {
            let WarmRequest::Context(request) = request else {
                return Err("not a context request".into());
            };
            Ok(WarmAnswer {
                text: format!("packed for {}", request.query),
                entries: 1,
                notices: Vec::new(),
                nothing_relevant: false,
                result: None,
                receipt: None,
                prompt_hook: false,
            })
        })
        .unwrap();
        let mode = std::fs::metadata(server.socket()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let request = ContextRequest {
            budget: Some(500),
            format: Format::Xml,
            tier: Tier::Balanced,
            ..ContextRequest::new("refresh tokens")
        };
        let answer = ask(root.path(), &request, Duration::from_secs(5)).unwrap().unwrap();
        assert_eq!(answer.text, "packed for refresh tokens");
        // A point-of-action question reaches the handler as one, not as a context request.
        let action = ActionRequest {
            file: "src/a.rs".into(),
            lines: Some((1, 2)),
            budget: 400,
        };
        let refused = ask_action(root.path(), action, Duration::from_secs(5)).unwrap();
        assert_eq!(refused.unwrap_err(), "not a context request");
        assert!(
            serve(root.path(), |_| Err("x".into())).is_err(),
            "a second engine took the socket"
        );
        assert!(engine_starting_or_running(root.path()));

        let mut raw = UnixStream::connect(server.socket()).unwrap();
        raw.write_all(b"{not json}\n").unwrap();
        let mut reply = String::new();
        BufReader::new(raw).read_line(&mut reply).unwrap();
        assert!(reply.contains("bad request"), "{reply}");

        let socket = server.socket().to_path_buf();
        drop(server);
        assert!(!socket.exists());
        assert!(
            !engine_starting_or_running(root.path()),
            "the lock went with the engine"
        );
        // A socket left by an engine that died does not stop the next one.
        std::fs::write(&socket, b"").unwrap();
        let again = serve(root.path(), |_| Err("x".into())).unwrap();
        drop(again);
        assert!(ask(root.path(), &request, Duration::from_secs(1)).is_none());
    }
}

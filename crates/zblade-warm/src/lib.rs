//! The warm engine's socket, seen from the client: where a project's engine (the desktop app
//! or `zblade serve`) listens, and how a short-lived process asks it one question.
//!
//! It is its own crate so that the command-line front door (`zblade`, crates/zblade-cli's
//! `front.rs`) can ask without linking the engine: a program holding LanceDB, DataFusion and
//! ONNX Runtime spends 10–15 ms just being loaded (the dynamic loader writes ~2,400 pages of
//! relocations), which is most of a warm prompt hook. The engine side — answering, the lock
//! that lets only one process serve a project — is `zblade_engine::warm`, which re-exports
//! what is here.
//!
//! One socket per project, named by a hash of the project's canonical root, in a folder only
//! this user can enter (`$XDG_RUNTIME_DIR/zblade-UID`, else the temporary folder): the folder
//! is created 0700 and refused when it is anyone else's or open to others. A request is one
//! JSON line (at most [`MAX_REQUEST`] bytes), the answer one JSON line: `Ok(WarmAnswer)` or
//! `Err(message)`.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The most a request may hold.
pub const MAX_REQUEST: u64 = 256 * 1024;

/// The most an answer may hold (a pack is a few tens of KB; `--json` adds its receipt).
const MAX_ANSWER: u64 = 64 * 1024 * 1024;

/// A warm engine's answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WarmAnswer {
    /// The rendered pack (empty when nothing was packed).
    pub text: String,
    /// Entries packed.
    pub entries: usize,
    /// Notices for the user (a mode that could not run, a cut query).
    pub notices: Vec<String>,
    /// True when the relevance gate closed and nothing but the instructions is left: callers
    /// that ride along with a prompt (the hook) then add nothing.
    #[serde(default)]
    pub nothing_relevant: bool,
    /// The whole result as `zblade context --json` prints it (pretty JSON text, passed on
    /// verbatim: parsed and printed again, a float could come back one digit off): only for a
    /// request for the whole result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// The receipt's lines: only for a request for the whole result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<String>,
    /// True when this answers a prompt hook's event (`{"prompt_hook": …}`). An engine from
    /// before that request (the app still running after an upgrade) reads the event as a
    /// context request with an empty query and packs the instructions alone: its answer is
    /// not the hook's, and [`ask_prompt_hook`] treats it as no answer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prompt_hook: bool,
}

/// A context request with the query and the budget only, every other choice left to the
/// engine: what the front door asks. It is a subset of the engine's `ContextRequest` on the
/// wire (whose fields all have defaults); a test in zblade-engine reads it as one.
#[derive(Debug, Clone, Serialize)]
pub struct Prompt<'a> {
    /// What the user asks.
    pub query: &'a str,
    /// Token budget (`None`: the project's setting).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<usize>,
}

/// The same asked for the whole result (`zblade context --json`).
#[derive(Debug, Clone, Serialize)]
pub struct Whole<'a> {
    /// The request.
    pub whole: Prompt<'a>,
}

/// The most of a hook's event read from stdin, by the front door and the full program alike.
pub const MAX_EVENT_BYTES: u64 = 1024 * 1024;

/// A prompt hook's event as the warm engine is asked to answer it: what an agent's
/// `UserPromptSubmit` (Gemini CLI's `BeforeAgent`) sends on stdin, the fields zblade reads.
/// The engine answers with the hook's whole output (`zblade_engine::prompt_hook`), so the
/// front door and the full program print the same thing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptEvent {
    /// The agent that runs the hook (`--agent`): its answer's format.
    pub agent: String,
    /// What the user asked (empty when the event names none).
    pub prompt: String,
    /// The agent's session, whose point-of-action answers a new prompt makes stale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The event's own name (`UserPromptSubmit`, `BeforeAgent`), which decides whether the
    /// agent reads plain text or JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook_event_name: Option<String>,
}

impl PromptEvent {
    /// The fields of `event` (the agent's JSON) for `agent`; anything that is not a string is
    /// left out.
    pub fn from_event(event: &serde_json::Value, agent: &str) -> PromptEvent {
        let text = |name: &str| event.get(name).and_then(serde_json::Value::as_str).map(str::to_string);
        PromptEvent {
            agent: agent.to_string(),
            prompt: text("prompt").unwrap_or_default(),
            session_id: text("session_id"),
            hook_event_name: text("hook_event_name"),
        }
    }
}

/// The request for a prompt hook's answer: `{"prompt_hook": {…}}`.
#[derive(Debug, Clone, Serialize)]
pub struct PromptHook<'a> {
    /// The event.
    pub prompt_hook: &'a PromptEvent,
}

/// The socket of the project at `root`, in this user's private folder; `None` when no such
/// folder can be had safely.
pub fn socket_path(root: &Path) -> Option<PathBuf> {
    let root = root.canonicalize().ok()?;
    let uid = std::fs::metadata("/proc/self").map(|m| m.uid()).ok().or_else(|| {
        std::env::var_os("HOME")
            .and_then(|home| std::fs::metadata(home).ok())
            .map(|m| m.uid())
    })?;
    let base = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|dir| dir.is_dir())
        .unwrap_or_else(std::env::temp_dir);
    let dir = base.join(format!("zblade-{uid}"));
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(_) => return None,
    }
    // Someone else's folder, or one others can enter, could hold a socket that impersonates
    // the engine: not used.
    let meta = std::fs::symlink_metadata(&dir).ok()?;
    if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o077 != 0 {
        return None;
    }
    let hash = xxhash_rust::xxh3::xxh3_64(root.as_os_str().as_encoded_bytes());
    Some(dir.join(format!("{hash:016x}.sock")))
}

/// Asks the warm engine of the project at `root` one question; `None` when none answers
/// within `timeout` (no engine, a stale socket, an answer that is not one), and the caller
/// then does the work itself. `Some(Err)` is the engine's own error for the request.
pub fn ask(root: &Path, request: &impl Serialize, timeout: Duration) -> Option<Result<WarmAnswer, String>> {
    let socket = socket_path(root)?;
    let mut stream = UnixStream::connect(&socket).ok()?;
    stream.set_read_timeout(Some(timeout)).ok()?;
    stream.set_write_timeout(Some(timeout)).ok()?;
    let mut line = serde_json::to_vec(request).ok()?;
    line.push(b'\n');
    stream.write_all(&line).ok()?;
    let mut answer = String::new();
    BufReader::new(stream.take(MAX_ANSWER)).read_line(&mut answer).ok()?;
    serde_json::from_str::<Result<WarmAnswer, String>>(&answer).ok()
}

/// Asks the warm engine of the project at `root` for a prompt hook's answer to `event`; `None`
/// as for [`ask`], and also when the engine that answered does not know the request (its
/// answer is not a hook's: see [`WarmAnswer::prompt_hook`]), so the caller answers it itself.
pub fn ask_prompt_hook(root: &Path, event: &PromptEvent, timeout: Duration) -> Option<Result<WarmAnswer, String>> {
    match ask(root, &PromptHook { prompt_hook: event }, timeout)? {
        Ok(answer) if !answer.prompt_hook => None,
        answered => Some(answered),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::net::UnixListener;

    use super::*;

    #[test]
    fn the_socket_is_named_by_the_canonical_root_in_a_private_folder() {
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir(project.path().join("sub")).unwrap();
        let direct = socket_path(project.path()).unwrap();
        // The same project through a detour names the same socket.
        assert_eq!(socket_path(&project.path().join("sub/..")).unwrap(), direct);
        let folder = direct.parent().unwrap();
        assert_eq!(std::fs::metadata(folder).unwrap().mode() & 0o077, 0);
        let other = tempfile::tempdir().unwrap();
        assert_ne!(socket_path(other.path()).unwrap(), direct);
        assert!(socket_path(&project.path().join("missing")).is_none());
    }

    #[test]
    fn an_answer_comes_back_and_anything_else_means_no_engine() {
        let project = tempfile::tempdir().unwrap();
        // Nobody listening.
        assert!(
            ask(
                project.path(),
                &Prompt {
                    query: "q",
                    budget: None
                },
                Duration::from_secs(2)
            )
            .is_none()
        );
        let socket = socket_path(project.path()).unwrap();
        let _ = std::fs::remove_file(&socket);
        let listener = UnixListener::bind(&socket).unwrap();
        let server = std::thread::spawn(move || {
            let mut seen = Vec::new();
            for reply in [
                r#"{"Ok":{"text":"pack","entries":1,"notices":["n"]}}"#,
                r#"{"Err":"the engine's own error"}"#,
                "not json",
            ] {
                let (stream, _) = listener.accept().unwrap();
                let mut line = String::new();
                BufReader::new(stream.try_clone().unwrap())
                    .read_line(&mut line)
                    .unwrap();
                seen.push(line);
                writeln!(&stream, "{reply}").unwrap();
            }
            seen
        });
        let whole = Whole {
            whole: Prompt {
                query: "why bm25",
                budget: Some(800),
            },
        };
        let timeout = Duration::from_secs(5);
        let answer = ask(project.path(), &whole, timeout).unwrap().unwrap();
        assert_eq!((answer.text.as_str(), answer.entries), ("pack", 1));
        assert_eq!(answer.notices, ["n"]);
        assert_eq!(
            ask(project.path(), &whole, timeout).unwrap().unwrap_err(),
            "the engine's own error"
        );
        assert!(ask(project.path(), &whole, timeout).is_none(), "garbage is no answer");
        let seen = server.join().unwrap();
        assert_eq!(seen[0], "{\"whole\":{\"query\":\"why bm25\",\"budget\":800}}\n");
        std::fs::remove_file(&socket).unwrap();
    }

    #[test]
    fn a_prompt_hook_answered_by_an_engine_that_does_not_know_the_request_is_no_answer() {
        let project = tempfile::tempdir().unwrap();
        let socket = socket_path(project.path()).unwrap();
        let _ = std::fs::remove_file(&socket);
        let listener = UnixListener::bind(&socket).unwrap();
        let server = std::thread::spawn(move || {
            for reply in [
                // An engine from before `prompt_hook`: the event read as an empty context
                // request, the instructions packed alone.
                r#"{"Ok":{"text":"<instructions/>","entries":1,"notices":[]}}"#,
                // One that knows it: the hook's own answer, and its errors.
                r#"{"Ok":{"text":"the hook's answer","entries":3,"notices":[],"prompt_hook":true}}"#,
                r#"{"Err":"unknown agent \"vim\""}"#,
            ] {
                let (stream, _) = listener.accept().unwrap();
                let mut line = String::new();
                BufReader::new(stream.try_clone().unwrap())
                    .read_line(&mut line)
                    .unwrap();
                writeln!(&stream, "{reply}").unwrap();
            }
        });
        let event = PromptEvent::from_event(&serde_json::json!({"prompt": "why bm25"}), "claude");
        let timeout = Duration::from_secs(5);
        assert!(ask_prompt_hook(project.path(), &event, timeout).is_none());
        let answer = ask_prompt_hook(project.path(), &event, timeout).unwrap().unwrap();
        assert_eq!((answer.text.as_str(), answer.entries), ("the hook's answer", 3));
        assert_eq!(
            ask_prompt_hook(project.path(), &event, timeout).unwrap().unwrap_err(),
            "unknown agent \"vim\""
        );
        server.join().unwrap();
        std::fs::remove_file(&socket).unwrap();
    }
}

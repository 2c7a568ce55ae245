//! What the newer agents' readers share: a [`Builder`] that collects one session's turns, tool
//! calls and their results (matched by call id, in whatever order they arrive), and
//! [`tool_touches`], which turns a tool call's arguments into the files it read or wrote.
//!
//! Agents name the same things differently (`file_path`, `filePath`, `path`, `target_file`,
//! `TargetFile`; `Edit`, `replace`, `str_replace`, `edit_file`, `write_file`), so the touch rules
//! look at argument names and at words in the tool's name, not at one agent's list of tools.

use std::collections::HashMap;
use std::path::Path;

use chrono::{DateTime, TimeZone, Utc};
use serde_json::Value;
use zblade_core::{Message, Role, ToolCall};

use crate::patch::{apply_patch_touches, numbered_listing};
use crate::{Cursor, FileRead, Session, SessionContext, Source, Touch, TouchKind, Turn, trim};

/// One session being read: its turns, and where each tool call is so a later result finds it.
pub(crate) struct Builder {
    /// The session so far.
    pub session: Session,
    /// Call id → (turn, call) of every call read.
    calls: HashMap<String, (usize, usize)>,
    /// Call id → the file a read-like call named, so its result becomes the lines it read.
    reads: HashMap<String, String>,
}

impl Builder {
    pub(crate) fn new(source: Source, id: &str, path: &Path) -> Builder {
        Builder {
            session: Session::new(source, id, path),
            calls: HashMap::new(),
            reads: HashMap::new(),
        }
    }

    /// Adds a message; `raw_id` is the agent's record id (or a line number), made into a stable
    /// message id. An empty message is kept only if calls follow (see [`Builder::call`]).
    /// Returns the turn's index.
    pub(crate) fn message(
        &mut self,
        role: Role,
        text: &str,
        raw_id: &str,
        at: Option<DateTime<Utc>>,
        model: Option<&str>,
    ) -> usize {
        let mut message = Message::new(role, text.trim().to_string());
        message.id = crate::message_id(self.session.source, raw_id);
        message.timestamp = at.or(self.session.started);
        message.model = model.filter(|m| !m.is_empty()).map(str::to_string);
        self.session.turns.push(Turn {
            message,
            touches: Vec::new(),
        });
        self.session.turns.len() - 1
    }

    /// The last turn when it is the assistant's, else a new empty assistant turn (agents that
    /// record a call as its own record, after or without text).
    pub(crate) fn assistant_turn(&mut self, raw_id: &str, at: Option<DateTime<Utc>>) -> usize {
        match self.session.turns.last() {
            Some(turn) if turn.message.role == Role::Assistant => self.session.turns.len() - 1,
            _ => self.message(Role::Assistant, "", raw_id, at, None),
        }
    }

    /// Adds a tool call to turn `turn`, with the files its arguments name.
    pub(crate) fn call(&mut self, turn: usize, id: &str, name: &str, arguments: Value) {
        let touches = tool_touches(name, &arguments);
        if is_read(name)
            && let Some(path) = path_argument(&arguments)
        {
            self.reads.insert(id.to_string(), path.to_string());
        }
        let turn_ref = &mut self.session.turns[turn];
        turn_ref.touches.extend(touches);
        turn_ref.message.tool_calls.push(ToolCall::new(
            id.to_string(),
            name.to_string(),
            trim::arguments(arguments),
        ));
        if !id.is_empty() {
            self.calls
                .insert(id.to_string(), (turn, turn_ref.message.tool_calls.len() - 1));
        }
    }

    /// Attaches a result to the call `id`; a read's result becomes the lines it read. Returns
    /// false when no call of that id was read (the caller counts it as skipped).
    pub(crate) fn result(&mut self, id: &str, text: &str, is_error: bool) -> bool {
        let Some(&(turn, call)) = self.calls.get(id) else {
            return false;
        };
        let turn = &mut self.session.turns[turn];
        turn.message.tool_calls[call].result = Some(trim::result(text, is_error));
        if !is_error
            && let Some(path) = self.reads.remove(id)
            && !text.trim().is_empty()
        {
            let (start, body) = numbered_listing(text).unwrap_or((1, text.to_string()));
            let count = body.lines().count() as u32;
            turn.touches.push(Touch {
                path,
                lines: (count > 0 && start > 1).then(|| [start, start + count - 1]),
                text: Some(body),
                kind: TouchKind::Read,
            });
        }
        true
    }

    /// Ends an incremental read: the session takes what its records said (id, working
    /// directory, start), the cursor keeps that for the next read (which will not see those
    /// records again), and the session is handed over as [`Builder::finish`] does.
    pub(crate) fn finish_resumable(mut self, context: SessionContext, next: Cursor, read: &mut FileRead) {
        self.session.id.clone_from(&context.id);
        self.session.cwd.clone_from(&context.cwd);
        self.session.started = context.started.or(self.session.started);
        read.cursor = Cursor {
            last_record: Some(format!("L{}", next.line)),
            session: Some(context),
            ..next
        };
        self.finish(read);
    }

    /// Ends the read: drops turns with neither text nor calls, and hands the session over when
    /// anything is left.
    pub(crate) fn finish(mut self, read: &mut FileRead) {
        self.session
            .turns
            .retain(|t| !t.message.content.is_empty() || !t.message.tool_calls.is_empty());
        if !self.session.turns.is_empty() {
            read.sessions.push(self.session);
        }
    }
}

/// Content blocks in the shapes agents borrow from the Anthropic and OpenAI APIs and the Vercel
/// AI SDK: the text of `text` blocks (thinking left out), and each call as (id, name, arguments).
pub(crate) struct Blocks {
    pub text: String,
    pub calls: Vec<(String, String, Value)>,
    pub results: Vec<(String, String, bool)>,
}

/// Reads a `content` value: a string, or a list of blocks.
pub(crate) fn blocks(content: &Value) -> Blocks {
    let mut out = Blocks {
        text: String::new(),
        calls: Vec::new(),
        results: Vec::new(),
    };
    let push_text = |out: &mut Blocks, text: &str| {
        if !text.trim().is_empty() {
            if !out.text.is_empty() {
                out.text.push('\n');
            }
            out.text.push_str(text.trim());
        }
    };
    match content {
        Value::String(s) => push_text(&mut out, s),
        Value::Array(items) => {
            for block in items {
                let kind = block.get("type").and_then(Value::as_str).unwrap_or("text");
                let string = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or("");
                match kind {
                    "text" => push_text(&mut out, string("text")),
                    "tool_use" | "toolCall" | "tool-call" | "function_call" => {
                        let id = [string("id"), string("toolCallId"), string("call_id")]
                            .into_iter()
                            .find(|s| !s.is_empty())
                            .unwrap_or("");
                        let name = [string("name"), string("toolName")]
                            .into_iter()
                            .find(|s| !s.is_empty())
                            .unwrap_or("tool");
                        let args = ["input", "arguments", "args"]
                            .iter()
                            .find_map(|k| block.get(*k))
                            .cloned()
                            .unwrap_or(Value::Null);
                        let args = match args {
                            Value::String(s) => trim::arguments_from_json_string(&s),
                            other => other,
                        };
                        out.calls.push((id.to_string(), name.to_string(), args));
                    }
                    "tool_result" | "tool-result" => {
                        let id = [string("tool_use_id"), string("toolCallId")]
                            .into_iter()
                            .find(|s| !s.is_empty())
                            .unwrap_or("");
                        let body = block
                            .get("content")
                            .or_else(|| block.get("output"))
                            .unwrap_or(&Value::Null);
                        let text = match body {
                            Value::Object(_) => body.get("value").map(result_text).unwrap_or_default(),
                            other => result_text(other),
                        };
                        let error = block.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                        out.results.push((id.to_string(), text, error));
                    }
                    // thinking, reasoning, images, and kinds not known: not the conversation's text
                    _ => {}
                }
            }
        }
        _ => {}
    }
    out
}

/// A tool result's text: a string, the text of its blocks, or the JSON of anything else.
pub(crate) fn result_text(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Array(_) => trim::content_text(value).into_owned(),
        other => other
            .get("output")
            .or_else(|| other.get("content"))
            .and_then(Value::as_str)
            .map_or_else(|| other.to_string(), str::to_string),
    }
}

/// A timestamp in any of the forms agents write: RFC 3339 text, or epoch seconds or
/// milliseconds as a number.
pub(crate) fn time(value: Option<&Value>) -> Option<DateTime<Utc>> {
    match value? {
        Value::String(s) => DateTime::parse_from_rfc3339(s).ok().map(|t| t.with_timezone(&Utc)),
        Value::Number(n) => {
            let n = n.as_f64()?;
            // Seconds until the year 5138; milliseconds after.
            let ms = if n < 1e11 { n * 1000.0 } else { n };
            Utc.timestamp_millis_opt(ms as i64).single()
        }
        _ => None,
    }
}

/// True for tools that read a file (their result is its lines).
fn is_read(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ["read", "view", "cat", "open"].iter().any(|w| name.contains(w)) && !name.contains("dir")
}

/// True for tools that write or edit a file.
fn is_write(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ["edit", "write", "replace", "create", "patch", "insert", "update"]
        .iter()
        .any(|w| name.contains(w))
}

/// The file a call names, under any of the argument names agents use. Values some agents quote
/// (`"\"/tmp/a.rs\""`) are unquoted; `file://` URIs become paths.
pub fn path_argument(arguments: &Value) -> Option<&str> {
    const KEYS: &[&str] = &[
        "file_path",
        "filePath",
        "path",
        "target_file",
        "TargetFile",
        "AbsolutePath",
        "absolute_path",
        "notebook_path",
        "filename",
    ];
    let raw = KEYS.iter().find_map(|k| arguments.get(*k)?.as_str())?;
    let raw = raw.trim().trim_matches('"');
    let raw = raw.strip_prefix("file://").unwrap_or(raw);
    (!raw.is_empty()).then_some(raw)
}

/// The files a tool call edited or wrote, from its arguments: the new text of each edit (the
/// engine finds those lines in the file), or a patch's hunks.
pub(crate) fn tool_touches(name: &str, arguments: &Value) -> Vec<Touch> {
    for key in ["patch", "input", "patchText"] {
        if let Some(patch) = arguments.get(key).and_then(Value::as_str)
            && patch.contains("*** Begin Patch")
        {
            return apply_patch_touches(patch);
        }
    }
    if !is_write(name) {
        return Vec::new();
    }
    let Some(path) = path_argument(arguments) else {
        return Vec::new();
    };
    let edit = |text: &str| Touch {
        path: path.to_string(),
        lines: None,
        text: Some(text.to_string()),
        kind: TouchKind::Edit,
    };
    let mut touches: Vec<Touch> = [
        "new_string",
        "newString",
        "new_str",
        "ReplacementContent",
        "CodeContent",
    ]
    .iter()
    .chain(["content", "contents", "file_text", "text"].iter())
    .find_map(|k| arguments.get(*k)?.as_str())
    .filter(|t| !t.trim().is_empty())
    .map(edit)
    .into_iter()
    .collect();
    for list in ["edits", "ReplacementChunks"] {
        for item in arguments.get(list).and_then(Value::as_array).into_iter().flatten() {
            let text = ["new_string", "newString", "ReplacementContent"]
                .iter()
                .find_map(|k| item.get(*k)?.as_str());
            touches.extend(text.filter(|t| !t.trim().is_empty()).map(edit));
        }
    }
    touches
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn edits_and_writes_under_every_agents_names_become_touches() {
        let cases = [
            (
                "replace",
                json!({"file_path": "/p/a.rs", "old_string": "x", "new_string": "fn a() {}"}),
            ),
            (
                "StrReplace",
                json!({"path": "/p/a.rs", "old_string": "x", "new_string": "fn a() {}"}),
            ),
            ("edit_file", json!({"path": "/p/a.rs", "content": "fn a() {}"})),
            (
                "write_file",
                json!({"TargetFile": "\"/p/a.rs\"", "CodeContent": "fn a() {}"}),
            ),
            (
                "edit",
                json!({"filePath": "/p/a.rs", "oldString": "x", "newString": "fn a() {}"}),
            ),
        ];
        for (name, args) in cases {
            let touches = tool_touches(name, &args);
            assert_eq!(touches.len(), 1, "{name}: {touches:?}");
            assert_eq!(touches[0].path, "/p/a.rs", "{name}");
            assert_eq!(touches[0].text.as_deref(), Some("fn a() {}"), "{name}");
            assert_eq!(touches[0].kind, TouchKind::Edit);
        }
        assert!(tool_touches("run_shell_command", &json!({"command": "cat a.rs"})).is_empty());
        assert!(tool_touches("read_file", &json!({"file_path": "a.rs"})).is_empty());
    }

    #[test]
    fn a_read_result_becomes_the_lines_read() {
        let mut b = Builder::new(Source::GEMINI, "s", Path::new("/tmp/s.json"));
        let turn = b.message(Role::Assistant, "", "m1", None, None);
        b.call(turn, "c1", "read_file", json!({"file_path": "src/a.rs"}));
        assert!(b.result("c1", "fn a() {}\n", false));
        assert!(!b.result("nope", "x", false), "a result without its call is refused");
        let touch = &b.session.turns[0].touches[0];
        assert_eq!((touch.path.as_str(), touch.kind), ("src/a.rs", TouchKind::Read));
        assert_eq!(touch.text.as_deref(), Some("fn a() {}\n"));
    }

    #[test]
    fn times_in_seconds_milliseconds_and_text_agree() {
        let want = DateTime::parse_from_rfc3339("2026-05-12T01:02:27Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(time(Some(&json!("2026-05-12T01:02:27Z"))), Some(want));
        assert_eq!(time(Some(&json!(want.timestamp()))), Some(want));
        assert_eq!(time(Some(&json!(want.timestamp_millis()))), Some(want));
        assert_eq!(time(Some(&json!("yesterday"))), None);
    }
}

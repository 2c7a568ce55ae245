//! Claude Code: `~/.claude/projects/<encoded cwd>/<sessionId>.jsonl`, one JSON object per line.
//!
//! `user` lines hold a prompt or tool results; `assistant` lines hold one content block each,
//! and the blocks of one API response share `message.id`, so they are merged into one message.
//! Tool results are paired with their `tool_use` by id; Read results (`toolUseResult.file`)
//! give the lines read, Edit/Write inputs the code written. Every other line type is skipped
//! and counted; an unknown one is never an error.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde_json::Value;
use zblade_core::{Message, Role, ToolCall};

use crate::agent::{Agent, HookEvent, HooksConfig, McpConfig, files_named, jsonl_cwd};
use crate::detect::Places;
use crate::patch::{citations, numbered_listing};
use crate::{
    Cursor, FileRead, LateResult, ReadError, Session, SessionContext, Source, Touch, TouchKind, Turn, jsonl, trim,
};

/// Line types that are not messages, skipped without comment.
const NOT_MESSAGES: &[&str] = &[
    "system",
    "file-history-snapshot",
    "progress",
    "queue-operation",
    "attachment",
    "permission-mode",
    "last-prompt",
];

struct State {
    session: Session,
    /// message id → index in `session.turns`, for merging the lines of one response.
    by_message: HashMap<String, usize>,
    /// tool call id → (turn, call) for pairing results.
    calls: HashMap<String, (usize, usize)>,
    context: SessionContext,
    /// Whether `context.id` came from a line (or an earlier read) rather than the file name.
    id_known: bool,
    agent_file: bool,
}

pub(crate) fn read(path: &Path, cursor: &Cursor) -> Result<FileRead, ReadError> {
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("session")
        .to_string();
    let agent_file = stem.starts_with("agent-");
    let context = cursor.session.clone().unwrap_or_else(|| SessionContext {
        id: stem.clone(),
        ..SessionContext::default()
    });
    let mut state = State {
        session: Session::new(Source::CLAUDE_CODE, &context.id, path),
        by_message: HashMap::new(),
        calls: HashMap::new(),
        id_known: cursor.session.is_some(),
        context,
        agent_file,
    };
    let mut read = FileRead::default();
    let mut last_record = cursor.last_record.clone();
    let next = jsonl::for_each_line(path, cursor, &mut read, |line, value, read| {
        if let Some(uuid) = value.get("uuid").and_then(Value::as_str) {
            last_record = Some(uuid.to_string());
        }
        state.line(path, line, &value, read, &stem);
    })?;
    let State {
        mut session, context, ..
    } = state;
    session.id.clone_from(&context.id);
    session.cwd.clone_from(&context.cwd);
    session.started = context.started;
    read.cursor = Cursor {
        last_record,
        session: Some(context),
        ..next
    };
    if !session.turns.is_empty() || !session.late_results.is_empty() || session.title.is_some() {
        read.sessions.push(session);
    }
    Ok(read)
}

fn timestamp(value: &Value) -> Option<DateTime<Utc>> {
    value
        .get("timestamp")
        .and_then(Value::as_str)
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc))
}

impl State {
    fn line(&mut self, path: &Path, line: u64, value: &Value, read: &mut FileRead, stem: &str) {
        let kind = value.get("type").and_then(Value::as_str).unwrap_or("");
        if let Some(sid) = value.get("sessionId").and_then(Value::as_str)
            && !self.id_known
        {
            self.id_known = true;
            // Sub-agent files carry their parent's session id; keep them apart from it.
            self.context.id = if self.agent_file {
                format!("{sid}-{stem}")
            } else {
                sid.to_string()
            };
        }
        if let Some(cwd) = value.get("cwd").and_then(Value::as_str) {
            self.context.cwd = Some(cwd.into());
        }
        let at = timestamp(value);
        if let Some(at) = at {
            self.context.started.get_or_insert(at);
        }
        match kind {
            "user" | "assistant" if value.get("isSidechain") == Some(&Value::Bool(true)) && !self.agent_file => {
                read.skip("sub-agent line (imported from its own file when it has one)");
            }
            "user" => self.user(value, at, line),
            "assistant" => self.assistant(value, at, line),
            "summary" => {
                if let Some(summary) = value.get("summary").and_then(Value::as_str) {
                    self.session.title = Some(summary.trim().to_string());
                }
            }
            k if NOT_MESSAGES.contains(&k) => read.skip(format!("claude-code `{k}` line")),
            "" => read.warn(path, Some(line), "line has no `type`; skipped"),
            other => read.skip(format!("unknown claude-code line type `{other}`")),
        }
    }

    fn user(&mut self, value: &Value, at: Option<DateTime<Utc>>, line: u64) {
        let Some(message) = value.get("message") else { return };
        let content = message.get("content").unwrap_or(&Value::Null);
        let mut texts = Vec::new();
        match content {
            Value::String(s) => texts.push(s.clone()),
            Value::Array(blocks) => {
                for block in blocks {
                    match block.get("type").and_then(Value::as_str) {
                        Some("text") => texts.extend(block.get("text").and_then(Value::as_str).map(str::to_string)),
                        Some("tool_result") => self.tool_result(block, value.get("toolUseResult")),
                        Some("image") => texts.push("[image]".into()),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        let text = clean_command(&texts.join("\n"));
        if text.trim().is_empty() {
            return;
        }
        let is_meta = value.get("isMeta") == Some(&Value::Bool(true)) || text.starts_with("Caveat: ");
        let role = if is_meta { Role::System } else { Role::User };
        let id = value
            .get("uuid")
            .and_then(Value::as_str)
            .map_or_else(|| format!("L{line}"), str::to_string);
        let mut msg = Message::new(role, text);
        msg.id = crate::message_id(Source::CLAUDE_CODE, &id);
        msg.timestamp = at;
        self.session.turns.push(Turn {
            message: msg,
            touches: Vec::new(),
        });
    }

    fn assistant(&mut self, value: &Value, at: Option<DateTime<Utc>>, line: u64) {
        let Some(message) = value.get("message") else { return };
        let raw_id = message
            .get("id")
            .and_then(Value::as_str)
            .or_else(|| value.get("uuid").and_then(Value::as_str))
            .map_or_else(|| format!("L{line}"), str::to_string);
        let id = crate::message_id(Source::CLAUDE_CODE, &raw_id);
        let index = match self.by_message.get(&id) {
            Some(&i) => i,
            None => {
                let mut msg = Message::new(Role::Assistant, "");
                msg.id = id.clone();
                msg.timestamp = at;
                msg.model = message.get("model").and_then(Value::as_str).map(str::to_string);
                self.session.turns.push(Turn {
                    message: msg,
                    touches: Vec::new(),
                });
                self.by_message.insert(id, self.session.turns.len() - 1);
                self.session.turns.len() - 1
            }
        };
        let Some(blocks) = message.get("content").and_then(Value::as_array) else {
            if let Some(text) = message.get("content").and_then(Value::as_str) {
                append(&mut self.session.turns[index].message.content, text);
            }
            return;
        };
        for block in blocks {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => {
                    let text = block.get("text").and_then(Value::as_str).unwrap_or("");
                    let turn = &mut self.session.turns[index];
                    append(&mut turn.message.content, text);
                    turn.touches.extend(citations(text));
                }
                Some("tool_use") => {
                    let call_id = block.get("id").and_then(Value::as_str).unwrap_or("").to_string();
                    let name = block.get("name").and_then(Value::as_str).unwrap_or("tool").to_string();
                    let input = block.get("input").cloned().unwrap_or(Value::Null);
                    let turn = &mut self.session.turns[index];
                    turn.touches.extend(input_touches(&name, &input));
                    turn.message
                        .tool_calls
                        .push(ToolCall::new(call_id.clone(), name, trim::arguments(input)));
                    self.calls.insert(call_id, (index, turn.message.tool_calls.len() - 1));
                }
                _ => {} // thinking blocks are the model's scratchpad, not the conversation
            }
        }
    }

    fn tool_result(&mut self, block: &Value, structured: Option<&Value>) {
        let call_id = block
            .get("tool_use_id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let text = trim::content_text(block.get("content").unwrap_or(&Value::Null));
        let is_error = block.get("is_error") == Some(&Value::Bool(true));
        let result = trim::result(&text, is_error);
        let touches = structured.map(result_touches).unwrap_or_default();
        match self.calls.get(&call_id) {
            Some(&(turn, call)) => {
                let turn = &mut self.session.turns[turn];
                turn.message.tool_calls[call].result = Some(result);
                turn.touches.extend(touches);
            }
            None => self.session.late_results.push(LateResult {
                call_id,
                result,
                touches,
            }),
        }
    }
}

fn append(content: &mut String, text: &str) {
    if text.trim().is_empty() {
        return;
    }
    if !content.is_empty() {
        content.push_str("\n\n");
    }
    content.push_str(text.trim_end());
}

/// A slash command as the user typed it (`/init args`) instead of its XML wrapping.
fn clean_command(text: &str) -> String {
    let tag = |name: &str| {
        let open = format!("<{name}>");
        let close = format!("</{name}>");
        let start = text.find(&open)? + open.len();
        let end = text[start..].find(&close)? + start;
        Some(text[start..end].trim().to_string())
    };
    match tag("command-name") {
        Some(name) => match tag("command-args").filter(|a| !a.is_empty()) {
            Some(args) => format!("{name} {args}"),
            None => name,
        },
        None => text.trim().to_string(),
    }
}

/// Files an Edit/MultiEdit/Write call wrote, from its input.
fn input_touches(name: &str, input: &Value) -> Vec<Touch> {
    let Some(path) = input
        .get("file_path")
        .or_else(|| input.get("notebook_path"))
        .and_then(Value::as_str)
    else {
        return Vec::new();
    };
    let edit = |text: &str| Touch {
        path: path.to_string(),
        lines: None,
        text: Some(text.to_string()),
        kind: TouchKind::Edit,
    };
    match name {
        "Edit" => input
            .get("new_string")
            .and_then(Value::as_str)
            .map(edit)
            .into_iter()
            .collect(),
        "MultiEdit" => input
            .get("edits")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|e| e.get("new_string").and_then(Value::as_str))
            .map(edit)
            .collect(),
        "Write" => input
            .get("content")
            .and_then(Value::as_str)
            .map(edit)
            .into_iter()
            .collect(),
        _ => Vec::new(),
    }
}

/// Lines a Read returned, from `toolUseResult.file`.
fn result_touches(structured: &Value) -> Vec<Touch> {
    let Some(file) = structured.get("file") else {
        return Vec::new();
    };
    let Some(path) = file.get("filePath").and_then(Value::as_str) else {
        return Vec::new();
    };
    let content = file.get("content").and_then(Value::as_str).unwrap_or("");
    let start = file.get("startLine").and_then(Value::as_u64).unwrap_or(1).max(1) as u32;
    let count = file
        .get("numLines")
        .and_then(Value::as_u64)
        .map_or_else(|| content.lines().count() as u32, |n| n as u32);
    if count == 0 {
        return Vec::new();
    }
    // Content is plain text in recorded sessions; strip numbering if a version adds it.
    let text = numbered_listing(content).map_or_else(|| content.to_string(), |(_, t)| t);
    vec![Touch {
        path: path.to_string(),
        lines: Some([start, start + count - 1]),
        text: Some(text),
        kind: TouchKind::Read,
    }]
}

impl Source {
    /// Anthropic's Claude Code (`~/.claude/projects/*/*.jsonl`).
    pub const CLAUDE_CODE: Source = Source("claude-code");
}

/// Claude Code: one JSON Lines file per session under `$CLAUDE_CONFIG_DIR/projects` (else
/// `~/.claude/projects`), `cwd` on its message lines.
pub(crate) struct ClaudeCode;

impl Agent for ClaudeCode {
    fn source(&self) -> Source {
        Source::CLAUDE_CODE
    }
    fn label(&self) -> &'static str {
        "Claude Code"
    }
    fn id_tag(&self) -> &'static str {
        "cc"
    }
    fn incremental(&self) -> bool {
        true
    }
    fn stores(&self, places: &Places, _project: Option<&Path>) -> Vec<PathBuf> {
        vec![places.claude_dir().join("projects")]
    }
    fn session_files(&self, store: &Path, found: &mut Vec<PathBuf>) {
        files_named(store, |name| name.ends_with(".jsonl"), found);
    }
    fn session_cwd(&self, path: &Path) -> Option<PathBuf> {
        jsonl_cwd(path)
    }
    fn read(&self, path: &Path, cursor: &Cursor) -> Result<FileRead, ReadError> {
        read(path, cursor)
    }
    fn mcp(&self) -> Option<McpConfig> {
        let user_file = |places: &Places| places.home.join(".claude.json");
        Some(McpConfig::json(".mcp.json", "mcpServers", true, user_file, |places| {
            places.home.join(".claude")
        }))
    }
    fn hooks(&self) -> Option<HooksConfig> {
        const EVENTS: &[HookEvent] = &[
            HookEvent::prompt("UserPromptSubmit"),
            HookEvent::stop("Stop"),
            // Before a file is read or edited: what memory holds about those lines.
            HookEvent::file_tool("PreToolUse", "Read|Edit|MultiEdit|Write|NotebookEdit"),
        ];
        Some(HooksConfig {
            project_file: ".claude/settings.json",
            user_file: |places| places.claude_dir().join("settings.json"),
            events: EVENTS,
            timeout_in_ms: false,
            prefers_user_file: false,
        })
    }
}

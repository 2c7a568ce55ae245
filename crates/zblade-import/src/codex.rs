//! Codex CLI: `~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl`. Every line is
//! `{timestamp, type, payload}`. The `response_item` stream is the complete protocol log and
//! is what we import; `event_msg` repeats it for the UI and is skipped. `session_meta` (first
//! line only) names the session and its cwd, `turn_context` the model; both are kept in the
//! cursor so a resumed read knows them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde_json::Value;
use zblade_core::{Message, Role, ToolCall};

use crate::agent::{Agent, McpConfig, McpFormat, files_named, jsonl_cwd};
use crate::detect::Places;
use crate::patch::{apply_patch_touches, citations, sed_reads};
use crate::{Cursor, FileRead, LateResult, ReadError, Session, SessionContext, Source, Touch, Turn, jsonl, trim};

/// Text Codex adds to user messages that the user did not type.
const INJECTED: &[&str] = &[
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<permissions instructions>",
    "<user_shell_command>",
];

pub(crate) fn read(path: &Path, cursor: &Cursor) -> Result<FileRead, ReadError> {
    // `rollout-<time>-<uuid>`: the uuid (36 characters) is the session id, until
    // `session_meta` says so itself.
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("session");
    let id_from_name = stem.get(stem.len().saturating_sub(36)..).unwrap_or(stem).to_string();
    let mut context = cursor.session.clone().unwrap_or_else(|| SessionContext {
        id: id_from_name,
        ..SessionContext::default()
    });
    let mut session = Session::new(Source::CODEX, &context.id, path);
    let mut calls: HashMap<String, (usize, usize)> = HashMap::new();
    let mut read = FileRead::default();
    let next = jsonl::for_each_line(path, cursor, &mut read, |line, value, read| {
        let at = value
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&Utc));
        let payload = value.get("payload").unwrap_or(&Value::Null);
        match value.get("type").and_then(Value::as_str).unwrap_or("") {
            "session_meta" => {
                if let Some(id) = payload.get("id").and_then(Value::as_str) {
                    context.id = id.to_string();
                }
                if let Some(cwd) = payload.get("cwd").and_then(Value::as_str) {
                    context.cwd = Some(cwd.into());
                }
                context.started = context.started.or(at);
            }
            "turn_context" => {
                if let Some(cwd) = payload.get("cwd").and_then(Value::as_str) {
                    context.cwd = Some(cwd.into());
                }
                if let Some(model) = payload.get("model").and_then(Value::as_str) {
                    context.model = Some(model.to_string());
                }
            }
            "response_item" => {
                context.started = context.started.or(at);
                response_item(&mut session, &mut calls, &context, payload, at, line, read);
            }
            "compacted" => {
                let text = payload.get("message").and_then(Value::as_str).unwrap_or("");
                if !text.trim().is_empty() {
                    let mut msg = Message::new(Role::System, format!("Earlier turns, compacted by Codex:\n{text}"));
                    msg.id = crate::message_id(Source::CODEX, &format!("L{line}"));
                    msg.timestamp = at;
                    session.turns.push(Turn {
                        message: msg,
                        touches: Vec::new(),
                    });
                }
            }
            "event_msg" => read.skip("codex `event_msg` (repeats response items)"),
            "" => read.warn(path, Some(line), "line has no `type`; skipped"),
            other => read.skip(format!("unknown codex line type `{other}`")),
        }
    })?;
    session.id.clone_from(&context.id);
    session.cwd.clone_from(&context.cwd);
    session.started = context.started;
    read.cursor = Cursor {
        last_record: Some(format!("L{}", next.line)),
        session: Some(context),
        ..next
    };
    if !session.turns.is_empty() || !session.late_results.is_empty() {
        read.sessions.push(session);
    }
    Ok(read)
}

fn response_item(
    session: &mut Session,
    calls: &mut HashMap<String, (usize, usize)>,
    context: &SessionContext,
    payload: &Value,
    at: Option<DateTime<Utc>>,
    line: u64,
    read: &mut FileRead,
) {
    let id = crate::message_id(Source::CODEX, &format!("L{line}"));
    match payload.get("type").and_then(Value::as_str).unwrap_or("") {
        "message" => {
            let text = trim::content_text(payload.get("content").unwrap_or(&Value::Null));
            if text.trim().is_empty() {
                return;
            }
            let role = match payload.get("role").and_then(Value::as_str) {
                Some("assistant") => Role::Assistant,
                Some("user") if !INJECTED.iter().any(|p| text.trim_start().starts_with(p)) => Role::User,
                _ => Role::System, // developer instructions and injected context
            };
            let mut msg = Message::new(role, text.trim().to_string());
            msg.id = id;
            msg.timestamp = at;
            let mut touches = Vec::new();
            if role == Role::Assistant {
                msg.model.clone_from(&context.model);
                touches = citations(&msg.content);
            }
            session.turns.push(Turn { message: msg, touches });
        }
        kind @ ("function_call" | "custom_tool_call" | "local_shell_call") => {
            let name = payload.get("name").and_then(Value::as_str).unwrap_or(kind).to_string();
            let call_id = payload
                .get("call_id")
                .or_else(|| payload.get("id"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let (arguments, raw) = match payload.get("arguments").and_then(Value::as_str) {
                Some(json) => (trim::arguments_from_json_string(json), json.to_string()),
                None => {
                    let input = payload.get("input").cloned().or_else(|| payload.get("action").cloned());
                    let raw = match &input {
                        Some(Value::String(s)) => s.clone(),
                        Some(v) => v.to_string(),
                        None => String::new(),
                    };
                    (trim::arguments(serde_json::json!({ "input": input })), raw)
                }
            };
            let mut touches = if raw.contains("*** Begin Patch") {
                apply_patch_touches(&raw)
            } else {
                Vec::new()
            };
            touches.extend(sed_reads(&raw.replace("\\\"", "\"")));
            // Attach to the assistant message just before, or open one for the call.
            let index = match session.turns.last() {
                Some(turn) if turn.message.role == Role::Assistant => session.turns.len() - 1,
                _ => {
                    let mut msg = Message::new(Role::Assistant, "");
                    msg.id = id;
                    msg.timestamp = at;
                    msg.model.clone_from(&context.model);
                    session.turns.push(Turn {
                        message: msg,
                        touches: Vec::new(),
                    });
                    session.turns.len() - 1
                }
            };
            let turn = &mut session.turns[index];
            turn.touches.extend(touches);
            turn.message
                .tool_calls
                .push(ToolCall::new(call_id.clone(), name, arguments));
            calls.insert(call_id, (index, turn.message.tool_calls.len() - 1));
        }
        "function_call_output" | "custom_tool_call_output" | "local_shell_call_output" => {
            let call_id = payload.get("call_id").and_then(Value::as_str).unwrap_or("").to_string();
            let (text, is_error) = output_text(payload.get("output").unwrap_or(&Value::Null));
            let result = trim::result(&text, is_error);
            match calls.get(&call_id) {
                Some(&(turn, call)) => session.turns[turn].message.tool_calls[call].result = Some(result),
                None => session.late_results.push(LateResult {
                    call_id,
                    result,
                    touches: Vec::<Touch>::new(),
                }),
            }
        }
        "reasoning" => read.skip("codex reasoning"),
        other => read.skip(format!("codex response item `{other}`")),
    }
}

/// A call's output: old versions wrap it as a JSON string `{"output", "metadata":{exit_code}}`.
fn output_text(output: &Value) -> (String, bool) {
    let raw = match output {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => trim::content_text(other).into_owned(),
    };
    if raw.starts_with('{')
        && let Ok(wrapped) = serde_json::from_str::<Value>(&raw)
        && let Some(inner) = wrapped.get("output").and_then(Value::as_str)
    {
        let exit = wrapped
            .pointer("/metadata/exit_code")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        return (inner.to_string(), exit != 0);
    }
    let failed = raw
        .lines()
        .find_map(|l| l.strip_prefix("Process exited with code "))
        .is_some_and(|code| code.trim() != "0");
    (raw, failed)
}

impl Source {
    /// OpenAI's Codex CLI (`~/.codex/sessions/**/rollout-*.jsonl`).
    pub const CODEX: Source = Source("codex");
}

/// Codex CLI: `rollout-*.jsonl` under `$CODEX_HOME` (else `~/.codex`) `sessions/` and
/// `archived_sessions/`, `session_meta.payload.cwd` in the first lines.
pub(crate) struct Codex;

impl Agent for Codex {
    fn source(&self) -> Source {
        Source::CODEX
    }
    fn label(&self) -> &'static str {
        "Codex CLI"
    }
    fn id_tag(&self) -> &'static str {
        "codex"
    }
    fn incremental(&self) -> bool {
        true
    }
    fn stores(&self, places: &Places, _project: Option<&Path>) -> Vec<PathBuf> {
        let home = places.codex_dir();
        vec![home.join("sessions"), home.join("archived_sessions")]
    }
    fn session_files(&self, store: &Path, found: &mut Vec<PathBuf>) {
        files_named(
            store,
            |name| name.starts_with("rollout-") && name.ends_with(".jsonl"),
            found,
        );
    }
    fn session_cwd(&self, path: &Path) -> Option<PathBuf> {
        jsonl_cwd(path)
    }
    fn read(&self, path: &Path, cursor: &Cursor) -> Result<FileRead, ReadError> {
        read(path, cursor)
    }
    fn mcp(&self) -> Option<McpConfig> {
        Some(McpConfig {
            project_file: ".codex/config.toml",
            user_file: |places| places.codex_dir().join("config.toml"),
            marker: |places| places.codex_dir(),
            format: McpFormat::CodexToml,
            prefers_user_file: true,
        })
    }
}

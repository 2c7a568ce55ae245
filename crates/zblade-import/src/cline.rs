//! Cline (and Roo Code): one folder per task in VS Code's global storage,
//! `…/globalStorage/saoudrizwan.claude-dev/tasks/<taskId>/api_conversation_history.json`, an
//! Anthropic `MessageParam` array with `ts` (epoch milliseconds) and `modelInfo`. Tool results
//! come back as user text blocks that begin `[<tool> for '<path>'] Result:`; they are paired
//! with the earliest call still waiting for one. `<environment_details>` blocks (file lists,
//! open tabs) are context Cline adds, not conversation: their working directory is kept and
//! the rest dropped.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use chrono::{TimeZone, Utc};
use serde_json::Value;
use zblade_core::{Message, Role, ToolCall};

use crate::agent::{Agent, list_dir};
use crate::detect::Places;
use crate::patch::{numbered_listing, search_replace_touches};
use crate::{Cursor, FileRead, ReadError, Session, Source, Touch, TouchKind, Turn, trim};

pub(crate) fn read(path: &Path) -> Result<FileRead, ReadError> {
    let (value, mut read) = crate::read_whole_json(path, "a Cline task history")?;
    let task_id = path
        .parent()
        .and_then(Path::file_name)
        .and_then(|n| n.to_str())
        .unwrap_or("task");
    let mut session = Session::new(Source::CLINE, task_id, path);
    let Some(messages) = value.as_array() else {
        read.warn(path, None, "not a list of messages; nothing to import");
        return Ok(read);
    };
    // Calls waiting for a result: (turn, call, tool name, path argument).
    let mut waiting: VecDeque<(usize, usize, String, Option<String>)> = VecDeque::new();
    for (i, message) in messages.iter().enumerate() {
        let at = message
            .get("ts")
            .and_then(Value::as_i64)
            .and_then(|ms| Utc.timestamp_millis_opt(ms).single());
        if let Some(at) = at {
            session.started.get_or_insert(at);
        }
        let blocks: Vec<Value> = match message.get("content") {
            Some(Value::String(s)) => vec![serde_json::json!({"type": "text", "text": s})],
            Some(Value::Array(blocks)) => blocks.clone(),
            _ => {
                read.warn(path, None, format!("field `[{i}].content`: missing; message skipped"));
                continue;
            }
        };
        let assistant = message.get("role").and_then(Value::as_str) == Some("assistant");
        let mut msg = Message::new(if assistant { Role::Assistant } else { Role::User }, "");
        msg.id = crate::message_id(Source::CLINE, &format!("{task_id}-{i}"));
        msg.timestamp = at;
        msg.model = message
            .pointer("/modelInfo/modelId")
            .and_then(Value::as_str)
            .map(str::to_string);
        let mut texts = Vec::new();
        let mut touches = Vec::new();
        for block in &blocks {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => {
                    let text = block.get("text").and_then(Value::as_str).unwrap_or("");
                    if !assistant && let Some(result) = tool_result_text(text) {
                        if let Some((turn, call, tool, file)) = waiting.pop_front() {
                            let target: &mut Turn = &mut session.turns[turn];
                            target.message.tool_calls[call].result = Some(trim::result(result, false));
                            if tool == "read_file"
                                && let Some(file) = file
                            {
                                let body = numbered_listing(result).map_or_else(|| result.to_string(), |(_, t)| t);
                                target.touches.push(Touch {
                                    path: file,
                                    lines: None,
                                    text: Some(body),
                                    kind: TouchKind::Read,
                                });
                            }
                        }
                        continue;
                    }
                    let cleaned = strip_environment(text, &mut session.cwd);
                    if !cleaned.trim().is_empty() {
                        texts.push(cleaned);
                    }
                }
                Some("tool_use") => {
                    let name = block.get("name").and_then(Value::as_str).unwrap_or("tool").to_string();
                    let input = block.get("input").cloned().unwrap_or(Value::Null);
                    let file = input.get("path").and_then(Value::as_str).map(str::to_string);
                    touches.extend(edit_touches(&name, &input));
                    msg.tool_calls.push(ToolCall::new(
                        block.get("id").and_then(Value::as_str).unwrap_or("").to_string(),
                        name.clone(),
                        trim::arguments(input),
                    ));
                    waiting.push_back((session.turns.len(), msg.tool_calls.len() - 1, name, file));
                }
                Some("tool_result") => {
                    let text = trim::content_text(block.get("content").unwrap_or(&Value::Null));
                    if let Some((turn, call, ..)) = waiting.pop_front() {
                        session.turns[turn].message.tool_calls[call].result = Some(trim::result(&text, false));
                    }
                }
                Some("image") => texts.push("[image]".into()),
                _ => {}
            }
        }
        msg.content = texts.join("\n\n").trim().to_string();
        if msg.content.starts_with("<task>") {
            msg.content = msg
                .content
                .replace("<task>", "")
                .replace("</task>", "")
                .trim()
                .to_string();
            if session.title.is_none() {
                session.title = msg.content.lines().next().map(str::to_string);
            }
        }
        if msg.content.is_empty() && msg.tool_calls.is_empty() {
            // Only tool results, now attached to their calls. Ids come from positions in the
            // file, so skipping this one does not change the ids of the messages after it.
            continue;
        }
        session.turns.push(Turn { message: msg, touches });
    }
    if !session.turns.is_empty() {
        read.sessions.push(session);
    }
    Ok(read)
}

/// The result text of a `[tool for 'path'] Result:` block.
fn tool_result_text(text: &str) -> Option<&str> {
    let rest = text.strip_prefix('[')?;
    let close = rest.find("] Result:")?;
    (!rest[..close].contains('\n')).then(|| rest[close + "] Result:".len()..].trim_start_matches('\n'))
}

/// Text without `<environment_details>` blocks; their working directory goes into `cwd`.
fn strip_environment(text: &str, cwd: &mut Option<PathBuf>) -> String {
    let Some(start) = text.find("<environment_details>") else {
        return text.to_string();
    };
    let end = text[start..]
        .find("</environment_details>")
        .map_or(text.len(), |e| start + e + "</environment_details>".len());
    let details = &text[start..end];
    if cwd.is_none()
        && let Some(pos) = details.find("Current Working Directory (")
    {
        let rest = &details[pos + "Current Working Directory (".len()..];
        if let Some(close) = rest.find(')') {
            *cwd = Some(PathBuf::from(&rest[..close]));
        }
    }
    format!("{}{}", &text[..start], &text[end..])
}

/// Code written by `write_to_file`, `replace_in_file` (Cline) or `apply_diff` (Roo Code).
fn edit_touches(name: &str, input: &Value) -> Vec<Touch> {
    let Some(path) = input.get("path").and_then(Value::as_str) else {
        return Vec::new();
    };
    match name {
        "write_to_file" => input
            .get("content")
            .and_then(Value::as_str)
            .map(|content| Touch {
                path: path.to_string(),
                lines: None,
                text: Some(content.to_string()),
                kind: TouchKind::Edit,
            })
            .into_iter()
            .collect(),
        "replace_in_file" | "apply_diff" => input
            .get("diff")
            .and_then(Value::as_str)
            .map(|diff| search_replace_touches(diff, Some(path)))
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

impl Source {
    /// Cline and Roo Code (task folders in VS Code's global storage).
    pub const CLINE: Source = Source("cline");
}

/// Cline and Roo Code: a folder per task in the global storage of VS Code (and its forks),
/// `api_conversation_history.json` inside; the first environment details name the folder.
pub(crate) struct Cline;

impl Agent for Cline {
    fn source(&self) -> Source {
        Source::CLINE
    }
    fn label(&self) -> &'static str {
        "Cline / Roo Code"
    }
    fn id_tag(&self) -> &'static str {
        "cline"
    }
    fn stores(&self, places: &Places, _project: Option<&Path>) -> Vec<PathBuf> {
        let config = places.config_dir();
        let mac = places.home.join("Library/Application Support");
        let mut stores = Vec::new();
        for base in [config, mac] {
            for editor in ["Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf"] {
                for extension in ["saoudrizwan.claude-dev", "rooveterinaryinc.roo-cline"] {
                    stores.push(
                        base.join(editor)
                            .join("User/globalStorage")
                            .join(extension)
                            .join("tasks"),
                    );
                }
            }
        }
        stores
    }
    fn session_files(&self, store: &Path, found: &mut Vec<PathBuf>) {
        for task in list_dir(store) {
            let path = task.join("api_conversation_history.json");
            if path.is_file() {
                found.push(path);
            }
        }
    }
    fn session_cwd(&self, path: &Path) -> Option<PathBuf> {
        let text = std::fs::read_to_string(path).ok()?;
        let pos = text.find("Current Working Directory (")?;
        let rest = &text[pos + "Current Working Directory (".len()..];
        Some(PathBuf::from(&rest[..rest.find(')')?]))
    }
    fn read(&self, path: &Path, _cursor: &Cursor) -> Result<FileRead, ReadError> {
        read(path)
    }
}

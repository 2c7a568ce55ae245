//! Continue: `~/.continue/sessions/<sessionId>.json`, one pretty-printed session object
//! `{sessionId, title, workspaceDirectory, history[]}`; `sessions.json` beside it is the index
//! with `dateCreated` (epoch milliseconds as a string), the only time Continue records. Each
//! history item holds a `message` (`user`, `assistant`, `tool`, `thinking`, `system`),
//! `contextItems` (files the user attached with `@`), and `promptLogs` (the model's name).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, TimeZone, Utc};
use serde_json::Value;
use zblade_core::{Message, Role, ToolCall};

use crate::agent::{Agent, files_named};
use crate::detect::Places;
use crate::patch::fenced_ranges;
use crate::{Cursor, FileRead, ReadError, Session, Source, Touch, TouchKind, Turn, trim};

pub(crate) fn read(path: &Path) -> Result<FileRead, ReadError> {
    let (value, mut read) = crate::read_whole_json(path, "a Continue session")?;
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("session");
    let id = value.get("sessionId").and_then(Value::as_str).unwrap_or(stem);
    let mut session = Session::new(Source::CONTINUE, id, path);
    session.title = value
        .get("title")
        .and_then(Value::as_str)
        .filter(|t| !t.trim().is_empty() && *t != "New Session")
        .map(str::to_string);
    session.cwd = value
        .get("workspaceDirectory")
        .and_then(Value::as_str)
        .and_then(workspace_path);
    session.started = created_at(path, id);
    let model = value.get("chatModelTitle").and_then(Value::as_str).map(str::to_string);
    let mut calls: HashMap<String, (usize, usize)> = HashMap::new();
    let Some(history) = value.get("history").and_then(Value::as_array) else {
        read.warn(path, None, "field `history`: missing or not a list; nothing to import");
        return Ok(read);
    };
    for (i, item) in history.iter().enumerate() {
        let Some(message) = item.get("message") else {
            read.warn(
                path,
                None,
                format!("field `history[{i}].message`: missing; item skipped"),
            );
            continue;
        };
        let text = trim::content_text(message.get("content").unwrap_or(&Value::Null));
        let role = match message.get("role").and_then(Value::as_str) {
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            Some("system") => Role::System,
            Some("tool") => {
                let call_id = message.get("toolCallId").and_then(Value::as_str).unwrap_or("");
                if let Some(&(turn, call)) = calls.get(call_id) {
                    session.turns[turn].message.tool_calls[call].result = Some(trim::result(&text, false));
                } else {
                    read.skip("continue tool result without its call");
                }
                continue;
            }
            Some("thinking") => {
                read.skip("continue thinking");
                continue;
            }
            other => {
                read.skip(format!("continue message role `{}`", other.unwrap_or("none")));
                continue;
            }
        };
        let raw_id = message
            .get("id")
            .and_then(Value::as_str)
            .map_or_else(|| format!("{id}-{i}"), str::to_string);
        let mut msg = Message::new(role, text.trim().to_string());
        msg.id = crate::message_id(Source::CONTINUE, &raw_id);
        msg.timestamp = session.started;
        let mut touches = fenced_ranges(&msg.content);
        touches.extend(context_items(item));
        if role == Role::Assistant {
            msg.model = item
                .get("promptLogs")
                .and_then(Value::as_array)
                .and_then(|logs| logs.last())
                .and_then(|log| log.get("modelTitle"))
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| model.clone());
            for call in message.get("toolCalls").and_then(Value::as_array).into_iter().flatten() {
                let call_id = call.get("id").and_then(Value::as_str).unwrap_or("").to_string();
                let function = call.get("function").unwrap_or(&Value::Null);
                msg.tool_calls.push(ToolCall::new(
                    call_id.clone(),
                    function
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("tool")
                        .to_string(),
                    trim::arguments_from_json_string(function.get("arguments").and_then(Value::as_str).unwrap_or("{}")),
                ));
                calls.insert(call_id, (session.turns.len(), msg.tool_calls.len() - 1));
            }
        }
        if msg.content.is_empty() && msg.tool_calls.is_empty() {
            continue;
        }
        session.turns.push(Turn { message: msg, touches });
    }
    if !session.turns.is_empty() {
        read.sessions.push(session);
    }
    Ok(read)
}

/// Files attached with `@file`: their path and the text they had.
fn context_items(item: &Value) -> Vec<Touch> {
    item.get("contextItems")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|ci| {
            let uri = ci.pointer("/uri/value").and_then(Value::as_str);
            let path = uri
                .and_then(workspace_path)
                .map(|p| p.to_string_lossy().into_owned())
                .or_else(|| ci.get("description").and_then(Value::as_str).map(str::to_string))?;
            let content = ci.get("content").and_then(Value::as_str).unwrap_or("");
            let body = strip_fence(content);
            (!body.trim().is_empty()).then_some(Touch {
                path,
                lines: None,
                text: Some(body),
                kind: TouchKind::Read,
            })
        })
        .collect()
}

fn strip_fence(content: &str) -> String {
    let lines: Vec<&str> = content.lines().collect();
    match (lines.first(), lines.last()) {
        (Some(first), Some(last)) if lines.len() >= 2 && first.starts_with("```") && last.starts_with("```") => {
            lines[1..lines.len() - 1].join("\n")
        }
        _ => content.to_string(),
    }
}

/// A workspace directory as a path: plain paths as they are, `file://` URIs decoded. Remote
/// workspaces (`vscode-remote://…`) are not on this machine and give `None`.
pub(crate) fn workspace_path(raw: &str) -> Option<PathBuf> {
    if let Some(rest) = raw.strip_prefix("file://") {
        let decoded = crate::percent_decode(rest);
        // file:///c:/x on Windows keeps the drive; on Unix the path starts with `/`.
        return Some(PathBuf::from(decoded));
    }
    if raw.contains("://") {
        return None;
    }
    Some(PathBuf::from(raw))
}

/// `dateCreated` of this session in `sessions.json` (epoch milliseconds, as a string or a
/// number), else the file's modification time.
fn created_at(path: &Path, id: &str) -> Option<DateTime<Utc>> {
    let index = path.parent()?.join("sessions.json");
    let from_index = std::fs::read(&index)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|list| {
            list.as_array()?
                .iter()
                .find(|s| s.get("sessionId").and_then(Value::as_str) == Some(id))
                .and_then(|s| s.get("dateCreated").cloned())
        })
        .and_then(|d| match d {
            Value::String(s) => s.parse::<i64>().ok(),
            Value::Number(n) => n.as_i64(),
            _ => None,
        })
        .and_then(|ms| Utc.timestamp_millis_opt(ms).single());
    from_index.or_else(|| {
        let modified = std::fs::metadata(path).ok()?.modified().ok()?;
        Some(DateTime::<Utc>::from(modified))
    })
}

impl Source {
    /// Continue (`~/.continue/sessions/*.json`).
    pub const CONTINUE: Source = Source("continue");
}

/// Continue: one JSON file per session under `$CONTINUE_GLOBAL_DIR` (else `~/.continue`)
/// `sessions/`, `workspaceDirectory` inside.
pub(crate) struct Continue;

impl Agent for Continue {
    fn source(&self) -> Source {
        Source::CONTINUE
    }
    fn label(&self) -> &'static str {
        "Continue"
    }
    fn id_tag(&self) -> &'static str {
        "continue"
    }
    fn stores(&self, places: &Places, _project: Option<&Path>) -> Vec<PathBuf> {
        vec![places.continue_global_dir().join("sessions")]
    }
    fn session_files(&self, store: &Path, found: &mut Vec<PathBuf>) {
        files_named(store, |name| name.ends_with(".json") && name != "sessions.json", found);
    }
    fn session_cwd(&self, path: &Path) -> Option<PathBuf> {
        let value: serde_json::Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
        workspace_path(value.get("workspaceDirectory")?.as_str()?)
    }
    fn read(&self, path: &Path, _cursor: &Cursor) -> Result<FileRead, ReadError> {
        read(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_uris_become_paths() {
        assert_eq!(workspace_path("/workspace"), Some(PathBuf::from("/workspace")));
        assert_eq!(
            workspace_path("file:///home/a/my%20proj"),
            Some(PathBuf::from("/home/a/my proj"))
        );
        assert_eq!(workspace_path("vscode-remote://codespaces%2Bx/workspaces/y"), None);
    }
}

//! Grok CLI: `${GROK_HOME:-~/.grok}/sessions/<encoded cwd>/<sessionId>/chat_history.jsonl`, with
//! `summary.json` beside it (`info.id`, `info.cwd`, `generated_title`, `created_at`). The
//! history's records are OpenAI-style: `system`, `user` (`content`: string or blocks; an
//! environment preamble is marked `synthetic_reason`), `assistant` (`content`, `tool_calls[]
//! {id, name, arguments}` with JSON-string arguments, `model_id`), `tool_result`
//! (`tool_call_id`, `content`), and `reasoning` / `backend_tool_call` records (skipped).

use std::path::{Path, PathBuf};

use serde_json::Value;
use zblade_core::Role;

use crate::agent::{Agent, files_named};
use crate::detect::Places;
use crate::transcript::{Builder, blocks, result_text, time};
use crate::{Cursor, FileRead, ReadError, SessionContext, Source, jsonl, trim};

impl Source {
    /// xAI's Grok CLI (`~/.grok/sessions/`).
    pub const GROK: Source = Source("grok");
}

/// Grok CLI: one history per session, read incrementally.
pub(crate) struct Grok;

impl Agent for Grok {
    fn source(&self) -> Source {
        Source::GROK
    }
    fn label(&self) -> &'static str {
        "Grok CLI"
    }
    fn id_tag(&self) -> &'static str {
        "grok"
    }
    fn incremental(&self) -> bool {
        true
    }
    fn stores(&self, places: &Places, _project: Option<&Path>) -> Vec<PathBuf> {
        vec![places.var_or_home("GROK_HOME", ".grok").join("sessions")]
    }
    fn session_files(&self, store: &Path, found: &mut Vec<PathBuf>) {
        files_named(store, |name| name == "chat_history.jsonl", found);
    }
    fn session_cwd(&self, path: &Path) -> Option<PathBuf> {
        summary(path)?
            .pointer("/info/cwd")
            .and_then(Value::as_str)
            .map(PathBuf::from)
    }
    fn read(&self, path: &Path, cursor: &Cursor) -> Result<FileRead, ReadError> {
        read(path, cursor)
    }
}

/// The `summary.json` beside a history.
fn summary(path: &Path) -> Option<Value> {
    serde_json::from_slice(&std::fs::read(path.parent()?.join("summary.json")).ok()?).ok()
}

fn read(path: &Path, cursor: &Cursor) -> Result<FileRead, ReadError> {
    let meta = summary(path);
    let meta_str = |pointer: &str| meta.as_ref()?.pointer(pointer)?.as_str().map(str::to_string);
    let folder = path
        .parent()
        .and_then(Path::file_name)
        .and_then(|n| n.to_str())
        .unwrap_or("session");
    let mut context = cursor.session.clone().unwrap_or_else(|| SessionContext {
        id: meta_str("/info/id").unwrap_or_else(|| folder.to_string()),
        cwd: meta_str("/info/cwd").map(PathBuf::from),
        started: time(meta.as_ref().and_then(|m| m.get("created_at"))),
        model: meta_str("/current_model_id"),
    });
    let mut b = Builder::new(Source::GROK, &context.id, path);
    // Records carry no time: turns are dated by the session's start.
    b.session.started = context.started;
    b.session.title = meta_str("/generated_title").or_else(|| meta_str("/session_summary"));
    let mut read = FileRead::default();
    let next = jsonl::for_each_line(path, cursor, &mut read, |line, value, read| {
        let raw_id = format!("L{line}");
        let content = value.get("content").unwrap_or(&Value::Null);
        match value.get("type").and_then(Value::as_str).unwrap_or("") {
            "user" => {
                let role = if value.get("synthetic_reason").is_some() {
                    Role::System
                } else {
                    Role::User
                };
                b.message(role, &blocks(content).text, &raw_id, None, None);
            }
            "assistant" => {
                if let Some(model) = value.get("model_id").and_then(Value::as_str) {
                    context.model = Some(model.to_string());
                }
                let turn = b.message(
                    Role::Assistant,
                    &blocks(content).text,
                    &raw_id,
                    None,
                    context.model.as_deref(),
                );
                for call in value.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                    let string = |k: &str| call.get(k).and_then(Value::as_str).unwrap_or("");
                    let args = match call.get("arguments").cloned().unwrap_or(Value::Null) {
                        Value::String(s) => trim::arguments_from_json_string(&s),
                        other => other,
                    };
                    b.call(turn, string("id"), string("name"), args);
                }
            }
            "tool_result" => {
                let id = value.get("tool_call_id").and_then(Value::as_str).unwrap_or("");
                if !b.result(id, &result_text(content), false) {
                    read.skip("grok tool result without its call in this read");
                }
            }
            "system" => read.skip("grok system prompt"),
            "" => read.warn(path, Some(line), "record has no `type`; skipped"),
            other => read.skip(format!("grok record `{other}`")),
        }
    })?;
    b.finish_resumable(context, next, &mut read);
    Ok(read)
}

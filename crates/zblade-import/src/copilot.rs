//! GitHub Copilot CLI: `~/.copilot/session-state/<sessionId>/events.jsonl` (1.0 on; earlier
//! versions wrote `session-state/<sessionId>.jsonl`), one event per line `{type, data, id,
//! timestamp, parentId}`: `session.start` (`data.sessionId`, `data.context.cwd`),
//! `session.model_change`, `user.message` (`data.content`), `assistant.message`
//! (`data.content`, `data.toolRequests[] {toolCallId, name, arguments}`),
//! `tool.execution_complete` (`data.toolCallId`, `data.success`, `data.result.content`), and
//! events for the UI (turn starts and ends, hooks, truncation: skipped).

use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde_json::Value;
use zblade_core::Role;

use crate::agent::{Agent, files_named};
use crate::detect::Places;
use crate::transcript::{Builder, time};
use crate::{Cursor, FileRead, ReadError, SessionContext, Source, jsonl, trim};

impl Source {
    /// GitHub Copilot CLI (`~/.copilot/session-state/`).
    pub const COPILOT: Source = Source("copilot");
}

/// GitHub Copilot CLI: one event log per session, read incrementally.
pub(crate) struct Copilot;

impl Agent for Copilot {
    fn source(&self) -> Source {
        Source::COPILOT
    }
    fn label(&self) -> &'static str {
        "GitHub Copilot CLI"
    }
    fn id_tag(&self) -> &'static str {
        "copilot"
    }
    fn incremental(&self) -> bool {
        true
    }
    fn stores(&self, places: &Places, _project: Option<&Path>) -> Vec<PathBuf> {
        vec![places.var_or_home("COPILOT_HOME", ".copilot").join("session-state")]
    }
    fn session_files(&self, store: &Path, found: &mut Vec<PathBuf>) {
        files_named(store, |name| name.ends_with(".jsonl"), found);
    }
    fn session_cwd(&self, path: &Path) -> Option<PathBuf> {
        let file = std::fs::File::open(path).ok()?;
        let first = std::io::BufReader::new(file).lines().next()?.ok()?;
        let value: Value = serde_json::from_str(&first).ok()?;
        value
            .pointer("/data/context/cwd")
            .and_then(Value::as_str)
            .map(PathBuf::from)
    }
    fn read(&self, path: &Path, cursor: &Cursor) -> Result<FileRead, ReadError> {
        read(path, cursor)
    }
}

fn read(path: &Path, cursor: &Cursor) -> Result<FileRead, ReadError> {
    // `<id>/events.jsonl` or `<id>.jsonl`: the id until `session.start` says it.
    let named = if path.file_name().is_some_and(|n| n == "events.jsonl") {
        path.parent().and_then(Path::file_name)
    } else {
        path.file_stem()
    };
    let mut context = cursor.session.clone().unwrap_or_else(|| SessionContext {
        id: named.and_then(|n| n.to_str()).unwrap_or("session").to_string(),
        ..SessionContext::default()
    });
    let mut b = Builder::new(Source::COPILOT, &context.id, path);
    let mut read = FileRead::default();
    let next = jsonl::for_each_line(path, cursor, &mut read, |line, value, read| {
        let at = time(value.get("timestamp"));
        let data = value.get("data").unwrap_or(&Value::Null);
        let text = |key: &str| data.get(key).and_then(Value::as_str).unwrap_or("");
        let raw_id = value
            .get("id")
            .and_then(Value::as_str)
            .map_or_else(|| format!("L{line}"), str::to_string);
        match value.get("type").and_then(Value::as_str).unwrap_or("") {
            "session.start" => {
                if !text("sessionId").is_empty() {
                    context.id = text("sessionId").to_string();
                }
                if let Some(cwd) = data.pointer("/context/cwd").and_then(Value::as_str) {
                    context.cwd = Some(cwd.into());
                }
                context.started = time(data.get("startTime")).or(at);
                if !text("selectedModel").is_empty() {
                    context.model = Some(text("selectedModel").to_string());
                }
            }
            "session.model_change" => context.model = Some(text("newModel").to_string()),
            "user.message" => {
                b.message(Role::User, text("content"), &raw_id, at, None);
            }
            "system.message" => {
                b.message(Role::System, text("content"), &raw_id, at, None);
            }
            "assistant.message" => {
                let turn = b.message(Role::Assistant, text("content"), &raw_id, at, context.model.as_deref());
                for request in data.get("toolRequests").and_then(Value::as_array).into_iter().flatten() {
                    let id = request.get("toolCallId").and_then(Value::as_str).unwrap_or("");
                    let name = request.get("name").and_then(Value::as_str).unwrap_or("tool");
                    let args = match request.get("arguments").cloned().unwrap_or(Value::Null) {
                        Value::String(s) => trim::arguments_from_json_string(&s),
                        other => other,
                    };
                    b.call(turn, id, name, args);
                }
            }
            "tool.execution_complete" => {
                let id = text("toolCallId");
                let output = data
                    .pointer("/result/content")
                    .or_else(|| data.pointer("/error/message"))
                    .map(crate::transcript::result_text)
                    .unwrap_or_default();
                let failed = data.get("success").and_then(Value::as_bool) == Some(false);
                if !b.result(id, &output, failed) {
                    read.skip("copilot tool result without its call in this read");
                }
            }
            "" => read.warn(path, Some(line), "event has no `type`; skipped"),
            other => read.skip(format!("copilot event `{other}`")),
        }
    })?;
    b.finish_resumable(context, next, &mut read);
    Ok(read)
}

//! Kimi Code: `${KIMI_CODE_HOME:-~/.kimi-code}/sessions/<workdir>/session_<id>/`, a `state.json`
//! (`workDir`, `title`, `createdAt`) and one `agents/<agent>/wire.jsonl` journal per agent
//! (`main`, and sub-agents). The journal's records: `context.append_message` (a message added to
//! the model's context: the user's, or text zblade did not type — `origin.kind` `injection`),
//! `context.append_loop_event` holding `content.part` (`text`, `think`), `tool.call`
//! (`toolCallId`, `name`, `args`), `tool.result` (`toolCallId`, `result.output`) and step
//! bookkeeping; `config.update` names the model. Times are epoch milliseconds.

use std::path::{Path, PathBuf};

use serde_json::Value;
use zblade_core::Role;

use crate::agent::{Agent, files_named};
use crate::detect::Places;
use crate::transcript::{Builder, blocks, result_text, time};
use crate::{Cursor, FileRead, ReadError, SessionContext, Source, jsonl};

impl Source {
    /// Moonshot's Kimi Code (`~/.kimi-code/sessions/`).
    pub const KIMI: Source = Source("kimi-code");
}

/// Kimi Code: the main agent's journal of each session, read incrementally.
pub(crate) struct Kimi;

impl Agent for Kimi {
    fn source(&self) -> Source {
        Source::KIMI
    }
    fn label(&self) -> &'static str {
        "Kimi Code"
    }
    fn id_tag(&self) -> &'static str {
        "kimi"
    }
    fn incremental(&self) -> bool {
        true
    }
    fn stores(&self, places: &Places, _project: Option<&Path>) -> Vec<PathBuf> {
        vec![places.var_or_home("KIMI_CODE_HOME", ".kimi-code").join("sessions")]
    }
    fn session_files(&self, store: &Path, found: &mut Vec<PathBuf>) {
        let mut all = Vec::new();
        files_named(store, |name| name == "wire.jsonl", &mut all);
        // The main agent's journal; a sub-agent's work comes back to it as a tool result.
        found.extend(
            all.into_iter()
                .filter(|p| p.parent().and_then(Path::file_name).is_some_and(|n| n == "main")),
        );
    }
    fn session_cwd(&self, path: &Path) -> Option<PathBuf> {
        let state = session_state(path)?;
        state.get("workDir").and_then(Value::as_str).map(PathBuf::from)
    }
    fn read(&self, path: &Path, cursor: &Cursor) -> Result<FileRead, ReadError> {
        read(path, cursor)
    }
}

/// The session folder of a journal (`session_<id>/agents/main/wire.jsonl`).
fn session_dir(path: &Path) -> Option<&Path> {
    path.parent()?.parent()?.parent()
}

/// The session's `state.json`.
fn session_state(path: &Path) -> Option<Value> {
    let bytes = std::fs::read(session_dir(path)?.join("state.json")).ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn read(path: &Path, cursor: &Cursor) -> Result<FileRead, ReadError> {
    let folder = session_dir(path)
        .and_then(Path::file_name)
        .and_then(|n| n.to_str())
        .unwrap_or("session");
    let state = session_state(path);
    let mut context = cursor.session.clone().unwrap_or_else(|| SessionContext {
        id: folder.trim_start_matches("session_").to_string(),
        cwd: state
            .as_ref()
            .and_then(|s| s.get("workDir"))
            .and_then(Value::as_str)
            .map(PathBuf::from),
        started: state.as_ref().and_then(|s| time(s.get("createdAt"))),
        ..SessionContext::default()
    });
    let mut b = Builder::new(Source::KIMI, &context.id, path);
    b.session.title = state
        .as_ref()
        .and_then(|s| s.get("title"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut read = FileRead::default();
    let next = jsonl::for_each_line(path, cursor, &mut read, |line, value, read| {
        let at = time(value.get("time"));
        match value.get("type").and_then(Value::as_str).unwrap_or("") {
            "config.update" | "profile.bind" => {
                if let Some(model) = value.get("modelAlias").and_then(Value::as_str) {
                    context.model = Some(model.to_string());
                }
            }
            "context.append_message" => {
                let message = value.get("message").unwrap_or(&Value::Null);
                let typed = value.pointer("/message/origin/kind").and_then(Value::as_str) == Some("user");
                let role = match message.get("role").and_then(Value::as_str) {
                    Some("user") if typed => Role::User,
                    Some("user" | "system") => Role::System,
                    // The assistant's messages arrive as loop events below.
                    _ => return,
                };
                let text = blocks(message.get("content").unwrap_or(&Value::Null)).text;
                b.message(role, &text, &format!("L{line}"), at, None);
            }
            "context.append_loop_event" => {
                let event = value.get("event").unwrap_or(&Value::Null);
                let string = |k: &str| event.get(k).and_then(Value::as_str).unwrap_or("");
                // One assistant turn per step of the loop.
                let step = match string("stepUuid") {
                    "" => format!("L{line}"),
                    s => s.to_string(),
                };
                match string("type") {
                    "content.part" if event.pointer("/part/type").and_then(Value::as_str) == Some("text") => {
                        let text = event.pointer("/part/text").and_then(Value::as_str).unwrap_or("");
                        let turn = b.assistant_turn(&step, at);
                        let message = &mut b.session.turns[turn].message;
                        if !message.content.is_empty() {
                            message.content.push('\n');
                        }
                        message.content.push_str(text.trim());
                        if message.model.is_none() {
                            message.model.clone_from(&context.model);
                        }
                    }
                    "tool.call" => {
                        let turn = b.assistant_turn(&step, at);
                        let args = event.get("args").cloned().unwrap_or(Value::Null);
                        b.call(turn, string("toolCallId"), string("name"), args);
                    }
                    "tool.result" => {
                        let result = event.get("result").unwrap_or(&Value::Null);
                        let error = result.get("isError").and_then(Value::as_bool).unwrap_or(false);
                        if !b.result(string("toolCallId"), &result_text(result), error) {
                            read.skip("kimi tool result without its call in this read");
                        }
                    }
                    "step.begin" | "step.end" | "content.part" => {}
                    other => read.skip(format!("kimi loop event `{other}`")),
                }
            }
            "" => read.warn(path, Some(line), "record has no `type`; skipped"),
            other => read.skip(format!("kimi record `{other}`")),
        }
    })?;
    b.finish_resumable(context, next, &mut read);
    Ok(read)
}

//! pi (the coding agent), and the two agents whose sessions have pi's shape — OpenClaw (built
//! on pi's agent core) and Factory's Droid: one JSON Lines file per session, a header record
//! (`{type: "session", id, cwd, timestamp}`; Droid: `type: "session_start"`, with `title`) and
//! then `{type: "message", id, parentId, timestamp, message: {role, content, model?}}` records.
//! Roles are `user`, `assistant` and `toolResult` (`toolCallId`, `content`); calls are
//! `toolCall` blocks (pi, OpenClaw) or Anthropic `tool_use` blocks answered by `tool_result`
//! blocks in a user message (Droid). `compaction` records carry a summary of earlier turns.
//! One reader, so the three count as one format.

use std::path::{Path, PathBuf};

use serde_json::Value;
use zblade_core::Role;

use crate::agent::{Agent, files_named, jsonl_cwd};
use crate::detect::Places;
use crate::transcript::{Builder, blocks, result_text, time};
use crate::{Cursor, FileRead, ReadError, SessionContext, Source, jsonl};

impl Source {
    /// pi, the coding agent (`~/.pi/agent/sessions/`).
    pub const PI: Source = Source("pi");
    /// OpenClaw (`~/.openclaw/agents/*/sessions/`).
    pub const OPENCLAW: Source = Source("openclaw");
    /// Factory's Droid (`~/.factory/sessions/`).
    pub const DROID: Source = Source("droid");
}

/// An agent writing pi's session format.
pub(crate) struct PiFormat {
    source: Source,
    label: &'static str,
    tag: &'static str,
    /// Its folder of sessions.
    store: fn(&Places) -> PathBuf,
}

pub(crate) static PI: PiFormat = PiFormat {
    source: Source::PI,
    label: "pi",
    tag: "pi",
    store: |places| places.var_or_home("PI_CODING_AGENT_DIR", ".pi/agent").join("sessions"),
};

pub(crate) static OPENCLAW: PiFormat = PiFormat {
    source: Source::OPENCLAW,
    label: "OpenClaw",
    tag: "openclaw",
    store: |places| places.var_or_home("OPENCLAW_STATE_DIR", ".openclaw").join("agents"),
};

pub(crate) static DROID: PiFormat = PiFormat {
    source: Source::DROID,
    label: "Droid (Factory)",
    tag: "droid",
    store: |places| places.home.join(".factory/sessions"),
};

impl Agent for PiFormat {
    fn source(&self) -> Source {
        self.source
    }
    fn label(&self) -> &'static str {
        self.label
    }
    fn id_tag(&self) -> &'static str {
        self.tag
    }
    fn incremental(&self) -> bool {
        true
    }
    fn stores(&self, places: &Places, _project: Option<&Path>) -> Vec<PathBuf> {
        vec![(self.store)(places)]
    }
    fn session_files(&self, store: &Path, found: &mut Vec<PathBuf>) {
        files_named(store, |name| name.ends_with(".jsonl"), found);
    }
    fn session_cwd(&self, path: &Path) -> Option<PathBuf> {
        jsonl_cwd(path)
    }
    fn read(&self, path: &Path, cursor: &Cursor) -> Result<FileRead, ReadError> {
        read(self.source, path, cursor)
    }
}

fn read(source: Source, path: &Path, cursor: &Cursor) -> Result<FileRead, ReadError> {
    // pi names files `<time>_<uuid>.jsonl`: the part after the last `_` until the header says.
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("session");
    let mut context = cursor.session.clone().unwrap_or_else(|| SessionContext {
        id: stem.rsplit('_').next().unwrap_or(stem).to_string(),
        ..SessionContext::default()
    });
    let mut b = Builder::new(source, &context.id, path);
    let mut title = None;
    let mut read = FileRead::default();
    let next = jsonl::for_each_line(path, cursor, &mut read, |line, value, read| {
        let at = time(value.get("timestamp"));
        let raw_id = value
            .get("id")
            .and_then(Value::as_str)
            .map_or_else(|| format!("L{line}"), str::to_string);
        match value.get("type").and_then(Value::as_str).unwrap_or("") {
            "session" | "session_start" => {
                if let Some(id) = value.get("id").and_then(Value::as_str) {
                    context.id = id.to_string();
                }
                if let Some(cwd) = value.get("cwd").and_then(Value::as_str) {
                    context.cwd = Some(cwd.into());
                }
                context.started = context.started.or(at);
                title = value
                    .get("sessionTitle")
                    .or_else(|| value.get("title"))
                    .and_then(Value::as_str)
                    .map(str::to_string);
            }
            "model_change" => context.model = value.get("modelId").and_then(Value::as_str).map(str::to_string),
            "message" => message(&mut b, &mut context, &value, &raw_id, at, read),
            "compaction" => {
                let summary = value.get("summary").and_then(Value::as_str).unwrap_or("");
                if !summary.trim().is_empty() {
                    let text = format!("Earlier turns, compacted:\n{summary}");
                    b.message(Role::System, &text, &raw_id, at, None);
                }
            }
            "" => read.warn(path, Some(line), "record has no `type`; skipped"),
            other => read.skip(format!("{source} record `{other}`")),
        }
    })?;
    b.session.title = title;
    b.finish_resumable(context, next, &mut read);
    Ok(read)
}

fn message(
    b: &mut Builder,
    context: &mut SessionContext,
    value: &Value,
    raw_id: &str,
    at: Option<chrono::DateTime<chrono::Utc>>,
    read: &mut FileRead,
) {
    let message = value.get("message").unwrap_or(&Value::Null);
    let content = message.get("content").unwrap_or(&Value::Null);
    let role = message.get("role").and_then(Value::as_str).unwrap_or("");
    if role == "toolResult" {
        let id = message.get("toolCallId").and_then(Value::as_str).unwrap_or("");
        let error = message.get("isError").and_then(Value::as_bool).unwrap_or(false);
        if !b.result(id, &result_text(content), error) {
            read.skip("tool result without its call in this read");
        }
        return;
    }
    let role = match role {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "system" => Role::System,
        other => {
            read.skip(format!("message role `{other}`"));
            return;
        }
    };
    if let Some(model) = message.get("model").and_then(Value::as_str) {
        context.model = Some(model.to_string());
    }
    let parsed = blocks(content);
    for (id, text, error) in &parsed.results {
        if !b.result(id, text, *error) {
            read.skip("tool result without its call in this read");
        }
    }
    if parsed.text.is_empty() && parsed.calls.is_empty() {
        return;
    }
    let model = (role == Role::Assistant).then_some(context.model.as_deref()).flatten();
    let turn = b.message(role, &parsed.text, raw_id, at, model);
    for (id, name, args) in parsed.calls {
        b.call(turn, &id, &name, args);
    }
}

//! Hermes Agent (Nous Research): `~/.hermes/sessions/*.json`, one JSON object per session —
//! `session_id`, `model`, `session_start`, `model_config.cwd` (may start with `~`), and
//! OpenAI-style `messages[]`: `user`, `assistant` (`content`, `tool_calls[] {id, function: {name,
//! arguments}}`), `tool` (`tool_call_id`, `content`), and bookkeeping roles (skipped). Read
//! whole when it changes. (Newer versions also keep a `state.db`; not read.)

use std::path::{Path, PathBuf};

use serde_json::Value;
use zblade_core::Role;

use crate::agent::{Agent, files_named};
use crate::detect::Places;
use crate::transcript::{Builder, blocks, result_text, time};
use crate::{Cursor, FileRead, ReadError, Source, trim};

impl Source {
    /// Nous Research's Hermes Agent (`~/.hermes/sessions/`).
    pub const HERMES: Source = Source("hermes");
}

/// Hermes Agent: one JSON file per session.
pub(crate) struct Hermes;

impl Agent for Hermes {
    fn source(&self) -> Source {
        Source::HERMES
    }
    fn label(&self) -> &'static str {
        "Hermes Agent"
    }
    fn id_tag(&self) -> &'static str {
        "hermes"
    }
    fn stores(&self, places: &Places, _project: Option<&Path>) -> Vec<PathBuf> {
        vec![places.home.join(".hermes/sessions")]
    }
    fn session_files(&self, store: &Path, found: &mut Vec<PathBuf>) {
        files_named(store, |name| name.ends_with(".json"), found);
    }
    fn session_cwd(&self, path: &Path) -> Option<PathBuf> {
        let value: Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
        cwd(&value)
    }
    fn read(&self, path: &Path, _cursor: &Cursor) -> Result<FileRead, ReadError> {
        read(path)
    }
}

/// `model_config.cwd`, a leading `~` taken as the home folder.
fn cwd(value: &Value) -> Option<PathBuf> {
    let raw = value.pointer("/model_config/cwd")?.as_str()?;
    match raw.strip_prefix("~/") {
        Some(rest) => Some(PathBuf::from(std::env::var_os("HOME")?).join(rest)),
        None => Some(PathBuf::from(raw)),
    }
}

fn read(path: &Path) -> Result<FileRead, ReadError> {
    let (value, mut read) = crate::read_whole_json(path, "a Hermes session")?;
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("session");
    let id = value.get("session_id").and_then(Value::as_str).unwrap_or(stem);
    let mut b = Builder::new(Source::HERMES, id, path);
    b.session.started = time(value.get("session_start"));
    b.session.cwd = cwd(&value);
    let model = value.get("model").and_then(Value::as_str);
    let Some(messages) = value.get("messages").and_then(Value::as_array) else {
        read.warn(path, None, "field `messages`: missing or not a list; nothing to import");
        return Ok(read);
    };
    for (i, m) in messages.iter().enumerate() {
        let content = m.get("content").unwrap_or(&Value::Null);
        let raw_id = format!("{id}-{i}");
        match m.get("role").and_then(Value::as_str).unwrap_or("") {
            "user" => {
                b.message(Role::User, &blocks(content).text, &raw_id, None, None);
            }
            "assistant" => {
                let turn = b.message(Role::Assistant, &blocks(content).text, &raw_id, None, model);
                for call in m.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                    let call_id = call.get("id").and_then(Value::as_str).unwrap_or("");
                    let function = call.get("function").unwrap_or(&Value::Null);
                    let name = function.get("name").and_then(Value::as_str).unwrap_or("tool");
                    let args = function.get("arguments").and_then(Value::as_str).unwrap_or("{}");
                    b.call(turn, call_id, name, trim::arguments_from_json_string(args));
                }
            }
            "tool" => {
                let call_id = m.get("tool_call_id").and_then(Value::as_str).unwrap_or("");
                if !b.result(call_id, &result_text(content), false) {
                    read.skip("hermes tool result without its call");
                }
            }
            other => read.skip(format!("hermes message role `{other}`")),
        }
    }
    b.finish(&mut read);
    Ok(read)
}

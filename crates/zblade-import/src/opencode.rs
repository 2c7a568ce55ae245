//! opencode's file store: `${XDG_DATA_HOME:-~/.local/share}/opencode/storage/`, one JSON file
//! per record — `session/<projectID>/<sessionID>.json` (`id`, `directory`, `title`,
//! `time.created`), `message/<sessionID>/<messageID>.json` (`role`, `time.created`,
//! `modelID` or `model.modelID`) and `part/<messageID>/<partID>.json` (`text`, `tool` with
//! `callID`, `tool`, `state {status, input, output, error}`; `reasoning`, `step-*`, `file`
//! skipped). A session is read whole when its session file changes (opencode rewrites it with
//! each message). Versions from 1.4 on keep the same records in `opencode.db` (SQLite), which is
//! not read yet (see docs/IMPORT.md).

use std::path::{Path, PathBuf};

use serde_json::Value;
use zblade_core::Role;

use crate::agent::{Agent, files_named, list_dir};
use crate::detect::Places;
use crate::transcript::{Builder, time};
use crate::{Cursor, FileRead, ReadError, Source};

impl Source {
    /// opencode (`~/.local/share/opencode/storage/`).
    pub const OPENCODE: Source = Source("opencode");
}

/// opencode: one session file and its message and part files.
pub(crate) struct Opencode;

impl Agent for Opencode {
    fn source(&self) -> Source {
        Source::OPENCODE
    }
    fn label(&self) -> &'static str {
        "opencode"
    }
    fn id_tag(&self) -> &'static str {
        "opencode"
    }
    fn stores(&self, places: &Places, _project: Option<&Path>) -> Vec<PathBuf> {
        let data = places
            .vars
            .get("XDG_DATA_HOME")
            .cloned()
            .unwrap_or_else(|| places.home.join(".local/share"));
        vec![data.join("opencode/storage/session")]
    }
    fn session_files(&self, store: &Path, found: &mut Vec<PathBuf>) {
        files_named(store, |name| name.ends_with(".json"), found);
    }
    fn session_cwd(&self, path: &Path) -> Option<PathBuf> {
        let value = json(path)?;
        value.get("directory").and_then(Value::as_str).map(PathBuf::from)
    }
    fn read(&self, path: &Path, _cursor: &Cursor) -> Result<FileRead, ReadError> {
        read(path)
    }
}

fn json(path: &Path) -> Option<Value> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// The JSON files of a folder, each parsed; a file that is not JSON is named in a warning.
fn records(dir: &Path, read: &mut FileRead) -> Vec<Value> {
    let mut out = Vec::new();
    for path in list_dir(dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
    {
        match std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        {
            Some(value) => out.push(value),
            None => read.warn(&path, None, "not a JSON record; skipped"),
        }
    }
    out
}

fn read(path: &Path) -> Result<FileRead, ReadError> {
    let (session, mut read) = crate::read_whole_json(path, "an opencode session")?;
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("session");
    let id = session.get("id").and_then(Value::as_str).unwrap_or(stem).to_string();
    // storage/session/<project>/<id>.json → storage/
    let Some(storage) = path.parent().and_then(Path::parent).and_then(Path::parent) else {
        return Ok(read);
    };
    let mut b = Builder::new(Source::OPENCODE, &id, path);
    b.session.cwd = session.get("directory").and_then(Value::as_str).map(PathBuf::from);
    b.session.title = session.get("title").and_then(Value::as_str).map(str::to_string);
    b.session.started = time(session.pointer("/time/created"));
    let mut messages = records(&storage.join("message").join(crate::safe_id(&id)), &mut read);
    messages.sort_by_key(|m| m.pointer("/time/created").and_then(Value::as_i64).unwrap_or(0));
    for message in messages {
        let Some(message_id) = message.get("id").and_then(Value::as_str) else {
            read.skip("opencode message without an id");
            continue;
        };
        let role = match message.get("role").and_then(Value::as_str) {
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            other => {
                read.skip(format!("opencode message role `{}`", other.unwrap_or("none")));
                continue;
            }
        };
        let model = message
            .get("modelID")
            .or_else(|| message.pointer("/model/modelID"))
            .and_then(Value::as_str);
        let parts = records(&storage.join("part").join(crate::safe_id(message_id)), &mut read);
        let text: Vec<&str> = parts
            .iter()
            .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
            .filter(|p| p.get("synthetic").and_then(Value::as_bool) != Some(true))
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect();
        let at = time(message.pointer("/time/created"));
        let turn = b.message(role, &text.join("\n"), message_id, at, model);
        for part in parts
            .iter()
            .filter(|p| p.get("type").and_then(Value::as_str) == Some("tool"))
        {
            let call_id = part.get("callID").and_then(Value::as_str).unwrap_or("");
            let name = part.get("tool").and_then(Value::as_str).unwrap_or("tool");
            let state = part.get("state").unwrap_or(&Value::Null);
            b.call(turn, call_id, name, state.get("input").cloned().unwrap_or(Value::Null));
            let status = state.get("status").and_then(Value::as_str).unwrap_or("");
            if status == "error" {
                let error = state.get("error").and_then(Value::as_str).unwrap_or("");
                b.result(call_id, error, true);
            } else if let Some(output) = state.get("output").and_then(Value::as_str) {
                b.result(call_id, output, false);
            }
        }
    }
    b.finish(&mut read);
    Ok(read)
}

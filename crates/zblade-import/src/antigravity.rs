//! Google Antigravity: `~/.gemini/antigravity/brain/<conversationId>/.system_generated/logs/
//! transcript.jsonl` (the editor) and the same under `~/.gemini/antigravity-cli/` (the CLI).
//! One step per line: `{step_index, source, type, status, created_at, content?, thinking?,
//! tool_calls?}`. `USER_INPUT` steps hold the request inside `<USER_REQUEST>`; `PLANNER_RESPONSE`
//! steps are the model's (text, and `tool_calls[] {name, args}` whose values are JSON-quoted);
//! the steps after a planner response (`VIEW_FILE`, `RUN_COMMAND`, `CODE_ACTION`, …) are its
//! calls' outputs, in order. The transcript names no working directory: the project is the
//! git repository of the first absolute path its calls name.

use std::path::{Path, PathBuf};

use serde_json::Value;
use zblade_core::Role;

use crate::agent::{Agent, files_named};
use crate::detect::Places;
use crate::transcript::{Builder, time};
use crate::{Cursor, FileRead, ReadError, Source, jsonl};

impl Source {
    /// Google Antigravity (`~/.gemini/antigravity*/brain/`).
    pub const ANTIGRAVITY: Source = Source("antigravity");
}

/// Antigravity: one transcript per conversation, read whole when it changes (calls are matched
/// to the outputs that follow them).
pub(crate) struct Antigravity;

impl Agent for Antigravity {
    fn source(&self) -> Source {
        Source::ANTIGRAVITY
    }
    fn label(&self) -> &'static str {
        "Antigravity"
    }
    fn id_tag(&self) -> &'static str {
        "antigravity"
    }
    fn stores(&self, places: &Places, _project: Option<&Path>) -> Vec<PathBuf> {
        let gemini = crate::gemini::gemini_dir(places);
        vec![gemini.join("antigravity/brain"), gemini.join("antigravity-cli/brain")]
    }
    fn session_files(&self, store: &Path, found: &mut Vec<PathBuf>) {
        files_named(store, |name| name == "transcript.jsonl", found);
    }
    fn session_cwd(&self, path: &Path) -> Option<PathBuf> {
        let mut cwd = None;
        let mut read = FileRead::default();
        let _ = jsonl::for_each_line(path, &Cursor::default(), &mut read, |_, value, _| {
            if cwd.is_none() {
                cwd = calls(&value).iter().find_map(|(_, args)| repository_of(args));
            }
        });
        cwd
    }
    fn read(&self, path: &Path, _cursor: &Cursor) -> Result<FileRead, ReadError> {
        read(path)
    }
}

/// A step's calls: (name, arguments with their JSON-quoted values decoded).
fn calls(step: &Value) -> Vec<(String, Value)> {
    step.get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|call| {
            let name = call.get("name").and_then(Value::as_str).unwrap_or("tool").to_string();
            let mut args = call.get("args").cloned().unwrap_or(Value::Null);
            if let Some(map) = args.as_object_mut() {
                for v in map.values_mut() {
                    if let Some(decoded) = v.as_str().and_then(|s| serde_json::from_str::<Value>(s).ok()) {
                        *v = decoded;
                    }
                }
            }
            (name, args)
        })
        .collect()
}

/// The git repository holding the first absolute path among `args`' values.
fn repository_of(args: &Value) -> Option<PathBuf> {
    let path = args
        .as_object()?
        .values()
        .filter_map(Value::as_str)
        .map(|s| s.strip_prefix("file://").unwrap_or(s))
        .find(|s| s.starts_with('/'))?;
    Path::new(path)
        .ancestors()
        .find(|a| a.join(".git").exists())
        .map(Path::to_path_buf)
}

/// The request inside `<USER_REQUEST>`, else the whole input.
fn request(content: &str) -> &str {
    content
        .split("<USER_REQUEST>")
        .nth(1)
        .and_then(|rest| rest.split("</USER_REQUEST>").next())
        .unwrap_or(content)
}

fn read(path: &Path) -> Result<FileRead, ReadError> {
    let id = path
        .ancestors()
        .nth(3)
        .and_then(Path::file_name)
        .and_then(|n| n.to_str())
        .unwrap_or("conversation")
        .to_string();
    let mut b = Builder::new(Source::ANTIGRAVITY, &id, path);
    let mut waiting: Vec<String> = Vec::new(); // calls not yet answered, in order
    let mut read = FileRead::default();
    let next = jsonl::for_each_line(path, &Cursor::default(), &mut read, |line, step, read| {
        let at = time(step.get("created_at"));
        let content = step.get("content").and_then(Value::as_str).unwrap_or("");
        let raw_id = format!("L{line}");
        match step.get("type").and_then(Value::as_str).unwrap_or("") {
            "USER_INPUT" => {
                b.session.started = b.session.started.or(at);
                b.message(Role::User, request(content), &raw_id, at, None);
                waiting.clear();
            }
            "PLANNER_RESPONSE" => {
                let turn = b.message(Role::Assistant, content, &raw_id, at, None);
                for (i, (name, args)) in calls(&step).into_iter().enumerate() {
                    if b.session.cwd.is_none() {
                        b.session.cwd = repository_of(&args);
                    }
                    let call_id = format!("L{line}-{i}");
                    b.call(turn, &call_id, &name, args);
                    waiting.push(call_id);
                }
            }
            "CONVERSATION_HISTORY" | "CHECKPOINT" | "SYSTEM_MESSAGE" | "EPHEMERAL_MESSAGE" => {
                read.skip("antigravity system step");
            }
            "" => read.warn(path, Some(line), "step has no `type`; skipped"),
            _ if !waiting.is_empty() => {
                let call_id = waiting.remove(0);
                let failed = step.get("status").and_then(Value::as_str) == Some("ERROR");
                b.result(&call_id, content, failed);
            }
            other => read.skip(format!("antigravity step `{other}` without a call")),
        }
    })?;
    read.cursor = next;
    b.finish(&mut read);
    Ok(read)
}

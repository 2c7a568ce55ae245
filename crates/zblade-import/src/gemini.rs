//! Gemini CLI: `~/.gemini/tmp/<project>/chats/session-<time>-<id8>.json` (versions before
//! 0.40: one JSON object `{sessionId, startTime, messages[]}`) or `.jsonl` (0.40 on: a first
//! line with the session's fields, then one message per line, `{"$set": {...}}` updates and
//! `{"$rewindTo": id}` markers that drop that message and all after it; a message written again
//! under the same id replaces the earlier one). `~/.gemini` is `$GEMINI_CLI_HOME/.gemini` when
//! that is set. `<project>` is a hash of the working directory in older versions and a name
//! in newer ones, which keep the directory in `<project>/.project_root`.
//!
//! Messages are `{id, timestamp, type, content}`: `user`, `gemini` (with `model`, `thoughts`,
//! `toolCalls[] {id, name, args, status, result: [{functionResponse: {id, response: {output}}}]}`),
//! and `info`/`error`/`warning` notices (skipped). Content is a string or a list of parts
//! (`{text}`, `{text, thought: true}`, `{functionCall}`); Qwen Code's records use the same parts.

use std::path::{Path, PathBuf};

use serde_json::Value;
use zblade_core::Role;

use crate::agent::{Agent, HookEvent, HooksConfig, McpConfig, files_named};
use crate::detect::Places;
use crate::transcript::{Builder, time};
use crate::{Cursor, FileRead, ReadError, Source};

impl Source {
    /// Google's Gemini CLI (`~/.gemini/tmp/*/chats/`).
    pub const GEMINI: Source = Source("gemini-cli");
}

/// Gemini CLI: its chats, read whole when they change (a `.jsonl` chat can rewind).
pub(crate) struct Gemini;

impl Agent for Gemini {
    fn source(&self) -> Source {
        Source::GEMINI
    }
    fn label(&self) -> &'static str {
        "Gemini CLI"
    }
    fn id_tag(&self) -> &'static str {
        "gemini"
    }
    fn stores(&self, places: &Places, _project: Option<&Path>) -> Vec<PathBuf> {
        vec![gemini_dir(places).join("tmp")]
    }
    fn session_files(&self, store: &Path, found: &mut Vec<PathBuf>) {
        let mut all = Vec::new();
        files_named(
            store,
            |name| name.starts_with("session-") && (name.ends_with(".json") || name.ends_with(".jsonl")),
            &mut all,
        );
        found.extend(
            all.into_iter()
                .filter(|p| p.components().any(|c| c.as_os_str() == "chats")),
        );
    }
    fn session_cwd(&self, path: &Path) -> Option<PathBuf> {
        project_dir(path)
    }
    fn read(&self, path: &Path, _cursor: &Cursor) -> Result<FileRead, ReadError> {
        read(path)
    }
    fn mcp(&self) -> Option<McpConfig> {
        Some(McpConfig {
            // Gemini CLI applies a project's settings only in folders the user trusts.
            prefers_user_file: true,
            ..McpConfig::json(".gemini/settings.json", "mcpServers", false, settings_file, gemini_dir)
        })
    }
    fn hooks(&self) -> Option<HooksConfig> {
        const EVENTS: &[HookEvent] = &[
            // Its prompt event answers in JSON only (`hookSpecificOutput.additionalContext`).
            HookEvent::prompt("BeforeAgent"),
            HookEvent::stop("AfterAgent"),
            // `BeforeTool` cannot add context; `AfterTool` appends it to what a read returned.
            HookEvent::file_tool("AfterTool", "read_file|read_many_files"),
        ];
        Some(HooksConfig {
            project_file: ".gemini/settings.json",
            user_file: settings_file,
            events: EVENTS,
            timeout_in_ms: true,
            prefers_user_file: true,
        })
    }
}

/// The user's settings: `~/.gemini/settings.json`.
fn settings_file(places: &Places) -> PathBuf {
    gemini_dir(places).join("settings.json")
}

/// `$GEMINI_CLI_HOME/.gemini`, else `~/.gemini`.
pub(crate) fn gemini_dir(places: &Places) -> PathBuf {
    match places.vars.get("GEMINI_CLI_HOME") {
        Some(home) => home.join(".gemini"),
        None => places.home.join(".gemini"),
    }
}

/// The working directory of the chat at `path`: what its project folder records, else the
/// workspace the chat's first messages name.
fn project_dir(path: &Path) -> Option<PathBuf> {
    recorded_dir(path).or_else(|| {
        let value = match crate::read_whole_json(path, "a Gemini CLI chat") {
            Ok((value, _)) => value,
            Err(_) => first_lines(path)?,
        };
        workspace_in(value.get("messages").and_then(Value::as_array)?)
    })
}

/// The directory the chat's project folder records: `<project>/.project_root`, else the entry
/// for `<project>` in `~/.gemini/projects.json`.
fn recorded_dir(path: &Path) -> Option<PathBuf> {
    let chats = path.ancestors().find(|a| a.file_name().is_some_and(|n| n == "chats"))?;
    let project = chats.parent()?;
    if let Ok(root) = std::fs::read_to_string(project.join(".project_root")) {
        let root = root.trim();
        if !root.is_empty() {
            return Some(PathBuf::from(root));
        }
    }
    let name = project.file_name()?.to_str()?;
    let registry = project.parent()?.parent()?.join("projects.json");
    std::fs::read(&registry)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|v| registered_dir(&v, name))
}

/// The workspace the first messages' session context names.
fn workspace_in(messages: &[Value]) -> Option<PathBuf> {
    messages
        .iter()
        .take(3)
        .find_map(|m| workspace_named(&parts_text(m.get("content").unwrap_or(&Value::Null)).0))
}

/// The `.jsonl` form's first messages, as a `{messages}` object.
fn first_lines(path: &Path) -> Option<Value> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).ok()?;
    let messages: Vec<Value> = std::io::BufReader::new(file)
        .lines()
        .take(20)
        .map_while(Result::ok)
        .filter_map(|l| serde_json::from_str::<Value>(&l).ok())
        .filter(|v| v.get("type").is_some())
        .collect();
    Some(serde_json::json!({ "messages": messages }))
}

/// `projects.json`: `{"projects": {"/dir": "name"}}` (or the map alone).
fn registered_dir(registry: &Value, name: &str) -> Option<PathBuf> {
    let map = registry.get("projects").unwrap_or(registry).as_object()?;
    map.iter()
        .find(|(_, v)| v.as_str() == Some(name))
        .map(|(dir, _)| PathBuf::from(dir))
}

/// The workspace a session-context message names (`Workspace Directories:` list, or older
/// versions' "I'm currently working in the directory: …").
fn workspace_named(text: &str) -> Option<PathBuf> {
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.contains("Workspace Directories:") {
            let dir = lines.next()?.trim().trim_start_matches('-').trim();
            return (!dir.is_empty()).then(|| PathBuf::from(dir));
        }
        if let Some(rest) = line.split("working in the directory:").nth(1) {
            let dir = rest.trim();
            return (!dir.is_empty()).then(|| PathBuf::from(dir));
        }
    }
    None
}

/// The text of a Gemini content value (string or parts), thoughts left out, and the calls
/// its `functionCall` parts make as (id, name, args).
pub(crate) fn parts_text(content: &Value) -> (String, Vec<(String, String, Value)>) {
    match content {
        Value::String(s) => (s.trim().to_string(), Vec::new()),
        Value::Array(parts) => {
            let mut text = Vec::new();
            let mut calls = Vec::new();
            for part in parts {
                if let Some(call) = part.get("functionCall") {
                    let string = |k: &str| call.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                    calls.push((
                        string("id"),
                        string("name"),
                        call.get("args").cloned().unwrap_or(Value::Null),
                    ));
                } else if part.get("thought").and_then(Value::as_bool) != Some(true)
                    && let Some(t) = part.get("text").and_then(Value::as_str)
                    && !t.trim().is_empty()
                {
                    text.push(t.trim());
                }
            }
            (text.join("\n"), calls)
        }
        _ => (String::new(), Vec::new()),
    }
}

/// The output a `functionResponse` carries: `response.output`, `response.error`, or its JSON.
pub(crate) fn response_output(response: &Value) -> (String, bool) {
    let body = response.get("response").unwrap_or(&Value::Null);
    if let Some(error) = body.get("error").and_then(Value::as_str) {
        return (error.to_string(), true);
    }
    match body.get("output") {
        Some(Value::String(s)) => (s.clone(), false),
        Some(other) => (other.to_string(), false),
        None if body.is_null() => (String::new(), false),
        None => (body.to_string(), false),
    }
}

fn read(path: &Path) -> Result<FileRead, ReadError> {
    let is_jsonl = path.extension().is_some_and(|e| e == "jsonl");
    let (meta, messages, mut read) = if is_jsonl { replay(path)? } else { whole(path)? };
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("session");
    let id = meta.get("sessionId").and_then(Value::as_str).unwrap_or(stem);
    let mut b = Builder::new(Source::GEMINI, id, path);
    b.session.started = time(meta.get("startTime"));
    // The messages are read already: only the project folder is looked at again.
    b.session.cwd = recorded_dir(path).or_else(|| workspace_in(&messages));
    b.session.title = meta.get("summary").and_then(Value::as_str).map(str::to_string);
    for (i, m) in messages.iter().enumerate() {
        let raw_id = m
            .get("id")
            .and_then(Value::as_str)
            .map_or_else(|| format!("{id}-{i}"), str::to_string);
        let at = time(m.get("timestamp"));
        let (text, _) = parts_text(m.get("content").unwrap_or(&Value::Null));
        let role = match m.get("type").and_then(Value::as_str) {
            Some("user") => Role::User,
            Some("gemini" | "model") => Role::Assistant,
            other => {
                read.skip(format!("gemini message type `{}`", other.unwrap_or("none")));
                continue;
            }
        };
        // Injected context, not typed by the user.
        let role = if role == Role::User && text.starts_with("<session_context>") {
            Role::System
        } else {
            role
        };
        let model = m.get("model").and_then(Value::as_str);
        let turn = b.message(role, &text, &raw_id, at, model);
        for call in m.get("toolCalls").and_then(Value::as_array).into_iter().flatten() {
            let call_id = call.get("id").and_then(Value::as_str).unwrap_or("");
            let name = call.get("name").and_then(Value::as_str).unwrap_or("tool");
            b.call(turn, call_id, name, call.get("args").cloned().unwrap_or(Value::Null));
            // Some versions list every response of the batch under each call: take this call's.
            let responses: Vec<&Value> = call
                .get("result")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|r| r.get("functionResponse"))
                .collect();
            let own = responses
                .iter()
                .find(|r| r.get("id").and_then(Value::as_str) == Some(call_id))
                .or(responses.first());
            if let Some(response) = own {
                let (output, error) = response_output(response);
                let failed = error || call.get("status").and_then(Value::as_str) == Some("error");
                b.result(call_id, &output, failed);
            }
        }
    }
    b.finish(&mut read);
    Ok(read)
}

/// A legacy chat: one JSON object.
fn whole(path: &Path) -> Result<(Value, Vec<Value>, FileRead), ReadError> {
    let (mut value, mut read) = crate::read_whole_json(path, "a Gemini CLI chat")?;
    let messages = match value.get_mut("messages").map(Value::take) {
        Some(Value::Array(m)) => m,
        _ => {
            read.warn(path, None, "field `messages`: missing or not a list; nothing to import");
            Vec::new()
        }
    };
    Ok((value, messages, read))
}

/// A `.jsonl` chat replayed: the session's fields, and its messages as they stand after every
/// update and rewind.
fn replay(path: &Path) -> Result<(Value, Vec<Value>, FileRead), ReadError> {
    let mut read = FileRead::default();
    let mut meta = Value::Object(Default::default());
    let mut messages: Vec<Value> = Vec::new();
    let next = crate::jsonl::for_each_line(path, &Cursor::default(), &mut read, |line, value, read| {
        if let Some(set) = value.get("$set").and_then(Value::as_object) {
            if let Some(meta) = meta.as_object_mut() {
                meta.extend(set.clone());
            }
        } else if let Some(target) = value.get("$rewindTo").and_then(Value::as_str) {
            if let Some(at) = messages
                .iter()
                .position(|m| m.get("id").and_then(Value::as_str) == Some(target))
            {
                messages.truncate(at);
            }
        } else if value.get("type").is_some() {
            let id = value.get("id").and_then(Value::as_str);
            match messages
                .iter()
                .position(|m| id.is_some() && m.get("id").and_then(Value::as_str) == id)
            {
                Some(at) => messages[at] = value,
                None => messages.push(value),
            }
        } else if value.get("sessionId").is_some() {
            meta = value;
        } else {
            read.warn(
                path,
                Some(line),
                "neither a message, an update nor the session's fields; skipped",
            );
        }
    })?;
    read.cursor = next;
    Ok((meta, messages, read))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspace_is_read_from_the_session_context() {
        let text = "<session_context>\n- **Workspace Directories:**\n  - /home/a/proj\n- **Directory Structure:**";
        assert_eq!(workspace_named(text), Some(PathBuf::from("/home/a/proj")));
        assert_eq!(
            workspace_named("I'm currently working in the directory: /srv/x"),
            Some(PathBuf::from("/srv/x"))
        );
        let registry = serde_json::json!({"projects": {"/home/a/proj": "proj"}});
        assert_eq!(registered_dir(&registry, "proj"), Some(PathBuf::from("/home/a/proj")));
    }
}

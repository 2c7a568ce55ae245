//! Qwen Code: `~/.qwen/projects/<encoded cwd>/chats/<sessionId>.jsonl` (`$QWEN_HOME` for
//! `~/.qwen`), appended one record per line: `{uuid, parentUuid, sessionId, timestamp, type,
//! cwd, model?, message: {role, parts}}` with `type` `user`, `assistant`, `tool_result` or
//! `system`. The parts are Gemini's (`{text}`, `{text, thought}`, `{functionCall}`,
//! `{functionResponse}`), Qwen Code being a fork of Gemini CLI.

use std::path::{Path, PathBuf};

use serde_json::Value;
use zblade_core::Role;

use crate::agent::{Agent, HookEvent, HooksConfig, McpConfig, files_named, jsonl_cwd};
use crate::detect::Places;
use crate::gemini::{parts_text, response_output};
use crate::transcript::{Builder, time};
use crate::{Cursor, FileRead, ReadError, SessionContext, Source, jsonl};

impl Source {
    /// Alibaba's Qwen Code (`~/.qwen/projects/*/chats/*.jsonl`).
    pub const QWEN: Source = Source("qwen-code");
}

/// Qwen Code: one JSON Lines file per session, read incrementally.
pub(crate) struct Qwen;

impl Agent for Qwen {
    fn source(&self) -> Source {
        Source::QWEN
    }
    fn label(&self) -> &'static str {
        "Qwen Code"
    }
    fn id_tag(&self) -> &'static str {
        "qwen"
    }
    fn incremental(&self) -> bool {
        true
    }
    // The only published Qwen Code files found are marked synthetic by their publisher.
    fn experimental(&self) -> bool {
        true
    }
    fn stores(&self, places: &Places, _project: Option<&Path>) -> Vec<PathBuf> {
        vec![qwen_dir(places).join("projects")]
    }
    fn session_files(&self, store: &Path, found: &mut Vec<PathBuf>) {
        let mut all = Vec::new();
        files_named(store, |name| name.ends_with(".jsonl"), &mut all);
        // Only the chats themselves: sub-agents' logs live elsewhere under the project.
        found.extend(
            all.into_iter()
                .filter(|p| p.parent().and_then(Path::file_name).is_some_and(|n| n == "chats")),
        );
    }
    fn session_cwd(&self, path: &Path) -> Option<PathBuf> {
        jsonl_cwd(path)
    }
    fn read(&self, path: &Path, cursor: &Cursor) -> Result<FileRead, ReadError> {
        read(path, cursor)
    }
    fn mcp(&self) -> Option<McpConfig> {
        Some(McpConfig {
            // Like Gemini CLI, whose settings it inherits: a project's apply in trusted folders.
            prefers_user_file: true,
            ..McpConfig::json(".qwen/settings.json", "mcpServers", false, settings_file, qwen_dir)
        })
    }
    fn hooks(&self) -> Option<HooksConfig> {
        const EVENTS: &[HookEvent] = &[
            HookEvent::prompt("UserPromptSubmit"),
            HookEvent::stop("Stop"),
            // Its `PreToolUse` answer must carry a permission decision, which is not
            // zblade's to give: context rides on the read's result instead.
            HookEvent::file_tool("PostToolUse", "read_file"),
        ];
        Some(HooksConfig {
            project_file: ".qwen/settings.json",
            user_file: settings_file,
            events: EVENTS,
            timeout_in_ms: false,
            prefers_user_file: true,
        })
    }
}

/// `$QWEN_HOME`, else `~/.qwen`.
fn qwen_dir(places: &Places) -> PathBuf {
    places.var_or_home("QWEN_HOME", ".qwen")
}

/// The user's settings: `~/.qwen/settings.json`.
fn settings_file(places: &Places) -> PathBuf {
    qwen_dir(places).join("settings.json")
}

fn read(path: &Path, cursor: &Cursor) -> Result<FileRead, ReadError> {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("session");
    let mut context = cursor.session.clone().unwrap_or_else(|| SessionContext {
        id: stem.to_string(),
        ..SessionContext::default()
    });
    let mut b = Builder::new(Source::QWEN, &context.id, path);
    let mut read = FileRead::default();
    let next = jsonl::for_each_line(path, cursor, &mut read, |line, value, read| {
        let at = time(value.get("timestamp"));
        if let Some(cwd) = value.get("cwd").and_then(Value::as_str) {
            context.cwd = Some(cwd.into());
        }
        context.started = context.started.or(at);
        if let Some(model) = value.get("model").and_then(Value::as_str) {
            context.model = Some(model.to_string());
        }
        let raw_id = value
            .get("uuid")
            .and_then(Value::as_str)
            .map_or_else(|| format!("L{line}"), str::to_string);
        let parts = value.pointer("/message/parts").unwrap_or(&Value::Null);
        match value.get("type").and_then(Value::as_str).unwrap_or("") {
            kind @ ("user" | "assistant") => {
                let (text, calls) = parts_text(parts);
                let role = if kind == "user" { Role::User } else { Role::Assistant };
                let model = (role == Role::Assistant).then_some(context.model.as_deref()).flatten();
                let turn = b.message(role, &text, &raw_id, at, model);
                for (id, name, args) in calls {
                    b.call(turn, &id, &name, args);
                }
            }
            "tool_result" => {
                for part in parts.as_array().into_iter().flatten() {
                    if let Some(response) = part.get("functionResponse") {
                        let id = response.get("id").and_then(Value::as_str).unwrap_or("");
                        let (output, error) = response_output(response);
                        if !b.result(id, &output, error) {
                            read.skip("qwen tool result without its call in this read");
                        }
                    }
                }
            }
            "" => read.warn(path, Some(line), "record has no `type`; skipped"),
            other => read.skip(format!("qwen record type `{other}`")),
        }
    })?;
    b.finish_resumable(context, next, &mut read);
    Ok(read)
}

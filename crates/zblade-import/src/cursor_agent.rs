//! Cursor's agent transcripts: `${CURSOR_CONFIG_DIR:-~/.cursor}/projects/<encoded
//! cwd>/agent-transcripts/**/<chatId>.jsonl`, written by the Cursor CLI (`cursor-agent`) and by
//! the editor's agent. Each line is `{role, message: {content}}`, content in the Anthropic
//! shape (`text`, `thinking`, `tool_use` with Cursor's tool names — `Shell`, `Read`,
//! `StrReplace`, `Write` with the whole file as `contents` — and `tool_result`). Lines have no
//! id and no time: ids are line numbers (the file only grows), and a user turn's
//! `<timestamp>…</timestamp>` block dates it and the answers after it.
//!
//! The editor's own chats, in its `state.vscdb` databases, are the second store of the same
//! agent, read by [`crate::cursor_ide`].

use std::path::{Path, PathBuf};

use chrono::{DateTime, FixedOffset, NaiveDateTime, TimeZone, Utc};
use serde_json::Value;
use zblade_core::Role;

use crate::agent::{Agent, McpConfig, files_named};
use crate::cursor_ide;
use crate::detect::Places;
use crate::transcript::{Builder, blocks};
use crate::{Cursor, FileRead, ReadError, SessionContext, Source, jsonl};

impl Source {
    /// Cursor (the editor's chats, the CLI's and the editor agent's transcripts; MCP).
    pub const CURSOR: Source = Source("cursor");
}

/// Cursor: transcripts read incrementally, and its MCP file.
pub(crate) struct CursorAgent;

impl Agent for CursorAgent {
    fn source(&self) -> Source {
        Source::CURSOR
    }
    fn label(&self) -> &'static str {
        "Cursor"
    }
    fn id_tag(&self) -> &'static str {
        "cursor"
    }
    fn incremental(&self) -> bool {
        true
    }
    fn stores(&self, places: &Places, _project: Option<&Path>) -> Vec<PathBuf> {
        let mut stores = vec![cursor_dir(places).join("projects")];
        stores.extend(
            cursor_ide::user_dirs(places)
                .into_iter()
                .map(|d| d.join("workspaceStorage")),
        );
        stores
    }
    fn session_files(&self, store: &Path, found: &mut Vec<PathBuf>) {
        if store.file_name().is_some_and(|n| n == "workspaceStorage") {
            cursor_ide::workspace_databases(store, found);
            return;
        }
        let mut all = Vec::new();
        files_named(store, |name| name.ends_with(".jsonl"), &mut all);
        found.extend(
            all.into_iter()
                .filter(|p| p.components().any(|c| c.as_os_str() == "agent-transcripts")),
        );
    }
    fn session_cwd(&self, path: &Path) -> Option<PathBuf> {
        if cursor_ide::is_workspace_database(path) {
            return cursor_ide::workspace_folder(path);
        }
        let encoded = path
            .ancestors()
            .find(|a| a.file_name().is_some_and(|n| n == "agent-transcripts"))?
            .parent()?
            .file_name()?
            .to_str()?;
        decode_dir(encoded)
    }
    fn read(&self, path: &Path, cursor: &Cursor) -> Result<FileRead, ReadError> {
        if cursor_ide::is_workspace_database(path) {
            return cursor_ide::read(path, cursor);
        }
        read(path, cursor, || self.session_cwd(path))
    }
    fn stamp(&self, path: &Path) -> std::io::Result<(u64, i64)> {
        if cursor_ide::is_workspace_database(path) {
            return cursor_ide::stamp(path);
        }
        crate::file_stamp(path)
    }
    fn mcp(&self) -> Option<McpConfig> {
        Some(McpConfig::json(
            ".cursor/mcp.json",
            "mcpServers",
            false,
            |places| cursor_dir(places).join("mcp.json"),
            cursor_dir,
        ))
    }
}

/// `$CURSOR_CONFIG_DIR`, else `~/.cursor`.
pub(crate) fn cursor_dir(places: &Places) -> PathBuf {
    places.var_or_home("CURSOR_CONFIG_DIR", ".cursor")
}

/// A folder name made from a path by turning `/` (and `.`, spaces) into `-`, back into the
/// path, found by trying which dashes were separators against the folders that exist. None
/// when no existing folder matches (the project was moved or deleted).
pub(crate) fn decode_dir(encoded: &str) -> Option<PathBuf> {
    let parts: Vec<&str> = encoded.trim_start_matches('-').split('-').collect();
    fn walk(at: PathBuf, parts: &[&str]) -> Option<PathBuf> {
        if parts.is_empty() {
            return Some(at);
        }
        // Longest names first: `my-app` before `my/app` when both exist is rare; either way the
        // first that leads to a complete existing path wins.
        for take in (1..=parts.len()).rev() {
            for joiner in ["-", ".", " ", "_"] {
                let name = parts[..take].join(joiner);
                let next = at.join(&name);
                if next.is_dir()
                    && let Some(found) = walk(next, &parts[take..])
                {
                    return Some(found);
                }
                if take == 1 {
                    break; // one part: every joiner gives the same name
                }
            }
        }
        None
    }
    walk(PathBuf::from("/"), &parts)
}

/// `<timestamp>Sunday, Jul 26, 2026, 1:06 PM (UTC+3)</timestamp>` in a user turn.
fn stamp(text: &str) -> Option<DateTime<Utc>> {
    let inner = text.split("<timestamp>").nth(1)?.split("</timestamp>").next()?;
    let (when, zone) = inner.split_once(" (UTC")?;
    let when = when.split_once(", ").map_or(when, |(_, rest)| rest); // drop the weekday
    let local = NaiveDateTime::parse_from_str(when.trim(), "%b %d, %Y, %I:%M %p").ok()?;
    let zone = zone.trim_end_matches(')');
    let (sign, rest) = match zone.chars().next() {
        Some('-') => (-1, &zone[1..]),
        Some('+') => (1, &zone[1..]),
        _ => (1, zone),
    };
    let (h, m) = rest.split_once(':').unwrap_or((rest, "0"));
    let seconds = if rest.is_empty() {
        0
    } else {
        sign * (h.parse::<i32>().ok()? * 3600 + m.parse::<i32>().ok()? * 60)
    };
    let offset = FixedOffset::east_opt(seconds)?;
    offset
        .from_local_datetime(&local)
        .single()
        .map(|t| t.with_timezone(&Utc))
}

/// Reads from `cursor`; `cwd` is asked only when the cursor does not know the session yet
/// (decoding the folder name probes the file system).
fn read(path: &Path, cursor: &Cursor, cwd: impl FnOnce() -> Option<PathBuf>) -> Result<FileRead, ReadError> {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("session");
    let mut context = cursor.session.clone().unwrap_or_else(|| SessionContext {
        id: stem.to_string(),
        cwd: cwd(),
        ..SessionContext::default()
    });
    let file_time = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .map(DateTime::<Utc>::from);
    let mut b = Builder::new(Source::CURSOR, &context.id, path);
    let mut at = context.started;
    let mut read = FileRead::default();
    let next = jsonl::for_each_line(path, cursor, &mut read, |line, value, read| {
        let raw_id = format!("L{line}");
        let content = value.pointer("/message/content").unwrap_or(&Value::Null);
        let parsed = blocks(content);
        for (id, text, error) in &parsed.results {
            if !b.result(id, text, *error) {
                read.skip("cursor tool result without its call");
            }
        }
        let role = match value.get("role").and_then(Value::as_str) {
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            other => {
                read.skip(format!("cursor record role `{}`", other.unwrap_or("none")));
                return;
            }
        };
        if role == Role::User
            && let Some(t) = stamp(&parsed.text)
        {
            at = Some(t);
            context.started = context.started.or(at);
        }
        if parsed.text.is_empty() && parsed.calls.is_empty() {
            return;
        }
        let turn = b.message(role, &parsed.text, &raw_id, at.or(file_time), None);
        for (i, (id, name, args)) in parsed.calls.into_iter().enumerate() {
            // Calls carry no id in some versions: one made of the line keeps them apart.
            let id = if id.is_empty() { format!("L{line}-{i}") } else { id };
            b.call(turn, &id, &name, args);
        }
    })?;
    b.session.started = file_time;
    b.finish_resumable(context, next, &mut read);
    Ok(read)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turns_timestamp_block_is_read_with_its_offset() {
        let t = stamp("<timestamp>Sunday, Jul 26, 2026, 1:06 PM (UTC+3)</timestamp>\nhi").unwrap();
        assert_eq!(t.to_rfc3339(), "2026-07-26T10:06:00+00:00");
        assert!(stamp("no stamp").is_none());
    }

    #[test]
    fn encoded_folders_are_decoded_against_what_exists() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("my-app/src");
        std::fs::create_dir_all(&real).unwrap();
        let encoded = real.display().to_string().replace('/', "-");
        assert_eq!(decode_dir(&encoded), Some(real));
        assert_eq!(decode_dir("-nowhere-at-all-zz"), None);
    }
}

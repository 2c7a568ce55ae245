//! Cursor's editor chats (Composer, Agent, Ask), kept in two SQLite databases of its VS Code
//! user folder (`~/.config/Cursor/User` on Linux, `~/Library/Application Support/Cursor/User`
//! on macOS):
//!
//! - each workspace's `workspaceStorage/<hash>/state.vscdb`, whose `ItemTable` row
//!   `composer.composerData` lists the chats opened in that workspace (`allComposers`, each
//!   with `composerId`, `name`, `createdAt`, `lastUpdatedAt`), with `workspace.json` beside it
//!   naming the folder (`{"folder": "file:///…"}`);
//! - the user's `globalStorage/state.vscdb`, whose `cursorDiskKV` table holds each chat at
//!   `composerData:<composerId>` (its bubbles in order under `fullConversationHeadersOnly`,
//!   or inline under `conversation` in older versions) and each message at
//!   `bubbleId:<composerId>:<bubbleId>`: `type` 1 the user's, 2 the assistant's, `text`, and a
//!   tool call under `toolFormerData` (`name`, `toolCallId`, `rawArgs` and `result` as JSON
//!   text, `status`).
//!
//! zblade treats the workspace's database as the session file: it belongs to one project
//! (scoping works as for every other agent), and reading it reads that workspace's chats
//! from the global database, one value at a time, so a gigabyte store is never held in
//! memory: a long history is handed over in parts of about [`PART_BYTES`]. The file is new
//! when either database (or its write-ahead log) changed, and a read after the first looks
//! only at chats updated since shortly before the last one.
//! Shapes were checked against databases Cursor wrote (see docs/IMPORT.md).

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OpenFlags, OptionalExtension};
use serde_json::Value;
use zblade_core::Role;

use crate::agent::list_dir;
use crate::detect::Places;
use crate::transcript::{Builder, time};
use crate::{Cursor, FileRead, ReadError, Source, Touch, TouchKind, trim};

/// The name of both databases.
pub(crate) const DATABASE: &str = "state.vscdb";

/// A chat updated this long before the previous read is read again: Cursor stamps
/// `lastUpdatedAt` when a turn starts, and its bubbles keep arriving while the answer streams.
const REREAD_MARGIN_MS: i64 = 10 * 60 * 1000;

/// Cursor's user folders: `$XDG_CONFIG_HOME/Cursor/User` (or `~/.config`) and macOS's.
pub(crate) fn user_dirs(places: &Places) -> Vec<PathBuf> {
    vec![
        places.config_dir().join("Cursor/User"),
        places.home.join("Library/Application Support/Cursor/User"),
    ]
}

/// The workspace databases under a `workspaceStorage` folder.
pub(crate) fn workspace_databases(store: &Path, found: &mut Vec<PathBuf>) {
    for dir in list_dir(store) {
        let db = dir.join(DATABASE);
        if db.is_file() {
            found.push(db);
        }
    }
}

/// True for a workspace database (as opposed to a transcript).
pub(crate) fn is_workspace_database(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == DATABASE)
}

/// The folder a workspace database belongs to, from `workspace.json` beside it. None for
/// multi-root workspaces and remote folders (no local path to scope by).
pub(crate) fn workspace_folder(db: &Path) -> Option<PathBuf> {
    let bytes = std::fs::read(db.parent()?.join("workspace.json")).ok()?;
    let value: Value = serde_json::from_slice(&bytes).ok()?;
    file_uri_path(value.get("folder")?.as_str()?)
}

/// `file:///home/me/my%20app` → `/home/me/my app`; `file:///c%3A/Users/me` → `c:/Users/me`.
fn file_uri_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let path = crate::percent_decode(rest.strip_prefix("localhost").unwrap_or(rest));
    // A Windows drive comes as `/c:/…`.
    let path = match path.as_bytes() {
        [b'/', drive, b':', ..] if drive.is_ascii_alphabetic() => path[1..].to_string(),
        _ => path,
    };
    Some(PathBuf::from(path))
}

/// The user's global database for a workspace database (`User/workspaceStorage/<hash>/…` →
/// `User/globalStorage/state.vscdb`).
fn global_database(db: &Path) -> Option<PathBuf> {
    Some(db.parent()?.parent()?.parent()?.join("globalStorage").join(DATABASE))
}

/// Size and time of what a read depends on: both databases and their write-ahead logs
/// (sizes summed, the latest time), so a chat written to either is noticed.
pub(crate) fn stamp(db: &Path) -> std::io::Result<(u64, i64)> {
    let (mut size, mut mtime) = crate::file_stamp(db)?;
    let mut with_log = vec![wal(db)];
    if let Some(global) = global_database(db) {
        with_log.push(wal(&global));
        with_log.push(global);
    }
    for path in with_log {
        if let Ok((s, t)) = crate::file_stamp(&path) {
            size += s;
            mtime = mtime.max(t);
        }
    }
    Ok((size, mtime))
}

fn wal(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push("-wal");
    PathBuf::from(name)
}

/// Opens a database read-only; Cursor may be writing it (a busy database is waited for).
fn open(path: &Path) -> Result<Connection, ReadError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let db = Connection::open_with_flags(path, flags).map_err(|e| ReadError::new(path, e.to_string()))?;
    db.busy_timeout(std::time::Duration::from_secs(2))
        .map_err(|e| ReadError::new(path, e.to_string()))?;
    Ok(db)
}

/// One value of a key-value table; None when the key is absent or its value NULL.
fn value(db: &Connection, table: &str, key: &str) -> rusqlite::Result<Option<Vec<u8>>> {
    // SQLite gives TEXT or BLOB; both arrive as bytes.
    // Prepared once per connection: a store of 100,000 bubbles asks this as many times.
    db.prepare_cached(&format!("SELECT CAST(value AS BLOB) FROM {table} WHERE key = ?1"))?
        .query_row([key], |row| row.get::<_, Option<Vec<u8>>>(0))
        .optional()
        .map(Option::flatten)
}

/// A chat the workspace lists.
struct Listed {
    id: String,
    created: Option<i64>,
    updated: Option<i64>,
}

/// Bytes of values one read takes before it hands over what it has (`FileRead::more`), so a
/// workspace with years of chats is imported in parts instead of held in memory at once.
const PART_BYTES: u64 = 4 << 20;

/// Where a read that stopped early goes on: chats done (in the listed order) and the update
/// time below which chats are skipped, kept in the cursor's `last_record` as
/// `chats <done> since <ms>`.
fn resume_point(cursor: &Cursor) -> Option<(usize, Option<i64>)> {
    let rest = cursor.last_record.as_deref()?.strip_prefix("chats ")?;
    let (done, since) = rest.split_once(" since ")?;
    Some((done.parse().ok()?, since.parse().ok()))
}

/// Reads the chats of the workspace whose database is `path`.
pub(crate) fn read(path: &Path, cursor: &Cursor) -> Result<FileRead, ReadError> {
    read_in_parts(path, cursor, PART_BYTES)
}

/// [`read`], handing over once `part_bytes` of values were read.
fn read_in_parts(path: &Path, cursor: &Cursor, part_bytes: u64) -> Result<FileRead, ReadError> {
    let (size, mtime) = stamp(path).map_err(|e| ReadError::new(path, e.to_string()))?;
    let mut read = FileRead::default();
    let workspace = open(path)?;
    let mut listed = match value(&workspace, "ItemTable", "composer.composerData") {
        Ok(Some(bytes)) => listed_chats(path, &bytes, &mut read)?,
        Ok(None) => Vec::new(),
        Err(e) => return Err(ReadError::new(path, format!("table ItemTable: {e}"))),
    };
    drop(workspace);
    // Oldest first, so a chat started while a read goes on in parts comes last.
    listed.sort_by(|a, b| (a.created, &a.id).cmp(&(b.created, &b.id)));
    read.cursor = Cursor {
        offset: size,
        mtime_ms: mtime,
        ..Cursor::default()
    };
    if listed.is_empty() {
        return Ok(read);
    }
    let Some(global_path) = global_database(path).filter(|g| g.is_file()) else {
        read.warn(
            path,
            None,
            "Cursor's globalStorage/state.vscdb is missing: the chats it lists cannot be read",
        );
        return Ok(read);
    };
    let global = open(&global_path)?;
    let cwd = workspace_folder(path);
    // The first read takes every chat; later ones those updated since shortly before the
    // last; a read in parts goes on where the last part stopped.
    let (skip, since) =
        resume_point(cursor).unwrap_or_else(|| (0, (cursor.mtime_ms > 0).then(|| cursor.mtime_ms - REREAD_MARGIN_MS)));
    let total = listed.len();
    for (i, chat) in listed.into_iter().enumerate().skip(skip) {
        if since.is_some_and(|since| chat.updated.is_some_and(|u| u < since)) {
            continue;
        }
        read_chat(&global, &global_path, path, &chat.id, cwd.as_deref(), &mut read)?;
        if read.bytes >= part_bytes && i + 1 < total {
            read.more = true;
            let since = since.map_or_else(|| "all".to_string(), |s| s.to_string());
            // Offset 0: until the last part is read, the file still has news.
            read.cursor = Cursor {
                last_record: Some(format!("chats {} since {since}", i + 1)),
                ..Cursor::default()
            };
            break;
        }
    }
    Ok(read)
}

/// The chats `composer.composerData` lists; a value that is not the expected JSON is refused
/// with the key named.
fn listed_chats(path: &Path, bytes: &[u8], read: &mut FileRead) -> Result<Vec<Listed>, ReadError> {
    let list: Value = serde_json::from_slice(bytes)
        .map_err(|e| ReadError::new(path, format!("ItemTable key composer.composerData: not JSON ({e})")))?;
    read.bytes += bytes.len() as u64;
    let Some(all) = list.get("allComposers").and_then(Value::as_array) else {
        read.warn(
            path,
            None,
            "ItemTable key composer.composerData: field `allComposers` missing or not a list",
        );
        return Ok(Vec::new());
    };
    Ok(all
        .iter()
        .filter_map(|c| {
            let id = c.get("composerId")?.as_str()?;
            // Ids become keys and file-safe message ids: anything else is not Cursor's.
            if id.is_empty() || id.len() > 100 || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
                read.skip("cursor chat with an invalid composerId");
                return None;
            }
            Some(Listed {
                id: id.to_string(),
                created: c.get("createdAt").and_then(Value::as_i64),
                updated: c.get("lastUpdatedAt").and_then(Value::as_i64),
            })
        })
        .collect())
}

/// Reads one chat from the global database into `read`. A missing or broken record is a
/// warning naming its key; only an unreadable database fails the read.
fn read_chat(
    global: &Connection,
    global_path: &Path,
    workspace_db: &Path,
    id: &str,
    cwd: Option<&Path>,
    read: &mut FileRead,
) -> Result<(), ReadError> {
    let key = format!("composerData:{id}");
    let fetch = |key: &str| value(global, "cursorDiskKV", key).map_err(|e| ReadError::new(global_path, e.to_string()));
    let Some(bytes) = fetch(&key)? else {
        read.skip("cursor chat listed without its composerData");
        return Ok(());
    };
    read.bytes += bytes.len() as u64;
    let chat: Value = match serde_json::from_slice(&bytes) {
        Ok(chat) => chat,
        Err(e) => {
            read.warn(global_path, None, format!("cursorDiskKV key {key}: not JSON ({e})"));
            return Ok(());
        }
    };
    drop(bytes);
    let mut b = Builder::new(Source::CURSOR, id, workspace_db);
    b.session.cwd = cwd.map(Path::to_path_buf);
    b.session.title = chat.get("name").and_then(Value::as_str).map(str::to_string);
    b.session.started = time(chat.get("createdAt"));
    let mut at = b.session.started;
    let inline = chat
        .get("conversation")
        .and_then(Value::as_array)
        .filter(|c| !c.is_empty());
    if let Some(bubbles) = inline {
        for bubble in bubbles {
            add_bubble(&mut b, bubble, &mut at, global_path, &key, read);
        }
    } else {
        let headers = chat.get("fullConversationHeadersOnly").and_then(Value::as_array);
        for header in headers.into_iter().flatten() {
            let Some(bubble_id) = header.get("bubbleId").and_then(Value::as_str) else {
                read.skip("cursor bubble header without bubbleId");
                continue;
            };
            let bubble_key = format!("bubbleId:{id}:{bubble_id}");
            let Some(bytes) = fetch(&bubble_key)? else {
                read.skip("cursor bubble listed but not stored");
                continue;
            };
            read.bytes += bytes.len() as u64;
            match serde_json::from_slice::<Value>(&bytes) {
                Ok(bubble) => add_bubble(&mut b, &bubble, &mut at, global_path, &bubble_key, read),
                Err(e) => read.warn(
                    global_path,
                    None,
                    format!("cursorDiskKV key {bubble_key}: not JSON ({e})"),
                ),
            }
        }
    }
    b.finish(read);
    Ok(())
}

/// One bubble: a user message, or an assistant message with its text and tool call.
fn add_bubble(
    b: &mut Builder,
    bubble: &Value,
    at: &mut Option<DateTime<Utc>>,
    db: &Path,
    key: &str,
    read: &mut FileRead,
) {
    let role = match bubble.get("type").and_then(Value::as_i64) {
        Some(1) => Role::User,
        Some(2) => Role::Assistant,
        other => {
            read.warn(
                db,
                None,
                format!("cursorDiskKV key {key}: field `type` is {other:?}, not 1 or 2"),
            );
            return;
        }
    };
    // Bubbles are dated by `createdAt` in newer versions and by the request's timing in
    // older ones; an undated bubble takes the time of the one before it.
    let when = time(bubble.get("createdAt"))
        .or_else(|| time(bubble.pointer("/timingInfo/clientRpcSendTime")))
        .or_else(|| time(bubble.pointer("/timingInfo/clientStartTime")).filter(|t| t.timestamp() > 1_000_000_000));
    if when.is_some() {
        *at = when;
    }
    let raw_id = bubble
        .get("bubbleId")
        .and_then(Value::as_str)
        .unwrap_or_else(|| key.rsplit(':').next().unwrap_or(key));
    let text = bubble.get("text").and_then(Value::as_str).unwrap_or("");
    let model = bubble.pointer("/modelInfo/modelName").and_then(Value::as_str);
    let tool = bubble.get("toolFormerData").filter(|t| t.get("name").is_some());
    if role == Role::User {
        b.message(role, text, raw_id, *at, None);
        return;
    }
    if text.trim().is_empty() && tool.is_none() {
        read.skip("cursor bubble with neither text nor a call (thinking, status)");
        return;
    }
    let turn = b.message(role, text, raw_id, *at, model);
    if let Some(tool) = tool {
        add_call(b, turn, raw_id, tool);
    }
}

/// A bubble's tool call and its result; an edit's new code (between Cursor's `// ... existing
/// code ...` markers) and a read's lines become touches.
fn add_call(b: &mut Builder, turn: usize, bubble_id: &str, tool: &Value) {
    let name = tool.get("name").and_then(Value::as_str).unwrap_or("tool");
    let call_id = tool
        .get("toolCallId")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .unwrap_or(bubble_id);
    let arguments = match tool.get("rawArgs") {
        Some(Value::String(raw)) => trim::arguments_from_json_string(raw),
        Some(other) => other.clone(),
        None => Value::Object(Default::default()),
    };
    let edit = arguments.get("code_edit").and_then(Value::as_str).map(str::to_string);
    let start_line = arguments
        .get("start_line_one_indexed")
        .and_then(|v| v.as_u64().or_else(|| v.as_str()?.parse().ok()));
    let path = crate::path_argument(&arguments).map(str::to_string);
    b.call(turn, call_id, name, arguments);
    if let (Some(path), Some(edit)) = (&path, edit) {
        for segment in edit_segments(&edit) {
            b.session.turns[turn].touches.push(Touch {
                path: path.clone(),
                lines: None,
                text: Some(segment),
                kind: TouchKind::Edit,
            });
        }
    }
    let status = tool.get("status").and_then(Value::as_str).unwrap_or("");
    let result: Option<Value> = match tool.get("result") {
        Some(Value::String(raw)) => Some(serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.clone()))),
        Some(Value::Null) | None => None,
        Some(other) => Some(other.clone()),
    };
    let Some(result) = result else { return };
    // A read's result is `{contents}`; a command's `{output}`; the rest is kept as JSON.
    let text = match result.get("contents").and_then(Value::as_str) {
        Some(contents) => contents.to_string(),
        None => crate::transcript::result_text(&result),
    };
    let before = b.session.turns[turn].touches.len();
    b.result(call_id, &text, status == "error");
    // The read's lines start where its arguments said.
    if let (Some(start), Some(touch)) = (start_line, b.session.turns[turn].touches.get_mut(before))
        && touch.kind == TouchKind::Read
        && start > 1
        && let Some(text) = &touch.text
    {
        let count = text.lines().count() as u32;
        let start = u32::try_from(start).unwrap_or(u32::MAX);
        touch.lines = (count > 0).then(|| [start, start.saturating_add(count - 1)]);
    }
}

/// The code of an `edit_file` call without Cursor's `... existing code ...` marker lines: each
/// run of new lines between them, when it has something besides blank lines.
fn edit_segments(edit: &str) -> Vec<String> {
    let mut segments = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    for line in edit.lines().chain(std::iter::once("// ... existing code ...")) {
        if line.contains("... existing code ...") {
            if current.iter().any(|l| !l.trim().is_empty()) {
                segments.push(current.join("\n"));
            }
            current.clear();
        } else {
            current.push(line);
        }
    }
    segments
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_become_paths() {
        assert_eq!(
            file_uri_path("file:///home/me/my%20app"),
            Some(PathBuf::from("/home/me/my app"))
        );
        assert_eq!(
            file_uri_path("file:///c%3A/Users/me/vite"),
            Some(PathBuf::from("c:/Users/me/vite"))
        );
        assert_eq!(file_uri_path("vscode-remote://ssh-remote+box/home/me"), None);
    }

    #[test]
    fn a_long_history_is_read_in_parts_that_add_up_to_all_of_it() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().join("User/workspaceStorage/abc");
        let global = dir.path().join("User/globalStorage");
        std::fs::create_dir_all(&workspace).unwrap();
        std::fs::create_dir_all(&global).unwrap();
        std::fs::write(workspace.join("workspace.json"), r#"{"folder":"file:///p"}"#).unwrap();
        let create = "CREATE TABLE ItemTable (key TEXT UNIQUE, value BLOB); CREATE TABLE cursorDiskKV (key TEXT UNIQUE, value BLOB);";
        let ws = Connection::open(workspace.join(DATABASE)).unwrap();
        ws.execute_batch(create).unwrap();
        let heads: Vec<String> = (0..5)
            .map(|i| format!(r#"{{"composerId":"c{i}","createdAt":{i},"lastUpdatedAt":{i}}}"#))
            .collect();
        ws.execute(
            "INSERT INTO ItemTable VALUES ('composer.composerData', ?1)",
            [format!(r#"{{"allComposers":[{}]}}"#, heads.join(","))],
        )
        .unwrap();
        let gl = Connection::open(global.join(DATABASE)).unwrap();
        gl.execute_batch(create).unwrap();
        for i in 0..5 {
            gl.execute(
                "INSERT INTO cursorDiskKV VALUES (?1, ?2)",
                [
                    format!("composerData:c{i}"),
                    r#"{"fullConversationHeadersOnly":[{"bubbleId":"b"}]}"#.to_string(),
                ],
            )
            .unwrap();
            gl.execute(
                "INSERT INTO cursorDiskKV VALUES (?1, ?2)",
                [format!("bubbleId:c{i}:b"), format!(r#"{{"type":1,"text":"chat {i}"}}"#)],
            )
            .unwrap();
        }
        let db = workspace.join(DATABASE);
        let (mut cursor, mut chats, mut parts) = (Cursor::default(), Vec::new(), 0);
        loop {
            let part = read_in_parts(&db, &cursor, 1).unwrap();
            parts += 1;
            chats.extend(part.sessions.iter().map(|s| s.id.clone()));
            cursor = part.cursor;
            if !part.more {
                break;
            }
            assert_eq!(cursor.offset, 0, "a part leaves the file with news");
        }
        assert_eq!((parts, chats.join(" ")), (5, "c0 c1 c2 c3 c4".to_string()));
        assert_eq!(cursor.offset, stamp(&db).unwrap().0);
    }

    #[test]
    fn edits_are_split_at_existing_code_markers() {
        let edit =
            "// ... existing code ...\nfn a() {}\n// ... existing code ...\n\n// ... existing code ...\nfn b() {}";
        assert_eq!(edit_segments(edit), ["fn a() {}", "fn b() {}"]);
        assert_eq!(edit_segments("whole\nfile"), ["whole\nfile"]);
    }
}

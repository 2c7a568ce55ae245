//! Aider: `.aider.chat.history.md` at the project's git root, one markdown file appended to by
//! every session. `# aider chat started at <local time>` opens a session (the only session
//! boundary and the only timestamp); `#### ` lines are the user's input, `> ` lines Aider's own
//! output, and everything else is the assistant's reply. SEARCH/REPLACE blocks in replies
//! are edits of the file named on the line before their fence.
//!
//! The file has no ids, so a session's id is derived from the file's path and the session's
//! start time, and a message's from its position in the session: the same file read twice
//! gives the same ids, and an appended session gets new ones.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Local, NaiveDateTime, TimeZone, Utc};
use zblade_core::{Message, Role};

use crate::agent::Agent;
use crate::detect::Places;
use crate::patch::search_replace_touches;
use crate::{Cursor, FileRead, ReadError, Session, Source, Turn};

const HEADER: &str = "# aider chat started at ";

pub(crate) fn read(path: &Path) -> Result<FileRead, ReadError> {
    let bytes = std::fs::read(path).map_err(|e| ReadError::new(path, e.to_string()))?;
    let mut read = FileRead::default();
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            read.warn(path, None, "invalid UTF-8 replaced by U+FFFD");
            String::from_utf8_lossy(e.as_bytes()).into_owned()
        }
    };
    let file_key = format!(
        "{:012x}",
        xxhash_rust::xxh3::xxh3_64(path.to_string_lossy().as_bytes()) >> 16
    );
    let mut builder: Option<Builder> = None;
    let mut seen_ids: std::collections::HashMap<String, u32> = std::collections::HashMap::new();
    for line in text.lines() {
        if let Some(stamp) = line.strip_prefix(HEADER) {
            if let Some(b) = builder.take() {
                read.sessions.push(b.finish());
            }
            let started = parse_local(stamp.trim());
            let base = started.map_or_else(
                || "unknown".to_string(),
                |t| t.with_timezone(&Local).format("%Y%m%d%H%M%S").to_string(),
            );
            let n = seen_ids.entry(base.clone()).or_default();
            *n += 1;
            let id = if *n == 1 {
                format!("{file_key}-{base}")
            } else {
                format!("{file_key}-{base}-{n}")
            };
            builder = Some(Builder::new(path, &id, started));
            continue;
        }
        // A file that starts mid-session (trimmed by hand) still has a first session.
        builder
            .get_or_insert_with(|| Builder::new(path, &format!("{file_key}-head"), None))
            .line(line);
    }
    if let Some(b) = builder.take() {
        read.sessions.push(b.finish());
    }
    read.sessions.retain(|s| !s.turns.is_empty());
    read.bytes = text.len() as u64;
    read.cursor = Cursor {
        offset: text.len() as u64,
        line: text.lines().count() as u64,
        ..Cursor::default()
    };
    Ok(read)
}

/// Aider writes the header in local time without a zone.
fn parse_local(stamp: &str) -> Option<DateTime<Utc>> {
    let naive = NaiveDateTime::parse_from_str(stamp, "%Y-%m-%d %H:%M:%S").ok()?;
    Local
        .from_local_datetime(&naive)
        .earliest()
        .map(|t| t.with_timezone(&Utc))
}

#[derive(PartialEq, Clone, Copy)]
enum Block {
    User,
    Output,
    Reply,
}

struct Builder {
    session: Session,
    block: Option<Block>,
    lines: Vec<String>,
    model: Option<String>,
}

impl Builder {
    fn new(path: &Path, id: &str, started: Option<DateTime<Utc>>) -> Builder {
        let mut session = Session::new(Source::AIDER, id, path);
        session.started = started;
        session.cwd = path.parent().map(Path::to_path_buf);
        Builder {
            session,
            block: None,
            lines: Vec::new(),
            model: None,
        }
    }

    fn line(&mut self, line: &str) {
        let (kind, text) = if let Some(input) = line.strip_prefix("#### ") {
            (Block::User, input.trim_end())
        } else if line == ">" || line.starts_with("> ") {
            (Block::Output, line.get(2..).unwrap_or("").trim_end())
        } else {
            (Block::Reply, line)
        };
        if kind == Block::Output
            && let Some(model) = text.strip_prefix("Main model: ")
        {
            self.model = model.split(" with ").next().map(str::to_string);
        }
        if self.block != Some(kind) {
            self.flush();
            self.block = Some(kind);
        }
        if kind == Block::User && text == "<blank>" {
            return;
        }
        self.lines.push(text.to_string());
    }

    fn flush(&mut self) {
        let text = self.lines.join("\n").trim().to_string();
        self.lines.clear();
        let Some(block) = self.block else { return };
        if text.is_empty() {
            return;
        }
        let role = match block {
            Block::User => Role::User,
            Block::Output => Role::Tool,
            Block::Reply => Role::Assistant,
        };
        let position = self.session.turns.len();
        let mut msg = Message::new(role, text);
        msg.id = crate::message_id(Source::AIDER, &format!("{}-{position}", self.session.id));
        msg.timestamp = self.session.started;
        let mut touches = Vec::new();
        if role == Role::Assistant {
            msg.model.clone_from(&self.model);
            touches = search_replace_touches(&msg.content, None);
        }
        self.session.turns.push(Turn { message: msg, touches });
    }

    fn finish(mut self) -> Session {
        self.flush();
        self.session
    }
}

impl Source {
    /// Aider (`.aider.chat.history.md` in the project).
    pub const AIDER: Source = Source("aider");
}

/// Aider: `.aider.chat.history.md` in the project itself (so nothing to look at without one).
pub(crate) struct Aider;

impl Agent for Aider {
    fn source(&self) -> Source {
        Source::AIDER
    }
    fn label(&self) -> &'static str {
        "Aider"
    }
    fn id_tag(&self) -> &'static str {
        "aider"
    }
    fn stores(&self, _places: &Places, project: Option<&Path>) -> Vec<PathBuf> {
        project.map(Path::to_path_buf).into_iter().collect()
    }
    fn session_files(&self, store: &Path, found: &mut Vec<PathBuf>) {
        let path = store.join(".aider.chat.history.md");
        if path.is_file() {
            found.push(path);
        }
    }
    fn session_cwd(&self, path: &Path) -> Option<PathBuf> {
        path.parent().map(Path::to_path_buf)
    }
    fn read(&self, path: &Path, _cursor: &Cursor) -> Result<FileRead, ReadError> {
        read(path)
    }
}

//! Readers of the session stores that coding agents keep on this machine: Claude Code, Codex
//! CLI, Aider, Continue, Cline (and Roo Code, which shares Cline's layout), Cursor, Gemini CLI,
//! Qwen Code, GitHub Copilot CLI, opencode, Kimi Code, pi (and OpenClaw and Droid, which write
//! pi's format), Grok CLI, Hermes Agent and Antigravity — one module each, listed in [`AGENTS`].
//!
//! Each reader turns one store file into [`Session`]s: zblade [`Message`]s with roles, text,
//! timestamps, model names and structured [`zblade_core::ToolCall`]s, plus the [`Touch`]es the
//! agent made on files (reads with line ranges, edits, patches, citations). This crate knows
//! the formats and nothing about projects: the engine decides which sessions belong to a
//! project, anchors touches against git history, and stores the result.
//!
//! Reading is incremental. JSON Lines stores are read from a [`Cursor`] (byte offset and line
//! number) and a half-written last line is left for the next read; whole-file stores (Continue,
//! Cline, Aider's markdown) are read again when their size or modification time changed. Every
//! text leaving a reader has passed [`redact`], so secrets never reach the disk or the index.
//!
//! ```
//! use zblade_import::{Cursor, Source, read_file};
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("0b5c.jsonl");
//! std::fs::write(&path, concat!(
//!     r#"{"type":"user","uuid":"u1","sessionId":"0b5c","cwd":"/p","timestamp":"2025-09-03T00:47:19.293Z","message":{"role":"user","content":"Use argon2 for passwords"}}"#, "\n",
//! )).unwrap();
//! let read = read_file(Source::CLAUDE_CODE, &path, &Cursor::default()).unwrap();
//! assert_eq!(read.sessions[0].turns[0].message.content, "Use argon2 for passwords");
//! ```

pub mod agent;
mod aider;
mod antigravity;
mod claude_code;
mod cline;
mod codex;
mod continue_dev;
mod copilot;
mod cursor_agent;
mod cursor_ide;
pub mod detect;
mod document;
mod gemini;
mod grok;
mod hermes;
mod jsonl;
mod kimi;
mod mcp_only;
mod opencode;
mod patch;
mod pi;
mod qwen;
pub mod redact;
mod transcript;
mod trim;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use zblade_core::{Message, ToolResult};

pub use agent::{Agent, HookEvent, HooksConfig, McpConfig, McpFormat};
pub use detect::{Detected, SessionFile, find_session_files};
pub use document::{Document, MAX_DOCUMENT_BYTES, SECTION_CHARS, read_document};
pub use jsonl::MAX_LINE_BYTES;
pub use transcript::path_argument;
pub use trim::{MAX_ARGUMENT_BYTES, MAX_RESULT_BYTES};

/// Every agent, in the order `--detect` and the app list them. A new agent is its module
/// (implementing [`Agent`]), its `mod` line above and its line here.
pub static AGENTS: &[&dyn Agent] = &[
    &claude_code::ClaudeCode,
    &codex::Codex,
    &aider::Aider,
    &continue_dev::Continue,
    &cline::Cline,
    &cursor_agent::CursorAgent,
    &gemini::Gemini,
    &qwen::Qwen,
    &copilot::Copilot,
    &opencode::Opencode,
    &kimi::Kimi,
    &pi::PI,
    &pi::OPENCLAW,
    &pi::DROID,
    &grok::Grok,
    &hermes::Hermes,
    &antigravity::Antigravity,
    &mcp_only::VSCODE,
];

/// A coding agent, by the name the command line, settings and provenance use (`claude-code`).
/// Each is one module implementing [`Agent`], listed once in [`AGENTS`]; only those modules
/// make a `Source`, so every one has an agent. [`Source::all`] lists those whose sessions
/// zblade imports; the others (Cursor, VS Code) are reached over MCP only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Source(&'static str);

impl Source {
    /// Every agent whose sessions zblade imports, in the order `--detect` lists them.
    pub fn all() -> impl Iterator<Item = Source> {
        AGENTS
            .iter()
            .filter(|agent| agent.reads_sessions())
            .map(|agent| agent.source())
    }

    /// The name used on the command line, in settings and in provenance.
    pub fn as_str(self) -> &'static str {
        self.0
    }

    /// Parses a source name.
    pub fn parse(name: &str) -> Option<Source> {
        Source::all().find(|s| s.as_str() == name)
    }

    /// The agent behind it.
    pub fn agent(self) -> &'static dyn Agent {
        *AGENTS
            .iter()
            .find(|agent| agent.source() == self)
            .expect("a Source is made only by a registered agent")
    }

    /// How people call the agent (`Claude Code`).
    pub fn label(self) -> &'static str {
        self.agent().label()
    }

    /// A short tag used in conversation ids (`conv_cc-…`).
    fn id_tag(self) -> &'static str {
        self.agent().id_tag()
    }

    /// True for stores of one JSON Lines file per session, read incrementally.
    pub fn is_incremental(self) -> bool {
        self.agent().incremental()
    }

    /// Its place in [`AGENTS`], which orders sources.
    fn position(self) -> usize {
        AGENTS
            .iter()
            .position(|agent| agent.source() == self)
            .unwrap_or(usize::MAX)
    }
}

impl Ord for Source {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.position().cmp(&other.position())
    }
}

impl PartialOrd for Source {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Serialize for Source {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0)
    }
}

impl<'de> Deserialize<'de> for Source {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Source, D::Error> {
        let name = String::deserialize(deserializer)?;
        Source::parse(&name).ok_or_else(|| {
            let known: Vec<&str> = Source::all().map(Source::as_str).collect();
            serde::de::Error::custom(format!("unknown agent `{name}` (zblade knows {})", known.join(", ")))
        })
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How an agent touched a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TouchKind {
    /// It read these lines.
    Read,
    /// It wrote or edited them (the text is the code after the edit).
    Edit,
    /// It cited them in its answer (`src/auth.rs:42`).
    Cite,
}

impl TouchKind {
    /// Words for a reference's `context`.
    pub fn describe(self) -> &'static str {
        match self {
            TouchKind::Read => "read by the agent",
            TouchKind::Edit => "edited by the agent",
            TouchKind::Cite => "cited by the agent",
        }
    }
}

/// A file the agent read, edited or cited, as the session shows it. The engine turns it into a
/// code reference when the path is inside the project and the lines can be found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Touch {
    /// The path as written: absolute, or relative to the session's working directory.
    pub path: String,
    /// Lines, 1-based and inclusive, when the session gives them.
    pub lines: Option<[u32; 2]>,
    /// The text of those lines (read content, or code after an edit), to find them by.
    pub text: Option<String>,
    /// Read, edit or citation.
    pub kind: TouchKind,
}

/// One message of a session and the files touched in it.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// The message, with a stable id derived from the source (`msg_…`).
    pub message: Message,
    /// Files the message's tool calls (or text) touched.
    pub touches: Vec<Touch>,
}

/// A tool result whose call was read earlier (an incremental read resumed between the two).
#[derive(Debug, Clone, PartialEq)]
pub struct LateResult {
    /// The call it answers.
    pub call_id: String,
    /// The result.
    pub result: ToolResult,
    /// Files the result shows were touched.
    pub touches: Vec<Touch>,
}

/// What one read of a store file found for one session.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    /// The agent.
    pub source: Source,
    /// The agent's own session id.
    pub id: String,
    /// The file read.
    pub file: PathBuf,
    /// The session's working directory, when known.
    pub cwd: Option<PathBuf>,
    /// The session's title, when the store has one.
    pub title: Option<String>,
    /// When the session started, when known.
    pub started: Option<DateTime<Utc>>,
    /// New turns, in order.
    pub turns: Vec<Turn>,
    /// Results of calls made in an earlier read.
    pub late_results: Vec<LateResult>,
    /// Secrets replaced by `[REDACTED:…]` in this read.
    pub redacted: usize,
}

impl Session {
    fn new(source: Source, id: &str, file: &Path) -> Session {
        Session {
            source,
            id: id.to_string(),
            file: file.to_path_buf(),
            cwd: None,
            title: None,
            started: None,
            turns: Vec::new(),
            late_results: Vec::new(),
            redacted: 0,
        }
    }

    /// The zblade conversation id of this session: stable, so a re-import updates the same
    /// conversation instead of adding a copy.
    pub fn conversation_id(&self) -> String {
        format!(
            "{}{}-{}",
            zblade_core::ids::CONVERSATION,
            self.source.id_tag(),
            safe_id(&self.id)
        )
    }

    /// Replaces secrets in every text the session carries; counts them in `redacted`.
    fn redact(&mut self) {
        let mut count = 0;
        if let Some(title) = &mut self.title {
            count += redact::redact_in_place(title);
        }
        for turn in &mut self.turns {
            count += redact::redact_message(&mut turn.message);
        }
        for late in &mut self.late_results {
            count += redact::redact_in_place(&mut late.result.text);
        }
        self.redacted += count;
    }
}

/// An id made safe for zblade ids (ASCII letters, digits, `_`, `-`; at most 80 characters):
/// unchanged when it already is, else a hash of it.
pub fn safe_id(raw: &str) -> String {
    let ok =
        !raw.is_empty() && raw.len() <= 80 && raw.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        raw.to_string()
    } else {
        format!("h{:016x}", xxhash_rust::xxh3::xxh3_64(raw.as_bytes()))
    }
}

/// A message id derived from a source's record id; empty (the engine assigns one) without.
pub(crate) fn message_id(source: Source, raw: &str) -> String {
    if raw.is_empty() {
        return String::new();
    }
    format!("{}{}-{}", zblade_core::ids::MESSAGE, source.id_tag(), safe_id(raw))
}

/// Where a read stopped, so the next one resumes there.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Cursor {
    /// Bytes consumed: the start of the first line not yet read completely.
    pub offset: u64,
    /// Lines consumed (the next line's number is `line + 1`).
    pub line: u64,
    /// The id of the last record read, kept in the import state for diagnosis (that a resumed
    /// file is still the same file is checked by the line end just before `offset`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_record: Option<String>,
    /// Size of the file when last read (whole-file stores are read again when it changes).
    pub size: u64,
    /// Modification time when last read, in milliseconds since the epoch.
    pub mtime_ms: i64,
    /// What earlier lines said about the session (Codex names it only on its first line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionContext>,
}

/// Session facts a resumed read needs from lines it does not read again.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionContext {
    /// The agent's session id.
    pub id: String,
    /// Working directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// The model last named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// When the session started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started: Option<DateTime<Utc>>,
}

/// Something wrong with one record; the rest of the file was still read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Warning {
    /// The store file.
    pub file: PathBuf,
    /// The line (1-based), when the problem is on one.
    pub line: Option<u64>,
    /// What was wrong.
    pub message: String,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.file.display(), self.message),
            None => write!(f, "{}: {}", self.file.display(), self.message),
        }
    }
}

/// The result of reading one store file.
#[derive(Debug, Clone, Default)]
pub struct FileRead {
    /// Sessions with new turns (or late results).
    pub sessions: Vec<Session>,
    /// Where to resume next time.
    pub cursor: Cursor,
    /// Records that could not be read.
    pub warnings: Vec<Warning>,
    /// Records skipped on purpose, by kind (`type: progress`, `event_msg`, unknown types).
    pub skipped: BTreeMap<String, u64>,
    /// Bytes read in this call.
    pub bytes: u64,
    /// The read stopped early to keep memory bounded (a store of many sessions in one file):
    /// read again from `cursor` for the rest.
    pub more: bool,
}

impl FileRead {
    pub(crate) fn warn(&mut self, file: &Path, line: Option<u64>, message: impl Into<String>) {
        self.warnings.push(Warning {
            file: file.to_path_buf(),
            line,
            message: message.into(),
        });
    }

    pub(crate) fn skip(&mut self, what: impl Into<String>) {
        *self.skipped.entry(what.into()).or_default() += 1;
    }
}

/// Why a store file could not be read at all.
#[derive(Debug)]
pub struct ReadError {
    /// The file.
    pub file: PathBuf,
    /// What went wrong.
    pub message: String,
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.message)
    }
}

impl std::error::Error for ReadError {}

impl ReadError {
    pub(crate) fn new(file: &Path, message: impl Into<String>) -> ReadError {
        ReadError {
            file: file.to_path_buf(),
            message: message.into(),
        }
    }
}

/// A whole-file JSON store (Continue, Cline): its value, and a read whose cursor covers the
/// file. Invalid UTF-8 is repaired rather than refused; a file that is not JSON is named with
/// the line where it stops being JSON.
pub(crate) fn read_whole_json(path: &Path, what: &str) -> Result<(serde_json::Value, FileRead), ReadError> {
    let bytes = std::fs::read(path).map_err(|e| ReadError::new(path, e.to_string()))?;
    let value = serde_json::from_slice(&bytes)
        .or_else(|_| serde_json::from_str(&String::from_utf8_lossy(&bytes)))
        .map_err(|e| ReadError::new(path, format!("line {}: not {what} ({e})", e.line())))?;
    let read = FileRead {
        bytes: bytes.len() as u64,
        cursor: Cursor {
            offset: bytes.len() as u64,
            ..Cursor::default()
        },
        ..FileRead::default()
    };
    Ok((value, read))
}

/// `%XX` escapes decoded (a URI's path; invalid UTF-8 is repaired rather than refused).
pub(crate) fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = text.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The size and modification time of a file, as a cursor records them.
pub fn file_stamp(path: &Path) -> std::io::Result<(u64, i64)> {
    let meta = std::fs::metadata(path)?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as i64);
    Ok((meta.len(), mtime))
}

/// What changes when the session file at `path` has news: its size and modification time, or
/// those of everything its reader reads ([`Agent::stamp`]).
pub fn session_stamp(source: Source, path: &Path) -> std::io::Result<(u64, i64)> {
    source.agent().stamp(path)
}

/// True when a read from `cursor` could find something new in `path`.
pub fn has_news(source: Source, path: &Path, cursor: &Cursor) -> bool {
    match session_stamp(source, path) {
        Ok((size, mtime)) if source.is_incremental() => size != cursor.offset || mtime != cursor.mtime_ms,
        Ok((size, mtime)) => size != cursor.size || mtime != cursor.mtime_ms,
        Err(_) => false,
    }
}

/// Reads what is new in one store file since `cursor`. Secrets are redacted in everything
/// returned. Fails only when the file cannot be read at all; bad records become warnings.
pub fn read_file(source: Source, path: &Path, cursor: &Cursor) -> Result<FileRead, ReadError> {
    // Stamped before reading: a write during the read is news for the next one.
    let stamp = session_stamp(source, path);
    let mut read = source.agent().read(path, cursor)?;
    if let Ok((size, mtime)) = stamp {
        read.cursor.mtime_ms = mtime;
        if !source.is_incremental() {
            read.cursor.size = size;
        }
    }
    for session in &mut read.sessions {
        session.redact();
    }
    Ok(read)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_only_agents_are_no_import_source_and_every_mcp_agent_has_its_own_files() {
        let sources: Vec<&str> = Source::all().map(Source::as_str).collect();
        assert!(!sources.contains(&"vscode"), "{sources:?}");
        assert!(Source::parse("vscode").is_none());
        let mcp: Vec<(&str, &str)> = AGENTS
            .iter()
            .filter_map(|a| a.mcp().map(|m| (a.source().as_str(), m.project_file)))
            .collect();
        assert_eq!(
            mcp.iter().map(|(name, _)| *name).collect::<Vec<_>>(),
            ["claude-code", "codex", "cursor", "gemini-cli", "qwen-code", "vscode"]
        );
        let mut files: Vec<&str> = mcp.iter().map(|(_, file)| *file).collect();
        files.sort();
        files.dedup();
        assert_eq!(files.len(), mcp.len(), "two agents share a project file: {mcp:?}");
        for agent in AGENTS.iter().filter(|a| !a.reads_sessions()) {
            assert!(
                agent.mcp().is_some(),
                "{} is reached neither by import nor by MCP",
                agent.label()
            );
        }
    }

    #[test]
    fn every_agent_is_registered_once_and_a_source_keeps_its_name_through_json() {
        let names: Vec<&str> = Source::all().map(Source::as_str).collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "two agents share a name: {names:?}");
        for source in Source::all() {
            assert_eq!(source.agent().source(), source);
            assert_eq!(Source::parse(source.as_str()), Some(source));
            let json = serde_json::to_string(&source).unwrap();
            assert_eq!(json, format!("\"{}\"", source.as_str()));
            assert_eq!(serde_json::from_str::<Source>(&json).unwrap(), source);
        }
        // Registry order is the order sources sort in (what `--detect` lists).
        let mut sorted: Vec<Source> = Source::all().collect();
        sorted.reverse();
        sorted.sort();
        assert_eq!(sorted, Source::all().collect::<Vec<_>>());
        // A name from elsewhere (a newer zblade, a typo) is refused with the names it knows.
        let err = serde_json::from_str::<Source>("\"nano-agent\"")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unknown agent `nano-agent`") && err.contains("claude-code"),
            "{err}"
        );
    }
}

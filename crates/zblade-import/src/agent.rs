//! What an agent is to zblade: the [`Agent`] trait each agent's module implements (the list of
//! agents, `AGENTS`, is in `lib.rs`, beside the modules' declarations).
//!
//! An agent is everything zblade knows of one coding tool's session store: its name, how
//! people call it, where its sessions are, which files are sessions, which project a session
//! belongs to, and how to read one. Adding an agent is one module implementing [`Agent`] and
//! one line in `AGENTS`; the engine, the CLI (`--source`, `--detect`), the hooks and the
//! app's Sources panel all read this list.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::detect::Places;
use crate::{Cursor, FileRead, ReadError, Source};

/// One coding agent's session store.
pub trait Agent: Sync {
    /// Its name on the command line, in settings and in provenance (`claude-code`).
    fn source(&self) -> Source;

    /// How people call it (`Claude Code`).
    fn label(&self) -> &'static str;

    /// A short tag in the ids of what it brought (`conv_cc-…`, `msg_cc-…`). Never change it:
    /// a re-import finds its conversations by these ids.
    fn id_tag(&self) -> &'static str;

    /// True for stores of one JSON Lines file per session, read incrementally from a cursor;
    /// false for files read whole when their size or time changed.
    fn incremental(&self) -> bool {
        false
    }

    /// The folders it keeps sessions in (they may not exist). `project` is the project looked
    /// at, when there is one (an agent that keeps its history in the project needs it).
    fn stores(&self, places: &Places, project: Option<&Path>) -> Vec<PathBuf>;

    /// Adds its session files under `store` to `found` (in any order: the caller sorts).
    fn session_files(&self, store: &Path, found: &mut Vec<PathBuf>);

    /// The working directory the session file at `path` was recorded in, when it says.
    fn session_cwd(&self, path: &Path) -> Option<PathBuf>;

    /// Reads the store file at `path` from `cursor` (whole-file stores ignore it).
    fn read(&self, path: &Path, cursor: &Cursor) -> Result<FileRead, ReadError>;

    /// The size and modification time that change when the session file at `path` has news:
    /// the file's own, unless reading it reads other files too (Cursor's editor chats).
    fn stamp(&self, path: &Path) -> std::io::Result<(u64, i64)> {
        crate::file_stamp(path)
    }

    /// True when the reader was checked only against the agent's code and other readers, not
    /// against a file the agent wrote (`--detect` says so; docs/IMPORT.md lists why).
    fn experimental(&self) -> bool {
        false
    }

    /// Whether zblade imports this agent's sessions. Agents it only serves memory to over MCP
    /// (Cursor, VS Code) say no, and are no import source.
    fn reads_sessions(&self) -> bool {
        true
    }

    /// Where this agent looks for MCP servers and how zblade's entry is written there, when it
    /// runs MCP servers at all (`zblade mcp install`, the app's Agents panel).
    fn mcp(&self) -> Option<McpConfig> {
        None
    }

    /// Where this agent reads hooks (commands it runs on its events) and which of its events
    /// zblade answers, when it runs hooks zblade can use (`zblade hooks install`, `zblade
    /// doctor`).
    fn hooks(&self) -> Option<HooksConfig> {
        None
    }
}

/// An agent's hooks: its settings files, in the nested shape Claude Code introduced and Gemini
/// CLI and Qwen Code share (`hooks.EVENT = [{matcher?, hooks: [{type: "command", command,
/// timeout}]}]`), and the events zblade answers there.
#[derive(Debug, Clone, Copy)]
pub struct HooksConfig {
    /// The settings file inside a project, relative to its root.
    pub project_file: &'static str,
    /// The user's settings file.
    pub user_file: fn(&Places) -> PathBuf,
    /// The events zblade answers.
    pub events: &'static [HookEvent],
    /// Timeouts are written in milliseconds (Gemini CLI), not seconds.
    pub timeout_in_ms: bool,
    /// The user's file is the one to write unless asked otherwise (Gemini CLI reads a
    /// project's settings only in folders the user trusts).
    pub prefers_user_file: bool,
}

/// One agent event zblade answers.
#[derive(Debug, Clone, Copy)]
pub struct HookEvent {
    /// The agent's name for the event (`UserPromptSubmit`, `BeforeAgent`).
    pub event: &'static str,
    /// What zblade does: `prompt` (context for the prompt), `stop` (import the finished turn),
    /// `pre-tool` (what memory holds about the lines a tool reads or edits).
    pub run: &'static str,
    /// The tools it fires for (a regular expression over tool names), for tool events.
    pub matcher: Option<&'static str>,
    /// Seconds the agent waits for it.
    pub timeout_s: u32,
}

impl HookEvent {
    /// A prompt was submitted (`zblade hook prompt`: context for it).
    pub const fn prompt(event: &'static str) -> HookEvent {
        HookEvent {
            event,
            run: "prompt",
            matcher: None,
            timeout_s: 10,
        }
    }

    /// A turn ended (`zblade hook stop`: import it).
    pub const fn stop(event: &'static str) -> HookEvent {
        HookEvent {
            event,
            run: "stop",
            matcher: None,
            timeout_s: 60,
        }
    }

    /// The tools in `matcher` read or edit a file (`zblade hook pre-tool`: what memory holds
    /// about those lines).
    pub const fn file_tool(event: &'static str, matcher: &'static str) -> HookEvent {
        HookEvent {
            event,
            run: "pre-tool",
            matcher: Some(matcher),
            timeout_s: 5,
        }
    }
}

/// How an agent finds its MCP servers: the project's file, the user's file, and the format of
/// the entry zblade writes into them.
#[derive(Debug, Clone, Copy)]
pub struct McpConfig {
    /// The file inside a project, relative to its root.
    pub project_file: &'static str,
    /// The user's file.
    pub user_file: fn(&Places) -> PathBuf,
    /// What exists when the agent is installed for this user.
    pub marker: fn(&Places) -> PathBuf,
    /// How the entry is written.
    pub format: McpFormat,
    /// Whether the user's file is the one to write unless asked otherwise (Codex reads a
    /// project's file only for projects the user trusts).
    pub prefers_user_file: bool,
}

impl McpConfig {
    /// A JSON file with zblade's entry under `key` (naming its transport when `typed`), in the
    /// project at `project_file` and for the user at `user_file`; `marker` shows the agent is
    /// installed.
    pub const fn json(
        project_file: &'static str,
        key: &'static str,
        typed: bool,
        user_file: fn(&Places) -> PathBuf,
        marker: fn(&Places) -> PathBuf,
    ) -> McpConfig {
        McpConfig {
            project_file,
            user_file,
            marker,
            format: McpFormat::Json { key, typed },
            prefers_user_file: false,
        }
    }
}

/// The format of an agent's MCP configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpFormat {
    /// JSON: `KEY.zblade = {command, args}`, with `"type": "stdio"` when `typed`.
    Json {
        /// The object the servers are under (`mcpServers`, `servers`).
        key: &'static str,
        /// Whether each entry names its transport.
        typed: bool,
    },
    /// Codex's TOML: `[mcp_servers.zblade]` with `command` and `args`.
    CodexToml,
}

/// Files under `dir` whose name `wanted` accepts, symlinks followed, at most six levels deep.
pub(crate) fn files_named(dir: &Path, wanted: impl Fn(&str) -> bool, found: &mut Vec<PathBuf>) {
    walk(dir, 0, &mut |path| {
        if path.file_name().and_then(|n| n.to_str()).is_some_and(&wanted) {
            found.push(path.to_path_buf());
        }
    });
}

/// The entries of `dir`, sorted; none when it cannot be read.
pub(crate) fn list_dir(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    entries
}

/// Depth-first walk following symlinks, at most six levels deep (Codex uses three).
fn walk(dir: &Path, depth: usize, found: &mut impl FnMut(&Path)) {
    if depth > 6 {
        return;
    }
    for path in list_dir(dir) {
        if path.is_dir() {
            walk(&path, depth + 1, found);
        } else if path.is_file() {
            found(&path);
        }
    }
}

/// The first `cwd` (or `payload.cwd`) in the first 200 lines of a JSON Lines session file.
pub(crate) fn jsonl_cwd(path: &Path) -> Option<PathBuf> {
    let file = std::fs::File::open(path).ok()?;
    for line in BufReader::new(file).split(b'\n').take(200).map_while(Result::ok) {
        let Ok(value) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        let cwd = value
            .get("cwd")
            .or_else(|| value.pointer("/payload/cwd"))
            .and_then(Value::as_str);
        if let Some(cwd) = cwd {
            return Some(PathBuf::from(cwd));
        }
    }
    None
}

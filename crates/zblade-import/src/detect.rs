//! Where each agent keeps its sessions on this machine, and which project a session belongs to.
//!
//! Locations follow the tools' own code and docs (see docs/IMPORT.md): `$CLAUDE_CONFIG_DIR`
//! or `~/.claude`, `$CODEX_HOME` or `~/.codex`, `$CONTINUE_GLOBAL_DIR` or `~/.continue`, VS
//! Code's global storage for Cline and Roo Code, and the project itself for Aider. Symlinked
//! folders are followed (a depth limit stops loops).

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::Source;

/// A store file and the session facts known without reading it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionFile {
    /// The agent.
    pub source: Source,
    /// The file.
    pub path: PathBuf,
    /// Last modification.
    pub modified: Option<DateTime<Utc>>,
}

/// What `zblade import --detect` shows for one source.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Detected {
    /// The agent.
    pub source: Source,
    /// Folders searched.
    pub stores: Vec<PathBuf>,
    /// Session files found (all projects).
    pub sessions: usize,
    /// Of those, sessions of this project.
    pub in_project: usize,
    /// Oldest and newest modification among this project's sessions.
    pub first: Option<DateTime<Utc>>,
    /// See `first`.
    pub last: Option<DateTime<Utc>>,
    /// The reader was not checked against a file the agent wrote.
    pub experimental: bool,
}

/// Where agents keep their files: the environment's overrides and the user's home (`/` when
/// `$HOME` is unset, never a relative path). One struct for reading sessions and for writing
/// MCP configurations.
#[derive(Debug, Clone)]
pub struct Places {
    /// The user's home folder.
    pub home: PathBuf,
    /// `$CLAUDE_CONFIG_DIR`.
    pub claude_config_dir: Option<PathBuf>,
    /// `$CODEX_HOME`.
    pub codex_home: Option<PathBuf>,
    /// `$CONTINUE_GLOBAL_DIR`.
    pub continue_dir: Option<PathBuf>,
    /// `$XDG_CONFIG_HOME`.
    pub config_home: Option<PathBuf>,
    /// The other agents' relocation variables that are set ([`RELOCATIONS`]), by name.
    pub vars: std::collections::BTreeMap<String, PathBuf>,
}

/// The variables agents read to move their folders, beside the four above: Gemini CLI, Qwen
/// Code, Cursor, GitHub Copilot CLI, Kimi Code, pi, OpenClaw, Grok, and the XDG data folder
/// (opencode).
pub const RELOCATIONS: &[&str] = &[
    "GEMINI_CLI_HOME",
    "QWEN_HOME",
    "CURSOR_CONFIG_DIR",
    "COPILOT_HOME",
    "KIMI_CODE_HOME",
    "PI_CODING_AGENT_DIR",
    "OPENCLAW_STATE_DIR",
    "GROK_HOME",
    "XDG_DATA_HOME",
];

impl Places {
    /// From this process's environment.
    pub fn from_env() -> Places {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        Places {
            home: var("HOME").unwrap_or_else(|| PathBuf::from("/")),
            claude_config_dir: var("CLAUDE_CONFIG_DIR"),
            codex_home: var("CODEX_HOME"),
            continue_dir: var("CONTINUE_GLOBAL_DIR"),
            config_home: var("XDG_CONFIG_HOME"),
            vars: RELOCATIONS
                .iter()
                .filter_map(|name| Some((name.to_string(), var(name)?)))
                .collect(),
        }
    }

    /// Places under `home` with no variable set (tests, benchmarks).
    pub fn at_home(home: &Path) -> Places {
        Places {
            home: home.to_path_buf(),
            claude_config_dir: None,
            codex_home: None,
            continue_dir: None,
            config_home: None,
            vars: Default::default(),
        }
    }

    /// The folder `$name` names, else `default` under the home folder.
    pub fn var_or_home(&self, name: &str, default: &str) -> PathBuf {
        self.vars.get(name).cloned().unwrap_or_else(|| self.home.join(default))
    }

    /// `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
    pub fn claude_dir(&self) -> PathBuf {
        self.claude_config_dir
            .clone()
            .unwrap_or_else(|| self.home.join(".claude"))
    }

    /// `$CODEX_HOME`, else `~/.codex`.
    pub fn codex_dir(&self) -> PathBuf {
        self.codex_home.clone().unwrap_or_else(|| self.home.join(".codex"))
    }

    /// `$CONTINUE_GLOBAL_DIR`, else `~/.continue`.
    pub fn continue_global_dir(&self) -> PathBuf {
        self.continue_dir.clone().unwrap_or_else(|| self.home.join(".continue"))
    }

    /// `$XDG_CONFIG_HOME`, else `~/.config`.
    pub fn config_dir(&self) -> PathBuf {
        self.config_home.clone().unwrap_or_else(|| self.home.join(".config"))
    }

    /// The folders a source keeps sessions in (they may not exist). Aider keeps its history
    /// in the project, so it is looked up from `project`.
    pub fn stores(&self, source: Source, project: &Path) -> Vec<PathBuf> {
        source.agent().stores(self, Some(project))
    }
}

/// Every session file of `source` in `stores` (listing folders only; [`session_cwd`] reads a
/// file's head for its working directory).
pub fn find_session_files(source: Source, stores: &[PathBuf]) -> Vec<SessionFile> {
    let mut files = Vec::new();
    for store in stores {
        source.agent().session_files(store, &mut files);
    }
    files.sort();
    files.dedup();
    files
        .into_iter()
        .map(|path| SessionFile {
            source,
            modified: std::fs::metadata(&path)
                .and_then(|m| m.modified())
                .ok()
                .map(DateTime::<Utc>::from),
            path,
        })
        .collect()
}

/// The working directory a session file names in its first lines (Claude Code: `cwd` on
/// message lines; Codex: `session_meta.payload.cwd`; Continue: `workspaceDirectory`; Cline:
/// the `Current Working Directory` of its first environment details; Aider: its folder).
pub fn session_cwd(source: Source, path: &Path) -> Option<PathBuf> {
    source.agent().session_cwd(path)
}

/// True when `cwd` is `root` or inside it. Compared after resolving symlinks when both exist,
/// and as written otherwise (a session whose folder was since deleted still matches).
pub fn is_inside(cwd: &Path, root: &Path) -> bool {
    if cwd.starts_with(root) {
        return true;
    }
    let real_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    match cwd.canonicalize() {
        Ok(real_cwd) => real_cwd.starts_with(&real_root),
        Err(_) => cwd.starts_with(&real_root),
    }
}

/// Summary of what `find_session_files` found for one source; sessions of `project` counted
/// apart when one is given.
pub fn summarize(source: Source, stores: Vec<PathBuf>, files: &[SessionFile], project: Option<&Path>) -> Detected {
    let mine: Vec<&SessionFile> = match project {
        Some(root) => files
            .iter()
            .filter(|f| session_cwd(source, &f.path).is_some_and(|cwd| is_inside(&cwd, root)))
            .collect(),
        None => Vec::new(),
    };
    Detected {
        source,
        stores,
        sessions: files.len(),
        in_project: mine.len(),
        first: mine.iter().filter_map(|f| f.modified).min(),
        last: mine.iter().filter_map(|f| f.modified).max(),
        experimental: source.agent().experimental(),
    }
}

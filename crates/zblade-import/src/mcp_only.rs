//! Agents zblade serves memory to over MCP but whose sessions it does not read: VS Code
//! (Copilot agent mode; its chat sessions are not read yet). Each is a [`McpOnly`] here, listed in `AGENTS`; adding one is
//! its `Source`, its entry below and its line there.

use std::path::{Path, PathBuf};

use crate::agent::{Agent, McpConfig};
use crate::detect::Places;
use crate::{Cursor, FileRead, ReadError, Source};

impl Source {
    /// Visual Studio Code, Copilot agent mode (MCP only).
    pub const VSCODE: Source = Source("vscode");
}

/// An agent known by its MCP configuration alone.
pub(crate) struct McpOnly {
    source: Source,
    label: &'static str,
    mcp: McpConfig,
}

/// VS Code: `.vscode/mcp.json`, `servers` entries of type `stdio`.
pub(crate) static VSCODE: McpOnly = McpOnly {
    source: Source::VSCODE,
    label: "VS Code",
    mcp: McpConfig::json(
        ".vscode/mcp.json",
        "servers",
        true,
        |places| places.config_dir().join("Code/User/mcp.json"),
        |places| places.config_dir().join("Code"),
    ),
};

impl Agent for McpOnly {
    fn source(&self) -> Source {
        self.source
    }
    fn label(&self) -> &'static str {
        self.label
    }
    fn id_tag(&self) -> &'static str {
        self.source.as_str()
    }
    fn stores(&self, _places: &Places, _project: Option<&Path>) -> Vec<PathBuf> {
        Vec::new()
    }
    fn session_files(&self, _store: &Path, _found: &mut Vec<PathBuf>) {}
    fn session_cwd(&self, _path: &Path) -> Option<PathBuf> {
        None
    }
    fn read(&self, path: &Path, _cursor: &Cursor) -> Result<FileRead, ReadError> {
        Err(ReadError::new(
            path,
            format!("{} keeps no sessions zblade reads", self.label),
        ))
    }
    fn reads_sessions(&self) -> bool {
        false
    }
    fn mcp(&self) -> Option<McpConfig> {
        Some(self.mcp)
    }
}

//! Visual Studio Code (Copilot agent mode): zblade serves it memory over MCP; it keeps no sessions zblade reads.

use std::path::{Path, PathBuf};

use crate::agent::{Agent, McpConfig, McpFormat};
use crate::detect::Places;
use crate::{Cursor, FileRead, ReadError, Source};

impl Source {
    /// VS Code (MCP only).
    pub const VSCODE: Source = Source("vscode");
}

/// Visual Studio Code (Copilot agent mode): zblade serves it memory over MCP; it keeps no sessions zblade reads.
pub(crate) struct VsCode;

impl Agent for VsCode {
    fn source(&self) -> Source {
        Source::VSCODE
    }
    fn label(&self) -> &'static str {
        "VS Code"
    }
    fn id_tag(&self) -> &'static str {
        "vscode"
    }
    fn stores(&self, _places: &Places, _project: Option<&Path>) -> Vec<PathBuf> {
        Vec::new()
    }
    fn session_files(&self, _store: &Path, _found: &mut Vec<PathBuf>) {}
    fn session_cwd(&self, _path: &Path) -> Option<PathBuf> {
        None
    }
    fn read(&self, path: &Path, _cursor: &Cursor) -> Result<FileRead, ReadError> {
        Err(ReadError::new(path, "VS Code keeps no sessions zblade reads"))
    }
    fn reads_sessions(&self) -> bool {
        false
    }
    fn mcp(&self) -> Option<McpConfig> {
        Some(McpConfig {
            project_file: ".vscode/mcp.json",
            user_file: |places| places.config_dir().join("Code/User/mcp.json"),
            marker: |places| places.config_dir().join("Code"),
            format: McpFormat::Json {
                key: "servers",
                typed: true,
            },
            prefers_user_file: false,
        })
    }
}

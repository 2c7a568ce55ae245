//! Cursor: zblade serves it memory over MCP; it keeps no sessions zblade reads.

use std::path::{Path, PathBuf};

use crate::agent::{Agent, McpConfig, McpFormat};
use crate::detect::Places;
use crate::{Cursor, FileRead, ReadError, Source};

impl Source {
    /// Cursor (MCP only).
    pub const CURSOR: Source = Source("cursor");
}

/// Cursor: zblade serves it memory over MCP; it keeps no sessions zblade reads.
pub(crate) struct CursorEditor;

impl Agent for CursorEditor {
    fn source(&self) -> Source {
        Source::CURSOR
    }
    fn label(&self) -> &'static str {
        "Cursor"
    }
    fn id_tag(&self) -> &'static str {
        "cursor"
    }
    fn stores(&self, _places: &Places, _project: Option<&Path>) -> Vec<PathBuf> {
        Vec::new()
    }
    fn session_files(&self, _store: &Path, _found: &mut Vec<PathBuf>) {}
    fn session_cwd(&self, _path: &Path) -> Option<PathBuf> {
        None
    }
    fn read(&self, path: &Path, _cursor: &Cursor) -> Result<FileRead, ReadError> {
        Err(ReadError::new(path, "Cursor keeps no sessions zblade reads"))
    }
    fn reads_sessions(&self) -> bool {
        false
    }
    fn mcp(&self) -> Option<McpConfig> {
        Some(McpConfig {
            project_file: ".cursor/mcp.json",
            user_file: |places| places.home.join(".cursor/mcp.json"),
            marker: |places| places.home.join(".cursor"),
            format: McpFormat::Json {
                key: "mcpServers",
                typed: false,
            },
            prefers_user_file: false,
        })
    }
}

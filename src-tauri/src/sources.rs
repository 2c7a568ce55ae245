//! Settings → Sources and the wizard's list of coding agents: what each agent has on this
//! machine, and for the open project what it follows and imported.

use zblade_engine::{ImportSource, Project, sources_on_this_machine};

use crate::error::{AppError, AppResult, ErrorCode};
use crate::views::SourceView;

/// The agent named `name`, or an invalid-input error.
pub fn parse(name: &str) -> AppResult<ImportSource> {
    ImportSource::parse(name).ok_or_else(|| AppError::new(ErrorCode::InvalidInput, format!("unknown source {name:?}")))
}

/// One row per agent; per-project facts when a project is open.
pub fn views(project: Option<&Project>) -> Vec<SourceView> {
    let sources = project.map_or_else(sources_on_this_machine, Project::sources);
    sources
        .into_iter()
        .map(|s| SourceView {
            source: s.detected.source.as_str().to_string(),
            label: s.detected.source.label().to_string(),
            store: s.detected.stores.first().map(|p| p.display().to_string()),
            sessions: s.detected.sessions as u32,
            in_project: s.detected.in_project as u32,
            last_session: s.detected.last.map(|t| t.to_rfc3339()),
            followed: s.followed,
            last_import: s.last_import.map(|t| t.to_rfc3339()),
            imported_conversations: s.imported_conversations as u32,
        })
        .collect()
}

//! Settings → Sources and the wizard's list of coding agents: what each agent has on this
//! machine, and for the open project what it follows and imported.

use zblade_engine::{AgentPlaces, ImportSource, Project, detect_agents};

use crate::error::{AppError, AppResult, ErrorCode};
use crate::views::SourceView;

/// The agent named `name`, or an invalid-input error.
pub fn parse(name: &str) -> AppResult<ImportSource> {
    ImportSource::parse(name).ok_or_else(|| AppError::new(ErrorCode::InvalidInput, format!("unknown source {name:?}")))
}

/// One row per agent; per-project facts when a project is open.
pub fn views(project: Option<&Project>) -> Vec<SourceView> {
    let detected = match project {
        Some(p) => p.detect_sources(),
        None => detect_agents(&AgentPlaces::from_env(), None),
    };
    let history = project.map(Project::import_history).unwrap_or_default();
    let followed = project.map(Project::enabled_sources).unwrap_or_default();
    detected
        .into_iter()
        .map(|d| {
            let (last_import, imported) = history
                .iter()
                .find(|(s, ..)| *s == d.source)
                .map_or((None, 0), |(_, last, n)| (*last, *n));
            SourceView {
                source: d.source.as_str().to_string(),
                label: d.source.label().to_string(),
                store: d.stores.first().map(|p| p.display().to_string()),
                sessions: d.sessions as u32,
                in_project: d.in_project as u32,
                last_session: d.last.map(|t| t.to_rfc3339()),
                followed: followed.contains(&d.source),
                last_import: last_import.map(|t| t.to_rfc3339()),
                imported_conversations: imported as u32,
            }
        })
        .collect()
}

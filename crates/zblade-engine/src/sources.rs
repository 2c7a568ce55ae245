//! The coding agents a project imports from, as one table every face shows (`zblade import`
//! without a source, the app's wizard and Settings → Sources): what each agent has on this
//! machine, whether the project follows it, and what was imported from it. And the project's
//! `.zbladeignore`, the paths zblade leaves out, read and replaced whole.

use chrono::{DateTime, Utc};
use serde::Serialize;
use zblade_core::{Error, Result, fsio};
use zblade_import::Detected;

use crate::agents::Agents;
use crate::project::Project;

/// The ignore file's name, at the project root (gitignore syntax).
pub const IGNORE_FILE: &str = ".zbladeignore";

/// One coding agent as a project sees it.
#[derive(Debug, Clone, Serialize)]
pub struct SourceStatus {
    /// What the agent has on this machine: where, how many sessions, how many of this project.
    #[serde(flatten)]
    pub detected: Detected,
    /// The project imports its new turns live.
    pub followed: bool,
    /// The last import into the project.
    pub last_import: Option<DateTime<Utc>>,
    /// Conversations imported from it into the project.
    pub imported_conversations: usize,
}

/// Every agent on this machine when no project is open (the app's first-run wizard): nothing
/// followed or imported yet.
pub fn sources_on_this_machine() -> Vec<SourceStatus> {
    Agents::from_env()
        .detect(None)
        .into_iter()
        .map(|detected| SourceStatus {
            detected,
            followed: false,
            last_import: None,
            imported_conversations: 0,
        })
        .collect()
}

impl Project {
    /// Every agent, with what this project follows and imported from each.
    pub fn sources(&self) -> Vec<SourceStatus> {
        let history = self.import_history();
        let followed = self.enabled_sources();
        self.detect_sources()
            .into_iter()
            .map(|detected| {
                let (last_import, imported_conversations) = history
                    .iter()
                    .find(|(s, ..)| *s == detected.source)
                    .map_or((None, 0), |(_, last, n)| (*last, *n));
                SourceStatus {
                    followed: followed.contains(&detected.source),
                    last_import,
                    imported_conversations,
                    detected,
                }
            })
            .collect()
    }

    /// The lines of the project's `.zbladeignore` (none when there is no file).
    pub fn ignored_paths(&self) -> Vec<String> {
        std::fs::read_to_string(self.layout().root().join(IGNORE_FILE))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Replaces `.zbladeignore` with `lines` (trimmed, blank ones dropped), atomically, and
    /// returns what was written. The next `zblade index` (or the app's indexer) applies it.
    pub fn set_ignored_paths(&self, lines: &[String]) -> Result<Vec<String>> {
        let cleaned: Vec<String> = lines
            .iter()
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty())
            .collect();
        if let Some(bad) = cleaned.iter().find(|l| l.contains('\0')) {
            return Err(Error::Usage(format!("{IGNORE_FILE}: a line holds a NUL byte: {bad:?}")));
        }
        let mut text = cleaned.join("\n");
        text.push('\n');
        fsio::write_atomic(&self.layout().root().join(IGNORE_FILE), text.as_bytes())?;
        Ok(cleaned)
    }
}

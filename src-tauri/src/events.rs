//! Events the app pushes to the UI (typed with tauri-specta, so the UI's listeners are checked
//! against these structs): the indexer's state, references whose status changed, and download
//! progress.

use serde::{Deserialize, Serialize};
use specta::Type;
use tauri_specta::Event;

use zblade_engine::ReferenceReport;

use crate::views::StatusCount;

/// What the background indexer is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Type)]
#[serde(rename_all = "snake_case")]
pub enum IndexerState {
    /// No project open.
    Idle,
    /// Opening the project.
    Starting,
    /// Bringing the search index up to date (files, embeddings, summaries).
    Indexing,
    /// Up to date; watching files and git for changes.
    Watching,
    /// Paused by the user.
    Paused,
    /// Stopped (project closed, app quitting).
    Stopped,
    /// Failed; `message` says why. Search still works on what is indexed.
    Error,
}

/// The indexer's state, for the status bar and the tray.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type, Event)]
pub struct IndexerStatus {
    /// What it is doing.
    pub state: IndexerState,
    /// While indexing: files, embedding or summaries.
    pub stage: Option<String>,
    /// Progress within the stage.
    pub done: u32,
    /// See `done`.
    pub total: u32,
    /// A notice or an error.
    pub message: Option<String>,
}

impl IndexerStatus {
    /// A status with no progress and no message.
    pub fn of(state: IndexerState) -> Self {
        IndexerStatus {
            state,
            stage: None,
            done: 0,
            total: 0,
            message: None,
        }
    }

    /// One line for the tray menu and tooltip.
    pub fn line(&self) -> String {
        match self.state {
            IndexerState::Idle => "No project open".to_string(),
            IndexerState::Starting => "Starting…".to_string(),
            IndexerState::Indexing => {
                let stage = self.stage.as_deref().unwrap_or("files");
                if self.total > 0 {
                    format!("Indexing {stage} {}/{}", self.done, self.total)
                } else {
                    format!("Indexing {stage}…")
                }
            }
            IndexerState::Watching => "Up to date, watching for changes".to_string(),
            IndexerState::Paused => "Indexing paused".to_string(),
            IndexerState::Stopped => "Indexer stopped".to_string(),
            IndexerState::Error => format!("Indexer error: {}", self.message.as_deref().unwrap_or("unknown")),
        }
    }
}

/// References whose status or location changed while the indexer watched.
#[derive(Debug, Clone, Serialize, Deserialize, Type, Event)]
pub struct ReferencesChanged {
    /// The changed references, as they are now.
    pub changed: Vec<ReferenceReport>,
    /// What caused it: the changed files, or "HEAD moved".
    pub trigger: String,
    /// Reference health after the change.
    pub health: Vec<StatusCount>,
}

/// Progress of a model download.
#[derive(Debug, Clone, Serialize, Deserialize, Type, Event)]
pub struct DownloadProgress {
    /// The model.
    pub name: String,
    /// The file being fetched.
    pub file: String,
    /// Bytes fetched.
    pub done: f64,
    /// Bytes expected (0 when unknown).
    pub total: f64,
}

/// Progress of a migration: its phase, items done of total.
#[derive(Debug, Clone, Serialize, Deserialize, Type, Event)]
pub struct MigrationProgress {
    /// The phase it is in (`copy`, then `verify`).
    pub phase: zblade_engine::MigrationPhase,
    /// Items done.
    pub done: f64,
    /// Items in all.
    pub total: f64,
}

/// Progress of "Import now": `done` of `total` session files of `source`.
#[derive(Debug, Clone, Serialize, Deserialize, Type, Event)]
pub struct ImportProgress {
    /// The agent.
    pub source: String,
    /// Files read.
    pub done: u32,
    /// Files to read.
    pub total: u32,
}

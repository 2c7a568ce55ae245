//! What the app's background threads (the indexer and the archive push) report, and where
//! they send it. Neither thread knows Tauri: `lib.rs` turns these into events, the tray's line
//! and the Archive card; tests read them directly.

use std::sync::Arc;

use zblade_engine::ReferenceReport;

use crate::events::IndexerStatus;

/// What a background thread reports: the indexer, and the archive push through the same sink.
#[derive(Debug, Clone)]
pub enum IndexerUpdate {
    /// Its state changed (or progress moved).
    Status(IndexerStatus),
    /// References changed status or place.
    References {
        /// The changed references, as they are now.
        changed: Vec<ReferenceReport>,
        /// What caused it.
        trigger: String,
    },
    /// The background archive push did a round ([`crate::archive_push`]).
    Archive(ArchiveRound),
}

/// Where the indexer's updates go.
pub type Sink = Arc<dyn Fn(IndexerUpdate) + Send + Sync>;

/// What one round did, for the Archive card.
#[derive(Debug, Clone, PartialEq)]
pub enum ArchiveRound {
    /// Background push is off, or the project has no archive: nothing was tried.
    Off,
    /// Pushed (possibly nothing: no change since the last push).
    Pushed {
        /// Files archived.
        files: usize,
        /// Deletions archived.
        deleted: usize,
    },
    /// Tried and could not: why, in words (the next round tries again).
    Failed(String),
}

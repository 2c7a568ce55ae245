//! Where each import stopped, per store file: `.zblade/index/import-state.json`.
//!
//! It lives beside the index because it is a cache of the same kind: deleting it only makes
//! the next import read every file again, and stable ids make that re-read update the same
//! conversations instead of duplicating them. A file lock serialises importers (the CLI and
//! the tray on the same source) from reading a cursor to saving the next one.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::PathBuf;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use zblade_core::{Layout, Result, fsio};
use zblade_import::{Cursor, Source};

/// The state of one store file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct FileState {
    pub source: Source,
    pub cursor: Cursor,
    /// The session's working directory (read once from the file's head).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// Conversations this file fed.
    #[serde(default)]
    pub conversations: Vec<String>,
    pub imported_at: DateTime<Utc>,
}

/// Every store file imported into this project.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct ImportState {
    #[serde(default)]
    pub files: BTreeMap<PathBuf, FileState>,
    /// Store files whose sessions belong to other projects, so their heads are not read again
    /// on every import.
    #[serde(default)]
    pub other_projects: BTreeSet<PathBuf>,
}

fn path(layout: &Layout) -> PathBuf {
    layout.index_dir().join("import-state.json")
}

impl ImportState {
    /// The saved state; an unreadable file counts as none (everything is read again, and
    /// nothing is duplicated).
    pub(crate) fn load(layout: &Layout) -> ImportState {
        std::fs::read(path(layout))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    pub(crate) fn save(&self, layout: &Layout) -> Result<()> {
        let bytes = serde_json::to_vec_pretty(self).expect("import state serialises");
        fsio::write_atomic(&path(layout), &bytes)
    }
}

/// Held while importing; dropping it releases the lock (also when the process dies).
#[derive(Debug)]
pub(crate) struct ImportLock {
    _file: File,
}

impl ImportLock {
    /// Blocks until no other importer runs in this project.
    pub(crate) fn acquire(layout: &Layout) -> Result<ImportLock> {
        Ok(ImportLock {
            _file: crate::lock::hold(layout, "import.lock")?,
        })
    }
}

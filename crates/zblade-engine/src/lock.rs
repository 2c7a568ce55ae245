//! The project write lock: one writer at a time across processes.
//!
//! A write is "artifact, then index". Without a lock, two processes updating the same
//! conversation could leave the file from one and the index rows from the other. The lock is
//! an OS file lock, so it is released when the process dies, even by `kill -9`.

use std::fs::{File, OpenOptions};
use std::path::Path;

use zblade_core::{Error, Layout, Result};

/// Held while writing; dropping it releases the lock.
#[derive(Debug)]
pub struct WriteLock {
    _file: File,
}

impl WriteLock {
    /// Blocks until this process holds the project's write lock.
    pub fn acquire(layout: &Layout) -> Result<Self> {
        let dir = layout.index_dir();
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let path = dir.join("write.lock");
        let file = open(&path)?;
        file.lock().map_err(|e| Error::io(&path, e))?;
        Ok(WriteLock { _file: file })
    }
}

fn open(path: &Path) -> Result<File> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| Error::io(path, e))
}

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
        Ok(WriteLock {
            _file: hold(layout, "write.lock")?,
        })
    }
}

/// Blocks until this process holds the OS lock on `.zblade/index/<name>`; the lock lasts as
/// long as the returned file is open.
pub(crate) fn hold(layout: &Layout, name: &str) -> Result<File> {
    let dir = layout.index_dir();
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let path = dir.join(name);
    let file = open(&path)?;
    file.lock().map_err(|e| Error::io(&path, e))?;
    Ok(file)
}

fn open(path: &Path) -> Result<File> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| Error::io(path, e))
}

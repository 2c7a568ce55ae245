//! The SQLite catalog of a zblade project (`.zblade/index/conversations.db`).
//!
//! The index is a cache of the JSON artifacts: every row here can be rebuilt from them with
//! [`Index::rebuild`], and [`Index::indexed_artifacts`] lets `fsck` compare the two. It holds the
//! RFC-002 tables plus messages, FTS5 tables for keyword search ([`Index::search`]), and the
//! sha256 of each artifact it was built from.
//!
//! Concurrency: the database runs in WAL mode with a busy timeout, and every write transaction
//! begins `IMMEDIATE`, so two processes writing at once wait for each other instead of failing
//! with `SQLITE_BUSY` halfway through a transaction.
//!
//! ```
//! # let dir = tempfile::tempdir().unwrap();
//! use zblade_index::{Index, SearchKind, SearchQuery};
//! let index = Index::open(&dir.path().join("conversations.db")).unwrap();
//! let hits = index.search(&SearchQuery::new("jwt", 10, SearchKind::All)).unwrap();
//! assert!(hits.is_empty());
//! ```

mod catalog;
mod chunks;
mod code;
mod commits;
mod decisions;
mod filter;
pub mod fts;
mod graph;
mod hit;
mod memory;
mod references;
pub mod schema;
mod search;
mod vocab;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags, Transaction, TransactionBehavior};
use zblade_core::{Error, Result};

pub use catalog::{
    ArtifactKind, ConversationSummary, Counts, IndexedArtifact, MessageLocation, MomentSummary, Page, timestamp,
};
pub use chunks::{ChunkRow, ChunkSource, hit_key};
pub use code::{CodeChunkRow, CodeFileState, CodeFileUpdate, StoredCodeChunk, parse_code_key};
pub use commits::{CommitFate, HistoryUpdate, LaterChange, StoredCommit};
pub use decisions::DecisionState;
pub use filter::SearchFilter;
pub use graph::{LineageNode, MergeEdge, Prompt};
pub use hit::{HitKind, SearchHit};
pub use memory::MemoryText;
pub use references::{LiveLocation, StoredReference};
pub use search::{RANKED_MATCHES, SearchKind, SearchMode, SearchQuery};
pub use vocab::{HeldWords, MAX_LOOKED_UP_WORDS};

/// How long a writer waits for another process's write transaction before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(60);
/// Page cache per connection, in KiB (SQLite takes a negative `cache_size` as KiB): 64 MiB.
const INDEX_CACHE_KIB: i64 = -65_536;
/// Prepared statements kept per connection. rusqlite keeps 16 by default; searches and a
/// context's assembly use more kinds than that between them (keyword lists of each kind, their
/// strength, neighbours, owners of vectors, hits, texts, references, decisions …), so
/// statements were evicted and prepared again from one request to the next. A statement costs
/// a few kilobytes.
const STATEMENT_CACHE: usize = 128;

/// An open index database.
pub struct Index {
    conn: Connection,
    path: PathBuf,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index").field("path", &self.path).finish()
    }
}

impl Index {
    /// Opens (creating if needed) the index at `path` and brings its schema up to date.
    pub fn open(path: &Path) -> Result<Self> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        let conn = Connection::open_with_flags(path, flags).map_err(|e| sql_error(path, e))?;
        let mut index = Index {
            conn,
            path: path.to_path_buf(),
        };
        index.configure().map_err(|e| sql_error(path, e))?;
        index.migrate()?;
        Ok(index)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn configure(&mut self) -> rusqlite::Result<()> {
        self.conn.busy_timeout(BUSY_TIMEOUT)?;
        // Switching to WAL needs a moment of exclusive access; the busy timeout covers it.
        self.conn.pragma_update(None, "journal_mode", "WAL")?;
        // NORMAL is durable across application crashes in WAL mode; a power loss may drop the
        // last transactions, which `fsck --repair` restores from the artifacts.
        self.conn.pragma_update(None, "synchronous", "NORMAL")?;
        self.conn.pragma_update(None, "foreign_keys", "ON")?;
        // Sorts and temporary tables stay in memory: by default SQLite writes them, message text
        // included, to files in /var/tmp (unlinked at once, but written outside the project;
        // docs/PRIVACY.md). The index's sorts are small next to the page cache below.
        self.conn.pragma_update(None, "temp_store", "MEMORY")?;
        // SQLite's default page cache is 2 MiB; a project's full-text index outgrows it early,
        // and an import then re-reads the same pages from the OS for every batch it indexes.
        // The cache grows only as pages are used, so small projects pay nothing for the cap.
        self.conn.pragma_update(None, "cache_size", INDEX_CACHE_KIB)?;
        self.conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        Ok(())
    }

    fn migrate(&mut self) -> Result<()> {
        let path = self.path.clone();
        self.write(|tx| {
            let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
            if version > schema::SCHEMA_VERSION {
                return Err(Failure::Invalid(Error::IndexCorrupt {
                    path,
                    source: None,
                    message: format!(
                        "schema version {version} is newer than this zblade understands ({})",
                        schema::SCHEMA_VERSION
                    ),
                }));
            }
            for (i, sql) in schema::MIGRATIONS.iter().enumerate().skip(version as usize) {
                tx.execute_batch(sql)?;
                tx.pragma_update(None, "user_version", (i + 1) as i64)?;
            }
            Ok(())
        })
    }

    /// The schema version stored in the database.
    pub fn schema_version(&self) -> Result<i64> {
        self.read(|conn| conn.query_row("PRAGMA user_version", [], |r| r.get(0)))
    }

    /// SQLite's `quick_check`: `"ok"` or a description of the damage.
    pub fn quick_check(&self) -> Result<String> {
        self.read(|conn| {
            let mut stmt = conn.prepare("PRAGMA quick_check")?;
            let rows: Vec<String> = stmt.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
            Ok(rows.join("; "))
        })
    }

    /// Total size of the database files (main file, WAL, shared memory) in bytes.
    pub fn size_on_disk(&self) -> u64 {
        ["", "-wal", "-shm"]
            .iter()
            .filter_map(|suffix| {
                let mut name = self.path.clone().into_os_string();
                name.push(suffix);
                std::fs::metadata(PathBuf::from(name)).ok()
            })
            .map(|m| m.len())
            .sum()
    }

    /// Empties SQLite's page cache of this connection (up to `INDEX_CACHE_KIB`, filled by a
    /// pass that read every message) and its prepared statements: what a process about to idle
    /// calls. Later reads fill the cache again from the operating system's cache.
    pub fn release_memory(&self) -> Result<()> {
        self.conn.flush_prepared_statement_cache();
        self.read(|conn| conn.execute_batch("PRAGMA shrink_memory"))
    }

    /// Folds the write-ahead log back into the database and empties it, when no other
    /// connection is reading an older state or writing at this moment; returns whether it did.
    /// Never waits for them: a long-running process calls it as it idles (the tray, between
    /// its passes), and a busy log is folded at the next idle period. What it saves: a
    /// process that opens the index while no other connection is open (a cold `zblade
    /// context` after the app quit or was ended by a signal) reads the whole log back before
    /// its first query (46 MB of it cost a cold context 17 ms at p50; docs/BENCHMARKS.md, "The
    /// lean install").
    pub fn fold_write_ahead_log(&self) -> Result<bool> {
        self.read(|conn| {
            conn.busy_timeout(Duration::ZERO)?;
            // (busy, frames in the log, frames folded): busy is 1 when it could not finish.
            let folded = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get::<_, i64>(0));
            conn.busy_timeout(BUSY_TIMEOUT)?;
            match folded {
                Ok(busy) => Ok(busy == 0),
                Err(rusqlite::Error::SqliteFailure(e, _)) if e.code == rusqlite::ErrorCode::DatabaseBusy => Ok(false),
                Err(e) => Err(e),
            }
        })
    }

    /// Runs `read` on the connection. Private code speaks rusqlite; its error is converted
    /// here, once, into a zblade error that names the file, keeps SQLite's error as its
    /// source and says so when the file is damaged.
    pub(crate) fn read<T>(&self, read: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T> {
        read(&self.conn).map_err(|e| sql_error(&self.path, e))
    }

    /// Runs `write` in one `IMMEDIATE` transaction (another process's writer is waited for
    /// up front instead of failing halfway with `SQLITE_BUSY`), committed when `write`
    /// returns `Ok`, rolled back otherwise. Errors are converted once, as in [`Index::read`].
    pub(crate) fn write<T>(&mut self, write: impl FnOnce(&Transaction<'_>) -> Result<T, Failure>) -> Result<T> {
        let run = |conn: &mut Connection| -> Result<T, Failure> {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let value = write(&tx)?;
            tx.commit()?;
            Ok(value)
        };
        run(&mut self.conn).map_err(|failure| match failure {
            Failure::Sql(e) => sql_error(&self.path, e),
            Failure::Invalid(e) => e,
        })
    }
}

/// Why a write failed, before [`Index::write`] converts it: SQLite, or an artifact that cannot
/// be indexed (an id another artifact owns).
pub(crate) enum Failure {
    /// SQLite failed.
    Sql(rusqlite::Error),
    /// The input cannot be indexed; the error says why.
    Invalid(Error),
}

impl From<rusqlite::Error> for Failure {
    fn from(e: rusqlite::Error) -> Self {
        Failure::Sql(e)
    }
}

/// Maps a SQLite failure to a zblade error, recognising a damaged database file.
fn sql_error(path: &Path, e: rusqlite::Error) -> Error {
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => Error::IndexCorrupt {
            path: path.to_path_buf(),
            message: e.to_string(),
            source: Some(Box::new(e)),
        },
        _ => Error::index(format!("{}: {e}", path.display()), e),
    }
}

/// Removes the index database files so that they can be created afresh; used when the file is
/// damaged beyond what SQLite can open.
pub fn remove_database_files(path: &Path) -> Result<()> {
    for suffix in ["", "-wal", "-shm"] {
        let mut name = path.to_path_buf().into_os_string();
        name.push(suffix);
        let file = PathBuf::from(name);
        match std::fs::remove_file(&file) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(&file, e)),
        }
    }
    Ok(())
}

//! The projects' vectors, in LanceDB beside the database: one table per project, one row per
//! embedded piece of a message or moment, named `KEY#SEQ` (KEY: `CONVERSATION/MESSAGE` or
//! `MOMENT`). The database (SQLite or PostgreSQL) keeps the texts and answers keywords; this
//! answers nearest neighbours, and `api::search` fuses the two as local search does.
//!
//! Where the tables live is a URI: a local directory by default, or an object store LanceDB
//! reaches itself (see docs/SERVER.md, "Vectors"). LanceDB's calls block, so every call runs on
//! tokio's blocking threads.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use zblade_search::VectorStore;

use crate::store::{StoreError, StoreResult};

/// Past this many vectors in a project, its nearest neighbours come from an ANN index (as in
/// local search: exact search below it is fast and always right).
const ANN_THRESHOLD: usize = 20_000;
/// Vector writes and deletes (of any project) between two compactions of the table written.
const COMPACT_EVERY: u64 = 50;

/// The vector tables of every project, opened on first use and kept open.
pub struct Vectors {
    uri: String,
    open: Mutex<Tables>,
    writes: std::sync::atomic::AtomicU64,
}

/// What this server knows of the tables: those open, and those it found missing (most projects
/// of a server may never get vectors; asking LanceDB again on every delete costs a connection).
#[derive(Default)]
struct Tables {
    open: HashMap<String, Arc<RwLock<VectorStore>>>,
    missing: std::collections::HashSet<String>,
}

fn failed(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(format!("vectors: {e}"))
}

/// The table of one project: its creator's id and the project id in hex (ids may hold
/// characters LanceDB table names may not).
fn table_name(owner: i64, project: &str) -> String {
    let hex: String = project.bytes().map(|b| format!("{b:02x}")).collect();
    format!("u{owner}_{hex}")
}

/// The row id of piece `seq` of the message or moment `key`.
pub fn row_id(key: &str, seq: u32) -> String {
    format!("{key}#{seq}")
}

/// The passage a row id names.
fn key_of(row: &str) -> &str {
    row.rsplit_once('#').map_or(row, |(key, _)| key)
}

impl Vectors {
    /// Vectors under `uri` (created when first written).
    pub fn new(uri: impl Into<String>) -> Vectors {
        Vectors {
            uri: uri.into(),
            open: Mutex::new(Tables::default()),
            writes: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Vectors under `uri`, checked now: a local folder is created, an object store must be
    /// one this build of LanceDB reaches. Blocks (call it off the async threads).
    pub fn open(uri: impl Into<String>) -> Result<Vectors, String> {
        let uri = uri.into();
        if !uri.contains("://") {
            std::fs::create_dir_all(&uri).map_err(|e| format!("{uri}: {e}"))?;
        }
        VectorStore::table_names(&uri).map_err(|e| format!("{uri}: {e}"))?;
        Ok(Vectors::new(uri))
    }

    /// Where the tables live.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The project's table, opened (created with `dims` when given) and cached; `None` when
    /// it has none and `dims` is `None`.
    fn table(&self, owner: i64, project: &str, dims: Option<usize>) -> StoreResult<Option<Arc<RwLock<VectorStore>>>> {
        let name = table_name(owner, project);
        let mut tables = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(table) = tables.open.get(&name) {
            return Ok(Some(table.clone()));
        }
        if dims.is_none() && tables.missing.contains(&name) {
            return Ok(None);
        }
        if dims.is_none() && !self.uri.contains("://") && !std::path::Path::new(&self.uri).exists() {
            tables.missing.insert(name);
            return Ok(None);
        }
        if dims.is_some() && !self.uri.contains("://") {
            std::fs::create_dir_all(&self.uri).map_err(|e| failed(format!("{}: {e}", self.uri)))?;
        }
        let store = match dims {
            Some(dims) => VectorStore::open_named(&self.uri, &name, dims).map_err(failed)?,
            None => match VectorStore::open_existing_named(&self.uri, &name).map_err(failed)? {
                Some(store) => store,
                None => {
                    tables.missing.insert(name);
                    return Ok(None);
                }
            },
        };
        let table = Arc::new(RwLock::new(store));
        tables.missing.remove(&name);
        tables.open.insert(name, table.clone());
        Ok(Some(table))
    }

    /// Replaces the vectors of one record (every row under `prefixes`) with `rows`.
    pub async fn replace(
        self: &Arc<Self>,
        owner: i64,
        project: &str,
        prefixes: Vec<String>,
        rows: Vec<(String, Vec<f32>)>,
        dims: usize,
    ) -> StoreResult<()> {
        let (this, project) = (self.clone(), project.to_string());
        blocking(move || {
            let table = this.table(owner, &project, Some(dims))?.expect("created with dims");
            let mut store = table.write().unwrap_or_else(|e| e.into_inner());
            if !prefixes.is_empty() {
                store.remove_prefixed(&prefixes).map_err(failed)?;
            }
            store.add(&rows).map_err(failed)?;
            this.maybe_compact(&store)?;
            // Once the project is large enough, an ANN index (built once; rows added later are
            // searched exactly beside it until LanceDB's next optimisation).
            store.ensure_ann_index(ANN_THRESHOLD).map_err(failed)?;
            Ok(())
        })
        .await
    }

    /// Each write or delete is a fragment or deletion file of its own: they are merged every
    /// [`COMPACT_EVERY`] of them, so searches and deletes read few files.
    fn maybe_compact(&self, store: &VectorStore) -> StoreResult<()> {
        let writes = self.writes.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        if writes.is_multiple_of(COMPACT_EVERY) {
            store.compact().map_err(failed)?;
        }
        Ok(())
    }

    /// Removes the vectors under `prefixes` (a deleted record's); nothing when the project has
    /// no table.
    pub async fn remove(self: &Arc<Self>, owner: i64, project: &str, prefixes: Vec<String>) -> StoreResult<()> {
        let (this, project) = (self.clone(), project.to_string());
        blocking(move || {
            if let Some(table) = this.table(owner, &project, None)? {
                let store = table.write().unwrap_or_else(|e| e.into_inner());
                store.remove_prefixed(&prefixes).map_err(failed)?;
                this.maybe_compact(&store)?;
            }
            Ok(())
        })
        .await
    }

    /// Drops a deleted project's table.
    pub async fn drop_project(self: &Arc<Self>, owner: i64, project: &str) -> StoreResult<()> {
        let (this, project) = (self.clone(), project.to_string());
        blocking(move || {
            let name = table_name(owner, &project);
            let mut tables = this.open.lock().unwrap_or_else(|e| e.into_inner());
            tables.open.remove(&name);
            tables.missing.insert(name.clone());
            drop(tables);
            if this.uri.contains("://") || std::path::Path::new(&this.uri).exists() {
                VectorStore::drop_named(&this.uri, &name).map_err(failed)?;
            }
            Ok(())
        })
        .await
    }

    /// The `limit` messages and moments nearest to `query`, as (key, cosine similarity), best
    /// first, each key once (its best piece).
    pub async fn nearest(
        self: &Arc<Self>,
        owner: i64,
        project: &str,
        query: Vec<f32>,
        limit: usize,
    ) -> StoreResult<Vec<(String, f64)>> {
        let (this, project) = (self.clone(), project.to_string());
        blocking(move || {
            let Some(table) = this.table(owner, &project, None)? else {
                return Ok(Vec::new());
            };
            let store = table.read().unwrap_or_else(|e| e.into_inner());
            // A message embedded in several pieces has several rows: ask for a few more.
            let mut fetch = limit + 5;
            loop {
                let found = store.nearest(&query, fetch).map_err(failed)?;
                let mut keys: Vec<(String, f64)> = Vec::new();
                for n in &found {
                    let key = key_of(&n.cid);
                    if !keys.iter().any(|(k, _)| k == key) {
                        keys.push((key.to_string(), 1.0 - n.distance as f64));
                    }
                }
                if keys.len() >= limit || found.len() < fetch {
                    keys.truncate(limit);
                    return Ok(keys);
                }
                fetch *= 4;
            }
        })
        .await
    }
}

/// Each open table owns the small runtime that drives LanceDB, and tokio forbids dropping a
/// runtime on an async thread, where the server drops its state when it stops: the tables are
/// dropped on a thread of their own.
impl Drop for Vectors {
    fn drop(&mut self) {
        let tables = std::mem::take(&mut *self.open.lock().unwrap_or_else(|e| e.into_inner()));
        let _ = std::thread::spawn(move || drop(tables)).join();
    }
}

/// Runs LanceDB's blocking calls off the async threads.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> StoreResult<T> + Send + 'static) -> StoreResult<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| failed(format!("the vector task failed: {e}")))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_keep_projects_and_owners_apart_and_rows_name_their_passage() {
        assert_ne!(table_name(1, "proj_a"), table_name(2, "proj_a"));
        assert_ne!(table_name(1, "proj_a"), table_name(1, "proj_b"));
        assert!(
            table_name(1, "proj_ü'x")
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
        );
        assert_eq!(key_of(&row_id("conv_a/msg_1", 2)), "conv_a/msg_1");
        assert_eq!(key_of(&row_id("mom_a", 0)), "mom_a");
    }

    #[test]
    fn an_object_store_this_build_cannot_reach_is_refused_when_opened() {
        // S3 is built in (tests/object_store.rs runs it against moto); Google Cloud Storage is not.
        let refused = Vectors::open("gs://zblade-bucket/vectors")
            .err()
            .expect("gs:// is refused");
        assert!(refused.contains("gs://zblade-bucket/vectors"), "{refused}");
    }
}

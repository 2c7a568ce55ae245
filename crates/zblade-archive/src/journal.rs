//! The journal: what this project has archived, kept in `.zblade/archive/journal.db` (SQLite).
//!
//! It makes pushes incremental (which version of each file is archived, in which batch),
//! resumable (a part is recorded with its prepared payload before it is sent, so a push
//! killed mid-way sends the very same transaction again rather than a second one) and
//! forgets finishable (a forget is recorded before it starts and resumed until done). It
//! holds no key and no content: hashes, paths and ids only.

use std::collections::HashMap;
use std::path::Path;

use rusqlite::{Connection, OptionalExtension, params};
use zblade_core::{Error, Result};

use crate::backend::Prepared;
use crate::format::Kind;

/// The journal of one project.
pub struct Journal {
    db: Connection,
}

/// A part that was prepared but not yet accepted by the backend.
pub struct PendingPart {
    /// The part's object id.
    pub object: String,
    /// Its locator.
    pub locator: String,
    /// What to send.
    pub payload: Vec<u8>,
}

/// A recorded batch.
#[derive(Debug, Clone)]
pub struct BatchRow {
    /// Its id.
    pub id: String,
    /// Its sequence number.
    pub seq: u64,
    /// Its kind.
    pub kind: Kind,
    /// Its parts' object ids.
    pub parts: Vec<String>,
}

/// An unfinished `forget`.
#[derive(Debug, Clone)]
pub struct ForgetRow {
    /// Its id.
    pub id: String,
    /// The paths forgotten.
    pub paths: Vec<String>,
    /// The batches whose keys are to be destroyed.
    pub batches: Vec<String>,
    /// The tombstone batch, once made.
    pub tombstone: Option<String>,
}

fn db_error(e: rusqlite::Error) -> Error {
    Error::index("the archive journal (.zblade/archive/journal.db)", e)
}

impl Journal {
    /// Opens (creating) the journal at `path`.
    pub fn open(path: &Path) -> Result<Journal> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        let db = Connection::open(path).map_err(db_error)?;
        db.execute_batch(
            "PRAGMA journal_mode = WAL;
             PRAGMA synchronous = FULL;
             CREATE TABLE IF NOT EXISTS batches (
                 id TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE, kind TEXT NOT NULL,
                 state TEXT NOT NULL, bytes INTEGER NOT NULL, items INTEGER NOT NULL,
                 created_ms INTEGER NOT NULL);
             CREATE TABLE IF NOT EXISTS parts (
                 object TEXT PRIMARY KEY, batch TEXT NOT NULL, part INTEGER NOT NULL,
                 locator TEXT NOT NULL, state TEXT NOT NULL, bytes INTEGER NOT NULL, payload BLOB);
             CREATE INDEX IF NOT EXISTS parts_batch ON parts(batch);
             CREATE TABLE IF NOT EXISTS items (
                 path TEXT NOT NULL, sha256 TEXT NOT NULL, batch TEXT NOT NULL, seq INTEGER NOT NULL,
                 deleted INTEGER NOT NULL);
             CREATE INDEX IF NOT EXISTS items_path ON items(path, seq);
             CREATE INDEX IF NOT EXISTS items_batch ON items(batch);
             CREATE TABLE IF NOT EXISTS forgets (
                 id TEXT PRIMARY KEY, paths TEXT NOT NULL, batches TEXT NOT NULL,
                 tombstone TEXT, state TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS accepted (grant_object TEXT PRIMARY KEY);
             CREATE TABLE IF NOT EXISTS seq_floor (seq INTEGER NOT NULL);",
        )
        .map_err(db_error)?;
        Ok(Journal { db })
    }

    /// The next sequence number: above every batch recorded here and above the archive's
    /// last one when a restore saw it.
    pub fn next_seq(&self) -> Result<u64> {
        let max: i64 = self
            .db
            .query_row(
                "SELECT MAX(COALESCE((SELECT MAX(seq) FROM batches), 0), COALESCE((SELECT MAX(seq) FROM seq_floor), 0))",
                [],
                |r| r.get(0),
            )
            .map_err(db_error)?;
        Ok(max as u64 + 1)
    }

    /// Makes the next sequence number exceed `seq` (a restore saw the archive go that far,
    /// tombstones and shares included).
    pub fn reserve_seq_above(&self, seq: u64) -> Result<()> {
        self.db
            .execute("INSERT INTO seq_floor VALUES (?1)", [seq as i64])
            .map_err(db_error)?;
        Ok(())
    }

    /// The archived state of every path: its latest version's hash, or `None` when the
    /// latest is a deletion.
    pub fn current(&self) -> Result<HashMap<String, Option<String>>> {
        let mut statement = self
            .db
            .prepare("SELECT path, sha256, deleted FROM items ORDER BY seq")
            .map_err(db_error)?;
        let rows = statement
            .query_map([], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, bool>(2)?))
            })
            .map_err(db_error)?;
        let mut out = HashMap::new();
        for row in rows {
            let (path, sha, deleted) = row.map_err(db_error)?;
            out.insert(path, (!deleted).then_some(sha));
        }
        Ok(out)
    }

    /// Records a batch and its prepared parts, in one transaction.
    pub fn record_batch(
        &mut self,
        batch: &BatchRow,
        items: &[crate::format::Item],
        prepared: &[(String, Prepared)],
        bytes: u64,
        created_ms: i64,
        submitted: bool,
    ) -> Result<()> {
        let tx = self.db.transaction().map_err(db_error)?;
        let state = if submitted { "submitted" } else { "prepared" };
        tx.execute(
            "INSERT INTO batches VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                batch.id,
                batch.seq as i64,
                batch.kind.as_str(),
                state,
                bytes as i64,
                items.len() as i64,
                created_ms
            ],
        )
        .map_err(db_error)?;
        for (i, (object, p)) in prepared.iter().enumerate() {
            let payload = (!submitted).then_some(p.payload.as_slice());
            tx.execute(
                "INSERT INTO parts VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    object,
                    batch.id,
                    i as i64,
                    p.locator,
                    state,
                    p.payload.len() as i64,
                    payload
                ],
            )
            .map_err(db_error)?;
        }
        if batch.kind == Kind::Batch {
            for item in items {
                tx.execute(
                    "INSERT INTO items VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![item.path, item.sha256, batch.id, batch.seq as i64, item.deleted],
                )
                .map_err(db_error)?;
            }
        }
        tx.commit().map_err(db_error)
    }

    /// Parts prepared but not known to be sent.
    pub fn pending_parts(&self) -> Result<Vec<PendingPart>> {
        let mut statement = self
            .db
            .prepare(
                "SELECT p.object, p.locator, p.payload FROM parts p JOIN batches b ON b.id = p.batch \
                 WHERE p.state = 'prepared' ORDER BY b.seq, p.part",
            )
            .map_err(db_error)?;
        let rows = statement
            .query_map([], |r| {
                Ok(PendingPart {
                    object: r.get(0)?,
                    locator: r.get(1)?,
                    payload: r.get::<_, Option<Vec<u8>>>(2)?.unwrap_or_default(),
                })
            })
            .map_err(db_error)?;
        rows.collect::<std::result::Result<_, _>>().map_err(db_error)
    }

    /// Removes the batch of a part that was never sent (its key was never kept), with its
    /// parts and items: its files count as changed again.
    pub fn drop_unsent_batch_of(&mut self, object: &str) -> Result<()> {
        let tx = self.db.transaction().map_err(db_error)?;
        let batch: Option<String> = tx
            .query_row("SELECT batch FROM parts WHERE object = ?1", [object], |r| r.get(0))
            .optional()
            .map_err(db_error)?;
        if let Some(batch) = batch {
            for table in [
                "DELETE FROM parts WHERE batch = ?1",
                "DELETE FROM items WHERE batch = ?1",
                "DELETE FROM batches WHERE id = ?1",
            ] {
                tx.execute(table, [&batch]).map_err(db_error)?;
            }
        }
        tx.commit().map_err(db_error)
    }

    /// A part prepared again (its first form expired before it was sent) takes the place of
    /// the old one.
    pub fn replace_part(&self, object: &str, fresh: &Prepared) -> Result<()> {
        self.db
            .execute(
                "UPDATE parts SET locator = ?2, payload = ?3 WHERE object = ?1 AND state = 'prepared'",
                params![object, fresh.locator, fresh.payload],
            )
            .map_err(db_error)?;
        Ok(())
    }

    /// A part reached the backend: its payload is no longer kept.
    pub fn mark_submitted(&self, object: &str) -> Result<()> {
        self.db
            .execute(
                "UPDATE parts SET state = 'submitted', payload = NULL WHERE object = ?1",
                [object],
            )
            .map_err(db_error)?;
        self.db
            .execute(
                "UPDATE batches SET state = 'submitted' WHERE state = 'prepared' AND id = (SELECT batch FROM parts WHERE object = ?1) \
                 AND NOT EXISTS (SELECT 1 FROM parts WHERE batch = batches.id AND state = 'prepared')",
                [object],
            )
            .map_err(db_error)?;
        Ok(())
    }

    /// Marks parts confirmed by the backend.
    pub fn mark_confirmed(&self, object: &str) -> Result<()> {
        self.db
            .execute(
                "UPDATE parts SET state = 'confirmed' WHERE object = ?1 AND state = 'submitted'",
                [object],
            )
            .map_err(db_error)?;
        Ok(())
    }

    /// Parts sent but not confirmed: (object, locator).
    pub fn unconfirmed(&self) -> Result<Vec<(String, String)>> {
        let mut statement = self
            .db
            .prepare("SELECT object, locator FROM parts WHERE state = 'submitted'")
            .map_err(db_error)?;
        let rows = statement
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(db_error)?;
        rows.collect::<std::result::Result<_, _>>().map_err(db_error)
    }

    /// Counts: parts per state and their bytes.
    pub fn part_counts(&self) -> Result<Vec<(String, u64, u64)>> {
        let mut statement = self
            .db
            .prepare("SELECT state, COUNT(*), COALESCE(SUM(bytes), 0) FROM parts GROUP BY state")
            .map_err(db_error)?;
        let rows = statement
            .query_map([], |r| {
                Ok((r.get(0)?, r.get::<_, i64>(1)? as u64, r.get::<_, i64>(2)? as u64))
            })
            .map_err(db_error)?;
        rows.collect::<std::result::Result<_, _>>().map_err(db_error)
    }

    /// Live batches holding any of `paths`, and every live snapshot.
    pub fn batches_touching(&self, paths: &[String]) -> Result<Vec<BatchRow>> {
        let mut ids: Vec<String> = Vec::new();
        for path in paths {
            let mut statement = self
                .db
                .prepare("SELECT DISTINCT batch FROM items WHERE path = ?1")
                .map_err(db_error)?;
            for id in statement
                .query_map([path], |r| r.get::<_, String>(0))
                .map_err(db_error)?
            {
                ids.push(id.map_err(db_error)?);
            }
        }
        let mut statement = self
            .db
            .prepare("SELECT id FROM batches WHERE kind = 'snapshot' AND state != 'destroyed'")
            .map_err(db_error)?;
        for id in statement.query_map([], |r| r.get::<_, String>(0)).map_err(db_error)? {
            ids.push(id.map_err(db_error)?);
        }
        ids.sort();
        ids.dedup();
        ids.into_iter().filter_map(|id| self.batch(&id).transpose()).collect()
    }

    /// One batch with its parts.
    pub fn batch(&self, id: &str) -> Result<Option<BatchRow>> {
        let row = self
            .db
            .query_row(
                "SELECT seq, kind FROM batches WHERE id = ?1 AND state != 'destroyed'",
                [id],
                |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)),
            )
            .optional()
            .map_err(db_error)?;
        let Some((seq, kind)) = row else { return Ok(None) };
        let mut statement = self
            .db
            .prepare("SELECT object FROM parts WHERE batch = ?1 ORDER BY part")
            .map_err(db_error)?;
        let parts = statement
            .query_map([id], |r| r.get(0))
            .map_err(db_error)?
            .collect::<std::result::Result<_, _>>()
            .map_err(db_error)?;
        Ok(Some(BatchRow {
            id: id.to_string(),
            seq: seq as u64,
            kind: Kind::parse(&kind).unwrap_or(Kind::Batch),
            parts,
        }))
    }

    /// Records a forget before anything is done.
    pub fn begin_forget(&self, row: &ForgetRow) -> Result<()> {
        self.db
            .execute(
                "INSERT INTO forgets VALUES (?1, ?2, ?3, NULL, 'started')",
                params![
                    row.id,
                    serde_json::to_string(&row.paths).expect("json"),
                    serde_json::to_string(&row.batches).expect("json")
                ],
            )
            .map_err(db_error)?;
        Ok(())
    }

    /// Forgets not yet finished.
    pub fn unfinished_forgets(&self) -> Result<Vec<ForgetRow>> {
        let mut statement = self
            .db
            .prepare("SELECT id, paths, batches, tombstone FROM forgets WHERE state = 'started' ORDER BY rowid")
            .map_err(db_error)?;
        let rows = statement
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get(3)?,
                ))
            })
            .map_err(db_error)?;
        let mut out = Vec::new();
        for row in rows {
            let (id, paths, batches, tombstone) = row.map_err(db_error)?;
            out.push(ForgetRow {
                id,
                paths: serde_json::from_str(&paths).unwrap_or_default(),
                batches: serde_json::from_str(&batches).unwrap_or_default(),
                tombstone,
            });
        }
        Ok(out)
    }

    /// Notes which batches a forget destroys (decided on its first try).
    pub fn set_forget_batches(&self, forget: &str, batches: &[String]) -> Result<()> {
        self.db
            .execute(
                "UPDATE forgets SET batches = ?2 WHERE id = ?1",
                params![forget, serde_json::to_string(batches).expect("json")],
            )
            .map_err(db_error)?;
        Ok(())
    }

    /// Notes the tombstone a forget made.
    pub fn set_forget_tombstone(&self, forget: &str, tombstone: &str) -> Result<()> {
        self.db
            .execute(
                "UPDATE forgets SET tombstone = ?2 WHERE id = ?1",
                params![forget, tombstone],
            )
            .map_err(db_error)?;
        Ok(())
    }

    /// Drops the item rows of batches about to be destroyed, so the next push archives their
    /// surviving files again.
    pub fn drop_items_of(&self, batches: &[String]) -> Result<()> {
        for batch in batches {
            self.db
                .execute("DELETE FROM items WHERE batch = ?1", [batch])
                .map_err(db_error)?;
        }
        Ok(())
    }

    /// The batches' keys are destroyed: marks them so, and the forget done.
    pub fn finish_forget(&mut self, forget: &str, batches: &[String]) -> Result<()> {
        let tx = self.db.transaction().map_err(db_error)?;
        for batch in batches {
            tx.execute("UPDATE batches SET state = 'destroyed' WHERE id = ?1", [batch])
                .map_err(db_error)?;
            tx.execute(
                "UPDATE parts SET state = 'destroyed', payload = NULL WHERE batch = ?1",
                [batch],
            )
            .map_err(db_error)?;
        }
        tx.execute("UPDATE forgets SET state = 'done' WHERE id = ?1", [forget])
            .map_err(db_error)?;
        tx.commit().map_err(db_error)
    }

    /// Where a part is.
    pub fn locator(&self, object: &str) -> Result<Option<String>> {
        self.db
            .query_row("SELECT locator FROM parts WHERE object = ?1", [object], |r| r.get(0))
            .optional()
            .map_err(db_error)
    }

    /// Whether a grant was accepted already.
    pub fn accepted(&self, grant: &str) -> Result<bool> {
        self.db
            .query_row("SELECT 1 FROM accepted WHERE grant_object = ?1", [grant], |_| Ok(()))
            .optional()
            .map(|r| r.is_some())
            .map_err(db_error)
    }

    /// Notes an accepted grant.
    pub fn mark_accepted(&self, grant: &str) -> Result<()> {
        self.db
            .execute("INSERT OR IGNORE INTO accepted VALUES (?1)", [grant])
            .map_err(db_error)?;
        Ok(())
    }
}

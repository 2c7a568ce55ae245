//! Code references as captured (from the artifacts) and their live locations.

use rusqlite::{OptionalExtension, params};
use serde::Serialize;
use zblade_core::{Anchor, ReferenceStatus, Result};

use crate::Index;

/// A code reference as captured, with where it came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredReference {
    /// Stable key: `conv_…/msg_…/N` or `moment_…/N`.
    pub key: String,
    /// The conversation it belongs to.
    pub conversation_id: Option<String>,
    /// The message it belongs to.
    pub message_id: Option<String>,
    /// The moment it belongs to.
    pub moment_id: Option<String>,
    /// Path at capture.
    pub file: String,
    /// Lines at capture.
    pub lines: [u32; 2],
    /// Why it was referenced.
    pub context: Option<String>,
    /// Blob hash at capture.
    pub git_hash: Option<String>,
    /// HEAD at capture.
    pub commit: Option<String>,
    /// Line anchor at capture.
    pub anchor: Option<Anchor>,
}

/// Where a reference is now, as last checked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LiveLocation {
    /// The reference's key.
    pub key: String,
    /// How it fared at the last check.
    pub status: ReferenceStatus,
    /// Path now.
    pub file: Option<String>,
    /// Lines now.
    pub lines: Option<[u32; 2]>,
    /// 1.0 unless modified.
    pub similarity: f64,
    /// Blob hash of the file now.
    pub current_blob: Option<String>,
    /// Drift details as JSON, when the file changed since capture.
    pub drift: Option<serde_json::Value>,
    /// Why it is missing or unreadable.
    pub reason: Option<String>,
    /// When it was checked (RFC 3339).
    pub checked_at: String,
}

const REFERENCE_COLUMNS: &str = "ref_key, conversation_id, message_id, moment_id, file_path, start_line, end_line, context, git_hash, commit_id, anchor";

fn reference_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<StoredReference> {
    let anchor: Option<String> = r.get(10)?;
    Ok(StoredReference {
        key: r.get(0)?,
        conversation_id: r.get(1)?,
        message_id: r.get(2)?,
        moment_id: r.get(3)?,
        file: r.get(4)?,
        lines: [r.get(5)?, r.get(6)?],
        context: r.get(7)?,
        git_hash: r.get(8)?,
        commit: r.get(9)?,
        anchor: anchor.and_then(|a| serde_json::from_str(&a).ok()),
    })
}

fn live_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<LiveLocation> {
    let start: Option<u32> = r.get(3)?;
    let end: Option<u32> = r.get(4)?;
    let drift: Option<String> = r.get(7)?;
    let status: String = r.get(1)?;
    // Only this crate writes the column; another word means the file was edited by hand.
    let status = ReferenceStatus::parse(&status).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            1,
            rusqlite::types::Type::Text,
            format!("unknown status {status:?}").into(),
        )
    })?;
    Ok(LiveLocation {
        key: r.get(0)?,
        status,
        file: r.get(2)?,
        lines: start.zip(end).map(|(s, e)| [s, e]),
        similarity: r.get(5)?,
        current_blob: r.get(6)?,
        drift: drift.and_then(|d| serde_json::from_str(&d).ok()),
        reason: r.get(8)?,
        checked_at: r.get(9)?,
    })
}

impl Index {
    /// Every code reference, in key order.
    pub fn references(&self) -> Result<Vec<StoredReference>> {
        self.read(|conn| {
            let sql = format!("SELECT {REFERENCE_COLUMNS} FROM code_references ORDER BY ref_key");
            let mut stmt = conn.prepare_cached(&sql)?;
            let rows = stmt.query_map([], reference_row)?;
            rows.collect::<rusqlite::Result<_>>()
        })
    }

    /// References whose captured or live file is one of `files`.
    pub fn references_in_files(&self, files: &[String]) -> Result<Vec<StoredReference>> {
        self.read(|conn| {
            let sql = format!(
                "SELECT {REFERENCE_COLUMNS} FROM code_references WHERE file_path = ?1
                 OR ref_key IN (SELECT ref_key FROM reference_status WHERE file_path = ?1)"
            );
            let mut stmt = conn.prepare_cached(&sql)?;
            let mut out: Vec<StoredReference> = Vec::new();
            for file in files {
                for row in stmt.query_map([file], reference_row)? {
                    let row = row?;
                    if !out.iter().any(|r| r.key == row.key) {
                        out.push(row);
                    }
                }
            }
            out.sort_by(|a, b| a.key.cmp(&b.key));
            Ok(out)
        })
    }

    /// The references of one message or moment (`owner` is `conv_…/msg_…` or `moment_…`).
    pub fn references_of(&self, owner: &str) -> Result<Vec<StoredReference>> {
        self.read(|conn| {
            let sql = format!(
                "SELECT {REFERENCE_COLUMNS} FROM code_references WHERE ref_key LIKE ?1 ESCAPE '\\' ORDER BY id"
            );
            let pattern = format!(
                "{}/%",
                owner.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_")
            );
            let mut stmt = conn.prepare_cached(&sql)?;
            let rows = stmt.query_map([pattern], reference_row)?;
            let all: Vec<StoredReference> = rows.collect::<rusqlite::Result<_>>()?;
            // `conv_a/msg_1/%` must not match `conv_a/msg_1x/…`: keep exactly one more segment.
            Ok(all
                .into_iter()
                .filter(|r| r.key[owner.len() + 1..].chars().all(|c| c.is_ascii_digit()))
                .collect())
        })
    }

    /// References whose last recorded live status is `status` (e.g. `missing`).
    pub fn references_with_status(&self, status: ReferenceStatus) -> Result<Vec<StoredReference>> {
        self.read(|conn| {
            let sql = format!(
                "SELECT {REFERENCE_COLUMNS} FROM code_references
                 WHERE ref_key IN (SELECT ref_key FROM reference_status WHERE status = ?1) ORDER BY ref_key"
            );
            let mut stmt = conn.prepare_cached(&sql)?;
            let rows = stmt.query_map([status.as_str()], reference_row)?;
            rows.collect::<rusqlite::Result<_>>()
        })
    }

    /// One reference by key.
    pub fn reference(&self, key: &str) -> Result<Option<StoredReference>> {
        self.read(|conn| {
            let sql = format!("SELECT {REFERENCE_COLUMNS} FROM code_references WHERE ref_key = ?1");
            conn.query_row(&sql, [key], reference_row).optional()
        })
    }

    /// Stores live locations, replacing earlier ones, in one transaction.
    pub fn put_live_locations(&mut self, rows: &[LiveLocation]) -> Result<()> {
        self.write(|tx| {
        {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO reference_status
                     (ref_key, status, file_path, start_line, end_line, similarity, current_blob, drift_json, reason, checked_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                )?;
            for row in rows {
                stmt.execute(params![
                    row.key,
                    row.status.as_str(),
                    row.file,
                    row.lines.map(|l| l[0]),
                    row.lines.map(|l| l[1]),
                    row.similarity,
                    row.current_blob,
                    row.drift.as_ref().map(|d| d.to_string()),
                    row.reason,
                    row.checked_at
                ])?;
            }
        }
        Ok(())
        })
    }

    /// Drops live rows of references that no longer exist (after a full check).
    pub fn prune_live_locations(&mut self) -> Result<()> {
        self.read(|conn| {
            conn.execute(
                "DELETE FROM reference_status WHERE ref_key NOT IN (SELECT ref_key FROM code_references)",
                [],
            )
        })?;
        Ok(())
    }

    /// The live location of one reference, if it was checked.
    pub fn live_location(&self, key: &str) -> Result<Option<LiveLocation>> {
        self.read(|conn| {
            conn
                .query_row(
                    "SELECT ref_key, status, file_path, start_line, end_line, similarity, current_blob, drift_json, reason, checked_at
                     FROM reference_status WHERE ref_key = ?1",
                    [key],
                    live_row,
                )
                .optional()
        })
    }

    /// Counts of references by live status; `unchecked` for references never checked.
    pub fn reference_health(&self) -> Result<Vec<(String, i64)>> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT coalesce(s.status, 'unchecked'), count(*) FROM code_references r
                     LEFT JOIN reference_status s ON s.ref_key = r.ref_key GROUP BY 1 ORDER BY 1",
            )?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect::<rusqlite::Result<_>>()
        })
    }
}

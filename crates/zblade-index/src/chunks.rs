//! The chunk catalog: which CIDs (texts to embed) belong to which message, moment or commit, and
//! turning a search key (message, moment or code chunk) back into a displayable hit.

use std::collections::HashMap;

use rusqlite::{OptionalExtension, params};
use zblade_core::Result;

use crate::search::hit_from_row;
use crate::{HitKind, Index, SearchHit};

/// One chunk: `key` (`conv_…/msg_…`, `moment_…` or `commit:SHA`), its position, CID and kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkRow {
    /// What the chunk belongs to.
    pub key: String,
    /// Position within it, from 0.
    pub seq: i64,
    /// sha256 of the chunk's text.
    pub cid: String,
    /// `message`, `moment` or `commit`.
    pub kind: String,
}

/// Text to chunk: (key, kind, text) for every message, moment and commit.
pub type ChunkSource = (String, &'static str, String);

impl Index {
    /// Every message and moment with its text, for chunking.
    pub fn chunk_sources(&self) -> Result<Vec<ChunkSource>> {
        self.read(|conn| {
            let mut out = Vec::new();
            let mut stmt = conn.prepare("SELECT conversation_id || '/' || id, content FROM messages ORDER BY pk")?;
            for row in stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))? {
                let (key, text): (String, String) = row?;
                out.push((key, "message", text));
            }
            let mut stmt = conn.prepare(
                "SELECT id, content || coalesce(char(10) || char(10) || context, '') FROM moments ORDER BY id",
            )?;
            for row in stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))? {
                let (key, text): (String, String) = row?;
                out.push((key, "moment", text));
            }
            // A commit is embedded by its message; its paths are for keywords.
            let mut stmt =
                conn.prepare("SELECT 'commit:' || sha, subject || char(10) || body FROM commits ORDER BY pk")?;
            for row in stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))? {
                let (key, text): (String, String) = row?;
                out.push((key, "commit", text));
            }
            Ok(out)
        })
    }

    /// Messages and moments with text that the chunk catalog does not list yet: written since
    /// memory was last embedded. One lookup per record in the catalog's key, and every
    /// message's text is read: about a second at a million chunks, so a search asks
    /// [`Index::newest_memory_without_chunks`] instead.
    pub fn memory_without_chunks(&self) -> Result<usize> {
        self.read(|conn| {
            conn.query_row(
                "SELECT (SELECT count(*) FROM messages m WHERE length(trim(m.content)) > 0 AND NOT EXISTS
                           (SELECT 1 FROM chunks c WHERE c.key = m.conversation_id || '/' || m.id AND c.seq = 0))
                      + (SELECT count(*) FROM moments o WHERE NOT EXISTS
                           (SELECT 1 FROM chunks c WHERE c.key = o.id AND c.seq = 0))",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n.max(0) as usize)
        })
    }

    /// [`Index::memory_without_chunks`] among the newest `window` messages and the newest
    /// `window` moments only: what a search can afford to ask each time. An indexing pass
    /// embeds all memory, so what it has not reached yet is the newest; a count equal to
    /// `window` means "at least".
    pub fn newest_memory_without_chunks(&self, window: usize) -> Result<usize> {
        self.read(|conn| {
            conn.query_row(
                "SELECT (SELECT count(*) FROM (SELECT conversation_id, id, content FROM messages
                                               ORDER BY pk DESC LIMIT ?1) m
                         WHERE length(trim(m.content)) > 0 AND NOT EXISTS
                           (SELECT 1 FROM chunks c WHERE c.key = m.conversation_id || '/' || m.id AND c.seq = 0))
                      + (SELECT count(*) FROM (SELECT id FROM moments ORDER BY rowid DESC LIMIT ?1) o
                         WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.key = o.id AND c.seq = 0))",
                [window as i64],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n.max(0) as usize)
        })
    }

    /// Makes the chunk catalog exactly `rows`, writing only the rows that differ: an index run
    /// recomputes every chunk, and almost always finds the catalog as it left it (each start
    /// of the tray app, every `zblade index` with nothing new). Deleting and inserting the
    /// whole catalog instead wrote it out again each time, into the write-ahead log (7.7 MB at
    /// 24,000 chunks, the app started seven times left 46 MB there), and every process that
    /// opened the index afterwards, with no other connection open, read that log back before
    /// its first query (a cold `zblade context` 17 ms slower at p50), and at a million chunks
    /// the rewrite took 14 s against 0.4 s to find nothing changed (docs/BENCHMARKS.md, "The
    /// lean install"). When nothing differs, no transaction is opened.
    pub fn replace_chunks(&mut self, rows: &[ChunkRow]) -> Result<()> {
        // The catalog is read in its primary key's order and `rows` sorted the same way
        // (SQLite compares text bytewise, as `str` does), so the two are merged in one pass
        // without a copy of the catalog in memory (a million rows at a million chunks).
        let mut wanted: Vec<&ChunkRow> = rows.iter().collect();
        wanted.sort_by(|a, b| (a.key.as_str(), a.seq).cmp(&(b.key.as_str(), b.seq)));
        let (stale, changed) = self.read(|conn| {
            let mut stmt = conn.prepare("SELECT key, seq, cid, kind FROM chunks ORDER BY key, seq")?;
            let mut listed = stmt.query([])?;
            let mut wanted = wanted.into_iter().peekable();
            // Listed rows no longer wanted; wanted rows not listed (false) or listed otherwise (true).
            let mut stale: Vec<(String, i64)> = Vec::new();
            let mut changed: Vec<(&ChunkRow, bool)> = Vec::new();
            while let Some(row) = listed.next()? {
                let (key, seq) = (row.get_ref(0)?.as_str()?, row.get::<_, i64>(1)?);
                while let Some(new) = wanted.next_if(|w| (w.key.as_str(), w.seq) < (key, seq)) {
                    changed.push((new, false));
                }
                match wanted.next_if(|w| w.key == key && w.seq == seq) {
                    Some(same) if row.get_ref(2)?.as_str()? == same.cid && row.get_ref(3)?.as_str()? == same.kind => {}
                    Some(other) => changed.push((other, true)),
                    None => stale.push((key.to_string(), seq)),
                }
            }
            changed.extend(wanted.map(|new| (new, false)));
            Ok((stale, changed))
        })?;
        if stale.is_empty() && changed.is_empty() {
            return Ok(());
        }
        self.write(|tx| {
            let mut delete = tx.prepare("DELETE FROM chunks WHERE key = ?1 AND seq = ?2")?;
            for (key, seq) in &stale {
                delete.execute(params![key, seq])?;
            }
            let mut update = tx.prepare("UPDATE chunks SET cid = ?3, kind = ?4 WHERE key = ?1 AND seq = ?2")?;
            let mut insert = tx.prepare("INSERT INTO chunks (key, seq, cid, kind) VALUES (?1, ?2, ?3, ?4)")?;
            for (row, listed) in &changed {
                let statement = if *listed { &mut update } else { &mut insert };
                statement.execute(params![row.key, row.seq, row.cid, row.kind])?;
            }
            Ok(())
        })
    }

    /// The catalog as a map from (key, seq) to CID: what memory was last embedded as.
    pub fn chunk_map(&self) -> Result<HashMap<(String, i64), String>> {
        self.read(|conn| {
            let mut stmt = conn.prepare("SELECT key, seq, cid FROM chunks")?;
            let rows = stmt.query_map([], |r| Ok(((r.get(0)?, r.get(1)?), r.get(2)?)))?;
            rows.collect::<rusqlite::Result<_>>()
        })
    }

    /// Replaces the catalog rows of the keys in `rows` (and of `gone`, keys that no longer
    /// exist) in one transaction, leaving every other key's rows as they are.
    pub fn update_chunks(&mut self, rows: &[ChunkRow], gone: &[String]) -> Result<()> {
        self.write(|tx| {
            {
                let mut delete = tx.prepare("DELETE FROM chunks WHERE key = ?1")?;
                let keys: std::collections::BTreeSet<&str> = rows
                    .iter()
                    .map(|r| r.key.as_str())
                    .chain(gone.iter().map(String::as_str))
                    .collect();
                for key in keys {
                    delete.execute([key])?;
                }
                let mut insert = tx.prepare("INSERT INTO chunks (key, seq, cid, kind) VALUES (?1, ?2, ?3, ?4)")?;
                for row in rows {
                    insert.execute(params![row.key, row.seq, row.cid, row.kind])?;
                }
            }
            Ok(())
        })
    }

    /// Every distinct CID in the catalog.
    pub fn chunk_cids(&self) -> Result<Vec<String>> {
        self.read(|conn| {
            let mut stmt = conn.prepare("SELECT DISTINCT cid FROM chunks")?;
            let rows = stmt.query_map([], |r| r.get(0))?;
            rows.collect::<rusqlite::Result<_>>()
        })
    }

    /// Number of chunks.
    pub fn chunk_count(&self) -> Result<i64> {
        self.read(|conn| conn.query_row("SELECT count(*) FROM chunks", [], |r| r.get(0)))
    }

    /// The keys each of these CIDs belongs to: messages and moments, then code chunks
    /// (`code:PATH:START-END`).
    pub fn keys_for_cids(&self, cids: &[String]) -> Result<HashMap<String, Vec<String>>> {
        self.read(|conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT key FROM (SELECT key, 0 AS o FROM chunks WHERE cid = ?1
                     UNION ALL SELECT 'code:' || path || ':' || start_line || '-' || end_line, 1 FROM code_chunks WHERE vector_cid = ?1)
                     ORDER BY o, key",
                )?;
            let mut out = HashMap::new();
            for cid in cids {
                let keys: Vec<String> = stmt
                    .query_map([cid], |r| r.get(0))?
                    .collect::<rusqlite::Result<_>>()?;
                out.insert(cid.clone(), keys);
            }
            Ok(out)
        })
    }

    /// For each message key (`conv_…/msg_…`) among `keys`, the keys of the messages just before
    /// and after it in its conversation (other keys are skipped). A conversation's messages are
    /// written together, in order, so neighbours are one row away and found by primary key.
    pub fn message_neighbours(&self, keys: &[String]) -> Result<HashMap<String, Vec<String>>> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT n.id FROM messages m JOIN messages n
                   ON n.pk IN (m.pk - 1, m.pk + 1) AND n.conversation_id = m.conversation_id
                      AND n.seq IN (m.seq - 1, m.seq + 1)
                 WHERE m.conversation_id = ?1 AND m.id = ?2
                 ORDER BY n.seq",
            )?;
            let mut out = HashMap::new();
            for key in keys {
                let Some((conversation, message)) = key.split_once('/') else {
                    continue;
                };
                if crate::parse_code_key(key).is_some() {
                    continue;
                }
                let ids = stmt
                    .query_map(params![conversation, message], |r| r.get::<_, String>(0))?
                    .map(|id| id.map(|id| format!("{conversation}/{id}")))
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                if !ids.is_empty() {
                    out.insert(key.clone(), ids);
                }
            }
            Ok(out)
        })
    }

    /// A displayable hit for a key found by vector search: the start of its text as snippet.
    pub fn hit_for_key(&self, key: &str, score: f64) -> Result<Option<SearchHit>> {
        if let Some((path, start, end)) = crate::parse_code_key(key) {
            return Ok(self
                .code_chunk_at(path, start, end)?
                .map(|(chunk, modified)| crate::code::code_hit(chunk, modified, score)));
        }
        if let Some(sha) = key.strip_prefix("commit:") {
            return self.read(|conn| crate::commits::commit_hit(conn, sha, score));
        }
        self.read(|conn| {
            let (kind, sql, args): (HitKind, &str, Vec<&str>) = match key.split_once('/') {
                Some((conv, msg)) => (
                    HitKind::Message,
                    "SELECT m.id, m.conversation_id, c.title, m.role, m.timestamp, m.content
                     FROM messages m JOIN conversations c ON c.id = m.conversation_id
                     WHERE m.conversation_id = ?1 AND m.id = ?2",
                    vec![conv, msg],
                ),
                None => (
                    HitKind::Moment,
                    "SELECT m.id, m.conversation_id, c.title, m.type, m.created_at, m.content
                     FROM moments m LEFT JOIN conversations c ON c.id = m.conversation_id WHERE m.id = ?1",
                    vec![key],
                ),
            };
            // Asked once per vector hit of every search: the statement is prepared once.
            let hit = conn
                .prepare_cached(sql)?
                .query_row(rusqlite::params_from_iter(args), |r| hit_from_row(kind, r, score))
                .optional()?;
            Ok(hit.map(|mut hit| {
                hit.snippet = zblade_core::text::one_line(&hit.snippet, 200);
                hit
            }))
        })
    }
}

/// The key of a keyword hit, in the form chunks use.
pub fn hit_key(hit: &SearchHit) -> String {
    match (hit.kind, &hit.conversation_id) {
        (HitKind::Message, Some(conv)) => format!("{conv}/{}", hit.id),
        (HitKind::Code, _) => format!("code:{}", hit.id),
        (HitKind::Commit, _) => format!("commit:{}", hit.id),
        _ => hit.id.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An index made before version 8 finds a CID's owners from the covering index once it
    /// opens, with the same answer.
    #[test]
    fn opening_a_version_7_index_finds_owners_from_the_index_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.db");
        {
            let conn = crate::schema::database_at_version(&path, 7);
            conn.execute_batch(
                "INSERT INTO chunks VALUES ('conv_b/msg_2', 0, 'c1', 'message');
                 INSERT INTO chunks VALUES ('conv_a/msg_1', 1, 'c1', 'message');
                 INSERT INTO chunks VALUES ('mom_1', 0, 'c2', 'moment');",
            )
            .unwrap();
        }
        let index = Index::open(&path).unwrap();
        assert_eq!(index.schema_version().unwrap(), crate::schema::SCHEMA_VERSION);
        let owners = index.keys_for_cids(&["c1".into(), "c2".into(), "c3".into()]).unwrap();
        assert_eq!(owners["c1"], ["conv_a/msg_1", "conv_b/msg_2"]);
        assert_eq!(owners["c2"], ["mom_1"]);
        assert!(owners["c3"].is_empty());
        let plan: Vec<String> = index
            .read(|conn| {
                let mut stmt = conn.prepare("EXPLAIN QUERY PLAN SELECT key FROM chunks WHERE cid = 'c1'")?;
                stmt.query_map([], |r| r.get::<_, String>(3))?.collect()
            })
            .unwrap();
        assert!(
            plan.iter()
                .any(|step| step.contains("COVERING INDEX idx_chunks_cid_key")),
            "{plan:?}"
        );
    }
}

//! The repository's commits in the index: their messages for search, the blame of every file
//! at the indexed HEAD, and which later commit changed which earlier commit's lines.
//!
//! The engine reads the history (`zblade_refs::history`) and attributes lines
//! (`zblade_refs::attribution`); this module only stores and answers. A commit is named by
//! `pk` inside the index (line owners hold numbers, not 40-character ids) and by `sha` outside.

use std::collections::HashMap;

use rusqlite::{OptionalExtension, params};
use serde::Serialize;
use zblade_core::{Error, Result};

use crate::hit::{HitKind, SearchHit};
use crate::{Index, SearchFilter};

/// A commit in the index (what `put_history` stores and every query returns).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct StoredCommit {
    /// Its number in this index (the order commits were read in).
    #[serde(skip)]
    pub pk: i64,
    /// Full hex id.
    pub sha: String,
    /// Parent ids.
    pub parents: Vec<String>,
    /// `Name <email>`.
    pub author: String,
    /// Author time (RFC 3339, UTC).
    pub committed_at: String,
    /// First line of the message.
    pub subject: String,
    /// The rest of the message.
    pub body: String,
    /// The files it changed.
    pub paths: Vec<String>,
    /// How many files it changed in all.
    pub files_changed: u64,
    /// Lines added.
    pub lines_added: u64,
    /// Lines removed.
    pub lines_removed: u64,
    /// Lines it wrote that attribution follows.
    pub written: u64,
}

impl StoredCommit {
    /// Its short id.
    pub fn short(&self) -> &str {
        &self.sha[..self.sha.len().min(7)]
    }
}

/// Lines of one commit that a later commit changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct LaterChange {
    /// The later commit's id.
    pub sha: String,
    /// Its subject.
    pub subject: String,
    /// When it was made.
    pub committed_at: String,
    /// Lines it rewrote.
    pub rewritten: u64,
    /// Lines it deleted.
    pub deleted: u64,
    /// In which files.
    pub paths: Vec<String>,
}

/// What became of a commit's lines, at the indexed HEAD.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct CommitFate {
    /// Lines it wrote.
    pub written: u64,
    /// Of those, lines still as it wrote them.
    pub standing: u64,
    /// The later commits that changed the rest, earliest first.
    pub changed_by: Vec<LaterChange>,
}

/// One index write for a history read.
#[derive(Debug, Default)]
pub struct HistoryUpdate {
    /// Forget every commit stored before (the history was rewritten).
    pub from_scratch: bool,
    /// The HEAD that was read.
    pub head: Option<String>,
    /// New commits.
    pub commits: Vec<StoredCommit>,
    /// (commit, by, path) → (rewritten, deleted) lines, added to what is stored.
    pub overwrites: Vec<(i64, i64, String, u64, u64)>,
    /// Files whose line owners changed: their encoded owners, `None` when the file is gone.
    pub owners: Vec<(String, Option<Vec<u8>>)>,
}

const COMMIT_COLUMNS: &str = "pk, sha, parents, author, committed_at, subject, body, paths, files_changed, \
                              lines_added, lines_removed, written";

fn commit_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<StoredCommit> {
    let split =
        |s: String, sep: char| -> Vec<String> { s.split(sep).filter(|p| !p.is_empty()).map(String::from).collect() };
    Ok(StoredCommit {
        pk: r.get(0)?,
        sha: r.get(1)?,
        parents: split(r.get(2)?, ' '),
        author: r.get(3)?,
        committed_at: r.get(4)?,
        subject: r.get(5)?,
        body: r.get(6)?,
        paths: split(r.get(7)?, '\n'),
        files_changed: r.get::<_, i64>(8)? as u64,
        lines_added: r.get::<_, i64>(9)? as u64,
        lines_removed: r.get::<_, i64>(10)? as u64,
        written: r.get::<_, i64>(11)? as u64,
    })
}

impl Index {
    /// The HEAD whose history is indexed, if any was read.
    pub fn history_head(&self) -> Result<Option<String>> {
        self.read(|conn| {
            conn.query_row("SELECT value FROM history_state WHERE key = 'head'", [], |r| r.get(0))
                .optional()
        })
    }

    /// The number the next commit read gets.
    pub fn next_commit_pk(&self) -> Result<i64> {
        self.read(|conn| conn.query_row("SELECT coalesce(max(pk), 0) + 1 FROM commits", [], |r| r.get(0)))
    }

    /// How many commits are indexed.
    pub fn commit_count(&self) -> Result<u64> {
        self.read(|conn| conn.query_row("SELECT count(*) FROM commits", [], |r| r.get::<_, i64>(0)))
            .map(|n| n as u64)
    }

    /// The stored owners of these files' lines (files never seen are left out).
    pub fn line_owners(&self, paths: &[&str]) -> Result<HashMap<String, Vec<u8>>> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached("SELECT runs FROM line_owners WHERE path = ?1")?;
            let mut out = HashMap::new();
            for path in paths {
                if let Some(runs) = stmt.query_row([path], |r| r.get::<_, Vec<u8>>(0)).optional()? {
                    out.insert(path.to_string(), runs);
                }
            }
            Ok(out)
        })
    }

    /// Stores one history read in one transaction.
    pub fn put_history(&mut self, update: &HistoryUpdate) -> Result<()> {
        self.write(|tx| {
            if update.from_scratch {
                tx.execute_batch(
                    "INSERT INTO commits_fts(commits_fts) VALUES ('delete-all');
                     DELETE FROM commits; DELETE FROM commit_overwrites; DELETE FROM line_owners;",
                )?;
            }
            let mut insert = tx.prepare_cached(
                "INSERT INTO commits (pk, sha, parents, author, committed_at, subject, body, paths, files_changed,
                                      lines_added, lines_removed, written)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
                 ON CONFLICT(sha) DO NOTHING",
            )?;
            let mut fts = tx.prepare_cached("INSERT INTO commits_fts (rowid, subject, body, paths) VALUES (?1, ?2, ?3, ?4)")?;
            for c in &update.commits {
                let paths = c.paths.join("\n");
                let inserted = insert.execute(params![
                    c.pk,
                    c.sha,
                    c.parents.join(" "),
                    c.author,
                    c.committed_at,
                    c.subject,
                    c.body,
                    paths,
                    c.files_changed as i64,
                    c.lines_added as i64,
                    c.lines_removed as i64,
                    c.written as i64
                ])?;
                if inserted > 0 {
                    // Paths are searched by their words: `src/auth/refresh.rs` → src auth refresh rs.
                    fts.execute(params![c.pk, c.subject, c.body, paths.replace(['/', '.', '_', '-'], " ")])?;
                }
            }
            let mut overwrite = tx.prepare_cached(
                "INSERT INTO commit_overwrites (commit_pk, by_pk, path, rewritten, deleted) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT DO UPDATE SET rewritten = rewritten + excluded.rewritten, deleted = deleted + excluded.deleted",
            )?;
            for (commit, by, path, rewritten, deleted) in &update.overwrites {
                overwrite.execute(params![commit, by, path, *rewritten as i64, *deleted as i64])?;
            }
            let mut put = tx.prepare_cached("INSERT OR REPLACE INTO line_owners (path, runs) VALUES (?1, ?2)")?;
            let mut drop = tx.prepare_cached("DELETE FROM line_owners WHERE path = ?1")?;
            for (path, runs) in &update.owners {
                match runs {
                    Some(runs) => put.execute(params![path, runs])?,
                    None => drop.execute([path])?,
                };
            }
            if let Some(head) = &update.head {
                tx.execute(
                    "INSERT OR REPLACE INTO history_state (key, value) VALUES ('head', ?1)",
                    [head],
                )?;
            }
            Ok(())
        })
    }

    /// The commit whose id is or starts with `sha` (at least 4 hex digits).
    pub fn commit(&self, sha: &str) -> Result<Option<StoredCommit>> {
        let sha = sha.trim().to_ascii_lowercase();
        if sha.len() < 4 || !sha.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(Error::Usage(format!(
                "{sha:?} is not a commit id (4 to 40 hexadecimal digits)"
            )));
        }
        let found: Vec<StoredCommit> = self.read(|conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {COMMIT_COLUMNS} FROM commits WHERE sha >= ?1 AND sha < ?1 || 'g' ORDER BY sha LIMIT 2"
            ))?;
            stmt.query_map([&sha], commit_from_row)?.collect()
        })?;
        match found.as_slice() {
            [one] => Ok(Some(one.clone())),
            [] => Ok(None),
            _ => Err(Error::Usage(format!(
                "{sha} names more than one commit ({} and {}); give more digits",
                found[0].short(),
                found[1].short()
            ))),
        }
    }

    /// Commits by number.
    pub fn commits_by_pk(&self, pks: &[i64]) -> Result<HashMap<i64, StoredCommit>> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(&format!("SELECT {COMMIT_COLUMNS} FROM commits WHERE pk = ?1"))?;
            let mut out = HashMap::new();
            for pk in pks {
                if let Some(c) = stmt.query_row([pk], commit_from_row).optional()? {
                    out.insert(*pk, c);
                }
            }
            Ok(out)
        })
    }

    /// A page of commits, newest first.
    pub fn list_commits(&self, limit: usize, offset: usize) -> Result<Vec<StoredCommit>> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {COMMIT_COLUMNS} FROM commits ORDER BY pk DESC LIMIT ?1 OFFSET ?2"
            ))?;
            stmt.query_map(params![limit as i64, offset as i64], commit_from_row)?
                .collect()
        })
    }

    /// What became of the lines commit `pk` wrote.
    pub fn commit_fate(&self, pk: i64) -> Result<CommitFate> {
        self.read(|conn| {
            let written: i64 = conn
                .query_row("SELECT written FROM commits WHERE pk = ?1", [pk], |r| r.get(0))
                .optional()?
                .unwrap_or(0);
            let mut stmt = conn.prepare_cached(
                "SELECT c.sha, c.subject, c.committed_at, sum(o.rewritten), sum(o.deleted), group_concat(o.path, char(10))
                 FROM commit_overwrites o JOIN commits c ON c.pk = o.by_pk
                 WHERE o.commit_pk = ?1 GROUP BY o.by_pk ORDER BY o.by_pk",
            )?;
            let changed_by: Vec<LaterChange> = stmt
                .query_map([pk], |r| {
                    Ok(LaterChange {
                        sha: r.get(0)?,
                        subject: r.get(1)?,
                        committed_at: r.get(2)?,
                        rewritten: r.get::<_, i64>(3)? as u64,
                        deleted: r.get::<_, i64>(4)? as u64,
                        paths: r.get::<_, String>(5)?.split('\n').map(String::from).collect(),
                    })
                })?
                .collect::<rusqlite::Result<_>>()?;
            let lost: u64 = changed_by.iter().map(|c| c.rewritten + c.deleted).sum();
            Ok(CommitFate {
                written: written as u64,
                standing: (written as u64).saturating_sub(lost),
                changed_by,
            })
        })
    }
}

/// Column weights for commits: subject, body, changed paths. A subject summarises the change.
const COMMIT_WEIGHTS: &str = "2.0, 1.0, 0.5";

/// Keyword search over commit messages and changed paths, best first; ties by newest.
pub(crate) fn search_commits(
    conn: &rusqlite::Connection,
    expr: &str,
    limit: usize,
    filter: &SearchFilter,
) -> rusqlite::Result<Vec<SearchHit>> {
    // A commit belongs to no conversation.
    if filter.conversation.is_some() {
        return Ok(Vec::new());
    }
    let mut clause = String::new();
    let mut args: Vec<String> = Vec::new();
    if let Some(since) = &filter.since {
        args.push(since.clone());
        clause.push_str(&format!(" AND c.committed_at >= ?{}", args.len() + 1));
    }
    if let Some(until) = &filter.until {
        args.push(until.clone());
        clause.push_str(&format!(" AND c.committed_at < ?{}", args.len() + 1));
    }
    if let Some(prefix) = &filter.path_prefix {
        args.push(prefix.clone());
        clause.push_str(&format!(
            " AND (c.paths LIKE ?{n} || '%' OR instr(c.paths, char(10) || ?{n}) > 0)",
            n = args.len() + 1
        ));
    }
    let sql = format!(
        "SELECT c.sha, c.subject, c.author, c.committed_at,
                snippet(commits_fts, -1, '«', '»', '…', 16), bm25(commits_fts, {COMMIT_WEIGHTS}) AS score
         FROM commits_fts JOIN commits c ON c.pk = commits_fts.rowid
         WHERE commits_fts MATCH ?1 {clause} ORDER BY score, c.pk DESC LIMIT {limit}"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut values: Vec<&dyn rusqlite::ToSql> = vec![&expr];
    values.extend(args.iter().map(|a| a as &dyn rusqlite::ToSql));
    let rows = stmt.query_map(values.as_slice(), |r| {
        commit_search_hit(r, r.get(4)?, -r.get::<_, f64>(5)?)
    })?;
    rows.collect()
}

/// A commit as a search hit, from a row whose first columns are sha, subject, author and
/// commit time.
fn commit_search_hit(r: &rusqlite::Row<'_>, snippet: String, score: f64) -> rusqlite::Result<SearchHit> {
    Ok(SearchHit {
        kind: HitKind::Commit,
        id: r.get(0)?,
        conversation_id: None,
        title: Some(r.get(1)?),
        label: Some(r.get(2)?),
        timestamp: r.get(3)?,
        snippet,
        score,
        path: None,
        lines: None,
        cid: None,
    })
}

/// The commit hit for `sha`, as a vector search found it.
pub(crate) fn commit_hit(conn: &rusqlite::Connection, sha: &str, score: f64) -> rusqlite::Result<Option<SearchHit>> {
    conn.prepare_cached("SELECT sha, subject, author, committed_at, body FROM commits WHERE sha = ?1")?
        .query_row([sha], |r| {
            let body: String = r.get(4)?;
            commit_search_hit(r, body.chars().take(200).collect(), score)
        })
        .optional()
}

//! Project files in the index: which files were indexed (and in what state), their chunks as
//! line ranges with CIDs, and the contentless keyword index over them.
//!
//! No code text is stored: `code_fts` is contentless, and a chunk row holds only where its
//! text is and its CID. Reading and verifying the text is the caller's job (it knows the
//! working tree).

use std::collections::HashMap;

use rusqlite::{OptionalExtension, params};
use zblade_core::Result;

use crate::hit::{HitKind, SearchHit};
use crate::{Index, SearchFilter};

/// What the index remembers of an indexed file, to skip it when unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeFileState {
    /// Size in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the Unix epoch.
    pub mtime_ns: i64,
    /// sha256 of the content.
    pub sha256: String,
}

/// One chunk of a file to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeChunkRow {
    /// First line, 1-based.
    pub start_line: u32,
    /// Last line, inclusive.
    pub end_line: u32,
    /// sha256 of the chunk's text.
    pub cid: String,
    /// The symbols the chunk holds (`Type::method, Type::other`), for a chunk cut by syntax.
    pub symbol: Option<String>,
    /// sha256 of what is embedded for the chunk (see `zblade_syntax::embedding_text`).
    pub vector_cid: String,
    /// What the keyword index reads in the symbol column: module path and symbols, with
    /// identifiers split (never stored).
    pub searchable_symbol: String,
    /// What the keyword index reads in the signature column (never stored).
    pub searchable_signature: String,
    /// What the keyword index reads in the text column (never stored).
    pub searchable: String,
}

/// A file's new state and chunks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeFileUpdate {
    /// Path relative to the project root, `/`-separated.
    pub path: String,
    /// Its state when read.
    pub state: CodeFileState,
    /// Modification time as an index timestamp (for time filters).
    pub modified_at: String,
    /// Its chunks.
    pub chunks: Vec<CodeChunkRow>,
}

/// A stored chunk: where it is and its CID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredCodeChunk {
    /// File path, relative to the project root.
    pub path: String,
    /// First line.
    pub start_line: u32,
    /// Last line.
    pub end_line: u32,
    /// CID of the text when indexed.
    pub cid: String,
    /// The symbols it holds, for a chunk cut by syntax.
    pub symbol: Option<String>,
    /// CID of what was embedded for it.
    pub vector_cid: String,
}

impl StoredCodeChunk {
    /// The chunk's search key: `code:PATH:START-END`.
    pub fn key(&self) -> String {
        format!("code:{}:{}-{}", self.path, self.start_line, self.end_line)
    }
}

/// Parses a `code:PATH:START-END` key.
pub fn parse_code_key(key: &str) -> Option<(&str, u32, u32)> {
    let rest = key.strip_prefix("code:")?;
    let (path, lines) = rest.rsplit_once(':')?;
    let (start, end) = lines.split_once('-')?;
    Some((path, start.parse().ok()?, end.parse().ok()?))
}

impl Index {
    /// The state of every indexed file, by path.
    pub fn code_file_states(&self) -> Result<HashMap<String, CodeFileState>> {
        self.read(|conn| {
            let mut stmt = conn.prepare("SELECT path, size, mtime_ns, sha256 FROM code_files")?;
            let rows = stmt.query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    CodeFileState {
                        size: r.get::<_, i64>(1)? as u64,
                        mtime_ns: r.get(2)?,
                        sha256: r.get(3)?,
                    },
                ))
            })?;
            rows.collect::<rusqlite::Result<_>>()
        })
    }

    /// Stores new chunks for these files and forgets `removed` ones, in one transaction.
    pub fn put_code_files(&mut self, updates: &[CodeFileUpdate], removed: &[String]) -> Result<()> {
        self.write(|tx| {
            {
                let mut old_chunks = tx.prepare_cached("SELECT pk FROM code_chunks WHERE path = ?1")?;
                let mut delete_fts = tx.prepare_cached("DELETE FROM code_fts WHERE rowid = ?1")?;
                let mut delete_file = tx.prepare_cached("DELETE FROM code_files WHERE path = ?1")?;
                let mut forget = |file: &str| -> rusqlite::Result<()> {
                    let pks: Vec<i64> = old_chunks
                        .query_map([file], |r| r.get(0))?
                        .collect::<rusqlite::Result<_>>()?;
                    for pk in pks {
                        delete_fts.execute([pk])?;
                    }
                    // Chunks go with the file (ON DELETE CASCADE).
                    delete_file.execute([file])?;
                    Ok(())
                };
                for file in removed {
                    forget(file)?;
                }
                let mut insert_file = tx.prepare_cached(
                    "INSERT INTO code_files (path, size, mtime_ns, sha256, indexed_at, modified_at)
                     VALUES (?1, ?2, ?3, ?4, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), ?5)",
                )?;
                let mut insert_chunk = tx.prepare_cached(
                    "INSERT INTO code_chunks (path, start_line, end_line, cid, symbol, vector_cid)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )?;
                let mut insert_fts =
                    tx.prepare_cached("INSERT INTO code_fts (rowid, symbol, signature, text) VALUES (?1, ?2, ?3, ?4)")?;
                for update in updates {
                    forget(&update.path)?;
                    insert_file.execute(params![
                        update.path,
                        update.state.size as i64,
                        update.state.mtime_ns,
                        update.state.sha256,
                        update.modified_at
                    ])?;
                    for chunk in &update.chunks {
                        insert_chunk.execute(params![
                            update.path,
                            chunk.start_line,
                            chunk.end_line,
                            chunk.cid,
                            chunk.symbol,
                            chunk.vector_cid
                        ])?;
                        insert_fts.execute(params![
                            tx.last_insert_rowid(),
                            chunk.searchable_symbol,
                            chunk.searchable_signature,
                            chunk.searchable
                        ])?;
                    }
                }
            }
            Ok(())
        })
    }

    /// Every stored code chunk, by path then line.
    pub fn code_chunks(&self) -> Result<Vec<StoredCodeChunk>> {
        self.read(|conn| {
            let mut stmt = conn.prepare(
                "SELECT path, start_line, end_line, cid, symbol, vector_cid FROM code_chunks ORDER BY path, start_line",
            )?;
            let rows = stmt.query_map([], stored_chunk)?;
            rows.collect::<rusqlite::Result<_>>()
        })
    }

    /// (files, chunks) indexed.
    pub fn code_counts(&self) -> Result<(i64, i64)> {
        self.read(|conn| {
            conn.query_row(
                "SELECT (SELECT count(*) FROM code_files), (SELECT count(*) FROM code_chunks)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
        })
    }

    /// The stored chunk at exactly this place, if any.
    pub fn code_chunk_at(&self, path: &str, start: u32, end: u32) -> Result<Option<(StoredCodeChunk, String)>> {
        self.read(|conn| {
            conn.prepare_cached(
                "SELECT c.cid, f.modified_at, c.symbol, c.vector_cid FROM code_chunks c
                     JOIN code_files f ON f.path = c.path
                     WHERE c.path = ?1 AND c.start_line = ?2 AND c.end_line = ?3",
            )?
            .query_row(params![path, start, end], |r| {
                Ok((
                    StoredCodeChunk {
                        path: path.to_string(),
                        start_line: start,
                        end_line: end,
                        cid: r.get(0)?,
                        symbol: r.get(2)?,
                        vector_cid: r.get(3)?,
                    },
                    r.get(1)?,
                ))
            })
            .optional()
        })
    }
}

/// A code hit; the snippet is left empty for the caller, who reads the file.
pub(crate) fn code_hit(chunk: StoredCodeChunk, modified_at: String, score: f64) -> SearchHit {
    SearchHit {
        kind: HitKind::Code,
        id: format!("{}:{}-{}", chunk.path, chunk.start_line, chunk.end_line),
        conversation_id: None,
        // A chunk cut by syntax is named by its symbols: `GitignoreBuilder::add_line`.
        title: chunk.symbol,
        label: None,
        timestamp: modified_at,
        snippet: String::new(),
        score,
        path: Some(chunk.path),
        lines: Some((chunk.start_line, chunk.end_line)),
        cid: Some(chunk.cid),
    }
}

/// BM25 weight of a word in a chunk's symbol path (module, type, name; identifiers split)
/// against 1 in its body. On the tuning crates of the code-search benchmark, 4 and 8 gave the
/// same hybrid recall@10 (0.678); keyword alone 0.582 and 0.590.
const WEIGHT_SYMBOL: f64 = 4.0;
/// BM25 weight of a word in the signature of the chunk's first item.
const WEIGHT_SIGNATURE: f64 = 2.0;

/// Keyword search over code chunks, best first; ties by path and line.
pub(crate) fn search_code(
    conn: &rusqlite::Connection,
    expr: &str,
    limit: usize,
    filter: &SearchFilter,
) -> rusqlite::Result<Vec<SearchHit>> {
    let (clause, args) = filter.code_clause();
    let sql = format!(
        "SELECT c.path, c.start_line, c.end_line, c.cid, c.symbol, c.vector_cid, f.modified_at,
                bm25(code_fts, {WEIGHT_SYMBOL}, {WEIGHT_SIGNATURE}, 1.0) AS score
         FROM code_fts JOIN code_chunks c ON c.pk = code_fts.rowid JOIN code_files f ON f.path = c.path
         WHERE code_fts MATCH ?1 {clause} ORDER BY score, c.path, c.start_line LIMIT {limit}"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut values: Vec<&dyn rusqlite::ToSql> = vec![&expr];
    values.extend(args.iter().map(|a| a as &dyn rusqlite::ToSql));
    let rows = stmt.query_map(values.as_slice(), |r| {
        Ok(code_hit(stored_chunk(r)?, r.get(6)?, -r.get::<_, f64>(7)?))
    })?;
    rows.collect()
}

/// A chunk from a row's first six columns: path, start and end line, CID, symbol and the
/// vector's CID (every query of chunks selects them first, in this order).
fn stored_chunk(r: &rusqlite::Row<'_>) -> rusqlite::Result<StoredCodeChunk> {
    Ok(StoredCodeChunk {
        path: r.get(0)?,
        start_line: r.get(1)?,
        end_line: r.get(2)?,
        cid: r.get(3)?,
        symbol: r.get(4)?,
        vector_cid: r.get(5)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_keys_round_trip_even_with_colons_in_paths() {
        let chunk = StoredCodeChunk {
            path: "src/a:b.rs".into(),
            start_line: 3,
            end_line: 40,
            cid: "x".into(),
            symbol: None,
            vector_cid: "x".into(),
        };
        assert_eq!(parse_code_key(&chunk.key()), Some(("src/a:b.rs", 3, 40)));
        assert_eq!(parse_code_key("conv_1/msg_1"), None);
        assert_eq!(parse_code_key("code:a.rs:x-2"), None);
    }

    /// An index whose code chunks were cut into line windows (schema 3) drops them when it
    /// opens, so the next `zblade index` cuts every file along its syntax; memory stays.
    #[test]
    fn opening_a_version_3_index_drops_line_window_chunks_for_re_indexing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.db");
        {
            let conn = crate::schema::database_at_version(&path, 3);
            conn.execute_batch(
                "INSERT INTO code_files VALUES ('src/a.rs', 10, 1, 'h', 'now', 'now');
                 INSERT INTO code_chunks (path, start_line, end_line, cid) VALUES ('src/a.rs', 1, 60, 'c');
                 INSERT INTO code_fts (rowid, text) VALUES (1, 'fn parse');",
            )
            .unwrap();
        }
        let mut index = Index::open(&path).unwrap();
        assert_eq!(index.code_counts().unwrap(), (0, 0), "old chunks are gone");
        assert!(index.code_file_states().unwrap().is_empty(), "every file is read again");
        let row = CodeChunkRow {
            start_line: 3,
            end_line: 9,
            cid: "c".into(),
            symbol: Some("Config::parse".into()),
            vector_cid: "v".into(),
            searchable_symbol: "config parse".into(),
            searchable_signature: "pub fn parse text str".into(),
            searchable: "let x = 1;".into(),
        };
        let update = CodeFileUpdate {
            path: "src/a.rs".into(),
            state: CodeFileState {
                size: 1,
                mtime_ns: 1,
                sha256: "h".into(),
            },
            modified_at: "2026-01-01T00:00:00Z".into(),
            chunks: vec![row],
        };
        index.put_code_files(&[update], &[]).unwrap();
        let hits = index
            .search(&crate::SearchQuery::new("parse", 5, crate::SearchKind::Code))
            .unwrap();
        assert_eq!(hits.len(), 1, "found by its symbol");
        assert_eq!(hits[0].title.as_deref(), Some("Config::parse"));
        assert_eq!(index.keys_for_cids(&["v".into()]).unwrap()["v"], ["code:src/a.rs:3-9"]);
    }

    /// An index whose chunks packed small items up to the whole budget (schema 6) drops them
    /// when it opens, so the next `zblade index` cuts every file again; commits stay (the
    /// repository is their only source besides a full re-read).
    #[test]
    fn opening_a_version_6_index_drops_code_chunks_and_keeps_commits() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.db");
        {
            let conn = crate::schema::database_at_version(&path, 6);
            conn.execute_batch(
                "INSERT INTO code_files VALUES ('src/a.rs', 10, 1, 'h', 'now', 'now');
                 INSERT INTO code_chunks (path, start_line, end_line, cid, symbol, vector_cid)
                     VALUES ('src/a.rs', 1, 60, 'c', 'a, b, c', 'v');
                 INSERT INTO code_fts (rowid, symbol, signature, text) VALUES (1, 'a b c', 'fn a', 'fn parse');
                 INSERT INTO commits VALUES (1, 'abc', '', 'A', 'now', 'Use argon2', '', 'src/a.rs', 1, 1, 0, 1);",
            )
            .unwrap();
        }
        let index = Index::open(&path).unwrap();
        assert_eq!(index.schema_version().unwrap(), crate::schema::SCHEMA_VERSION);
        assert_eq!(index.code_counts().unwrap(), (0, 0), "old chunks are gone");
        assert!(index.code_file_states().unwrap().is_empty(), "every file is read again");
        assert!(
            index
                .search(&crate::SearchQuery::new("parse", 5, crate::SearchKind::Code))
                .unwrap()
                .is_empty(),
            "nothing of the old keyword index is left"
        );
        let commits: i64 = index
            .read(|conn| conn.query_row("SELECT COUNT(*) FROM commits", [], |r| r.get(0)))
            .unwrap();
        assert_eq!(commits, 1, "commits stay");
    }
}

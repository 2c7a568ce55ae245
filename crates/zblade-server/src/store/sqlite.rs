//! The embedded SQLite store: one file, WAL, a small pool of connections used from tokio's
//! blocking threads, FTS5 for keyword search.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OptionalExtension, params};

use super::queries::{self, sqlite};
use super::rules;
use super::{
    Access, Deleted, EmbeddingModel, Invitation, Kind, Member, MetadataRecord, NewPassage, NewRecord, Page, Passage,
    Project, PutOutcome, PutStatus, Record, RecordMeta, Role, SearchHit, Store, StoreError, StoreResult, TokenSummary,
    User, UserSummary, now, query_words, tags_from_json, tags_to_json,
};

/// Version 1 of the schema, SQLite dialect.
pub(super) const SCHEMA_V1: &str = "
CREATE TABLE users (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
);
CREATE TABLE tokens (
    id TEXT PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    hash TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    revoked_at TEXT
);
CREATE TABLE projects (
    user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    id TEXT NOT NULL,
    name TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (user_id, id)
);
CREATE TABLE records (
    seq INTEGER PRIMARY KEY,
    user_id INTEGER NOT NULL,
    project_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    id TEXT NOT NULL,
    version INTEGER NOT NULL,
    hash TEXT NOT NULL,
    size INTEGER NOT NULL,
    title TEXT NOT NULL,
    tags TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    body TEXT NOT NULL,
    search_text TEXT NOT NULL,
    UNIQUE (user_id, project_id, kind, id),
    FOREIGN KEY (user_id, project_id) REFERENCES projects(user_id, id) ON DELETE CASCADE
);
CREATE VIRTUAL TABLE records_fts USING fts5(
    title, search_text, content='records', content_rowid='seq', tokenize='unicode61'
);
CREATE TRIGGER records_ai AFTER INSERT ON records BEGIN
    INSERT INTO records_fts(rowid, title, search_text) VALUES (new.seq, new.title, new.search_text);
END;
CREATE TRIGGER records_ad AFTER DELETE ON records BEGIN
    INSERT INTO records_fts(records_fts, rowid, title, search_text)
        VALUES ('delete', old.seq, old.title, old.search_text);
END;
CREATE TRIGGER records_au AFTER UPDATE ON records BEGIN
    INSERT INTO records_fts(records_fts, rowid, title, search_text)
        VALUES ('delete', old.seq, old.title, old.search_text);
    INSERT INTO records_fts(rowid, title, search_text) VALUES (new.seq, new.title, new.search_text);
END;
CREATE TABLE metadata (
    user_id INTEGER NOT NULL,
    project_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    id TEXT NOT NULL,
    title TEXT NOT NULL,
    tags TEXT NOT NULL,
    message_count INTEGER NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (user_id, project_id, kind, id),
    FOREIGN KEY (user_id, project_id) REFERENCES projects(user_id, id) ON DELETE CASCADE
);
";

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

/// The SQLite store.
pub struct SqliteStore {
    path: PathBuf,
    /// Idle connections; more are opened when all are busy (WAL lets readers run beside the
    /// one writer).
    idle: Arc<Mutex<Vec<Connection>>>,
    /// Taken by every write, so this server's writers queue in order instead of meeting in
    /// SQLite: a writer that finds the database locked sleeps in `busy_timeout`'s growing
    /// steps (up to 100 ms each) and can lose to later ones, which put uploads' p99 under
    /// load near a second. `busy_timeout` still covers writers in other processes.
    writer: Arc<tokio::sync::Mutex<()>>,
    passage_counts: Arc<super::PassageCounts>,
}

/// How much of the database file each connection maps into memory (address space, not RAM;
/// SQLite reads the rest, and pages still in the WAL, as before).
const MMAP_BYTES: i64 = 1 << 30;

fn connect(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")?;
    // Read the database through a memory map. Every write by another connection empties this
    // connection's page cache (WAL mode), so under a steady stream of uploads each search
    // read every page of its doclists again with pread: 85 % of the server's CPU under the
    // load benchmark went there.
    conn.pragma_update(None, "mmap_size", MMAP_BYTES)?;
    Ok(conn)
}

impl SqliteStore {
    /// Opens (creating when missing) the database file at `path`.
    pub fn open(path: &Path) -> StoreResult<SqliteStore> {
        let conn = connect(path).map_err(|e| StoreError::Backend(format!("{}: {e}", path.display())))?;
        Ok(SqliteStore {
            path: path.to_path_buf(),
            idle: Arc::new(Mutex::new(vec![conn])),
            writer: Arc::new(tokio::sync::Mutex::new(())),
            passage_counts: Default::default(),
        })
    }

    /// [`SqliteStore::with`] for work that writes: one at a time, in the order they came. The
    /// turn is held until the work has finished on its thread, even if the request that asked
    /// for it is dropped meanwhile.
    async fn write<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        let turn = self.writer.clone().lock_owned().await;
        self.with(move |conn| {
            let result = work(conn);
            drop(turn);
            result
        })
        .await
    }

    /// Runs `work` with a connection on a blocking thread.
    async fn with<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        let idle = self.idle.clone();
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || {
            let pooled = idle.lock().map_err(backend)?.pop();
            let mut conn = match pooled {
                Some(conn) => conn,
                None => connect(&path).map_err(backend)?,
            };
            let result = work(&mut conn);
            if let Ok(mut idle) = idle.lock()
                && idle.len() < 16
            {
                idle.push(conn);
            }
            result
        })
        .await
        .map_err(backend)?
    }
}

fn record_meta(row: &rusqlite::Row<'_>) -> rusqlite::Result<RecordMeta> {
    let kind: String = row.get("kind")?;
    Ok(RecordMeta {
        kind: Kind::parse(&kind).unwrap_or(Kind::Conversation),
        id: row.get("id")?,
        version: row.get("version")?,
        hash: row.get("hash")?,
        size: row.get("size")?,
        title: row.get("title")?,
        tags: tags_from_json(&row.get::<_, String>("tags")?),
        updated_at: row.get("updated_at")?,
        author: row.get("author")?,
    })
}

fn project_exists(conn: &Connection, user: i64, project: &str) -> StoreResult<()> {
    let found: Option<i64> = conn
        .query_row(&sqlite(queries::PROJECT_EXISTS), params![user, project], |r| r.get(0))
        .optional()
        .map_err(backend)?;
    match found {
        Some(_) => Ok(()),
        None => Err(StoreError::NotFound(format!("no project {project}"))),
    }
}

/// The id of the user named `name`.
fn user_id(conn: &Connection, name: &str) -> StoreResult<i64> {
    conn.query_row(&sqlite(queries::USER_ID_BY_NAME), params![name], |r| r.get(0))
        .optional()
        .map_err(backend)?
        .ok_or_else(|| StoreError::NotFound(format!("no user named {name}")))
}

const PROJECT_COLUMNS: &str = "p.id, p.name, p.created_at,
    (SELECT count(*) FROM records r WHERE r.user_id = p.user_id AND r.project_id = p.id AND r.kind = 'conversation'),
    (SELECT count(*) FROM records r WHERE r.user_id = p.user_id AND r.project_id = p.id AND r.kind = 'moment'),
    (SELECT count(*) FROM metadata m WHERE m.user_id = p.user_id AND m.project_id = p.id),
    (SELECT name FROM users o WHERE o.id = p.user_id),
    p.embedding_model, p.embedding_dims";

/// The columns of a record's list entry, its author's name included (the creator's for
/// records from before authors were kept).
const RECORD_COLUMNS: &str = "r.kind, r.id, r.version, r.hash, r.size, r.title, r.tags, r.updated_at,
    (SELECT name FROM users a WHERE a.id = coalesce(r.author_id, r.user_id)) AS author";

/// A project row of [`PROJECT_COLUMNS`] followed by the caller's role.
fn project_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Project> {
    let role: String = row.get(9)?;
    let model: Option<String> = row.get(7)?;
    let dims: Option<u32> = row.get(8)?;
    Ok(Project {
        id: row.get(0)?,
        name: row.get(1)?,
        created_at: row.get(2)?,
        conversations: row.get(3)?,
        moments: row.get(4)?,
        metadata: row.get(5)?,
        owner: row.get(6)?,
        role: Role::parse(&role).unwrap_or(Role::Reader),
        embedding: model.zip(dims).map(|(id, dims)| EmbeddingModel { id, dims }),
    })
}

/// Version 3: every record's owner and project (and kind) become tokens of the keyword index
/// (`scope`, a generated column), so a search is answered by FTS5 alone — the words intersected
/// with the caller's own rows, ranked, the top taken — instead of joining every match with
/// `records` to filter by owner (SQLite would then probe the index once per row of the
/// project). A search costs what the caller's own matching records cost.
pub(super) const SCHEMA_V3: &str = "
ALTER TABLE records ADD COLUMN scope TEXT GENERATED ALWAYS AS ('u' || user_id || 'p' || hex(project_id) || ' k' || kind) VIRTUAL;
DROP TRIGGER records_ai;
DROP TRIGGER records_ad;
DROP TRIGGER records_au;
DROP TABLE records_fts;
CREATE VIRTUAL TABLE records_fts USING fts5(
    title, search_text, scope, content='records', content_rowid='seq', tokenize='unicode61'
);
CREATE TRIGGER records_ai AFTER INSERT ON records BEGIN
    INSERT INTO records_fts(rowid, title, search_text, scope) VALUES (new.seq, new.title, new.search_text, new.scope);
END;
CREATE TRIGGER records_ad AFTER DELETE ON records BEGIN
    INSERT INTO records_fts(records_fts, rowid, title, search_text, scope)
        VALUES ('delete', old.seq, old.title, old.search_text, old.scope);
END;
CREATE TRIGGER records_au AFTER UPDATE ON records BEGIN
    INSERT INTO records_fts(records_fts, rowid, title, search_text, scope)
        VALUES ('delete', old.seq, old.title, old.search_text, old.scope);
    INSERT INTO records_fts(rowid, title, search_text, scope) VALUES (new.seq, new.title, new.search_text, new.scope);
END;
INSERT INTO records_fts(records_fts) VALUES ('rebuild');
";

/// Version 5: hybrid search. Every message of a conversation and every moment is a passage
/// with its own keyword index (porter-stemmed as the local index is, scoped like `records`),
/// the unit local search ranks; the project records the model its vectors are made with.
pub(super) const SCHEMA_V5: &str = "
ALTER TABLE projects ADD COLUMN embedding_model TEXT;
ALTER TABLE projects ADD COLUMN embedding_dims INTEGER;
ALTER TABLE records ADD COLUMN vector_rows INTEGER NOT NULL DEFAULT 0;
CREATE TABLE passages (
    seq INTEGER PRIMARY KEY,
    record_seq INTEGER NOT NULL REFERENCES records(seq) ON DELETE CASCADE,
    user_id INTEGER NOT NULL,
    project_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    message TEXT NOT NULL,
    position INTEGER NOT NULL,
    label TEXT NOT NULL,
    time TEXT NOT NULL,
    text TEXT NOT NULL,
    scope TEXT GENERATED ALWAYS AS ('u' || user_id || 'p' || hex(project_id) || ' k' || kind) VIRTUAL,
    UNIQUE (user_id, project_id, key)
);
CREATE INDEX passages_of_record ON passages (record_seq, position);
CREATE VIRTUAL TABLE passages_fts USING fts5(
    text, scope, content='passages', content_rowid='seq', tokenize='porter unicode61'
);
CREATE TRIGGER passages_ai AFTER INSERT ON passages BEGIN
    INSERT INTO passages_fts(rowid, text, scope) VALUES (new.seq, new.text, new.scope);
END;
CREATE TRIGGER passages_ad AFTER DELETE ON passages BEGIN
    INSERT INTO passages_fts(passages_fts, rowid, text, scope) VALUES ('delete', old.seq, old.text, old.scope);
END;
";

/// Replaces the passages of the record at `seq` (see [`SCHEMA_V5`]).
fn replace_passages(
    conn: &Connection,
    seq: i64,
    user: i64,
    project: &str,
    kind: Kind,
    passages: &[NewPassage],
) -> StoreResult<()> {
    conn.execute("DELETE FROM passages WHERE record_seq = ?1", params![seq])
        .map_err(backend)?;
    let mut insert = conn
        .prepare_cached(
            "INSERT INTO passages (record_seq, user_id, project_id, kind, key, message, position, label, time, text)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        )
        .map_err(backend)?;
    for p in passages {
        insert
            .execute(params![
                seq,
                user,
                project,
                kind.as_str(),
                p.key,
                p.message,
                p.position,
                p.label,
                p.time,
                p.text
            ])
            .map_err(backend)?;
    }
    Ok(())
}

/// The scope tokens of a project's passages (of one kind, when given) as an FTS5 expression.
fn passage_scope(user: i64, project: &str, kind: Option<Kind>) -> String {
    let hex: String = project.bytes().map(|b| format!("{b:02X}")).collect();
    let kind = kind.map_or(String::new(), |k| format!(" AND scope : \"k{}\"", k.as_str()));
    format!("scope : \"u{user}p{hex}\"{kind}")
}

/// Matches ranked by BM25 in one group of a passage search, newest first (the local index's
/// window for queries of common words): a word in every passage would otherwise make each
/// search score the whole project.
const RANKED_PASSAGES: i64 = 10_000;

/// The best `limit` passages in `scope` for `words` (an FTS5 expression of quoted words), by
/// BM25 of the text among the newest [`RANKED_PASSAGES`] matches, as (seq, score), ties by
/// position in the table.
fn top_passages(conn: &Connection, scope: &str, words: &str, limit: usize) -> rusqlite::Result<Vec<(i64, f64)>> {
    let mut stmt = conn.prepare_cached(
        "WITH newest AS (
            SELECT rowid AS seq FROM passages_fts WHERE passages_fts MATCH ?1 ORDER BY rowid DESC LIMIT ?3)
         SELECT rowid, rank FROM passages_fts
         WHERE passages_fts MATCH ?1 AND rank MATCH 'bm25(1.0, 0.0)'
           AND rowid >= (SELECT coalesce(min(seq), 0) FROM newest)
         ORDER BY rank, rowid LIMIT ?2",
    )?;
    let expr = format!("{scope} AND text : ({words})");
    stmt.query_map(params![expr, limit as i64, RANKED_PASSAGES], |r| {
        Ok((r.get(0)?, -r.get::<_, f64>(1)?))
    })?
    .collect()
}

/// Matches scored by BM25 in one search, newest first: past this, a word common to every record
/// would make each search cost as much as the project is large.
const RANKED: usize = 1_000;

/// The FTS5 query for `words` in the records of `user` in `project` (of `kind`, when given):
/// every word quoted, so FTS5 reads them as plain terms and never as query syntax, and matched
/// in the title or text only; the scope tokens (see [`SCHEMA_V3`]) keep it to the caller's rows.
fn scoped_query(user: i64, project: &str, kind: Option<Kind>, words: &[String]) -> String {
    let hex: String = project.bytes().map(|b| format!("{b:02X}")).collect();
    let words = words.iter().map(|w| format!("\"{w}\"")).collect::<Vec<_>>().join(" ");
    let kind = kind.map_or(String::new(), |k| format!(" AND scope : \"k{}\"", k.as_str()));
    format!("scope : \"u{user}p{hex}\"{kind} AND {{title search_text}} : ({words})")
}

impl Store for SqliteStore {
    fn backend(&self) -> &'static str {
        "sqlite"
    }

    async fn migrate(&self) -> StoreResult<usize> {
        self.write(|conn| {
            let tx = conn.transaction().map_err(backend)?;
            tx.execute_batch(
                "CREATE TABLE IF NOT EXISTS zblade_schema (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)",
            )
            .map_err(backend)?;
            let current: i64 = tx
                .query_row("SELECT coalesce(max(version), 0) FROM zblade_schema", [], |r| r.get(0))
                .map_err(backend)?;
            let mut ran = 0;
            for (version, sql, _) in super::MIGRATIONS.iter().filter(|m| m.0 > current) {
                tx.execute_batch(sql)
                    .map_err(|e| StoreError::Backend(format!("migration {version}: {e}")))?;
                tx.execute(&sqlite(queries::RECORD_MIGRATION), params![version, now()])
                    .map_err(backend)?;
                ran += 1;
            }
            tx.commit().map_err(backend)?;
            Ok(ran)
        })
        .await
    }

    async fn add_user(&self, name: &str) -> StoreResult<User> {
        let name = name.to_string();
        self.write(move |conn| {
            match conn.execute(
                "INSERT INTO users (name, created_at) VALUES (?1, ?2)",
                params![name, now()],
            ) {
                Ok(_) => Ok(User {
                    id: conn.last_insert_rowid(),
                    name,
                }),
                Err(rusqlite::Error::SqliteFailure(e, _)) if e.code == rusqlite::ErrorCode::ConstraintViolation => {
                    Err(rules::name_taken(&name))
                }
                Err(e) => Err(backend(e)),
            }
        })
        .await
    }

    async fn list_users(&self) -> StoreResult<Vec<UserSummary>> {
        self.with(|conn| {
            let mut stmt = conn.prepare(&sqlite(queries::LIST_USERS)).map_err(backend)?;
            let rows = stmt
                .query_map([], |r| {
                    Ok(UserSummary {
                        name: r.get(0)?,
                        created_at: r.get(1)?,
                        active_tokens: r.get(2)?,
                        revoked_tokens: r.get(3)?,
                        disabled_at: r.get(4)?,
                    })
                })
                .map_err(backend)?;
            rows.collect::<rusqlite::Result<Vec<_>>>().map_err(backend)
        })
        .await
    }

    async fn add_token(&self, user: &str, token_id: &str, hash: &str, expires_at: Option<&str>) -> StoreResult<()> {
        let (user, token_id, hash) = (user.to_string(), token_id.to_string(), hash.to_string());
        let expires_at = expires_at.map(str::to_string);
        self.write(move |conn| {
            let changed = conn
                .execute(
                    &sqlite(queries::ADD_TOKEN),
                    params![token_id, hash, now(), user, expires_at],
                )
                .map_err(backend)?;
            if changed == 0 {
                return Err(StoreError::NotFound(format!("no user named {user}")));
            }
            Ok(())
        })
        .await
    }

    async fn revoke_token(&self, token_id: &str) -> StoreResult<bool> {
        let token_id = token_id.to_string();
        self.write(move |conn| {
            let changed = conn
                .execute(&sqlite(queries::REVOKE_TOKEN), params![now(), token_id])
                .map_err(backend)?;
            Ok(changed > 0)
        })
        .await
    }

    async fn list_tokens(&self, user: Option<&str>) -> StoreResult<Vec<TokenSummary>> {
        let user = user.map(str::to_string);
        self.with(move |conn| {
            let mut stmt = conn
                .prepare(
                    "SELECT t.id, u.name, t.created_at, t.expires_at, t.revoked_at
                     FROM tokens t JOIN users u ON u.id = t.user_id
                     WHERE ?1 IS NULL OR u.name = ?1 ORDER BY t.created_at DESC, t.id",
                )
                .map_err(backend)?;
            let rows = stmt
                .query_map(params![user], |r| {
                    Ok(TokenSummary {
                        id: r.get(0)?,
                        user: r.get(1)?,
                        created_at: r.get(2)?,
                        expires_at: r.get(3)?,
                        revoked_at: r.get(4)?,
                    })
                })
                .map_err(backend)?;
            rows.collect::<rusqlite::Result<Vec<_>>>().map_err(backend)
        })
        .await
    }

    async fn set_user_disabled(&self, name: &str, disabled: bool) -> StoreResult<bool> {
        let name = name.to_string();
        self.write(move |conn| {
            let changed = conn
                .execute(&sqlite(queries::SET_USER_DISABLED), params![name, disabled, now()])
                .map_err(backend)?;
            Ok(changed > 0)
        })
        .await
    }

    async fn user_for_token(&self, hash: &str) -> StoreResult<Option<User>> {
        let hash = hash.to_string();
        self.with(move |conn| {
            conn.query_row(&sqlite(queries::USER_BY_TOKEN_HASH), params![hash, now()], |r| {
                Ok(User {
                    id: r.get(0)?,
                    name: r.get(1)?,
                })
            })
            .optional()
            .map_err(backend)
        })
        .await
    }

    async fn access(&self, user: i64, project: &str) -> StoreResult<Option<Access>> {
        let project = project.to_string();
        self.with(move |conn| {
            let mut stmt = conn
                .prepare_cached(&sqlite(queries::ROLE_IN_PROJECT))
                .map_err(backend)?;
            let rows = stmt
                .query_map(params![user, project], |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
                })
                .map_err(backend)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(backend)?;
            super::access_from(user, &project, rows)
        })
        .await
    }

    async fn put_member(
        &self,
        owner: i64,
        project: &str,
        member: &str,
        role: Role,
        invited_by: i64,
    ) -> StoreResult<PutStatus> {
        let (project, member) = (project.to_string(), member.to_string());
        self.write(move |conn| {
            let tx = conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                .map_err(backend)?;
            project_exists(&tx, owner, &project)?;
            let member_id = user_id(&tx, &member)?;
            rules::creator_keeps_ownership(member_id, owner, &member, &project)?;
            let current: Option<String> = tx
                .query_row(
                    "SELECT role FROM members WHERE owner_id = ?1 AND project_id = ?2 AND user_id = ?3",
                    params![owner, project, member_id],
                    |r| r.get(0),
                )
                .optional()
                .map_err(backend)?;
            let status = match current {
                Some(current) if current == role.as_str() => PutStatus::Unchanged,
                Some(_) => {
                    tx.execute(
                        "UPDATE members SET role = ?4 WHERE owner_id = ?1 AND project_id = ?2 AND user_id = ?3",
                        params![owner, project, member_id, role.as_str()],
                    )
                    .map_err(backend)?;
                    PutStatus::Updated
                }
                None => {
                    tx.execute(
                        "INSERT INTO members (owner_id, project_id, user_id, role, invited_by, invited_at)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                        params![owner, project, member_id, role.as_str(), invited_by, now()],
                    )
                    .map_err(backend)?;
                    PutStatus::Created
                }
            };
            tx.commit().map_err(backend)?;
            Ok(status)
        })
        .await
    }

    async fn list_members(&self, owner: i64, project: &str) -> StoreResult<Vec<Member>> {
        let project = project.to_string();
        self.with(move |conn| {
            project_exists(conn, owner, &project)?;
            let mut stmt = conn
                .prepare_cached(&sqlite(queries::PROJECT_MEMBERS))
                .map_err(backend)?;
            let rows = stmt
                .query_map(params![owner, project], |r| {
                    let role: String = r.get(1)?;
                    Ok(Member {
                        user: r.get(0)?,
                        role: Role::parse(&role).unwrap_or(Role::Reader),
                        invited_by: r.get(2)?,
                        invited_at: r.get(3)?,
                        accepted_at: r.get(4)?,
                    })
                })
                .map_err(backend)?;
            rows.collect::<rusqlite::Result<Vec<_>>>().map_err(backend)
        })
        .await
    }

    async fn remove_member(&self, owner: i64, project: &str, member: &str) -> StoreResult<bool> {
        let (project, member) = (project.to_string(), member.to_string());
        self.write(move |conn| {
            project_exists(conn, owner, &project)?;
            let member_id = user_id(conn, &member)?;
            rules::creator_stays(member_id, owner, &member, &project)?;
            let changed = conn
                .execute(&sqlite(queries::REMOVE_MEMBER), params![owner, project, member_id])
                .map_err(backend)?;
            Ok(changed > 0)
        })
        .await
    }

    async fn invitations(&self, user: i64) -> StoreResult<Vec<Invitation>> {
        self.with(move |conn| {
            let mut stmt = conn.prepare_cached(&sqlite(queries::INVITATIONS)).map_err(backend)?;
            let rows = stmt
                .query_map(params![user], |r| {
                    let role: String = r.get(3)?;
                    Ok(Invitation {
                        project: r.get(0)?,
                        name: r.get(1)?,
                        owner: r.get(2)?,
                        role: Role::parse(&role).unwrap_or(Role::Reader),
                        invited_by: r.get(4)?,
                        invited_at: r.get(5)?,
                    })
                })
                .map_err(backend)?;
            rows.collect::<rusqlite::Result<Vec<_>>>().map_err(backend)
        })
        .await
    }

    async fn accept_invitation(&self, user: i64, owner: &str, project: &str) -> StoreResult<bool> {
        let (owner, project) = (owner.to_string(), project.to_string());
        self.write(move |conn| {
            let changed = conn
                .execute(
                    &sqlite(queries::ACCEPT_INVITATION),
                    params![user, owner, project, now()],
                )
                .map_err(backend)?;
            Ok(changed > 0)
        })
        .await
    }

    async fn decline_invitation(&self, user: i64, owner: &str, project: &str) -> StoreResult<bool> {
        let (owner, project) = (owner.to_string(), project.to_string());
        self.write(move |conn| {
            let changed = conn
                .execute(&sqlite(queries::DECLINE_INVITATION), params![user, owner, project])
                .map_err(backend)?;
            Ok(changed > 0)
        })
        .await
    }

    async fn remove_contributions(&self, owner: i64, project: &str, author: &str) -> StoreResult<Vec<(Kind, String)>> {
        let (project, author) = (project.to_string(), author.to_string());
        self.write(move |conn| {
            project_exists(conn, owner, &project)?;
            let author_id = user_id(conn, &author)?;
            let mut removed = conn.prepare(&sqlite(queries::DELETE_CONTRIBUTIONS)).map_err(backend)?;
            let rows = removed
                .query_map(params![owner, project, author_id], |r| {
                    Ok((
                        Kind::parse(&r.get::<_, String>(0)?).unwrap_or(Kind::Conversation),
                        r.get(1)?,
                    ))
                })
                .map_err(backend)?;
            rows.collect::<rusqlite::Result<Vec<_>>>().map_err(backend)
        })
        .await
    }

    async fn put_project(&self, user: i64, id: &str, name: &str) -> StoreResult<bool> {
        let (id, name) = (id.to_string(), name.to_string());
        self.write(move |conn| {
            let created = conn
                .execute(
                    "INSERT INTO projects (user_id, id, name, created_at) VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (user_id, id) DO NOTHING",
                    params![user, id, name, now()],
                )
                .map_err(backend)?;
            if created == 0 {
                conn.execute(
                    "UPDATE projects SET name = ?3 WHERE user_id = ?1 AND id = ?2",
                    params![user, id, name],
                )
                .map_err(backend)?;
            }
            Ok(created > 0)
        })
        .await
    }

    async fn list_projects(&self, user: i64) -> StoreResult<Vec<Project>> {
        self.with(move |conn| {
            let mut stmt = conn
                .prepare(&format!(
                    "SELECT {PROJECT_COLUMNS}, 'owner' FROM projects p WHERE p.user_id = ?1
                     UNION ALL
                     SELECT {PROJECT_COLUMNS}, m.role FROM members m
                       JOIN projects p ON p.user_id = m.owner_id AND p.id = m.project_id
                     WHERE m.user_id = ?1 AND m.accepted_at IS NOT NULL
                     ORDER BY 1, 7"
                ))
                .map_err(backend)?;
            let rows = stmt.query_map(params![user], project_row).map_err(backend)?;
            rows.collect::<rusqlite::Result<Vec<_>>>().map_err(backend)
        })
        .await
    }

    async fn get_project(&self, user: i64, id: &str) -> StoreResult<Option<Project>> {
        let id = id.to_string();
        self.with(move |conn| {
            conn.query_row(
                &format!("SELECT {PROJECT_COLUMNS}, 'owner' FROM projects p WHERE p.user_id = ?1 AND p.id = ?2"),
                params![user, id],
                project_row,
            )
            .optional()
            .map_err(backend)
        })
        .await
    }

    async fn delete_project(&self, user: i64, id: &str) -> StoreResult<bool> {
        let id = id.to_string();
        self.write(move |conn| {
            let changed = conn
                .execute(&sqlite(queries::DELETE_PROJECT), params![user, id])
                .map_err(backend)?;
            Ok(changed > 0)
        })
        .await
    }

    async fn put_record(
        &self,
        user: i64,
        project: &str,
        record: &NewRecord,
        author: i64,
        own_only: bool,
    ) -> StoreResult<PutOutcome> {
        let (project, r) = (project.to_string(), record.clone());
        self.write(move |conn| {
            let tx = conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                .map_err(backend)?;
            project_exists(&tx, user, &project)?;
            let current: Option<(i64, String, i64)> = tx
                .query_row(
                    &sqlite(queries::RECORD_VERSION),
                    params![user, project, r.kind.as_str(), r.id],
                    |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
                )
                .optional()
                .map_err(backend)?;
            if let Some((_, _, wrote)) = current
                && own_only
                && wrote != author
            {
                return Err(rules::not_their_record_to_change(r.kind, &r.id));
            }
            let outcome = match current {
                Some((version, hash, _)) if hash == r.hash => PutOutcome {
                    status: PutStatus::Unchanged,
                    version,
                },
                Some((version, _, _)) => {
                    tx.execute(
                        "UPDATE records SET version = ?5, hash = ?6, size = ?7, title = ?8, tags = ?9,
                             updated_at = ?10, body = ?11, search_text = ?12, author_id = ?13
                         WHERE user_id = ?1 AND project_id = ?2 AND kind = ?3 AND id = ?4",
                        params![
                            user,
                            project,
                            r.kind.as_str(),
                            r.id,
                            version + 1,
                            r.hash,
                            r.body.len() as i64,
                            r.title,
                            tags_to_json(&r.tags),
                            r.updated_at,
                            r.body,
                            r.search_text,
                            author
                        ],
                    )
                    .map_err(backend)?;
                    let seq: i64 = tx
                        .query_row(
                            "SELECT seq FROM records WHERE user_id = ?1 AND project_id = ?2 AND kind = ?3 AND id = ?4",
                            params![user, project, r.kind.as_str(), r.id],
                            |row| row.get(0),
                        )
                        .map_err(backend)?;
                    replace_passages(&tx, seq, user, &project, r.kind, &r.passages)?;
                    PutOutcome {
                        status: PutStatus::Updated,
                        version: version + 1,
                    }
                }
                None => {
                    tx.execute(
                        "INSERT INTO records (user_id, project_id, kind, id, version, hash, size, title, tags,
                             updated_at, body, search_text, author_id)
                         VALUES (?1, ?2, ?3, ?4, 1, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                        params![
                            user,
                            project,
                            r.kind.as_str(),
                            r.id,
                            r.hash,
                            r.body.len() as i64,
                            r.title,
                            tags_to_json(&r.tags),
                            r.updated_at,
                            r.body,
                            r.search_text,
                            author
                        ],
                    )
                    .map_err(backend)?;
                    replace_passages(&tx, tx.last_insert_rowid(), user, &project, r.kind, &r.passages)?;
                    PutOutcome {
                        status: PutStatus::Created,
                        version: 1,
                    }
                }
            };
            tx.commit().map_err(backend)?;
            Ok(outcome)
        })
        .await
    }

    async fn get_record(&self, user: i64, project: &str, kind: Kind, id: &str) -> StoreResult<Option<Record>> {
        let (project, id) = (project.to_string(), id.to_string());
        self.with(move |conn| {
            conn.query_row(
                &format!(
                    "SELECT {RECORD_COLUMNS}, r.body, r.vector_rows FROM records r
                     WHERE r.user_id = ?1 AND r.project_id = ?2 AND r.kind = ?3 AND r.id = ?4"
                ),
                params![user, project, kind.as_str(), id],
                |row| {
                    Ok(Record {
                        meta: record_meta(row)?,
                        body: row.get("body")?,
                        vector_rows: row.get("vector_rows")?,
                    })
                },
            )
            .optional()
            .map_err(backend)
        })
        .await
    }

    async fn list_records(
        &self,
        user: i64,
        project: &str,
        kind: Kind,
        after: &str,
        limit: usize,
    ) -> StoreResult<Page<RecordMeta>> {
        let (project, after) = (project.to_string(), after.to_string());
        self.with(move |conn| {
            project_exists(conn, user, &project)?;
            let mut stmt = conn
                .prepare_cached(&format!(
                    "SELECT {RECORD_COLUMNS} FROM records r
                     WHERE r.user_id = ?1 AND r.project_id = ?2 AND r.kind = ?3 AND r.id > ?4
                     ORDER BY r.id LIMIT ?5"
                ))
                .map_err(backend)?;
            let rows = stmt
                .query_map(
                    params![user, project, kind.as_str(), after, limit as i64 + 1],
                    record_meta,
                )
                .map_err(backend)?;
            let items = rows.collect::<rusqlite::Result<Vec<_>>>().map_err(backend)?;
            Ok(super::page_from_fetched(items, limit, |m| m.id.clone()))
        })
        .await
    }

    async fn delete_record(
        &self,
        user: i64,
        project: &str,
        kind: Kind,
        id: &str,
        if_hash: Option<&str>,
        only_author: Option<i64>,
    ) -> StoreResult<Deleted> {
        let (project, id, if_hash) = (project.to_string(), id.to_string(), if_hash.map(str::to_string));
        self.write(move |conn| {
            if let Some(author) = only_author {
                let wrote: Option<i64> = conn
                    .query_row(
                        &sqlite(queries::RECORD_AUTHOR),
                        params![user, project, kind.as_str(), id],
                        |r| r.get(0),
                    )
                    .optional()
                    .map_err(backend)?;
                rules::writer_deletes_own(kind, &id, wrote, author)?;
            }
            let changed = conn
                .execute(
                    "DELETE FROM records WHERE user_id = ?1 AND project_id = ?2 AND kind = ?3 AND id = ?4
                       AND (?5 IS NULL OR hash = ?5)",
                    params![user, project, kind.as_str(), id, if_hash],
                )
                .map_err(backend)?;
            if changed > 0 {
                return Ok(Deleted::Yes);
            }
            let exists: bool = conn
                .query_row(
                    &sqlite(queries::RECORD_EXISTS),
                    params![user, project, kind.as_str(), id],
                    |r| r.get(0),
                )
                .map_err(backend)?;
            Ok(if exists { Deleted::Changed } else { Deleted::NotFound })
        })
        .await
    }

    async fn search(
        &self,
        user: i64,
        project: &str,
        query: &str,
        kind: Option<Kind>,
        limit: usize,
    ) -> StoreResult<Vec<SearchHit>> {
        let words = query_words(query);
        if words.is_empty() {
            return Ok(Vec::new());
        }
        let fts = scoped_query(user, project, kind, &words);
        let project = project.to_string();
        self.with(move |conn| {
            project_exists(conn, user, &project)?;
            let mut stmt = conn
                .prepare_cached(
                    // FTS5 alone finds and ranks: the scope token keeps the match to the
                    // caller's rows. A word in every record would make BM25 score them all;
                    // only the newest RANKED matches are scored (FTS5 walks them newest first
                    // and stops), so a search costs the same at 1k or 1M records.
                    // `ORDER BY rank` with `rank MATCH` hands the sort to FTS5, which then
                    // builds snippets only for the rows returned, on its open iterators. (A
                    // sort by `bm25()` in SQL, snippets in an outer join, re-ran the whole
                    // MATCH once per hit: two thirds of a search's time under load.) CROSS
                    // JOIN keeps FTS5 the outer loop; the owner is checked again per row.
                    "WITH newest AS (
                        SELECT rowid AS seq FROM records_fts WHERE records_fts MATCH ?1
                        ORDER BY rowid DESC LIMIT ?5)
                     SELECT r.kind, r.id, r.title, 0.0,
                        snippet(records_fts, 1, '[', ']', '…', 12), r.updated_at,
                        (SELECT name FROM users a WHERE a.id = coalesce(r.author_id, r.user_id))
                     FROM records_fts CROSS JOIN records r ON r.seq = records_fts.rowid
                     WHERE records_fts MATCH ?1 AND records_fts.rank MATCH 'bm25(2.0, 1.0, 0.0)'
                       AND records_fts.rowid >= (SELECT coalesce(min(seq), 0) FROM newest)
                       AND r.user_id = ?2 AND r.project_id = ?3
                     ORDER BY records_fts.rank LIMIT ?4",
                )
                .map_err(backend)?;
            let rows = stmt
                .query_map(params![fts, user, project, limit as i64, RANKED as i64], |r| {
                    let kind: String = r.get(0)?;
                    Ok(SearchHit {
                        kind: Kind::parse(&kind).unwrap_or(Kind::Conversation),
                        id: r.get(1)?,
                        title: r.get(2)?,
                        score: r.get(3)?,
                        snippet: r.get(4)?,
                        updated_at: r.get(5)?,
                        author: r.get(6)?,
                    })
                })
                .map_err(backend)?;
            let mut hits = rows.collect::<rusqlite::Result<Vec<_>>>().map_err(backend)?;
            // FTS5's BM25 weighs words by how rare they are in the whole table, every user's
            // records included: its raw value would tell one user something about the others'
            // text. Only the order is kept, as a score that falls with the rank.
            for (rank, hit) in hits.iter_mut().enumerate() {
                hit.score = 1.0 / (rank as f64 + 1.0);
            }
            Ok(hits)
        })
        .await
    }

    async fn set_vector_rows(
        &self,
        owner: i64,
        project: &str,
        kind: Kind,
        id: &str,
        hash: &str,
        rows: i64,
    ) -> StoreResult<()> {
        let (project, id, hash) = (project.to_string(), id.to_string(), hash.to_string());
        self.write(move |conn| {
            conn.execute(
                &sqlite(queries::SET_VECTOR_ROWS),
                params![owner, project, kind.as_str(), id, hash, rows],
            )
            .map_err(backend)?;
            Ok(())
        })
        .await
    }

    async fn keyword_passages(
        &self,
        user: i64,
        project: &str,
        query: &str,
        kind: Option<Kind>,
        limit: usize,
    ) -> StoreResult<Vec<(String, f64)>> {
        let Some(terms) = zblade_index::fts::Terms::parse(query) else {
            return Ok(Vec::new());
        };
        let project = project.to_string();
        let counts = self.passage_counts.clone();
        self.with(move |conn| {
            project_exists(conn, user, &project)?;
            let scope = passage_scope(user, &project, kind);
            // The plan of local search (zblade-index, `search_messages`): passages holding
            // every word that occurs, then those holding some of the selective words, then any
            // word; each group by BM25. The same plan ranks the same passages first.
            let total: i64 = match counts.fresh(user, &project, "") {
                Some(total) => total,
                None => {
                    let total = conn
                        .prepare_cached(&sqlite(queries::PASSAGE_COUNT))
                        .and_then(|mut s| s.query_row(params![user, project], |r| r.get(0)))
                        .map_err(backend)?;
                    counts.remember(user, &project, "", total);
                    total
                }
            };
            let cap = ((total as f64 * super::COMMON_TERM_SHARE) as i64).max(64);
            let mut count = conn
                .prepare_cached(
                    "SELECT count(*) FROM (SELECT 1 FROM passages_fts WHERE passages_fts MATCH ?1 LIMIT ?2)",
                )
                .map_err(backend)?;
            let mut frequency = Vec::with_capacity(terms.len());
            for term in terms.each() {
                let expr = format!("{scope} AND text : ({term})");
                frequency.push(
                    count
                        .query_row(params![expr, cap], |r| r.get::<_, i64>(0))
                        .map_err(backend)?,
                );
            }
            let Some(present) = terms.subset(&frequency.iter().map(|&f| f > 0).collect::<Vec<_>>()) else {
                return Ok(Vec::new());
            };
            let mut top = top_passages(conn, &scope, &present.all(), limit).map_err(backend)?;
            let fill = |words: String, top: &mut Vec<(i64, f64)>| -> StoreResult<()> {
                for row in top_passages(conn, &scope, &words, limit).map_err(backend)? {
                    if top.len() == limit {
                        break;
                    }
                    if !top.iter().any(|(seq, _)| *seq == row.0) {
                        top.push(row);
                    }
                }
                Ok(())
            };
            if top.len() < limit && present.len() > 1 {
                let selective: Vec<bool> = frequency.iter().filter(|&&f| f > 0).map(|&f| f < cap).collect();
                if let Some(rare) = present.subset(&selective).filter(|r| r.len() < present.len()) {
                    fill(rare.any(), &mut top)?;
                }
                if top.len() < limit {
                    fill(present.any(), &mut top)?;
                }
            }
            let mut key = conn
                .prepare_cached("SELECT key FROM passages WHERE seq = ?1")
                .map_err(backend)?;
            top.into_iter()
                .map(|(seq, score)| Ok((key.query_row(params![seq], |r| r.get(0)).map_err(backend)?, score)))
                .collect()
        })
        .await
    }

    async fn passages(&self, user: i64, project: &str, keys: &[String]) -> StoreResult<Vec<Passage>> {
        let (project, keys) = (project.to_string(), keys.to_vec());
        self.with(move |conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT p.key, p.kind, r.id, p.message, r.title, p.label, p.text, p.time,
                        (SELECT name FROM users a WHERE a.id = coalesce(r.author_id, r.user_id))
                     FROM passages p JOIN records r ON r.seq = p.record_seq
                     WHERE p.user_id = ?1 AND p.project_id = ?2 AND p.key = ?3",
                )
                .map_err(backend)?;
            let mut out = Vec::with_capacity(keys.len());
            for key in &keys {
                let found = stmt
                    .query_row(params![user, project, key], |r| {
                        Ok(Passage {
                            key: r.get(0)?,
                            kind: Kind::parse(&r.get::<_, String>(1)?).unwrap_or(Kind::Conversation),
                            record: r.get(2)?,
                            message: r.get(3)?,
                            title: r.get(4)?,
                            label: r.get(5)?,
                            text: r.get(6)?,
                            time: r.get(7)?,
                            author: r.get(8)?,
                        })
                    })
                    .optional()
                    .map_err(backend)?;
                out.extend(found);
            }
            Ok(out)
        })
        .await
    }

    async fn passage_neighbours(
        &self,
        user: i64,
        project: &str,
        keys: &[String],
    ) -> StoreResult<std::collections::HashMap<String, Vec<String>>> {
        let (project, keys) = (project.to_string(), keys.to_vec());
        self.with(move |conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT n.key FROM passages p JOIN passages n
                       ON n.record_seq = p.record_seq AND n.position IN (p.position - 1, p.position + 1)
                     WHERE p.user_id = ?1 AND p.project_id = ?2 AND p.key = ?3 AND p.kind = 'conversation'
                     ORDER BY n.position",
                )
                .map_err(backend)?;
            let mut out = std::collections::HashMap::new();
            for key in &keys {
                let next: Vec<String> = stmt
                    .query_map(params![user, project, key], |r| r.get(0))
                    .and_then(|rows| rows.collect())
                    .map_err(backend)?;
                if !next.is_empty() {
                    out.insert(key.clone(), next);
                }
            }
            Ok(out)
        })
        .await
    }

    async fn embedding(&self, owner: i64, project: &str) -> StoreResult<Option<EmbeddingModel>> {
        let project = project.to_string();
        self.with(move |conn| {
            let row: Option<(Option<String>, Option<u32>)> = conn
                .query_row(&sqlite(queries::EMBEDDING_MODEL), params![owner, project], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()
                .map_err(backend)?;
            Ok(row.and_then(|(id, dims)| Some(EmbeddingModel { id: id?, dims: dims? })))
        })
        .await
    }

    async fn set_embedding(&self, owner: i64, project: &str, model: &EmbeddingModel) -> StoreResult<EmbeddingModel> {
        let (project, model) = (project.to_string(), model.clone());
        self.write(move |conn| {
            project_exists(conn, owner, &project)?;
            conn.execute(
                "UPDATE projects SET embedding_model = ?3, embedding_dims = ?4
                 WHERE user_id = ?1 AND id = ?2 AND embedding_model IS NULL",
                params![owner, project, &model.id, model.dims],
            )
            .map_err(backend)?;
            conn.query_row(&sqlite(queries::EMBEDDING_MODEL), params![owner, project], |r| {
                Ok(EmbeddingModel {
                    id: r.get(0)?,
                    dims: r.get(1)?,
                })
            })
            .map_err(backend)
        })
        .await
    }

    async fn unindexed_records(&self, after: i64, limit: usize) -> StoreResult<Vec<super::Unindexed>> {
        self.with(move |conn| {
            let mut stmt = conn
                .prepare_cached(&sqlite(queries::UNINDEXED_RECORDS))
                .map_err(backend)?;
            let rows = stmt
                .query_map(params![after, limit as i64], |r| {
                    Ok(super::Unindexed {
                        seq: r.get(0)?,
                        owner: r.get(1)?,
                        project: r.get(2)?,
                        kind: Kind::parse(&r.get::<_, String>(3)?).unwrap_or(Kind::Conversation),
                        id: r.get(4)?,
                        body: r.get(5)?,
                    })
                })
                .map_err(backend)?;
            rows.collect::<rusqlite::Result<Vec<_>>>().map_err(backend)
        })
        .await
    }

    async fn put_passages(&self, record: &super::Unindexed, passages: &[NewPassage]) -> StoreResult<()> {
        let (r, passages) = (record.clone(), passages.to_vec());
        self.write(move |conn| {
            let tx = conn.transaction().map_err(backend)?;
            replace_passages(&tx, r.seq, r.owner, &r.project, r.kind, &passages)?;
            tx.commit().map_err(backend)
        })
        .await
    }

    async fn put_metadata(&self, user: i64, project: &str, record: &MetadataRecord) -> StoreResult<PutStatus> {
        let (project, m) = (project.to_string(), record.clone());
        self.write(move |conn| {
            let tx = conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                .map_err(backend)?;
            project_exists(&tx, user, &project)?;
            let current = tx
                .query_row(
                    "SELECT title, tags, message_count, updated_at FROM metadata
                     WHERE user_id = ?1 AND project_id = ?2 AND kind = ?3 AND id = ?4",
                    params![user, project, m.kind, m.id],
                    |r| {
                        Ok(MetadataRecord {
                            kind: m.kind.clone(),
                            id: m.id.clone(),
                            title: r.get(0)?,
                            tags: tags_from_json(&r.get::<_, String>(1)?),
                            message_count: r.get(2)?,
                            updated_at: r.get(3)?,
                        })
                    },
                )
                .optional()
                .map_err(backend)?;
            let status = match current {
                Some(existing) if existing == m => PutStatus::Unchanged,
                existing => {
                    tx.execute(
                        "INSERT INTO metadata (user_id, project_id, kind, id, title, tags, message_count, updated_at)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                         ON CONFLICT (user_id, project_id, kind, id) DO UPDATE SET
                             title = excluded.title, tags = excluded.tags,
                             message_count = excluded.message_count, updated_at = excluded.updated_at",
                        params![
                            user,
                            project,
                            m.kind,
                            m.id,
                            m.title,
                            tags_to_json(&m.tags),
                            m.message_count,
                            m.updated_at
                        ],
                    )
                    .map_err(backend)?;
                    if existing.is_some() {
                        PutStatus::Updated
                    } else {
                        PutStatus::Created
                    }
                }
            };
            tx.commit().map_err(backend)?;
            Ok(status)
        })
        .await
    }

    async fn list_metadata(
        &self,
        user: i64,
        project: &str,
        after: &str,
        limit: usize,
    ) -> StoreResult<Page<MetadataRecord>> {
        let (project, after) = (project.to_string(), after.to_string());
        self.with(move |conn| {
            project_exists(conn, user, &project)?;
            let mut stmt = conn
                .prepare_cached(
                    "SELECT kind, id, title, tags, message_count, updated_at FROM metadata
                     WHERE user_id = ?1 AND project_id = ?2 AND id > ?3 ORDER BY id, kind LIMIT ?4",
                )
                .map_err(backend)?;
            let rows = stmt
                .query_map(params![user, project, after, limit as i64 + 1], |r| {
                    Ok(MetadataRecord {
                        kind: r.get(0)?,
                        id: r.get(1)?,
                        title: r.get(2)?,
                        tags: tags_from_json(&r.get::<_, String>(3)?),
                        message_count: r.get(4)?,
                        updated_at: r.get(5)?,
                    })
                })
                .map_err(backend)?;
            let items = rows.collect::<rusqlite::Result<Vec<_>>>().map_err(backend)?;
            Ok(super::page_from_fetched(items, limit, |m| m.id.clone()))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, text: &str) -> NewRecord {
        NewRecord {
            kind: Kind::Conversation,
            id: id.into(),
            hash: "0".repeat(64),
            title: format!("title of {id}"),
            tags: Vec::new(),
            updated_at: "2026-11-24T00:00:00Z".into(),
            body: "{}".into(),
            search_text: text.into(),
            passages: vec![NewPassage {
                key: format!("{id}/msg_1"),
                message: "msg_1".into(),
                position: 0,
                label: "user".into(),
                time: String::new(),
                text: text.into(),
            }],
        }
    }

    /// A database written before version 3 keeps every record searchable after the upgrade,
    /// and the scoped index still keeps users apart.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn records_written_before_the_scoped_index_are_found_after_the_upgrade() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("s.db")).unwrap();
        // Only versions 1 and 2, as a server of the previous release left it.
        store
            .with(|conn| {
                conn.execute_batch(
                    "CREATE TABLE zblade_schema (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)",
                )
                .map_err(backend)?;
                for (version, sql, _) in super::super::MIGRATIONS.iter().filter(|m| m.0 < 3) {
                    conn.execute_batch(sql).map_err(backend)?;
                    conn.execute("INSERT INTO zblade_schema VALUES (?1, 'then')", params![version])
                        .map_err(backend)?;
                }
                Ok(())
            })
            .await
            .unwrap();
        let alice = store.add_user("alice").await.unwrap().id;
        let bob = store.add_user("bob").await.unwrap().id;
        for user in [alice, bob] {
            store.put_project(user, "proj_a", "a").await.unwrap();
        }
        // Written as that release wrote them (its columns, its keyword index).
        for (user, id, text) in [
            (alice, "conv_1", "the gateway retries twice"),
            (bob, "conv_2", "bob's gateway notes"),
        ] {
            let r = record(id, text);
            store
                .with(move |conn| {
                    conn.execute(
                        "INSERT INTO records (user_id, project_id, kind, id, version, hash, size, title, tags,
                             updated_at, body, search_text)
                         VALUES (?1, 'proj_a', 'conversation', ?2, 1, ?3, ?4, ?5, '[]', ?6, ?7, ?8)",
                        params![
                            user,
                            r.id,
                            r.hash,
                            r.body.len() as i64,
                            r.title,
                            r.updated_at,
                            r.body,
                            r.search_text
                        ],
                    )
                    .map_err(backend)
                })
                .await
                .unwrap();
        }
        assert_eq!(store.migrate().await.unwrap(), 4, "versions 3 to 6 ran");
        let hits = store.search(alice, "proj_a", "gateway", None, 10).await.unwrap();
        assert_eq!(hits.iter().map(|h| h.id.as_str()).collect::<Vec<_>>(), ["conv_1"]);
        assert!(hits[0].snippet.contains("[gateway]"), "{}", hits[0].snippet);
        // Written after the upgrade: found too, and only by its owner.
        store
            .put_record(alice, "proj_a", &record("conv_3", "a gateway timeout"), alice, false)
            .await
            .unwrap();
        assert_eq!(
            store.search(alice, "proj_a", "gateway", None, 10).await.unwrap().len(),
            2
        );
        assert_eq!(store.search(bob, "proj_a", "gateway", None, 10).await.unwrap().len(), 1);
        assert!(
            store
                .search(bob, "proj_a", "timeout", None, 10)
                .await
                .unwrap()
                .is_empty()
        );
    }

    /// Hits come in BM25 order with titles weighing double, as FTS5's own `bm25()` over the
    /// same rows says; the limit holds; another user's rows with the word change nothing.
    /// Uploads sent at once all land (writers take turns).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn hits_are_ranked_by_bm25_with_titles_weighing_double() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SqliteStore::open(&dir.path().join("s.db")).unwrap());
        store.migrate().await.unwrap();
        let alice = store.add_user("alice").await.unwrap().id;
        let bob = store.add_user("bob").await.unwrap().id;
        for user in [alice, bob] {
            store.put_project(user, "proj_a", "a").await.unwrap();
        }
        let texts = [
            ("conv_plain", "the cache was warm and the gateway answered"),
            ("conv_twice", "cache misses: the cache was cold"),
            (
                "conv_long",
                "a long story about many other things, in which the cache comes up once near the end of it all",
            ),
            ("conv_none", "nothing about it here"),
        ];
        let mut uploads = Vec::new();
        for (id, text) in texts {
            let store = store.clone();
            uploads.push(tokio::spawn(async move {
                store.put_record(alice, "proj_a", &record(id, text), alice, false).await
            }));
        }
        let mut titled = record("conv_titled", "the gateway answered");
        titled.title = "Notes on the cache for the gateway team this week".into();
        uploads.push(tokio::spawn({
            let store = store.clone();
            async move { store.put_record(alice, "proj_a", &titled, alice, false).await }
        }));
        for n in 0..20 {
            let store = store.clone();
            uploads.push(tokio::spawn(async move {
                store
                    .put_record(
                        bob,
                        "proj_a",
                        &record(&format!("conv_bob{n}"), "cache cache cache"),
                        bob,
                        false,
                    )
                    .await
            }));
        }
        for upload in uploads {
            upload.await.unwrap().unwrap();
        }
        let hits = store.search(alice, "proj_a", "cache", None, 10).await.unwrap();
        let ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
        // The reference: FTS5's bm25() with the same weights over alice's rows, sorted in SQL.
        let expected: Vec<String> = store
            .with(move |conn| {
                let mut stmt = conn
                    .prepare(
                        "SELECT r.id FROM records_fts JOIN records r ON r.seq = records_fts.rowid
                         WHERE records_fts MATCH ?1 AND r.user_id = ?2
                         ORDER BY bm25(records_fts, 2.0, 1.0, 0.0)",
                    )
                    .map_err(backend)?;
                let query = scoped_query(alice, "proj_a", None, &["cache".to_string()]);
                let ids = stmt
                    .query_map(params![query, alice], |r| r.get::<_, String>(0))
                    .map_err(backend)?
                    .collect::<rusqlite::Result<Vec<_>>>()
                    .map_err(backend)?;
                Ok(ids)
            })
            .await
            .unwrap();
        assert_eq!(ids, expected);
        assert_eq!(ids.len(), 4, "{ids:?}");
        // With equal weights the title match would come third, after conv_plain.
        assert_eq!(ids[..2], ["conv_twice", "conv_titled"], "a title match weighs double");
        assert_eq!(ids[3], "conv_long", "one match in a long text ranks last: {ids:?}");
        assert!(
            hits.iter()
                .all(|h| h.snippet.contains("[cache]") || h.title.contains("cache")),
            "{hits:?}"
        );
        assert!(hits.windows(2).all(|w| w[0].score > w[1].score));
        let two = store.search(alice, "proj_a", "cache", None, 2).await.unwrap();
        assert_eq!(two.iter().map(|h| h.id.as_str()).collect::<Vec<_>>(), ids[..2]);
    }
}

//! The PostgreSQL store, for servers with many users: a few pipelined connections, reopened
//! when the database restarts; a generated `tsvector` column with a GIN index for search.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Mutex;
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, NoTls, Row};

use super::queries;
use super::rules;
use super::{
    Access, Deleted, EmbeddingModel, Invitation, Kind, Member, MetadataRecord, NewPassage, NewRecord, Page, Passage,
    Project, PutOutcome, PutStatus, Record, RecordMeta, Role, SearchHit, Store, StoreError, StoreResult, TokenSummary,
    Unindexed, User, UserSummary, now, query_words, tags_from_json, tags_to_json,
};

/// Version 1 of the schema, PostgreSQL dialect (the same tables as SQLite's).
pub(super) const SCHEMA_V1: &str = "
CREATE TABLE users (
    id BIGSERIAL PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
);
CREATE TABLE tokens (
    id TEXT PRIMARY KEY,
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    hash TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    revoked_at TEXT
);
CREATE TABLE projects (
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    id TEXT NOT NULL,
    name TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (user_id, id)
);
CREATE TABLE records (
    seq BIGSERIAL PRIMARY KEY,
    user_id BIGINT NOT NULL,
    project_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    id TEXT NOT NULL,
    version BIGINT NOT NULL,
    hash TEXT NOT NULL,
    size BIGINT NOT NULL,
    title TEXT NOT NULL,
    tags TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    body TEXT NOT NULL,
    search_text TEXT NOT NULL,
    search tsvector GENERATED ALWAYS AS
        (setweight(to_tsvector('simple', title), 'A') || to_tsvector('simple', search_text)) STORED,
    UNIQUE (user_id, project_id, kind, id),
    FOREIGN KEY (user_id, project_id) REFERENCES projects(user_id, id) ON DELETE CASCADE
);
CREATE INDEX records_search ON records USING GIN (search);
CREATE TABLE metadata (
    user_id BIGINT NOT NULL,
    project_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    id TEXT NOT NULL,
    title TEXT NOT NULL,
    tags TEXT NOT NULL,
    message_count BIGINT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (user_id, project_id, kind, id),
    FOREIGN KEY (user_id, project_id) REFERENCES projects(user_id, id) ON DELETE CASCADE
);
";

/// Version 5, PostgreSQL dialect (see SQLite's): passages with an English-stemmed `tsvector`
/// and a GIN index; no unique key, so that one statement can replace a record's passages.
pub(super) const SCHEMA_V5: &str = "
ALTER TABLE projects ADD COLUMN embedding_model TEXT;
ALTER TABLE projects ADD COLUMN embedding_dims INTEGER;
ALTER TABLE records ADD COLUMN vector_rows BIGINT NOT NULL DEFAULT 0;
CREATE TABLE passages (
    seq BIGSERIAL PRIMARY KEY,
    record_seq BIGINT NOT NULL REFERENCES records(seq) ON DELETE CASCADE,
    user_id BIGINT NOT NULL,
    project_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    message TEXT NOT NULL,
    position BIGINT NOT NULL,
    label TEXT NOT NULL,
    time TEXT NOT NULL,
    text TEXT NOT NULL,
    search tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED
);
CREATE INDEX passages_of_record ON passages (record_seq, position);
CREATE INDEX passages_by_key ON passages (user_id, project_id, key);
CREATE INDEX passages_search ON passages USING GIN (search);
";

/// Version 6, PostgreSQL dialect: each passage's `search` vector also holds its project's
/// [`scope_lexeme`], so the GIN index answers "this word in this project" alone (before, every
/// keyword query intersected the word's matches in all projects with the project's rows, a
/// scan of the whole project each time). The index is written through (`fastupdate = off`):
/// with GIN's pending list every search also read up to 4 MB of entries not yet merged, which
/// cost more than the search itself while passages were being written.
pub(super) const SCHEMA_V6: &str = "
ALTER TABLE passages DROP COLUMN search;
ALTER TABLE passages ADD COLUMN search tsvector GENERATED ALWAYS AS
    (to_tsvector('english', text) || array_to_tsvector(ARRAY['~' || user_id::text || '~' || project_id])) STORED;
CREATE INDEX passages_search ON passages USING GIN (search) WITH (fastupdate = off);
";

/// The lexeme every passage of a project carries in its `search` vector (schema version 6).
/// The English parser splits words at `~`, so no word of a text is ever this lexeme.
fn scope_lexeme(user: i64, project: &str) -> String {
    format!("~{user}~{project}")
}

/// A word's count is remembered (for `PassageCounts`' 30 s) from this many passages on:
/// counting those costs milliseconds, while a rarer word's count is cheap, and a word just
/// written (count 0 a moment ago) must be found at once.
const REMEMBERED_COUNT: i64 = 256;

/// The columns of passages as arrays, for `unnest` (one statement stores them all).
fn passage_arrays(passages: &[NewPassage]) -> [Vec<String>; 5] {
    [
        passages.iter().map(|p| p.key.clone()).collect(),
        passages.iter().map(|p| p.message.clone()).collect(),
        passages.iter().map(|p| p.label.clone()).collect(),
        passages.iter().map(|p| p.time.clone()).collect(),
        passages.iter().map(|p| p.text.clone()).collect(),
    ]
}

/// Inserts the passages of the record rows of CTE `rec` (its `seq`) and deletes their old ones,
/// in the statement it ends; parameters from `$first`: keys, messages, positions, labels,
/// times, texts, then user, project, kind.
fn passages_cte(first: usize) -> String {
    let p = |i: usize| format!("${}", first + i);
    format!(
        "gone AS (DELETE FROM passages WHERE record_seq IN (SELECT seq FROM rec)),
         added AS (INSERT INTO passages (record_seq, user_id, project_id, kind, key, message, position, label, time, text)
             SELECT rec.seq, {user}, {project}, {kind}, n.key, n.message, n.position, n.label, n.time, n.text
             FROM rec, unnest({k}::text[], {m}::text[], {pos}::bigint[], {l}::text[], {t}::text[], {x}::text[])
                 AS n(key, message, position, label, time, text))",
        k = p(0),
        m = p(1),
        pos = p(2),
        l = p(3),
        t = p(4),
        x = p(5),
        user = p(6),
        project = p(7),
        kind = p(8),
    )
}

/// Each lexeme's number of positions in a `tsvector` written as text (`'word':1,4A 'other':2`),
/// and the total: the term frequencies and length BM25 reads. The [`scope_lexeme`] is not a
/// word of the text and is left out.
fn lexeme_counts(vector: &str) -> (std::collections::HashMap<String, usize>, usize) {
    let mut counts = std::collections::HashMap::new();
    let mut total = 0;
    let mut chars = vector.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\'' {
            continue;
        }
        let mut lexeme = String::new();
        while let Some(c) = chars.next() {
            match c {
                '\'' if chars.peek() == Some(&'\'') => {
                    chars.next();
                    lexeme.push('\'');
                }
                '\'' => break,
                '\\' => lexeme.extend(chars.next()),
                c => lexeme.push(c),
            }
        }
        let mut positions = 1;
        if chars.peek() == Some(&':') {
            chars.next();
            positions = 0;
            let mut in_number = false;
            while let Some(&c) = chars.peek() {
                if c == ' ' {
                    break;
                }
                if c.is_ascii_digit() && !in_number {
                    positions += 1;
                }
                in_number = c.is_ascii_digit() || c.is_ascii_alphabetic();
                if c == ',' {
                    in_number = false;
                }
                chars.next();
            }
        }
        if lexeme.starts_with('~') {
            continue;
        }
        total += positions;
        *counts.entry(lexeme).or_insert(0) += positions;
    }
    (counts, total)
}

/// One term's BM25 (k1 = 1.2, b = 0.75, FTS5's constants and IDF): `tf` occurrences in a
/// passage of `length` terms, `mean` the passages' mean length, `df` of `total` passages
/// holding it.
fn bm25_term(tf: usize, length: usize, mean: f64, total: i64, df: i64) -> f64 {
    if tf == 0 {
        return 0.0;
    }
    let (k1, b) = (1.2, 0.75);
    let idf = (((total - df) as f64 + 0.5) / (df as f64 + 0.5)).ln().max(1e-6);
    let tf = tf as f64;
    idf * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * length as f64 / mean.max(1.0)))
}

/// Connections kept open; tokio-postgres pipelines the queries of concurrent requests on each.
const CONNECTIONS: usize = 8;

fn backend(e: tokio_postgres::Error) -> StoreError {
    StoreError::Backend(e.to_string())
}

/// A missing project shows up as a foreign key violation on insert.
fn no_project(project: &str) -> impl Fn(tokio_postgres::Error) -> StoreError + '_ {
    move |e| match e.code() {
        Some(code) if *code == SqlState::FOREIGN_KEY_VIOLATION => StoreError::NotFound(format!("no project {project}")),
        _ => backend(e),
    }
}

/// The PostgreSQL store.
pub struct PostgresStore {
    url: String,
    slots: Vec<Mutex<Option<Arc<Client>>>>,
    next: AtomicUsize,
    passage_counts: super::PassageCounts,
}

async fn connect(url: &str) -> StoreResult<Client> {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .map_err(|e| StoreError::Backend(format!("cannot connect to PostgreSQL: {e}")))?;
    // The connection object does the socket I/O; it ends when the client is dropped or the
    // server goes away (the slot then reconnects).
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user@host:port/db`).
    pub async fn connect(url: &str) -> StoreResult<PostgresStore> {
        let first = connect(url).await?;
        let mut slots = vec![Mutex::new(Some(Arc::new(first)))];
        slots.extend((1..CONNECTIONS).map(|_| Mutex::new(None)));
        Ok(PostgresStore {
            url: url.to_string(),
            slots,
            next: AtomicUsize::new(0),
            passage_counts: Default::default(),
        })
    }

    /// A live connection, round robin; a closed one (the server restarted) is reopened.
    async fn client(&self) -> StoreResult<Arc<Client>> {
        let slot = &self.slots[self.next.fetch_add(1, Ordering::Relaxed) % self.slots.len()];
        let mut slot = slot.lock().await;
        if let Some(client) = slot.as_ref().filter(|c| !c.is_closed()) {
            return Ok(client.clone());
        }
        let client = Arc::new(connect(&self.url).await?);
        *slot = Some(client.clone());
        Ok(client)
    }

    async fn project_exists(&self, client: &Client, user: i64, project: &str) -> StoreResult<()> {
        let row = client
            .query_opt(queries::PROJECT_EXISTS, &[&user, &project])
            .await
            .map_err(backend)?;
        match row {
            Some(_) => Ok(()),
            None => Err(StoreError::NotFound(format!("no project {project}"))),
        }
    }
}

fn record_meta(row: &Row) -> RecordMeta {
    let kind: String = row.get("kind");
    RecordMeta {
        kind: Kind::parse(&kind).unwrap_or(Kind::Conversation),
        id: row.get("id"),
        version: row.get("version"),
        hash: row.get("hash"),
        size: row.get("size"),
        title: row.get("title"),
        tags: tags_from_json(&row.get::<_, String>("tags")),
        updated_at: row.get("updated_at"),
        author: row.get("author"),
    }
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
fn project_row(row: &Row) -> Project {
    let role: String = row.get(9);
    let model: Option<String> = row.get(7);
    let dims: Option<i32> = row.get(8);
    Project {
        id: row.get(0),
        name: row.get(1),
        created_at: row.get(2),
        conversations: row.get(3),
        moments: row.get(4),
        metadata: row.get(5),
        owner: row.get(6),
        role: Role::parse(&role).unwrap_or(Role::Reader),
        embedding: model.zip(dims).map(|(id, dims)| EmbeddingModel {
            id,
            dims: dims.max(0) as u32,
        }),
    }
}

/// The id of the user named `name`.
async fn user_id(client: &Client, name: &str) -> StoreResult<i64> {
    client
        .query_opt(queries::USER_ID_BY_NAME, &[&name])
        .await
        .map_err(backend)?
        .map(|row| row.get(0))
        .ok_or_else(|| StoreError::NotFound(format!("no user named {name}")))
}

fn metadata_row(row: &Row) -> MetadataRecord {
    MetadataRecord {
        kind: row.get(0),
        id: row.get(1),
        title: row.get(2),
        tags: tags_from_json(&row.get::<_, String>(3)),
        message_count: row.get(4),
        updated_at: row.get(5),
    }
}

impl Store for PostgresStore {
    fn backend(&self) -> &'static str {
        "postgresql"
    }

    async fn migrate(&self) -> StoreResult<usize> {
        // A connection of its own: a transaction needs exclusive use of it.
        let mut client = connect(&self.url).await?;
        let tx = client.transaction().await.map_err(backend)?;
        // Two servers starting at once must not both run a migration.
        tx.execute("SELECT pg_advisory_xact_lock(7262431)", &[])
            .await
            .map_err(backend)?;
        tx.batch_execute(
            "CREATE TABLE IF NOT EXISTS zblade_schema (version BIGINT PRIMARY KEY, applied_at TEXT NOT NULL)",
        )
        .await
        .map_err(backend)?;
        let current: i64 = tx
            .query_one("SELECT coalesce(max(version), 0)::BIGINT FROM zblade_schema", &[])
            .await
            .map_err(backend)?
            .get(0);
        let mut ran = 0;
        for (version, _, sql) in super::MIGRATIONS.iter().filter(|m| m.0 > current) {
            tx.batch_execute(sql)
                .await
                .map_err(|e| StoreError::Backend(format!("migration {version}: {e}")))?;
            tx.execute(queries::RECORD_MIGRATION, &[version, &now()])
                .await
                .map_err(backend)?;
            ran += 1;
        }
        tx.commit().await.map_err(backend)?;
        Ok(ran)
    }

    async fn add_user(&self, name: &str) -> StoreResult<User> {
        let client = self.client().await?;
        let row = client
            .query_one(
                "INSERT INTO users (name, created_at) VALUES ($1, $2) RETURNING id",
                &[&name, &now()],
            )
            .await
            .map_err(|e| match e.code() {
                Some(code) if *code == SqlState::UNIQUE_VIOLATION => rules::name_taken(name),
                _ => backend(e),
            })?;
        Ok(User {
            id: row.get(0),
            name: name.to_string(),
        })
    }

    async fn list_users(&self) -> StoreResult<Vec<UserSummary>> {
        let client = self.client().await?;
        let rows = client.query(queries::LIST_USERS, &[]).await.map_err(backend)?;
        Ok(rows
            .iter()
            .map(|r| UserSummary {
                name: r.get(0),
                created_at: r.get(1),
                active_tokens: r.get(2),
                revoked_tokens: r.get(3),
                disabled_at: r.get(4),
            })
            .collect())
    }

    async fn add_token(&self, user: &str, token_id: &str, hash: &str, expires_at: Option<&str>) -> StoreResult<()> {
        let client = self.client().await?;
        let changed = client
            .execute(queries::ADD_TOKEN, &[&token_id, &hash, &now(), &user, &expires_at])
            .await
            .map_err(backend)?;
        if changed == 0 {
            return Err(StoreError::NotFound(format!("no user named {user}")));
        }
        Ok(())
    }

    async fn revoke_token(&self, token_id: &str) -> StoreResult<bool> {
        let client = self.client().await?;
        let changed = client
            .execute(queries::REVOKE_TOKEN, &[&now(), &token_id])
            .await
            .map_err(backend)?;
        Ok(changed > 0)
    }

    async fn list_tokens(&self, user: Option<&str>) -> StoreResult<Vec<TokenSummary>> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT t.id, u.name, t.created_at, t.expires_at, t.revoked_at
                 FROM tokens t JOIN users u ON u.id = t.user_id
                 WHERE $1::text IS NULL OR u.name = $1 ORDER BY t.created_at DESC, t.id",
                &[&user],
            )
            .await
            .map_err(backend)?;
        Ok(rows
            .iter()
            .map(|r| TokenSummary {
                id: r.get(0),
                user: r.get(1),
                created_at: r.get(2),
                expires_at: r.get(3),
                revoked_at: r.get(4),
            })
            .collect())
    }

    async fn set_user_disabled(&self, name: &str, disabled: bool) -> StoreResult<bool> {
        let client = self.client().await?;
        let changed = client
            .execute(queries::SET_USER_DISABLED, &[&name, &disabled, &now()])
            .await
            .map_err(backend)?;
        Ok(changed > 0)
    }

    async fn user_for_token(&self, hash: &str) -> StoreResult<Option<User>> {
        let client = self.client().await?;
        let row = client
            .query_opt(queries::USER_BY_TOKEN_HASH, &[&hash, &now()])
            .await
            .map_err(backend)?;
        Ok(row.map(|r| User {
            id: r.get(0),
            name: r.get(1),
        }))
    }

    async fn access(&self, user: i64, project: &str) -> StoreResult<Option<Access>> {
        let client = self.client().await?;
        let rows = client
            .query(queries::ROLE_IN_PROJECT, &[&user, &project])
            .await
            .map_err(backend)?;
        let rows = rows
            .iter()
            .map(|r| (r.get::<_, i64>(0), r.get::<_, String>(1)))
            .collect();
        super::access_from(user, project, rows)
    }

    async fn put_member(
        &self,
        owner: i64,
        project: &str,
        member: &str,
        role: Role,
        invited_by: i64,
    ) -> StoreResult<PutStatus> {
        let client = self.client().await?;
        self.project_exists(&client, owner, project).await?;
        let member_id = user_id(&client, member).await?;
        rules::creator_keeps_ownership(member_id, owner, member, project)?;
        // One statement: invite, or change the role; `xmax = 0` tells an insert from an update,
        // and no row back means the role was that already.
        let row = client
            .query_opt(
                "INSERT INTO members (owner_id, project_id, user_id, role, invited_by, invited_at)
                 VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (owner_id, project_id, user_id) DO UPDATE SET role = EXCLUDED.role
                 WHERE members.role <> EXCLUDED.role
                 RETURNING (xmax = 0)",
                &[&owner, &project, &member_id, &role.as_str(), &invited_by, &now()],
            )
            .await
            .map_err(no_project(project))?;
        Ok(match row {
            Some(row) if row.get::<_, bool>(0) => PutStatus::Created,
            Some(_) => PutStatus::Updated,
            None => PutStatus::Unchanged,
        })
    }

    async fn list_members(&self, owner: i64, project: &str) -> StoreResult<Vec<Member>> {
        let client = self.client().await?;
        self.project_exists(&client, owner, project).await?;
        let rows = client
            .query(queries::PROJECT_MEMBERS, &[&owner, &project])
            .await
            .map_err(backend)?;
        Ok(rows
            .iter()
            .map(|r| Member {
                user: r.get(0),
                role: Role::parse(r.get(1)).unwrap_or(Role::Reader),
                invited_by: r.get(2),
                invited_at: r.get(3),
                accepted_at: r.get(4),
            })
            .collect())
    }

    async fn remove_member(&self, owner: i64, project: &str, member: &str) -> StoreResult<bool> {
        let client = self.client().await?;
        self.project_exists(&client, owner, project).await?;
        let member_id = user_id(&client, member).await?;
        rules::creator_stays(member_id, owner, member, project)?;
        let changed = client
            .execute(queries::REMOVE_MEMBER, &[&owner, &project, &member_id])
            .await
            .map_err(backend)?;
        Ok(changed > 0)
    }

    async fn invitations(&self, user: i64) -> StoreResult<Vec<Invitation>> {
        let client = self.client().await?;
        let rows = client.query(queries::INVITATIONS, &[&user]).await.map_err(backend)?;
        Ok(rows
            .iter()
            .map(|r| Invitation {
                project: r.get(0),
                name: r.get(1),
                owner: r.get(2),
                role: Role::parse(r.get(3)).unwrap_or(Role::Reader),
                invited_by: r.get(4),
                invited_at: r.get(5),
            })
            .collect())
    }

    async fn accept_invitation(&self, user: i64, owner: &str, project: &str) -> StoreResult<bool> {
        let client = self.client().await?;
        let changed = client
            .execute(queries::ACCEPT_INVITATION, &[&user, &owner, &project, &now()])
            .await
            .map_err(backend)?;
        Ok(changed > 0)
    }

    async fn decline_invitation(&self, user: i64, owner: &str, project: &str) -> StoreResult<bool> {
        let client = self.client().await?;
        let changed = client
            .execute(queries::DECLINE_INVITATION, &[&user, &owner, &project])
            .await
            .map_err(backend)?;
        Ok(changed > 0)
    }

    async fn remove_contributions(&self, owner: i64, project: &str, author: &str) -> StoreResult<Vec<(Kind, String)>> {
        let client = self.client().await?;
        self.project_exists(&client, owner, project).await?;
        let author_id = user_id(&client, author).await?;
        let rows = client
            .query(queries::DELETE_CONTRIBUTIONS, &[&owner, &project, &author_id])
            .await
            .map_err(backend)?;
        Ok(rows
            .iter()
            .map(|r| (Kind::parse(r.get(0)).unwrap_or(Kind::Conversation), r.get(1)))
            .collect())
    }

    async fn put_project(&self, user: i64, id: &str, name: &str) -> StoreResult<bool> {
        let client = self.client().await?;
        // `xmax = 0` only on a row this statement inserted.
        let row = client
            .query_one(
                "INSERT INTO projects (user_id, id, name, created_at) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (user_id, id) DO UPDATE SET name = EXCLUDED.name
                 RETURNING (xmax = 0)",
                &[&user, &id, &name, &now()],
            )
            .await
            .map_err(backend)?;
        Ok(row.get(0))
    }

    async fn list_projects(&self, user: i64) -> StoreResult<Vec<Project>> {
        let client = self.client().await?;
        let rows = client
            .query(
                &format!(
                    "SELECT {PROJECT_COLUMNS}, 'owner' FROM projects p WHERE p.user_id = $1
                     UNION ALL
                     SELECT {PROJECT_COLUMNS}, m.role FROM members m
                       JOIN projects p ON p.user_id = m.owner_id AND p.id = m.project_id
                     WHERE m.user_id = $1 AND m.accepted_at IS NOT NULL
                     ORDER BY 1, 7"
                ),
                &[&user],
            )
            .await
            .map_err(backend)?;
        Ok(rows.iter().map(project_row).collect())
    }

    async fn get_project(&self, user: i64, id: &str) -> StoreResult<Option<Project>> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                &format!("SELECT {PROJECT_COLUMNS}, 'owner' FROM projects p WHERE p.user_id = $1 AND p.id = $2"),
                &[&user, &id],
            )
            .await
            .map_err(backend)?;
        Ok(row.as_ref().map(project_row))
    }

    async fn delete_project(&self, user: i64, id: &str) -> StoreResult<bool> {
        let client = self.client().await?;
        let changed = client
            .execute(queries::DELETE_PROJECT, &[&user, &id])
            .await
            .map_err(backend)?;
        Ok(changed > 0)
    }

    async fn put_record(
        &self,
        user: i64,
        project: &str,
        r: &NewRecord,
        author: i64,
        own_only: bool,
    ) -> StoreResult<PutOutcome> {
        let client = self.client().await?;
        let size = r.body.len() as i64;
        let tags = tags_to_json(&r.tags);
        // One statement: insert, or update only when the bytes differ (and, for a writer, the
        // record is theirs); no row back means the same bytes were there, or another's record.
        let [keys, messages, labels, times, texts] = passage_arrays(&r.passages);
        let positions: Vec<i64> = r.passages.iter().map(|p| p.position).collect();
        // The record and its passages in one statement (so, atomically).
        let row = client
            .query_opt(
                &format!(
                    "WITH rec AS (
                        INSERT INTO records (user_id, project_id, kind, id, version, hash, size, title, tags,
                            updated_at, body, search_text, author_id)
                        VALUES ($1, $2, $3, $4, 1, $5, $6, $7, $8, $9, $10, $11, $12)
                        ON CONFLICT (user_id, project_id, kind, id) DO UPDATE SET
                            version = records.version + 1, hash = EXCLUDED.hash, size = EXCLUDED.size,
                            title = EXCLUDED.title, tags = EXCLUDED.tags, updated_at = EXCLUDED.updated_at,
                            body = EXCLUDED.body, search_text = EXCLUDED.search_text, author_id = EXCLUDED.author_id
                        WHERE records.hash <> EXCLUDED.hash
                          AND (NOT $13 OR coalesce(records.author_id, records.user_id) = EXCLUDED.author_id)
                        RETURNING seq, version),
                     {}
                     SELECT version FROM rec",
                    passages_cte(14)
                ),
                &[
                    &user,
                    &project,
                    &r.kind.as_str(),
                    &r.id,
                    &r.hash,
                    &size,
                    &r.title,
                    &tags,
                    &r.updated_at,
                    &r.body,
                    &r.search_text,
                    &author,
                    &own_only,
                    &keys,
                    &messages,
                    &positions,
                    &labels,
                    &times,
                    &texts,
                    &user,
                    &project,
                    &r.kind.as_str(),
                ],
            )
            .await
            .map_err(no_project(project))?;
        if let Some(row) = row {
            let version: i64 = row.get(0);
            let status = if version == 1 {
                PutStatus::Created
            } else {
                PutStatus::Updated
            };
            return Ok(PutOutcome { status, version });
        }
        let row = client
            .query_one(queries::RECORD_VERSION, &[&user, &project, &r.kind.as_str(), &r.id])
            .await
            .map_err(backend)?;
        if row.get::<_, String>(1) != r.hash {
            return Err(rules::not_their_record_to_change(r.kind, &r.id));
        }
        Ok(PutOutcome {
            status: PutStatus::Unchanged,
            version: row.get(0),
        })
    }

    async fn get_record(&self, user: i64, project: &str, kind: Kind, id: &str) -> StoreResult<Option<Record>> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                &format!(
                    "SELECT {RECORD_COLUMNS}, r.body, r.vector_rows FROM records r
                     WHERE r.user_id = $1 AND r.project_id = $2 AND r.kind = $3 AND r.id = $4"
                ),
                &[&user, &project, &kind.as_str(), &id],
            )
            .await
            .map_err(backend)?;
        Ok(row.map(|row| Record {
            meta: record_meta(&row),
            body: row.get("body"),
            vector_rows: row.get("vector_rows"),
        }))
    }

    async fn list_records(
        &self,
        user: i64,
        project: &str,
        kind: Kind,
        after: &str,
        limit: usize,
    ) -> StoreResult<Page<RecordMeta>> {
        let client = self.client().await?;
        self.project_exists(&client, user, project).await?;
        let rows = client
            .query(
                &format!(
                    "SELECT {RECORD_COLUMNS} FROM records r
                     WHERE r.user_id = $1 AND r.project_id = $2 AND r.kind = $3 AND r.id COLLATE \"C\" > $4
                     ORDER BY r.id COLLATE \"C\" LIMIT $5"
                ),
                &[&user, &project, &kind.as_str(), &after, &(limit as i64 + 1)],
            )
            .await
            .map_err(backend)?;
        let items = rows.iter().map(record_meta).collect();
        Ok(super::page_from_fetched(items, limit, |m| m.id.clone()))
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
        let client = self.client().await?;
        if let Some(author) = only_author {
            let wrote = client
                .query_opt(queries::RECORD_AUTHOR, &[&user, &project, &kind.as_str(), &id])
                .await
                .map_err(backend)?
                .map(|row| row.get::<_, i64>(0));
            rules::writer_deletes_own(kind, id, wrote, author)?;
        }
        let changed = client
            .execute(
                "DELETE FROM records WHERE user_id = $1 AND project_id = $2 AND kind = $3 AND id = $4
                   AND ($5::text IS NULL OR hash = $5)",
                &[&user, &project, &kind.as_str(), &id, &if_hash],
            )
            .await
            .map_err(backend)?;
        if changed > 0 {
            return Ok(Deleted::Yes);
        }
        let exists: bool = client
            .query_one(queries::RECORD_EXISTS, &[&user, &project, &kind.as_str(), &id])
            .await
            .map_err(backend)?
            .get(0);
        Ok(if exists { Deleted::Changed } else { Deleted::NotFound })
    }

    async fn search(
        &self,
        user: i64,
        project: &str,
        query: &str,
        kind: Option<Kind>,
        limit: usize,
    ) -> StoreResult<Vec<SearchHit>> {
        let words = query_words(query).join(" ");
        if words.is_empty() {
            return Ok(Vec::new());
        }
        let client = self.client().await?;
        self.project_exists(&client, user, project).await?;
        let rows = client
            .query(
                // ts_headline is costly; PostgreSQL evaluates it after the sort and limit.
                "SELECT kind, id, title, ts_rank(search, q)::float8,
                    ts_headline('simple', search_text, q, 'StartSel=[, StopSel=], MaxWords=24, MinWords=8'),
                    updated_at, (SELECT name FROM users a WHERE a.id = coalesce(author_id, user_id))
                 FROM records, plainto_tsquery('simple', $3) q
                 WHERE user_id = $1 AND project_id = $2 AND search @@ q AND ($4 = '' OR kind = $4)
                 ORDER BY 4 DESC, id LIMIT $5",
                &[&user, &project, &words, &kind.map_or("", Kind::as_str), &(limit as i64)],
            )
            .await
            .map_err(backend)?;
        Ok(rows
            .iter()
            .map(|r| {
                let kind: String = r.get(0);
                SearchHit {
                    kind: Kind::parse(&kind).unwrap_or(Kind::Conversation),
                    id: r.get(1),
                    title: r.get(2),
                    score: r.get(3),
                    snippet: r.get(4),
                    updated_at: r.get(5),
                    author: r.get(6),
                }
            })
            .collect())
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
        let client = self.client().await?;
        client
            .execute(
                queries::SET_VECTOR_ROWS,
                &[&owner, &project, &kind.as_str(), &id, &hash, &rows],
            )
            .await
            .map_err(backend)?;
        Ok(())
    }

    async fn keyword_passages(
        &self,
        user: i64,
        project: &str,
        query: &str,
        kind: Option<Kind>,
        limit: usize,
    ) -> StoreResult<Vec<(String, f64)>> {
        // Words only (letters, digits, `_`), so nothing the user typed is tsquery syntax;
        // common words dropped unless nothing else is left, as the local index does.
        let mut words = query_words(query);
        if words.iter().any(|w| !zblade_index::fts::is_stopword(w)) {
            words.retain(|w| !zblade_index::fts::is_stopword(w));
        }
        if words.is_empty() {
            return Ok(Vec::new());
        }
        let client = self.client().await?;
        self.project_exists(&client, user, project).await?;
        let kind = kind.map_or("", Kind::as_str);
        // The query's lexemes, stemmed as the index is.
        let lexemes: Vec<String> = client
            .query(
                "SELECT DISTINCT lexeme FROM unnest(to_tsvector('english', $1))",
                &[&words.join(" ")],
            )
            .await
            .map_err(backend)?
            .iter()
            .map(|r| r.get(0))
            .collect();
        if lexemes.is_empty() {
            return Ok(Vec::new());
        }
        // The plan of local search (see SQLite's): passages holding every word that occurs,
        // then some of the rarer words, then any; each group ranked by BM25, which is computed
        // here from the project's own counts (PostgreSQL ranks by `ts_rank`, not BM25).
        let total: i64 = match self.passage_counts.fresh(user, project, "") {
            Some(total) => total,
            None => {
                let total = client
                    .query_one(queries::PASSAGE_COUNT, &[&user, &project])
                    .await
                    .map_err(backend)?
                    .get(0);
                self.passage_counts.remember(user, project, "", total);
                total
            }
        };
        // Each word's document frequency: common words' remembered, the others counted in one
        // round trip, each through the GIN index with the project's scope lexeme.
        let scope = scope_lexeme(user, project);
        let mut frequency: Vec<Option<i64>> = lexemes
            .iter()
            .map(|l| self.passage_counts.fresh(user, project, l))
            .collect();
        let unknown: Vec<&str> = lexemes
            .iter()
            .zip(&frequency)
            .filter(|(_, f)| f.is_none())
            .map(|(l, _)| l.as_str())
            .collect();
        if !unknown.is_empty() {
            let rows = client
                .query(
                    "SELECT l, (SELECT count(*) FROM passages
                                WHERE search @@ (quote_literal($1)::tsquery && quote_literal(l)::tsquery))
                     FROM unnest($2::text[]) l",
                    &[&scope, &unknown],
                )
                .await
                .map_err(backend)?;
            for row in rows {
                let (lexeme, df): (&str, i64) = (row.get(0), row.get(1));
                if df >= REMEMBERED_COUNT {
                    self.passage_counts.remember(user, project, lexeme, df);
                }
                if let Some(i) = lexemes.iter().position(|l| l == lexeme) {
                    frequency[i] = Some(df);
                }
            }
        }
        let frequency: Vec<i64> = frequency.into_iter().map(|f| f.unwrap_or(0)).collect();
        let cap = ((total as f64 * super::COMMON_TERM_SHARE) as i64).max(64);
        let present: Vec<&String> = lexemes
            .iter()
            .zip(&frequency)
            .filter(|(_, f)| **f > 0)
            .map(|(l, _)| l)
            .collect();
        if present.is_empty() {
            return Ok(Vec::new());
        }
        let rare: Vec<&String> = lexemes
            .iter()
            .zip(&frequency)
            .filter(|(_, f)| **f > 0 && **f < cap)
            .map(|(l, _)| l)
            .collect();
        let mut groups: Vec<(Vec<&String>, &str)> = vec![(present.clone(), " & ")];
        if present.len() > 1 {
            if !rare.is_empty() && rare.len() < present.len() {
                groups.push((rare, " | "));
            }
            groups.push((present.clone(), " | "));
        }
        let df: std::collections::HashMap<&str, i64> = lexemes
            .iter()
            .map(String::as_str)
            .zip(frequency.iter().copied())
            .collect();
        let mut top: Vec<(String, f64)> = Vec::new();
        for (group, joiner) in groups {
            if top.len() >= limit {
                break;
            }
            // Candidates by `ts_rank` (cheap to ask for), re-ranked by BM25. The scope lexeme
            // picks the project's rows in the GIN index; the owner and project are checked
            // again as a filter the planner cannot turn into a second index scan (`IS NOT
            // DISTINCT FROM` is not indexable: ANDing the project's 100,000 rows from the
            // key index cost more than the search).
            let rows = client
                .query(
                    "SELECT key, search::text FROM passages,
                         (SELECT quote_literal($7)::tsquery && w.q AS scoped, w.q
                          FROM (SELECT string_agg(quote_literal(l), $4)::tsquery AS q FROM unnest($3::text[]) l) w) q
                     WHERE search @@ q.scoped AND (user_id, project_id) IS NOT DISTINCT FROM ($1, $2)
                         AND ($5 = '' OR kind = $5)
                     ORDER BY ts_rank(search, q.q) DESC, seq LIMIT $6",
                    &[
                        &user,
                        &project,
                        &group.iter().map(|l| l.as_str()).collect::<Vec<_>>(),
                        &joiner,
                        &kind,
                        &((limit * 4).max(200) as i64),
                        &scope,
                    ],
                )
                .await
                .map_err(backend)?;
            let docs: Vec<(String, std::collections::HashMap<String, usize>, usize)> = rows
                .iter()
                .map(|r| {
                    let (counts, length) = lexeme_counts(r.get::<_, &str>(1));
                    (r.get(0), counts, length)
                })
                .collect();
            let mean = docs.iter().map(|d| d.2).sum::<usize>() as f64 / docs.len().max(1) as f64;
            let mut scored: Vec<(String, f64)> = docs
                .into_iter()
                .map(|(key, counts, length)| {
                    let score = lexemes
                        .iter()
                        .map(|l| bm25_term(counts.get(l).copied().unwrap_or(0), length, mean, total, df[l.as_str()]))
                        .sum();
                    (key, score)
                })
                .collect();
            // Stable: ties keep `ts_rank`'s order.
            scored.sort_by(|a, b| b.1.total_cmp(&a.1));
            for (key, score) in scored {
                if top.len() < limit && !top.iter().any(|(k, _)| *k == key) {
                    top.push((key, score));
                }
            }
        }
        Ok(top)
    }

    async fn passages(&self, user: i64, project: &str, keys: &[String]) -> StoreResult<Vec<Passage>> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT p.key, p.kind, r.id, p.message, r.title, p.label, p.text, p.time,
                    (SELECT name FROM users a WHERE a.id = coalesce(r.author_id, r.user_id))
                 FROM passages p JOIN records r ON r.seq = p.record_seq
                 WHERE p.user_id = $1 AND p.project_id = $2 AND p.key = ANY($3)",
                &[&user, &project, &keys],
            )
            .await
            .map_err(backend)?;
        let mut found: Vec<Passage> = rows
            .iter()
            .map(|r| Passage {
                key: r.get(0),
                kind: Kind::parse(r.get(1)).unwrap_or(Kind::Conversation),
                record: r.get(2),
                message: r.get(3),
                title: r.get(4),
                label: r.get(5),
                text: r.get(6),
                time: r.get(7),
                author: r.get(8),
            })
            .collect();
        let order = |key: &str| keys.iter().position(|k| k == key).unwrap_or(usize::MAX);
        found.sort_by_key(|p| order(&p.key));
        found.dedup_by(|a, b| a.key == b.key);
        Ok(found)
    }

    async fn passage_neighbours(
        &self,
        user: i64,
        project: &str,
        keys: &[String],
    ) -> StoreResult<std::collections::HashMap<String, Vec<String>>> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT p.key, n.key FROM passages p JOIN passages n
                   ON n.record_seq = p.record_seq AND n.position IN (p.position - 1, p.position + 1)
                 WHERE p.user_id = $1 AND p.project_id = $2 AND p.key = ANY($3) AND p.kind = 'conversation'
                 ORDER BY p.key, n.position",
                &[&user, &project, &keys],
            )
            .await
            .map_err(backend)?;
        let mut out: std::collections::HashMap<String, Vec<String>> = std::collections::HashMap::new();
        for row in rows {
            out.entry(row.get(0)).or_default().push(row.get(1));
        }
        Ok(out)
    }

    async fn embedding(&self, owner: i64, project: &str) -> StoreResult<Option<EmbeddingModel>> {
        let client = self.client().await?;
        let row = client
            .query_opt(queries::EMBEDDING_MODEL, &[&owner, &project])
            .await
            .map_err(backend)?;
        Ok(row.and_then(|r| {
            let (id, dims): (Option<String>, Option<i32>) = (r.get(0), r.get(1));
            Some(EmbeddingModel {
                id: id?,
                dims: dims?.max(0) as u32,
            })
        }))
    }

    async fn set_embedding(&self, owner: i64, project: &str, model: &EmbeddingModel) -> StoreResult<EmbeddingModel> {
        let client = self.client().await?;
        let dims = model.dims as i32;
        let row = client
            .query_opt(
                "WITH set AS (
                    UPDATE projects SET embedding_model = $3, embedding_dims = $4
                    WHERE user_id = $1 AND id = $2 AND embedding_model IS NULL
                    RETURNING embedding_model, embedding_dims)
                 SELECT embedding_model, embedding_dims FROM set
                 UNION ALL
                 SELECT embedding_model, embedding_dims FROM projects
                 WHERE user_id = $1 AND id = $2 AND embedding_model IS NOT NULL",
                &[&owner, &project, &model.id, &dims],
            )
            .await
            .map_err(backend)?
            .ok_or_else(|| StoreError::NotFound(format!("no project {project}")))?;
        Ok(EmbeddingModel {
            id: row.get(0),
            dims: row.get::<_, i32>(1).max(0) as u32,
        })
    }

    async fn unindexed_records(&self, after: i64, limit: usize) -> StoreResult<Vec<Unindexed>> {
        let client = self.client().await?;
        let rows = client
            .query(queries::UNINDEXED_RECORDS, &[&after, &(limit as i64)])
            .await
            .map_err(backend)?;
        Ok(rows
            .iter()
            .map(|r| Unindexed {
                seq: r.get(0),
                owner: r.get(1),
                project: r.get(2),
                kind: Kind::parse(r.get(3)).unwrap_or(Kind::Conversation),
                id: r.get(4),
                body: r.get(5),
            })
            .collect())
    }

    async fn put_passages(&self, record: &Unindexed, passages: &[NewPassage]) -> StoreResult<()> {
        let client = self.client().await?;
        let [keys, messages, labels, times, texts] = passage_arrays(passages);
        let positions: Vec<i64> = passages.iter().map(|p| p.position).collect();
        client
            .execute(
                &format!(
                    "WITH rec AS (SELECT seq FROM records WHERE seq = $1), {} SELECT 1",
                    passages_cte(2)
                ),
                &[
                    &record.seq,
                    &keys,
                    &messages,
                    &positions,
                    &labels,
                    &times,
                    &texts,
                    &record.owner,
                    &record.project,
                    &record.kind.as_str(),
                ],
            )
            .await
            .map_err(backend)?;
        Ok(())
    }

    async fn put_metadata(&self, user: i64, project: &str, m: &MetadataRecord) -> StoreResult<PutStatus> {
        let client = self.client().await?;
        let tags = tags_to_json(&m.tags);
        let row = client
            .query_opt(
                "INSERT INTO metadata (user_id, project_id, kind, id, title, tags, message_count, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                 ON CONFLICT (user_id, project_id, kind, id) DO UPDATE SET
                     title = EXCLUDED.title, tags = EXCLUDED.tags,
                     message_count = EXCLUDED.message_count, updated_at = EXCLUDED.updated_at
                 WHERE (metadata.title, metadata.tags, metadata.message_count, metadata.updated_at)
                     IS DISTINCT FROM (EXCLUDED.title, EXCLUDED.tags, EXCLUDED.message_count, EXCLUDED.updated_at)
                 RETURNING (xmax = 0)",
                &[
                    &user,
                    &project,
                    &m.kind,
                    &m.id,
                    &m.title,
                    &tags,
                    &m.message_count,
                    &m.updated_at,
                ],
            )
            .await
            .map_err(no_project(project))?;
        Ok(match row {
            Some(row) if row.get::<_, bool>(0) => PutStatus::Created,
            Some(_) => PutStatus::Updated,
            None => PutStatus::Unchanged,
        })
    }

    async fn list_metadata(
        &self,
        user: i64,
        project: &str,
        after: &str,
        limit: usize,
    ) -> StoreResult<Page<MetadataRecord>> {
        let client = self.client().await?;
        self.project_exists(&client, user, project).await?;
        let rows = client
            .query(
                "SELECT kind, id, title, tags, message_count, updated_at FROM metadata
                 WHERE user_id = $1 AND project_id = $2 AND id COLLATE \"C\" > $3
                 ORDER BY id COLLATE \"C\", kind LIMIT $4",
                &[&user, &project, &after, &(limit as i64 + 1)],
            )
            .await
            .map_err(backend)?;
        let items = rows.iter().map(metadata_row).collect();
        Ok(super::page_from_fetched(items, limit, |m| m.id.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsvector_text_gives_term_frequencies_and_length() {
        let (counts, total) = lexeme_counts("'gateway':3,9A 'it''s':1 'retri':5 'x' '~7~proj_a'");
        assert!(!counts.contains_key("~7~proj_a"), "the project's scope is not a word");
        assert_eq!(counts["gateway"], 2);
        assert_eq!(counts["it's"], 1);
        assert_eq!(counts["retri"], 1);
        assert_eq!(counts["x"], 1);
        assert_eq!(total, 5);
        assert!(bm25_term(2, 5, 5.0, 100, 3) > bm25_term(1, 5, 5.0, 100, 3));
        assert!(
            bm25_term(1, 5, 5.0, 100, 3) > bm25_term(1, 5, 5.0, 100, 40),
            "rarer weighs more"
        );
        assert_eq!(bm25_term(0, 5, 5.0, 100, 3), 0.0);
    }
}

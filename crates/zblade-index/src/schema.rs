//! The index schema (RFC-002 "Local Index" plus messages and FTS tables) and its migrations.
//!
//! Migrations are numbered by position: `MIGRATIONS[i]` takes the database from `PRAGMA
//! user_version = i` to `i + 1`. Released migrations are never edited; a change is a new entry.

/// Every migration, oldest first.
pub const MIGRATIONS: &[&str] = &[V1, V2, V3, V4, V5, V6, V7, V8];

/// The schema version this build creates and expects.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Version 1: the RFC-002 tables, with these additions:
/// - `messages` + `messages_fts` (RFC-002 indexes moments only; we search every turn),
/// - `conversations_fts` over title and tags,
/// - `artifact_sha256` columns, so `fsck` can tell an artifact edited behind the index's back,
/// - `moments.conversation_id` may be NULL (a moment need not come from a conversation) and
///   `moments.inline` marks moments stored inside a conversation artifact,
/// - `code_references.ref_key`, a stable name of a reference that survives a rebuild, and its
///   `anchor` and `commit_id` (from the artifact), so references are checked without reading
///   every artifact,
/// - `reference_status`: where each reference is now (the live location).
///
/// The FTS tables are external-content tables kept in step by the catalog code, not by
/// triggers: a trigger runs inside a statement savepoint, which makes FTS5 flush its pending
/// terms on every row and halves insert throughput (measured: 3,570 vs 8,240 rows/s).
const V1: &str = r#"
CREATE TABLE conversations (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL,
    title TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    message_count INTEGER DEFAULT 0,
    tags TEXT,
    artifact_path TEXT NOT NULL,
    artifact_sha256 TEXT NOT NULL
);
CREATE INDEX idx_conv_project ON conversations(project_id);
CREATE INDEX idx_conv_created ON conversations(created_at DESC);
CREATE INDEX idx_conv_updated ON conversations(updated_at DESC);

CREATE VIRTUAL TABLE conversations_fts USING fts5(
    title, tags, content=conversations, content_rowid=rowid, tokenize='porter unicode61'
);

CREATE TABLE messages (
    pk INTEGER PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    timestamp TEXT NOT NULL,
    UNIQUE (conversation_id, id)
);

CREATE VIRTUAL TABLE messages_fts USING fts5(
    content, content=messages, content_rowid=pk, tokenize='porter unicode61'
);

CREATE TABLE moments (
    id TEXT PRIMARY KEY,
    conversation_id TEXT,
    message_id TEXT,
    type TEXT NOT NULL,
    content TEXT NOT NULL,
    context TEXT,
    tags TEXT,
    created_at TEXT NOT NULL,
    relevance_score REAL DEFAULT 0.5,
    inline INTEGER NOT NULL DEFAULT 0,
    artifact_path TEXT NOT NULL,
    artifact_sha256 TEXT NOT NULL
);
CREATE INDEX idx_moment_conv ON moments(conversation_id);
CREATE INDEX idx_moment_type ON moments(type);
CREATE INDEX idx_moment_score ON moments(relevance_score DESC);

CREATE VIRTUAL TABLE moments_fts USING fts5(
    content, context, tags, content=moments, content_rowid=rowid, tokenize='porter unicode61'
);

CREATE TABLE code_references (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    ref_key TEXT NOT NULL UNIQUE,
    conversation_id TEXT,
    message_id TEXT,
    moment_id TEXT,
    file_path TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    context TEXT,
    git_hash TEXT,
    commit_id TEXT,
    anchor TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX idx_code_ref_file ON code_references(file_path);
CREATE INDEX idx_code_ref_conv ON code_references(conversation_id);
CREATE INDEX idx_code_ref_moment ON code_references(moment_id);

-- The live location of each reference, kept current by the watcher and `zblade refs check`.
-- The artifact keeps what was captured; this table says where those lines are now.
CREATE TABLE reference_status (
    ref_key TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    file_path TEXT,
    start_line INTEGER,
    end_line INTEGER,
    similarity REAL NOT NULL,
    current_blob TEXT,
    drift_json TEXT,
    reason TEXT,
    checked_at TEXT NOT NULL
);
CREATE INDEX idx_ref_status_file ON reference_status(file_path);
CREATE INDEX idx_ref_status_status ON reference_status(status);

-- Chunks of messages and moments for semantic search: `key` is what a chunk belongs to
-- (`conv_…/msg_…` or `moment_…`), `cid` the sha256 of its text. Vectors live in LanceDB,
-- one row per CID, so identical text is embedded once.
CREATE TABLE chunks (
    key TEXT NOT NULL,
    seq INTEGER NOT NULL,
    cid TEXT NOT NULL,
    kind TEXT NOT NULL,
    PRIMARY KEY (key, seq)
);
CREATE INDEX idx_chunks_cid ON chunks(cid);

CREATE TABLE file_references (
    file_path TEXT PRIMARY KEY,
    reference_count INTEGER DEFAULT 0,
    first_referenced TIMESTAMP,
    last_referenced TIMESTAMP
);
"#;

/// Version 2: project files for search. Code chunks are references, not copies: a chunk row
/// holds a path, a line range and the CID of the text, and `code_fts` is a contentless FTS5
/// table (`content=''`), so the index can find a chunk by its words without storing them. The
/// text is read from the working tree and checked against the CID when shown.
/// `code_files` remembers size, modification time and sha256 of each indexed file, so an
/// unchanged file is skipped without being read.
const V2: &str = r#"
CREATE TABLE code_files (
    path TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    indexed_at TEXT NOT NULL,
    modified_at TEXT NOT NULL
);

CREATE TABLE code_chunks (
    pk INTEGER PRIMARY KEY,
    path TEXT NOT NULL REFERENCES code_files(path) ON DELETE CASCADE,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    cid TEXT NOT NULL
);
CREATE INDEX idx_code_chunks_path ON code_chunks(path);
CREATE INDEX idx_code_chunks_cid ON code_chunks(cid);

CREATE VIRTUAL TABLE code_fts USING fts5(
    text, content='', contentless_delete=1, tokenize='porter unicode61'
);
"#;

/// Version 3: the tool an imported conversation came from (`claude-code`, `codex`, ...; NULL
/// for conversations added directly), for `zblade list conversations --source`. Existing rows
/// get NULL; `zblade reindex` fills it from the artifacts' `metadata.source.tool`.
const V3: &str = r#"
ALTER TABLE conversations ADD COLUMN source TEXT;
CREATE INDEX idx_conv_source ON conversations(source);
"#;

/// Version 4: code chunks cut along the syntax (functions, types, impls). A chunk row names
/// the symbols it holds (`GitignoreBuilder::add_line`) and the CID of what is embedded for it
/// (its symbol path and file with its lines: `vector_cid`, the same as `cid` for a line
/// window); `code_fts` weighs symbol and signature apart from the body. Chunks cut the old way
/// are dropped: the next `zblade index` cuts every file again.
const V4: &str = r#"
DROP TABLE code_fts;
DELETE FROM code_chunks;
DELETE FROM code_files;
ALTER TABLE code_chunks ADD COLUMN symbol TEXT;
ALTER TABLE code_chunks ADD COLUMN vector_cid TEXT NOT NULL DEFAULT '';
CREATE INDEX idx_code_chunks_vector_cid ON code_chunks(vector_cid);
CREATE VIRTUAL TABLE code_fts USING fts5(
    symbol, signature, text, content='', contentless_delete=1, tokenize='porter unicode61'
);
"#;

/// Version 5: the conversation graph. A fork shares its parent's first `shared_count`
/// messages (`shared_from`), which are indexed once, under the parent; `forked_from` and
/// `merges` answer lineage questions without reading artifacts; `idx_messages_role_time`
/// lists the prompts a user typed, newest first (`zblade history`).
const V5: &str = r#"
ALTER TABLE conversations ADD COLUMN shared_from TEXT;
ALTER TABLE conversations ADD COLUMN shared_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE conversations ADD COLUMN forked_from TEXT;
ALTER TABLE conversations ADD COLUMN forked_after INTEGER;
CREATE INDEX idx_conv_shared_from ON conversations(shared_from);
CREATE INDEX idx_conv_forked_from ON conversations(forked_from);
CREATE TABLE merges (
    conversation_id TEXT NOT NULL,
    source_id TEXT NOT NULL,
    messages INTEGER NOT NULL,
    merged_at TEXT NOT NULL
);
CREATE INDEX idx_merges_conv ON merges(conversation_id);
CREATE INDEX idx_merges_source ON merges(source_id);
CREATE INDEX idx_messages_role_time ON messages(role, timestamp DESC);
"#;

/// Version 6: the repository's history as memory (docs/DECISIONS.md). `commits` holds each
/// commit of HEAD's first-parent history with its message (redacted) and the paths it changed,
/// searched through `commits_fts`; `pk` numbers commits in the order they were read, and line
/// attribution names commits by it. `line_owners` is the blame of every file at the indexed
/// HEAD, as runs (see `zblade_refs::attribution::encode`); `commit_overwrites` says, per earlier
/// commit, which later commit rewrote or deleted how many of its lines in which file — so a
/// commit's status is a sum, not a blame. `history_state` remembers the HEAD that was read.
/// Unlike the other tables these are not rebuilt from artifacts: the repository is their source.
/// `decision_states` indexes superseded and rejected moments and conversations.
const V6: &str = r#"
CREATE TABLE commits (
    pk INTEGER PRIMARY KEY,
    sha TEXT NOT NULL UNIQUE,
    parents TEXT NOT NULL,
    author TEXT NOT NULL,
    committed_at TEXT NOT NULL,
    subject TEXT NOT NULL,
    body TEXT NOT NULL,
    paths TEXT NOT NULL,
    files_changed INTEGER NOT NULL,
    lines_added INTEGER NOT NULL,
    lines_removed INTEGER NOT NULL,
    written INTEGER NOT NULL
);
CREATE INDEX idx_commits_time ON commits(committed_at DESC);
CREATE VIRTUAL TABLE commits_fts USING fts5(
    subject, body, paths, content=commits, content_rowid=pk, tokenize='porter unicode61'
);
CREATE TABLE commit_overwrites (
    commit_pk INTEGER NOT NULL,
    by_pk INTEGER NOT NULL,
    path TEXT NOT NULL,
    rewritten INTEGER NOT NULL,
    deleted INTEGER NOT NULL,
    PRIMARY KEY (commit_pk, by_pk, path)
);
CREATE INDEX idx_overwrites_by ON commit_overwrites(by_pk);
CREATE TABLE line_owners (
    path TEXT PRIMARY KEY,
    runs BLOB NOT NULL
);
CREATE TABLE history_state (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
-- Decisions that no longer stand: a moment or conversation superseded by a later one, or
-- rejected with a reason. The artifacts hold them (`decision` on a moment, `metadata.decision`
-- on a conversation); this table is their index, rebuilt with the rest.
CREATE TABLE decision_states (
    id TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    by_id TEXT,
    reason TEXT,
    decided_at TEXT NOT NULL,
    automatic INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX idx_decision_by ON decision_states(by_id);
"#;

/// Version 7: code chunks pack small neighbouring items up to 1,000 characters instead of the
/// whole budget (`zblade_syntax`'s `PACK_CHARS`: the embedding models read about that much), so
/// chunks cut before are dropped and the next `zblade index` cuts every file again. A chunk
/// whose text did not change keeps its vector.
const V7: &str = r#"
DROP TABLE code_fts;
DELETE FROM code_chunks;
DELETE FROM code_files;
CREATE VIRTUAL TABLE code_fts USING fts5(
    symbol, signature, text, content='', contentless_delete=1, tokenize='porter unicode61'
);
"#;

/// Version 8: the chunks of a text are found by its CID from the index alone. Every semantic
/// search asks which messages, moments and chunks own each of its ~55 nearest CIDs; with the
/// key in the index beside the CID, SQLite answers without reading the table's rows (at a
/// million chunks a search's 55 CIDs took 1.5 → 1.1 ms at p50; the index is 12 MB larger than
/// the one it replaces). Building it is a one-off on the first open after an upgrade: at a
/// million chunks the first `zblade context` took 3.4–4.4 s instead of about 0.5.
const V8: &str = r#"
CREATE INDEX idx_chunks_cid_key ON chunks(cid, key);
DROP INDEX idx_chunks_cid;
"#;

/// A database at `version` of the schema, as a zblade of that version left it (tests of the
/// migrations after it).
#[cfg(test)]
pub(crate) fn database_at_version(path: &std::path::Path, version: usize) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(path).unwrap();
    for sql in &MIGRATIONS[..version] {
        conn.execute_batch(sql).unwrap();
    }
    conn.pragma_update(None, "user_version", version as i64).unwrap();
    conn
}

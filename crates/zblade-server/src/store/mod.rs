//! Where the server keeps its data: one [`Store`] trait, two implementations — SQLite (the
//! embedded default, a file path) and PostgreSQL (a `postgres://` URL, for many users). Both
//! run the same numbered migrations ([`MIGRATIONS`], one SQL text per dialect) and every query
//! that touches user data takes the user's id, so scoping is not left to the caller.

mod postgres;
mod queries;
mod rules;
mod sqlite;

use std::future::Future;

use serde::Serialize;

pub use postgres::PostgresStore;
pub use sqlite::SqliteStore;

/// A failure of the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The thing named does not exist (for this user).
    #[error("{0}")]
    NotFound(String),
    /// The request conflicts with what is stored (a name taken).
    #[error("{0}")]
    Conflict(String),
    /// The caller's role in the project does not allow it.
    #[error("{0}")]
    Forbidden(String),
    /// The database failed or could not be reached.
    #[error("database: {0}")]
    Backend(String),
}

/// Store results.
pub type StoreResult<T> = Result<T, StoreError>;

pub use zblade_core::wire::{
    EmbeddingModel, Invitation, Kind, Member, Page, ProjectEntry as Project, PutStatus, RecordMeta, Role, SearchHit,
};

/// An account.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct User {
    /// Database id (never shown to other users).
    pub id: i64,
    /// Unique name.
    pub name: String,
}

/// An account with its token counts, for `user list`.
#[derive(Debug, Clone, Serialize)]
pub struct UserSummary {
    /// Name.
    pub name: String,
    /// When it was added (RFC 3339).
    pub created_at: String,
    /// Tokens that still work.
    pub active_tokens: i64,
    /// Tokens revoked.
    pub revoked_tokens: i64,
    /// When the user was disabled (their tokens stop working), if they are.
    pub disabled_at: Option<String>,
}

/// A token as `token list` shows it: never the secret, never the hash.
#[derive(Debug, Clone, Serialize)]
pub struct TokenSummary {
    /// `tok_…`.
    pub id: String,
    /// Whose it is.
    pub user: String,
    /// When it was made (RFC 3339).
    pub created_at: String,
    /// When it stops working, if it does.
    pub expires_at: Option<String>,
    /// When it was revoked, if it was.
    pub revoked_at: Option<String>,
}

/// A record as the API stores it: the artifact's bytes plus what lists and search need.
#[derive(Debug, Clone)]
pub struct NewRecord {
    /// Conversation or moment.
    pub kind: Kind,
    /// Its id.
    pub id: String,
    /// sha256 (hex) of `body`'s bytes.
    pub hash: String,
    /// Title (conversations) or the first line of the content (moments).
    pub title: String,
    /// Tags.
    pub tags: Vec<String>,
    /// When it last changed (RFC 3339), from the artifact.
    pub updated_at: String,
    /// The artifact, byte for byte as uploaded.
    pub body: String,
    /// The text keyword search reads.
    pub search_text: String,
    /// Its messages (a moment: itself) as search ranks them.
    pub passages: Vec<NewPassage>,
}

/// A message of a conversation, or a moment, as the server's passage search keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct NewPassage {
    /// `CONVERSATION/MESSAGE`, or the moment's id: the key local search uses too.
    pub key: String,
    /// The message's id; empty for a moment.
    pub message: String,
    /// Its place in the conversation (0 first): neighbours are ±1.
    pub position: i64,
    /// The message's role or the moment's type.
    pub label: String,
    /// When (RFC 3339), or empty.
    pub time: String,
    /// The text searched and returned.
    pub text: String,
}

/// A passage as search returns it.
#[derive(Debug, Clone, PartialEq)]
pub struct Passage {
    /// Its key (see [`NewPassage::key`]).
    pub key: String,
    /// The record's kind.
    pub kind: Kind,
    /// The record's id.
    pub record: String,
    /// The message's id; empty for a moment.
    pub message: String,
    /// The record's title.
    pub title: String,
    /// Role or moment type.
    pub label: String,
    /// The text.
    pub text: String,
    /// When (RFC 3339), or empty.
    pub time: String,
    /// Who wrote the record.
    pub author: Option<String>,
}

/// A record stored before passages were kept (see `crate::backfill_passages`).
#[derive(Debug, Clone)]
pub struct Unindexed {
    /// Its row.
    pub seq: i64,
    /// The project's creator.
    pub owner: i64,
    /// The project.
    pub project: String,
    /// Its kind.
    pub kind: Kind,
    /// Its id.
    pub id: String,
    /// The artifact.
    pub body: String,
}

/// How long a passage count is reused: BM25's document count and frequencies and the "common
/// word" cap need them, and counting 100,000 rows on every search costs more than the rest of
/// the keyword search. A count a few seconds old changes a score by a hair.
const PASSAGE_COUNT_TTL: std::time::Duration = std::time::Duration::from_secs(30);

/// Passage counts per project (creator, project) and word: the passages holding a word, or
/// all of them for the word `""`. Each read at most once per [`PASSAGE_COUNT_TTL`].
#[derive(Default)]
pub(crate) struct PassageCounts(std::sync::Mutex<std::collections::HashMap<CountKey, (std::time::Instant, i64)>>);

/// Creator, project, word.
type CountKey = (i64, String, String);

impl PassageCounts {
    /// The count read within the last [`PASSAGE_COUNT_TTL`], if any.
    pub(crate) fn fresh(&self, owner: i64, project: &str, word: &str) -> Option<i64> {
        let counts = self.0.lock().unwrap_or_else(|e| e.into_inner());
        counts
            .get(&(owner, project.to_string(), word.to_string()))
            .filter(|(at, _)| at.elapsed() < PASSAGE_COUNT_TTL)
            .map(|(_, n)| *n)
    }

    /// Remembers a count just read.
    pub(crate) fn remember(&self, owner: i64, project: &str, word: &str, n: i64) {
        let mut counts = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if counts.len() > 100_000 {
            counts.clear();
        }
        counts.insert(
            (owner, project.to_string(), word.to_string()),
            (std::time::Instant::now(), n),
        );
    }
}

/// A word found in more than this share of a project's passages is "common" to keyword search
/// (the local index's constant: the server ranks as local search does).
pub(crate) const COMMON_TERM_SHARE: f64 = 0.05;

/// What a user may do in a project, found by [`Store::access`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    /// The project's creator: the records live under their id.
    pub owner: i64,
    /// The caller's role (`Owner` for the creator).
    pub role: Role,
}

/// A record with its content.
#[derive(Debug, Clone)]
pub struct Record {
    /// Everything but the content.
    pub meta: RecordMeta,
    /// The artifact's bytes.
    pub body: String,
    /// Vectors the server holds for it (0: none yet, so storing some deletes nothing).
    pub vector_rows: i64,
}

/// The result of a PUT.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PutOutcome {
    /// What happened.
    pub status: PutStatus,
    /// The version now stored.
    pub version: i64,
}

/// A page from `limit + 1` fetched items: the extra one only says that more exist.
pub(crate) fn page_from_fetched<T>(mut items: Vec<T>, limit: usize, id: impl Fn(&T) -> String) -> Page<T> {
    let next = if items.len() > limit {
        items.truncate(limit);
        items.last().map(id)
    } else {
        None
    };
    Page { items, next }
}

/// What a (conditional) delete did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deleted {
    /// The record is gone.
    Yes,
    /// There was no such record.
    NotFound,
    /// The record's hash was not the one asked for; it was kept.
    Changed,
}

/// A metadata-only record (local mode with `sync_metadata` on): no content at all.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetadataRecord {
    /// `conversation` or `moment`.
    #[serde(default)]
    pub kind: String,
    /// Its id (from the URL).
    #[serde(default)]
    pub id: String,
    /// Title.
    pub title: String,
    /// Tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Messages in the conversation.
    #[serde(default)]
    pub message_count: i64,
    /// When it last changed (RFC 3339).
    #[serde(default)]
    pub updated_at: String,
}

/// The numbered schema migrations, as (version, SQLite text, PostgreSQL text). Both dialects
/// describe the same tables; the tests run the same story against each.
pub const MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, sqlite::SCHEMA_V1, postgres::SCHEMA_V1),
    (2, SCHEMA_V2, SCHEMA_V2),
    // SQLite's keyword index learns whose each record is (PostgreSQL filters by owner first already).
    (3, sqlite::SCHEMA_V3, "SELECT 1;"),
    (4, SCHEMA_V4, SCHEMA_V4),
    (5, sqlite::SCHEMA_V5, postgres::SCHEMA_V5),
    // PostgreSQL's passage vectors carry their project (SQLite's FTS5 rows have since 5).
    (6, "SELECT 1;", postgres::SCHEMA_V6),
];

/// Version 4, the same in both dialects: team memory. A project's members other than its
/// creator (who is its owner by being in `projects`), with their roles and whether they
/// accepted; and who wrote each record (NULL: the creator, for records from before).
const SCHEMA_V4: &str = "
CREATE TABLE members (
    owner_id BIGINT NOT NULL,
    project_id TEXT NOT NULL,
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    role TEXT NOT NULL,
    invited_by BIGINT NOT NULL,
    invited_at TEXT NOT NULL,
    accepted_at TEXT,
    PRIMARY KEY (owner_id, project_id, user_id),
    FOREIGN KEY (owner_id, project_id) REFERENCES projects(user_id, id) ON DELETE CASCADE
);
CREATE INDEX members_of_user ON members (user_id, project_id);
ALTER TABLE records ADD COLUMN author_id BIGINT;
";

/// Version 2, the same in both dialects: tokens that expire and users that can be disabled.
const SCHEMA_V2: &str = "
ALTER TABLE tokens ADD COLUMN expires_at TEXT;
ALTER TABLE users ADD COLUMN disabled_at TEXT;
";

/// The server's storage. Every method that reads or writes user data takes the user's id and
/// touches only that user's rows.
pub trait Store: Send + Sync + 'static {
    /// `sqlite` or `postgresql`.
    fn backend(&self) -> &'static str;

    /// Applies the migrations not applied yet; returns how many ran.
    fn migrate(&self) -> impl Future<Output = StoreResult<usize>> + Send;

    /// Adds a user (the name must be new).
    fn add_user(&self, name: &str) -> impl Future<Output = StoreResult<User>> + Send;
    /// All users with their token counts.
    fn list_users(&self) -> impl Future<Output = StoreResult<Vec<UserSummary>>> + Send;
    /// Records a new token (only its hash) for the named user, valid until `expires_at`
    /// (RFC 3339, UTC) when given.
    fn add_token(
        &self,
        user: &str,
        token_id: &str,
        hash: &str,
        expires_at: Option<&str>,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// Revokes a token by its id; false when there is no such active token.
    fn revoke_token(&self, token_id: &str) -> impl Future<Output = StoreResult<bool>> + Send;
    /// Tokens, of one user or of all, newest first.
    fn list_tokens(&self, user: Option<&str>) -> impl Future<Output = StoreResult<Vec<TokenSummary>>> + Send;
    /// Disables (or enables again) a user: a disabled user's tokens are refused. False when
    /// there is no such user.
    fn set_user_disabled(&self, name: &str, disabled: bool) -> impl Future<Output = StoreResult<bool>> + Send;
    /// The user a token hash belongs to, if the token exists, is not revoked or expired, and
    /// its user is not disabled.
    fn user_for_token(&self, hash: &str) -> impl Future<Output = StoreResult<Option<User>>> + Send;

    /// What `user` may do in `project`: their own project, else one they accepted an invitation
    /// to; `None` when neither (they see nothing of it). Two creators' projects with the same
    /// id both shared with the user is a conflict the user must resolve by leaving one.
    fn access(&self, user: i64, project: &str) -> impl Future<Output = StoreResult<Option<Access>>> + Send;
    /// Invites the user named `member` to the project of `owner` with `role`, or changes their
    /// role: `Created` for a new invitation, `Updated` for a new role, `Unchanged` otherwise.
    /// The creator's own role cannot change (a conflict).
    fn put_member(
        &self,
        owner: i64,
        project: &str,
        member: &str,
        role: Role,
        invited_by: i64,
    ) -> impl Future<Output = StoreResult<PutStatus>> + Send;
    /// The project's members, the creator first (as owner), then by name.
    fn list_members(&self, owner: i64, project: &str) -> impl Future<Output = StoreResult<Vec<Member>>> + Send;
    /// Removes a member (or an invitation); false when they were neither. The creator cannot be
    /// removed (a conflict).
    fn remove_member(&self, owner: i64, project: &str, member: &str) -> impl Future<Output = StoreResult<bool>> + Send;
    /// The invitations `user` has not accepted yet.
    fn invitations(&self, user: i64) -> impl Future<Output = StoreResult<Vec<Invitation>>> + Send;
    /// Accepts the invitation to `owner`'s `project`; false when there is none.
    fn accept_invitation(
        &self,
        user: i64,
        owner: &str,
        project: &str,
    ) -> impl Future<Output = StoreResult<bool>> + Send;
    /// Declines (deletes) the invitation to `owner`'s `project`; false when there is none.
    fn decline_invitation(
        &self,
        user: i64,
        owner: &str,
        project: &str,
    ) -> impl Future<Output = StoreResult<bool>> + Send;
    /// Deletes every record `author` wrote in the project; which.
    fn remove_contributions(
        &self,
        owner: i64,
        project: &str,
        author: &str,
    ) -> impl Future<Output = StoreResult<Vec<(Kind, String)>>> + Send;

    /// Creates the project, or renames it; true when it was created.
    fn put_project(&self, user: i64, id: &str, name: &str) -> impl Future<Output = StoreResult<bool>> + Send;
    /// The user's projects with their counts.
    fn list_projects(&self, user: i64) -> impl Future<Output = StoreResult<Vec<Project>>> + Send;
    /// One project.
    fn get_project(&self, user: i64, id: &str) -> impl Future<Output = StoreResult<Option<Project>>> + Send;
    /// Deletes a project and everything in it; false when there was none.
    fn delete_project(&self, user: i64, id: &str) -> impl Future<Output = StoreResult<bool>> + Send;

    /// Stores a record written by `author`: a replay of the same bytes changes nothing, other
    /// bytes make a new version. The project must exist. With `own_only` (a writer), a record
    /// another member wrote is refused (`Forbidden`).
    fn put_record(
        &self,
        user: i64,
        project: &str,
        record: &NewRecord,
        author: i64,
        own_only: bool,
    ) -> impl Future<Output = StoreResult<PutOutcome>> + Send;
    /// One record with its content.
    fn get_record(
        &self,
        user: i64,
        project: &str,
        kind: Kind,
        id: &str,
    ) -> impl Future<Output = StoreResult<Option<Record>>> + Send;
    /// A page of records of one kind, ids after `after`, at most `limit`.
    fn list_records(
        &self,
        user: i64,
        project: &str,
        kind: Kind,
        after: &str,
        limit: usize,
    ) -> impl Future<Output = StoreResult<Page<RecordMeta>>> + Send;
    /// Deletes a record; with `if_hash`, only while its bytes still hash to that (a version
    /// another device wrote since is kept); with `only_author`, only a record that user wrote
    /// (another's is `Forbidden`).
    fn delete_record(
        &self,
        user: i64,
        project: &str,
        kind: Kind,
        id: &str,
        if_hash: Option<&str>,
        only_author: Option<i64>,
    ) -> impl Future<Output = StoreResult<Deleted>> + Send;
    /// Keyword search over the user's records in a project, best first.
    fn search(
        &self,
        user: i64,
        project: &str,
        query: &str,
        kind: Option<Kind>,
        limit: usize,
    ) -> impl Future<Output = StoreResult<Vec<SearchHit>>> + Send;

    /// Records how many vectors the record holds, while it is still the version `hash`.
    fn set_vector_rows(
        &self,
        owner: i64,
        project: &str,
        kind: Kind,
        id: &str,
        hash: &str,
        rows: i64,
    ) -> impl Future<Output = StoreResult<()>> + Send;
    /// Keyword search over the passages (messages and moments) of `owner`'s project, as
    /// (key, score) best first: the keyword half of hybrid search.
    fn keyword_passages(
        &self,
        owner: i64,
        project: &str,
        query: &str,
        kind: Option<Kind>,
        limit: usize,
    ) -> impl Future<Output = StoreResult<Vec<(String, f64)>>> + Send;
    /// The passages with these keys, in the order given (missing ones left out).
    fn passages(
        &self,
        owner: i64,
        project: &str,
        keys: &[String],
    ) -> impl Future<Output = StoreResult<Vec<Passage>>> + Send;
    /// For each message key, the keys of the messages just before and after it.
    fn passage_neighbours(
        &self,
        owner: i64,
        project: &str,
        keys: &[String],
    ) -> impl Future<Output = StoreResult<std::collections::HashMap<String, Vec<String>>>> + Send;
    /// The project's embedding model, if it has one (a search asks this, not the whole
    /// project row with its counts).
    fn embedding(&self, owner: i64, project: &str) -> impl Future<Output = StoreResult<Option<EmbeddingModel>>> + Send;
    /// Records `model` as the project's embedding model unless it has one; returns the one
    /// it has now.
    fn set_embedding(
        &self,
        owner: i64,
        project: &str,
        model: &EmbeddingModel,
    ) -> impl Future<Output = StoreResult<EmbeddingModel>> + Send;
    /// Records after row `after` that have no passages yet (stored before version 5), oldest first.
    fn unindexed_records(&self, after: i64, limit: usize) -> impl Future<Output = StoreResult<Vec<Unindexed>>> + Send;
    /// Stores the passages of a record found by [`Store::unindexed_records`].
    fn put_passages(&self, record: &Unindexed, passages: &[NewPassage])
    -> impl Future<Output = StoreResult<()>> + Send;

    /// Stores a metadata-only record; the project must exist.
    fn put_metadata(
        &self,
        user: i64,
        project: &str,
        record: &MetadataRecord,
    ) -> impl Future<Output = StoreResult<PutStatus>> + Send;
    /// A page of metadata-only records.
    fn list_metadata(
        &self,
        user: i64,
        project: &str,
        after: &str,
        limit: usize,
    ) -> impl Future<Output = StoreResult<Page<MetadataRecord>>> + Send;
}

/// [`Store::access`] from the rows both backends find: (owner id, role) of the caller's own
/// project and of the accepted memberships with that project id. Their own project wins.
pub(crate) fn access_from(user: i64, project: &str, rows: Vec<(i64, String)>) -> StoreResult<Option<Access>> {
    if rows.iter().any(|(owner, _)| *owner == user) {
        return Ok(Some(Access {
            owner: user,
            role: Role::Owner,
        }));
    }
    match rows.as_slice() {
        [] => Ok(None),
        [(owner, role)] => Ok(Some(Access {
            owner: *owner,
            role: Role::parse(role).unwrap_or(Role::Reader),
        })),
        _ => Err(StoreError::Conflict(format!(
            "several users' projects with the id {project} are shared with you; leave all but one"
        ))),
    }
}

/// Turns words into a query both backends read the same way: each word must occur (AND),
/// matched as a whole token or prefix-free. Characters that are query syntax are dropped.
pub(crate) fn query_words(query: &str) -> Vec<String> {
    query
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .take(32)
        .map(|w| w.to_lowercase())
        .collect()
}

/// Tags as stored: a JSON array.
pub(crate) fn tags_to_json(tags: &[String]) -> String {
    serde_json::to_string(tags).unwrap_or_else(|_| "[]".into())
}

/// Tags read back; a damaged value reads as no tags rather than failing the whole list.
pub(crate) fn tags_from_json(text: &str) -> Vec<String> {
    serde_json::from_str(text).unwrap_or_default()
}

/// Now as the store writes times (RFC 3339, UTC, milliseconds): such strings sort as text.
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The backend a `--db` argument names: a `postgres://` (or `postgresql://`) URL, or a SQLite
/// file path (optionally written `sqlite://PATH`).
pub enum Backend<'a> {
    /// The embedded default: a SQLite file.
    Sqlite(&'a std::path::Path),
    /// For many users: a PostgreSQL URL.
    Postgres(&'a str),
}

impl Backend<'_> {
    /// The backend `db` names.
    pub fn of(db: &str) -> Backend<'_> {
        if db.starts_with("postgres://") || db.starts_with("postgresql://") {
            Backend::Postgres(db)
        } else {
            Backend::Sqlite(std::path::Path::new(db.strip_prefix("sqlite://").unwrap_or(db)))
        }
    }
}

/// Opens the store `$db` names and evaluates `$body` with it bound to `$store`, as the concrete
/// type of its backend: the body is compiled once per backend (the server is launched once per
/// backend, generic over [`Store`]), so no wrapper type forwards every method. Use it in an
/// async context; it gives `StoreResult<the body's type>`.
#[macro_export]
macro_rules! with_store {
    ($db:expr, $store:ident => $body:expr) => {
        match $crate::store::Backend::of($db) {
            $crate::store::Backend::Sqlite(path) => match $crate::store::SqliteStore::open(path) {
                Ok($store) => Ok($body),
                Err(e) => Err(e),
            },
            $crate::store::Backend::Postgres(url) => match $crate::store::PostgresStore::connect(url).await {
                Ok($store) => Ok($body),
                Err(e) => Err(e),
            },
        }
    };
}

//! The sync API's JSON, written once: `zblade-server` sends these types and `zblade-sync`
//! reads them, so a field renamed on one side is a compile error on the other, not a silent
//! skew. (`tests/wire_skew.rs` in zblade-server reads every route's answer with these types.)
//! Only shapes live here; what a client must check before trusting an answer is in
//! `zblade-sync`'s `check` module.

use serde::{Deserialize, Serialize};

/// The two kinds of record the server stores with content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum Kind {
    /// A conversation artifact.
    Conversation,
    /// A moment artifact.
    Moment,
}

impl Kind {
    /// The name used in JSON and stored in the server's database.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Conversation => "conversation",
            Kind::Moment => "moment",
        }
    }

    /// The kind a name stands for.
    pub fn parse(name: &str) -> Option<Kind> {
        match name {
            "conversation" => Some(Kind::Conversation),
            "moment" => Some(Kind::Moment),
            _ => None,
        }
    }

    /// The collection in URLs (`…/projects/ID/conversations/…`).
    pub fn collection(self) -> &'static str {
        match self {
            Kind::Conversation => "conversations",
            Kind::Moment => "moments",
        }
    }
}

/// A record as lists show it: everything but the content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordMeta {
    /// Conversation or moment.
    pub kind: Kind,
    /// Its id.
    pub id: String,
    /// 1 when first stored; +1 for every changed body.
    pub version: i64,
    /// sha256 (hex) of the stored bytes.
    pub hash: String,
    /// Size of the stored bytes.
    pub size: i64,
    /// Title.
    pub title: String,
    /// Tags.
    pub tags: Vec<String>,
    /// When the artifact says it last changed.
    pub updated_at: String,
    /// The user who wrote this version (a shared project's member), as the server knows them
    /// from their token; absent from servers before team memory.
    #[serde(default)]
    pub author: Option<String>,
}

/// One page of a list, in id order.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Page<T> {
    /// The items.
    pub items: Vec<T>,
    /// The id to pass as `after` for the next page; `None` on the last page.
    pub next: Option<String>,
}

/// What a PUT did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PutStatus {
    /// Nothing was stored under this id before.
    Created,
    /// The same bytes were already stored: nothing changed.
    Unchanged,
    /// Different bytes: stored as a new version.
    Updated,
}

/// The answer to a record PUT.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PutResult {
    /// The record's id.
    pub id: String,
    /// Its kind.
    pub kind: Kind,
    /// What happened.
    pub status: PutStatus,
    /// The version now stored.
    pub version: i64,
    /// sha256 the server computed of the bytes it received.
    pub hash: String,
    /// Bytes stored.
    pub size: usize,
}

/// A keyword search hit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchHit {
    /// Conversation or moment.
    pub kind: Kind,
    /// Its id.
    pub id: String,
    /// Title.
    pub title: String,
    /// Relevance, higher is better (backend-specific scale).
    pub score: f64,
    /// The matched words in context, with `[` `]` around them.
    pub snippet: String,
    /// When the artifact says it last changed (absent from servers before it was added).
    #[serde(default)]
    pub updated_at: String,
    /// Who wrote it (see [`RecordMeta::author`]).
    #[serde(default)]
    pub author: Option<String>,
}

/// The answer to a search.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SearchAnswer {
    /// The query as the server read it (the client needs only the hits).
    #[serde(default)]
    pub query: String,
    /// Best first.
    pub hits: Vec<SearchHit>,
}

/// An error answer: a stable code and a sentence for people.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ErrorBody {
    /// `unauthorized`, `not_found`, `bad_request`, …
    pub error: String,
    /// What went wrong.
    pub reason: String,
}

/// What a member of a project on the server may do. Each role may do what the ones before it may.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "specta", derive(specta::Type), specta(rename = "MemberRole"))]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Role {
    /// Searches, lists, reads and packs context.
    Reader,
    /// Also adds conversations, moments and documents, and changes or deletes what they wrote.
    Writer,
    /// Also invites, removes and changes members' roles, removes anyone's contributions, and
    /// renames or deletes the project.
    Owner,
}

impl Role {
    /// The name used in JSON, URLs and the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Reader => "reader",
            Role::Writer => "writer",
            Role::Owner => "owner",
        }
    }

    /// The role a name stands for.
    pub fn parse(name: &str) -> Option<Role> {
        match name {
            "reader" => Some(Role::Reader),
            "writer" => Some(Role::Writer),
            "owner" => Some(Role::Owner),
            _ => None,
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A project as `GET /projects` lists it: the caller's own and those shared with them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ProjectEntry {
    /// The project's id (the `proj_…` id of the folder it came from).
    pub id: String,
    /// Display name.
    pub name: String,
    /// The user who created it on the server.
    #[serde(default)]
    pub owner: String,
    /// The caller's role in it (`owner` for their own projects).
    #[serde(default = "owner_role")]
    pub role: Role,
    /// When it was created on the server (RFC 3339).
    pub created_at: String,
    /// Conversations stored.
    pub conversations: i64,
    /// Moments stored.
    pub moments: i64,
    /// Metadata-only records stored.
    pub metadata: i64,
    /// The model the project's vectors are made with, once a client has sent some; every
    /// client of the project must embed with it (absent from servers before hybrid search).
    #[serde(default)]
    pub embedding: Option<EmbeddingModel>,
}

fn owner_role() -> Role {
    Role::Owner
}

/// A member of a project.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Member {
    /// Their user name on the server.
    pub user: String,
    /// What they may do.
    pub role: Role,
    /// Who invited them (the creator invited nobody: their own name).
    pub invited_by: String,
    /// When (RFC 3339).
    pub invited_at: String,
    /// When they accepted; `None` while the invitation is pending (they see nothing yet).
    pub accepted_at: Option<String>,
}

/// An invitation waiting for its user to accept it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Invitation {
    /// The project's id.
    pub project: String,
    /// Its display name.
    pub name: String,
    /// Its creator: accepting names them, as two creators may use the same project id.
    pub owner: String,
    /// The role offered.
    pub role: Role,
    /// Who invited.
    pub invited_by: String,
    /// When (RFC 3339).
    pub invited_at: String,
}

/// An embedding model as a project on the server records it: vectors from another model (or
/// of another length) do not compare with the project's and are refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct EmbeddingModel {
    /// The model's id (`all-minilm-l6-v2-int8`): its directory name under the models folder.
    pub id: String,
    /// Vector length.
    pub dims: u32,
}

/// One embedded piece of a record: a message's (or a moment's) text is embedded in one or more
/// pieces, as local search embeds it (`zblade_search::chunk::embedding_pieces`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PieceVector {
    /// The message's id within the conversation; empty for a moment.
    #[serde(default)]
    pub message: String,
    /// The piece's position within its message (0 first).
    pub seq: u32,
    /// The embedding.
    pub vector: Vec<f32>,
}

/// `PUT /projects/ID/vectors/{conversations|moments}/RECORD`: the vectors of one stored record,
/// replacing any it had.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VectorsUpload {
    /// The model that made them: must be the project's (the first upload sets it).
    pub model: EmbeddingModel,
    /// sha256 of the record bytes they were computed from: vectors of a version the server no
    /// longer stores are refused as stale (a newer upload follows).
    pub record_hash: String,
    /// The pieces.
    pub pieces: Vec<PieceVector>,
}

/// The answer to a vectors upload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VectorsResult {
    /// Pieces stored.
    pub stored: usize,
    /// The project's model (now set, if this upload was the first).
    pub model: EmbeddingModel,
}

/// `POST /projects/ID/search`: search of messages and moments, hybrid when a query vector
/// comes with it (the same search as local), keyword otherwise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PassageQuery {
    /// The words.
    pub q: String,
    /// How many hits (1–100).
    pub limit: usize,
    /// Only conversations' messages, or only moments.
    #[serde(default)]
    pub kind: Option<Kind>,
    /// The query embedded by the project's model.
    #[serde(default)]
    pub vector: Option<QueryVector>,
}

/// A query's embedding and the model that made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueryVector {
    /// Must be the project's.
    pub model: EmbeddingModel,
    /// The embedding.
    pub values: Vec<f32>,
}

/// A message or moment found by a passage search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassageHit {
    /// The record it is in: a conversation (for a message) or a moment.
    pub kind: Kind,
    /// The record's id.
    pub record: String,
    /// The message's id; empty for a moment.
    pub message: String,
    /// The conversation's title (empty for a moment).
    pub title: String,
    /// The message's role or the moment's type.
    pub label: String,
    /// The full text searched (a message's content; a moment's content and context).
    pub text: String,
    /// The message's or moment's time (RFC 3339; empty when unknown).
    pub time: String,
    /// Who wrote the record.
    pub author: Option<String>,
    /// Relevance, higher is better: the fused score in hybrid search.
    pub score: f64,
}

/// The answer to a passage search.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PassageAnswer {
    /// `hybrid` or `keyword` (no vector was sent, or the project has none yet).
    pub mode: String,
    /// Best first.
    pub hits: Vec<PassageHit>,
    /// Cosine similarity of the nearest vector (hybrid only): what the relevance gate reads.
    #[serde(default)]
    pub nearest: Option<f64>,
}

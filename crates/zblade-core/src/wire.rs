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

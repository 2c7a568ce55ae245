//! One search result and the kind of record it points at: what the keyword search of
//! memory and of code both return.

use serde::Serialize;

/// The kind of record a hit points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "lowercase")]
pub enum HitKind {
    /// A message; `id` is the message id.
    Message,
    /// A moment; `id` is the moment id.
    Moment,
    /// A conversation; `id` is the conversation id.
    Conversation,
    /// A chunk of a project file; `id` is `PATH:START-END`.
    Code,
    /// A commit of the project's repository; `id` is its full hex id.
    Commit,
}

impl HitKind {
    /// Its name, as JSON spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            HitKind::Message => "message",
            HitKind::Moment => "moment",
            HitKind::Conversation => "conversation",
            HitKind::Code => "code",
            HitKind::Commit => "commit",
        }
    }
}

/// One search result.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SearchHit {
    /// What it is.
    pub kind: HitKind,
    /// Its id.
    pub id: String,
    /// The conversation it belongs to, if any.
    pub conversation_id: Option<String>,
    /// The conversation's title, if any.
    pub title: Option<String>,
    /// `user`/`assistant`/... for messages; the moment type for moments.
    pub label: Option<String>,
    /// When it was written (RFC 3339, UTC).
    pub timestamp: String,
    /// Text around the matched words, which are wrapped in « ».
    pub snippet: String,
    /// Relevance: the negated BM25 score, higher is better.
    pub score: f64,
    /// For code: the file, relative to the project root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// For code: first and last line (1-based, inclusive).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<(u32, u32)>,
    /// For code: the CID of the lines when they were indexed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cid: Option<String>,
}

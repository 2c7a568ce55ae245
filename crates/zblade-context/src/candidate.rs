//! What can go into a context pack: candidates, where each came from, and what each is.

use chrono::{DateTime, Utc};
use serde::Serialize;

/// Where a candidate came from. The order is the packing priority (seed 004, "Context Budget
/// Management"): instructions always, then what the query named explicitly, then the active
/// conversation's recent turns, then retrieved memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// `.zblade/instructions.md`.
    Instructions,
    /// An `@file:`, `@conv:` or `@moment:` reference in the query.
    Explicit,
    /// The recency window of the active conversation.
    Recent,
    /// The stored summary of the active conversation (what came before its recent turns).
    Summary,
    /// Found by search (hybrid, or keyword without a model).
    Retrieved,
}

impl Source {
    /// Its name, as JSON spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Instructions => "instructions",
            Source::Explicit => "explicit",
            Source::Recent => "recent",
            Source::Summary => "summary",
            Source::Retrieved => "retrieved",
        }
    }
}

/// What a candidate is.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum Item {
    /// The project's instructions.
    Instructions,
    /// A conversation turn.
    Message {
        /// Conversation id.
        conversation: String,
        /// Conversation title.
        title: String,
        /// Message id.
        message: String,
        /// `user`, `assistant`, …
        role: String,
    },
    /// The summary of a conversation.
    Summary {
        /// Conversation id.
        conversation: String,
        /// Conversation title.
        title: String,
    },
    /// A moment (decision, pattern, solution, context).
    Moment {
        /// Moment id.
        id: String,
        /// Its type.
        moment_type: String,
        /// Its tags.
        tags: Vec<String>,
    },
    /// Lines of a file in the working tree, as they are now.
    Code {
        /// Path relative to the project root.
        path: String,
        /// First and last line, 1-based.
        lines: (u32, u32),
        /// Live status of the reference (`ok`, `shifted`, `modified`, `moved`, `missing`, …);
        /// `current` for code read from the working tree directly.
        status: String,
    },
    /// A commit of the project's repository: its message, and what became of the lines it
    /// wrote (never its old code).
    Commit {
        /// Full hex id.
        sha: String,
        /// Its author's name.
        author: String,
        /// When it was made (`YYYY-MM-DD`).
        date: String,
        /// Its lines now: "its 12 line(s) are unchanged", "changed since by def4567 '…'", "gone…".
        status: String,
    },
}

/// A piece of memory that may go into the pack.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Candidate {
    /// Unique key: `CONV/MSG`, a moment id, `code:PATH:A-B`, `instructions`.
    pub key: String,
    /// Content id of the text (sha256), used to drop duplicates.
    pub cid: String,
    /// Where it came from.
    pub source: Source,
    /// What it is.
    pub item: Item,
    /// Its text (for code: the lines as they are now).
    pub text: String,
    /// When it was written (code: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<DateTime<Utc>>,
    /// Search score, scaled to 0..1 within the result list (0 for non-retrieved sources).
    pub retrieval: f64,
    /// Who wrote it, for memory a teammate shared (the sync server's user name); `None` for the
    /// user's own memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// Set when what it decided no longer stands: superseded by a later moment or
    /// conversation, or rejected. The pack shows it, and never packs a superseded candidate
    /// without what superseded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub standing: Option<Standing>,
}

/// How a remembered decision stands, when it no longer simply does.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Standing {
    /// `superseded` (someone said so), `revisited` (a later conversation about the same code
    /// and words, found by zblade) or `rejected`.
    pub state: String,
    /// The conversation or moment that replaced it: the pack holds it before this one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// Why it was rejected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Standing {
    /// As the pack prints it: `superseded by conv_…`, `earlier; revisited by conv_…`,
    /// `rejected: too slow`.
    pub fn describe(&self) -> String {
        match (self.state.as_str(), &self.by, &self.reason) {
            ("revisited", Some(by), _) => format!("earlier; revisited by {by}"),
            (state, Some(by), _) => format!("{state} by {by}"),
            (state, None, Some(reason)) => format!("{state}: {reason}"),
            (state, None, None) => state.to_string(),
        }
    }
}

impl Candidate {
    /// The conversation or moment this candidate belongs to: what a [`Standing::by`] names.
    pub fn owner(&self) -> Option<&str> {
        match &self.item {
            Item::Moment { id, .. } => Some(id),
            _ => self.conversation(),
        }
    }

    /// The conversation this candidate belongs to, if any.
    pub fn conversation(&self) -> Option<&str> {
        match &self.item {
            Item::Message { conversation, .. } | Item::Summary { conversation, .. } => Some(conversation),
            _ => None,
        }
    }

    /// A short label for receipts and pointers: `conv_…/msg_… (user)`, `decision moment_…`,
    /// `src/auth.rs:10-25`.
    pub fn label(&self) -> String {
        match &self.item {
            Item::Instructions => "instructions.md".into(),
            Item::Message {
                conversation,
                message,
                role,
                ..
            } => format!("{conversation}/{message} ({role})"),
            Item::Summary { conversation, .. } => format!("summary of {conversation}"),
            Item::Moment { id, moment_type, .. } => format!("{moment_type} {id}"),
            Item::Code { path, lines, .. } => format!("{path}:{}-{}", lines.0, lines.1),
            Item::Commit { sha, .. } => format!("commit {}", &sha[..sha.len().min(7)]),
        }
    }
}

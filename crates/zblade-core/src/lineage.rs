//! What a conversation knows of its own history: where each message came from, the fork it
//! grew from, the merges and compactions it went through, the tokens it cost.
//!
//! These are plain records shared by the resolved [`crate::Conversation`] and the stored
//! [`crate::Manifest`]; they live apart from both so neither format has to import the other.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Where a conversation got one of its messages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum MessageOrigin {
    /// Written in this conversation.
    #[default]
    Native,
    /// Inherited from the conversation this one was forked from.
    Inherited {
        /// The fork's parent.
        conversation_id: String,
    },
    /// Brought in by `zblade conv merge` or `cherry-pick`.
    Merged {
        /// Where it came from.
        conversation_id: String,
        /// Its index (0-based) there.
        index: usize,
    },
}

impl MessageOrigin {
    pub(crate) fn is_native(&self) -> bool {
        *self == MessageOrigin::Native
    }
}

/// "The first `messages` messages of this conversation are those of `conversation_id`":
/// how a fork shares its parent's messages without listing them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedPrefix {
    /// The conversation whose messages are shared.
    pub conversation_id: String,
    /// How many of its first messages.
    pub messages: usize,
}

/// Where a fork came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ForkPoint {
    /// The parent conversation.
    pub conversation_id: String,
    /// The last message the fork kept.
    pub after_message_id: String,
    /// Its index (0-based) in the parent.
    pub after_index: usize,
    /// When the fork was made.
    pub forked_at: DateTime<Utc>,
}

/// What a merge or cherry-pick brought in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct MergeRecord {
    /// The conversation the messages came from.
    pub conversation_id: String,
    /// Their indices (0-based) there.
    pub indices: Vec<usize>,
    /// Where they were inserted in this conversation; `None`: appended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inserted_at: Option<usize>,
    /// When.
    pub merged_at: DateTime<Utc>,
}

/// What a compaction replaced with a summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Compaction {
    /// The summary standing in for the compacted messages.
    pub summary: String,
    /// Messages before this index were compacted.
    pub compacted_before: usize,
    /// When.
    pub compacted_at: DateTime<Utc>,
}

/// Tokens a conversation used, as its client reported them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct TokenUsage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Prompt tokens read from a provider's cache.
    pub cache_read_tokens: u64,
    /// Prompt tokens written to a provider's cache.
    pub cache_creation_tokens: u64,
}

impl TokenUsage {
    /// True when nothing was counted.
    pub fn is_empty(&self) -> bool {
        *self == TokenUsage::default()
    }
}

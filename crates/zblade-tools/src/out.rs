//! What each tool returns: `structuredContent` shapes and the `outputSchema` derived from them.
//! They are zblade's MCP contract, kept apart from the engine's types so that an engine change
//! cannot silently change what agents receive. Every item from memory carries its provenance —
//! its id, its time and where it came from — and the `context` result says in so many words
//! that the memory is stored data, not instructions. Fields without a value are left out (rather
//! than `null`): fewer tokens in every schema and every answer.

// Doc comments on these types become schema descriptions, which every model pays for in
// every turn: the fields whose names say enough have none.
#![allow(missing_docs)]

use rmcp::schemars::{self, JsonSchema};
use serde::Serialize;

/// Said with every packed context: memory is quoted material, never orders to follow (the
/// engine's, which the prompt hook says too).
pub use zblade_engine::DATA_NOTICE;

#[derive(Debug, Serialize, JsonSchema)]
pub struct ContextOut {
    pub notice: &'static str,
    pub text: String,
    pub tokens: usize,
    pub budget: usize,
    /// One line: what was packed, from how many candidates, how fast.
    pub receipt: String,
    /// False when the relevance gate found nothing remembered that bears on the query: `text`
    /// then says so and nothing is packed.
    pub relevant: bool,
    pub items: Vec<PackedItem>,
    pub notices: Vec<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct PackedItem {
    pub id: String,
    /// instructions, explicit, recent, summary or retrieved.
    pub via: String,
    pub label: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub time: Option<String>,
    pub tokens: usize,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchOut {
    pub mode: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub notice: Option<String>,
    pub hits: Vec<HitOut>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct HitOut {
    /// message, moment or conversation.
    pub kind: String,
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub conversation: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub title: Option<String>,
    /// Role of a message; type of a moment.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub label: Option<String>,
    pub time: String,
    pub snippet: String,
    pub score: f64,
    pub references: Vec<ReferenceOut>,
}

/// A code reference as the code is now.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ReferenceOut {
    pub file: String,
    /// Where the lines are now ([first, last]); none when the code is gone.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "[u32; 2]")]
    pub lines: Option<[u32; 2]>,
    /// ok, shifted, moved, modified, missing or unreadable.
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub code: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RememberOut {
    pub id: String,
    pub references: Vec<ReferenceOut>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ConversationOut {
    pub id: String,
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub created: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub updated: Option<String>,
    /// The agent it was imported from, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub source: Option<String>,
    pub total_messages: usize,
    pub messages: Vec<MessageOut>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct MessageOut {
    /// 1-based position in the conversation.
    pub n: usize,
    pub id: String,
    pub role: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub time: Option<String>,
    pub text: String,
    pub tools: Vec<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ConversationList {
    pub conversations: Vec<ConversationRow>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ConversationRow {
    pub id: String,
    pub title: String,
    pub updated: String,
    pub messages: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub source: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct FileOut {
    pub path: String,
    pub lines: [u32; 2],
    pub total_lines: u32,
    pub truncated: bool,
    pub text: String,
    /// With `why`: one line per commit or memory, newest standing first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub why: Vec<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CodeSearchOut {
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub notice: Option<String>,
    pub hits: Vec<CodeHit>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CodeHit {
    /// `path:first-last`
    pub at: String,
    pub score: f64,
    /// The lines as they are in the working tree now.
    pub code: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct StatusOut {
    pub root: String,
    pub storage: String,
    pub conversations: usize,
    pub moments: usize,
    pub code_files: i64,
    pub embedding_model: String,
    /// hybrid when an embedding model is installed, else keyword.
    pub search: String,
    pub index_health: String,
}

//! What each tool accepts. The schemas (schemars) are what `tools/list` advertises; the
//! deserializers in [`crate::lenient`] also accept the shapes models commonly send instead.
//! Field docs become schema descriptions, so they are kept to a few words: every token here is
//! paid in every agent's context window.

// Doc comments on these types become schema descriptions, which every model pays for in
// every turn: the fields whose names say enough have none.
#![allow(missing_docs)]

use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;
// The domain's own enums (their schemas derived behind zblade-engine's `schemars` feature).
use zblade_engine::{ContextTier, MomentType, SearchKind, SearchMode};

use crate::lenient;

/// `context`
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextArgs {
    /// The task or question.
    pub query: String,
    /// Token budget.
    #[serde(default, deserialize_with = "lenient::opt_u32")]
    pub budget: Option<u32>,
    /// Conversation whose recent turns to include.
    #[serde(default)]
    pub conversation: Option<String>,
    /// smart: pointers for long items.
    #[serde(default)]
    pub tier: Option<ContextTier>,
}

/// `search`
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// Words or a question.
    pub query: String,
    /// Default all.
    #[serde(default)]
    pub kind: Option<SearchKind>,
    /// Default hybrid if available.
    #[serde(default)]
    pub mode: Option<SearchMode>,
    /// Default 10, at most 200.
    #[serde(default, deserialize_with = "lenient::opt_u32")]
    pub limit: Option<u32>,
    /// Only about code under this path.
    #[serde(default)]
    pub path: Option<String>,
}

/// `remember`
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RememberArgs {
    #[serde(rename = "type")]
    pub kind: MomentType,
    /// Self-contained.
    pub content: String,
    /// Why; the discussion around it.
    #[serde(default)]
    pub context: Option<String>,
    #[serde(default, deserialize_with = "lenient::object_list")]
    pub references: Vec<ReferenceArg>,
    #[serde(default, deserialize_with = "lenient::string_list")]
    pub tags: Vec<String>,
    /// Conversation it came from.
    #[serde(default)]
    pub conversation: Option<String>,
    /// Id this replaces.
    #[serde(default)]
    pub supersedes: Option<String>,
    /// Id ruled out (content: why).
    #[serde(default)]
    pub rejects: Option<String>,
}

/// A code reference sent with `remember`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReferenceArg {
    /// Relative to the project root.
    pub file: String,
    /// [first, last], 1-based.
    #[serde(deserialize_with = "lenient::line_range")]
    #[schemars(with = "[u32; 2]")]
    pub lines: Option<[u32; 2]>,
    /// What the code does.
    #[serde(default)]
    pub purpose: Option<String>,
}

/// `get_conversation`
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetConversationArgs {
    /// conv_… id.
    pub id: String,
    /// First message, 1-based.
    #[serde(default, deserialize_with = "lenient::opt_u32")]
    pub from: Option<u32>,
    /// Last message (default from + 49).
    #[serde(default, deserialize_with = "lenient::opt_u32")]
    pub to: Option<u32>,
}

/// `list_conversations`
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListConversationsArgs {
    /// Default 20.
    #[serde(default, deserialize_with = "lenient::opt_u32")]
    pub limit: Option<u32>,
    /// Skip this many.
    #[serde(default, deserialize_with = "lenient::opt_u32")]
    pub offset: Option<u32>,
    /// Agent: claude-code, codex, ….
    #[serde(default)]
    pub source: Option<String>,
}

/// `read_project_file`
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileArgs {
    /// Relative to the project root.
    pub path: String,
    /// [first, last], 1-based.
    #[serde(default, deserialize_with = "lenient::line_range")]
    pub lines: Option<[u32; 2]>,
    /// Also the commits and memory behind them.
    #[serde(default)]
    pub why: Option<bool>,
}

/// `search_project`
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchProjectArgs {
    /// Words, identifiers or a question.
    pub query: String,
    /// Default 10, at most 50.
    #[serde(default, deserialize_with = "lenient::opt_u32")]
    pub limit: Option<u32>,
    /// Only files under this path.
    #[serde(default)]
    pub path: Option<String>,
}

/// `status` takes nothing.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusArgs {}

//! What each tool accepts. The schemas (schemars) are what `tools/list` advertises; the
//! deserializers in [`crate::lenient`] also accept the shapes models commonly send instead.
//! Field docs become schema descriptions, so they are kept to a few words: every token here is
//! paid in every agent's context window.

// Doc comments on these types become schema descriptions, which every model pays for in
// every turn: the fields whose names say enough have none.
#![allow(missing_docs)]

use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;

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
    pub tier: Option<Tier>,
}

/// How much of each retrieved item a context carries: smart (pointers for long items),
/// balanced (full content), fast (full content, fewer recent turns).
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum Tier {
    Smart,
    Balanced,
    Fast,
}

/// `search`
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// Words or a question.
    pub query: String,
    /// Default all.
    #[serde(default)]
    pub kind: Option<Kind>,
    /// Default hybrid if available.
    #[serde(default)]
    pub mode: Option<Mode>,
    /// Default 10, at most 200.
    #[serde(default, deserialize_with = "lenient::opt_u32")]
    pub limit: Option<u32>,
    /// Only about code under this path.
    #[serde(default)]
    pub path: Option<String>,
}

/// What `search` looks through.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum Kind {
    All,
    Messages,
    Moments,
    Conversations,
}

/// How `search` matches.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum Mode {
    Keyword,
    Semantic,
    Hybrid,
}

/// `remember`
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RememberArgs {
    #[serde(rename = "type")]
    pub kind: MomentKind,
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
}

/// The kinds of moment.
#[derive(Debug, Clone, Copy, Deserialize, serde::Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum MomentKind {
    Decision,
    Pattern,
    Solution,
    Context,
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

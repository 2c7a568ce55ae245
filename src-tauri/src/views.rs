//! What the UI receives: plain, typed records made from the engine's results. The engine's own
//! types stay free of UI concerns (and of specta); these are generated into
//! `ui/src/lib/bindings.ts`, so a field renamed here breaks the UI's type check, not its runtime.

use serde::{Deserialize, Serialize};
use specta::Type;
use zblade_engine::{
    ContextSource as Source, Hit, HitKind, Message, MigrationDirection, MigrationPhase, ReferenceReport,
    ReferenceStatus, Role, SearchKind, SearchMode, StorageMode,
};

use crate::config::AppConfig;

/// The open project.
#[derive(Debug, Clone, Serialize, Type)]
pub struct ProjectInfo {
    /// Its root folder.
    pub root: String,
    /// The folder's name.
    pub name: String,
    /// `proj_…`
    pub project_id: String,
    /// Where its memory lives.
    pub storage_mode: StorageMode,
}

/// A status and how many references have it.
#[derive(Debug, Clone, Serialize, Deserialize, Type)]
pub struct StatusCount {
    /// ok, shifted, modified, moved, missing, unreadable, or drift (file changed since capture).
    pub status: String,
    /// How many.
    pub count: u32,
}

/// The project at a glance, for the status bar and the health view.
#[derive(Debug, Clone, Serialize, Type)]
pub struct ProjectStatus {
    /// Conversations in the index.
    pub conversations: u32,
    /// Messages in the index.
    pub messages: u32,
    /// Moments in the index.
    pub moments: u32,
    /// Code references.
    pub references: u32,
    /// Project files indexed for search.
    pub code_files: u32,
    /// Code chunks indexed for search.
    pub code_chunks: u32,
    /// The embedding model configured.
    pub embedding_model: String,
    /// Vectors stored for it (`None`: none yet).
    pub vectors: Option<u32>,
    /// The compressor model configured (empty: extractive).
    pub compressor_model: String,
    /// `ok`, `stale: …` or `corrupt: …`.
    pub index_health: String,
    /// Why search is keyword-only, when it is.
    pub search_notice: Option<String>,
}

/// A coding agent that reaches tools over MCP, for Settings → Agents.
#[derive(Debug, Clone, Serialize, Deserialize, Type)]
pub struct McpClientView {
    /// `claude-code`, `cursor`, `codex` or `vscode`.
    pub client: String,
    /// Its name for people.
    pub label: String,
    /// Its folder exists in the user's home.
    pub installed: bool,
    /// zblade is in its configuration for the open project (or for the user).
    pub configured: bool,
    /// The file one click writes.
    pub config_file: String,
}

/// A coding agent on this machine, for the wizard and Settings → Sources.
#[derive(Debug, Clone, Serialize, Deserialize, Type)]
pub struct SourceView {
    /// `claude-code`, `codex`, `aider`, `continue` or `cline`.
    pub source: String,
    /// Its name for people.
    pub label: String,
    /// Where its sessions are (none when the tool is not installed).
    pub store: Option<String>,
    /// Session files found, all projects.
    pub sessions: u32,
    /// Of those, the open project's.
    pub in_project: u32,
    /// Newest session of the open project (RFC 3339).
    pub last_session: Option<String>,
    /// The open project imports its new turns live.
    pub followed: bool,
    /// Last import into the open project (RFC 3339).
    pub last_import: Option<String>,
    /// Conversations imported from it into the open project.
    pub imported_conversations: u32,
}

/// A code reference with its live status.
#[derive(Debug, Clone, Serialize, Deserialize, Type)]
pub struct ReferenceView {
    /// Stable key: `conv_…/msg_…/N` or `moment_…/N`.
    pub key: String,
    /// How it fared since capture.
    pub status: ReferenceStatus,
    /// The file changed since capture (git blob differs).
    pub drift: bool,
    /// Commits that touched the file since capture, when git knows.
    pub commits_since: Option<u32>,
    /// Where it was at capture.
    pub captured_file: String,
    /// Captured first and last line.
    pub captured_lines: [u32; 2],
    /// Where it is now (`None` when missing or unreadable).
    pub file: Option<String>,
    /// Current first and last line.
    pub lines: Option<[u32; 2]>,
    /// 0..1, below 1 when modified.
    pub similarity: f32,
    /// Why it was referenced.
    pub context: Option<String>,
    /// Why it is missing or unreadable.
    pub reason: Option<String>,
    /// Its conversation.
    pub conversation_id: Option<String>,
    /// Its message.
    pub message_id: Option<String>,
    /// Its moment.
    pub moment_id: Option<String>,
    /// The code at the live location, read now (only where asked for).
    pub code: Option<Vec<String>>,
}

impl ReferenceView {
    /// The view of `report`, with its code when `with_code`.
    pub fn of(report: &ReferenceReport, with_code: bool) -> Self {
        ReferenceView {
            key: report.key.clone(),
            status: report.status,
            drift: report.drift.is_some(),
            commits_since: report.drift.as_ref().and_then(|d| d.commits_since),
            captured_file: report.captured.file.clone(),
            captured_lines: report.captured.lines,
            file: report.live.as_ref().map(|l| l.file.clone()),
            lines: report.live.as_ref().map(|l| l.lines),
            similarity: report.similarity,
            context: report.context.clone(),
            reason: report.reason.clone(),
            conversation_id: report.conversation_id.clone(),
            message_id: report.message_id.clone(),
            moment_id: report.moment_id.clone(),
            code: if with_code { report.code.clone() } else { None },
        }
    }
}

/// A message with its references.
#[derive(Debug, Clone, Serialize, Type)]
pub struct MessageView {
    /// `msg_…`
    pub id: String,
    /// Who wrote it.
    pub role: Role,
    /// Markdown text.
    pub content: String,
    /// When it was written (RFC 3339).
    pub timestamp: String,
    /// Its code references, checked now.
    pub references: Vec<ReferenceView>,
}

impl MessageView {
    /// The view of `message` with its references (those of its conversation, matched by
    /// message id: a fork's inherited messages have theirs under the conversation that wrote
    /// them).
    pub fn of(message: &Message, references: &[ReferenceReport]) -> Self {
        MessageView {
            id: message.id.clone(),
            role: message.role,
            content: message.content.clone(),
            timestamp: message.timestamp.map(rfc3339).unwrap_or_default(),
            references: references
                .iter()
                .filter(|r| r.message_id.as_deref() == Some(message.id.as_str()))
                .map(|r| ReferenceView::of(r, false))
                .collect(),
        }
    }
}

/// `time` as the index writes it: RFC 3339, UTC, milliseconds.
pub fn rfc3339(time: chrono::DateTime<chrono::Utc>) -> String {
    time.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// A whole conversation.
#[derive(Debug, Clone, Serialize, Type)]
pub struct ConversationDetail {
    /// `conv_…`
    pub id: String,
    /// Title.
    pub title: String,
    /// Created (RFC 3339).
    pub created_at: String,
    /// Last update (RFC 3339).
    pub updated_at: String,
    /// Tags.
    pub tags: Vec<String>,
    /// Messages, in order.
    pub messages: Vec<MessageView>,
}

/// What to search.
#[derive(Debug, Clone, Deserialize, Type)]
pub struct SearchRequest {
    /// The words.
    pub text: String,
    /// What to search.
    pub kind: SearchKind,
    /// Only files under this path (code hits and references).
    pub path_prefix: Option<String>,
    /// Most hits.
    pub limit: u32,
}

/// One search hit.
#[derive(Debug, Clone, Serialize, Type)]
pub struct SearchHitView {
    /// What was found.
    pub kind: HitKind,
    /// Its id (`PATH:START-END` for code).
    pub id: String,
    /// Its conversation.
    pub conversation_id: Option<String>,
    /// The conversation's title.
    pub title: Option<String>,
    /// Role or moment type.
    pub label: Option<String>,
    /// When it was written.
    pub timestamp: String,
    /// Text around the match; matched words are wrapped in « ».
    pub snippet: String,
    /// Relevance, higher is better.
    pub score: f64,
    /// For code: the file.
    pub path: Option<String>,
    /// For code: the lines.
    pub lines: Option<[u32; 2]>,
    /// Its code references, checked now.
    pub references: Vec<ReferenceView>,
}

impl From<&Hit> for SearchHitView {
    fn from(hit: &Hit) -> Self {
        let h = &hit.hit;
        SearchHitView {
            kind: h.kind,
            id: h.id.clone(),
            conversation_id: h.conversation_id.clone(),
            title: h.title.clone(),
            label: h.label.clone(),
            timestamp: h.timestamp.clone(),
            snippet: h.snippet.clone(),
            score: h.score,
            path: h.path.clone(),
            lines: h.lines.map(|(a, b)| [a, b]),
            references: hit.references.iter().map(|r| ReferenceView::of(r, false)).collect(),
        }
    }
}

/// Search results.
#[derive(Debug, Clone, Serialize, Type)]
pub struct SearchResultsView {
    /// What ran.
    pub mode: SearchMode,
    /// Why hybrid could not run, when it could not.
    pub notice: Option<String>,
    /// Best first.
    pub hits: Vec<SearchHitView>,
    /// Time in the engine, milliseconds.
    pub elapsed_ms: f64,
}

/// Score parts of a ranked candidate.
#[derive(Debug, Clone, Serialize, Type)]
pub struct ScoreView {
    /// Retrieval score (fused BM25 + vectors).
    pub retrieval: f64,
    /// Recency factor.
    pub recency: f64,
    /// Same-session bonus.
    pub affinity: f64,
    /// Weight of the moment type.
    pub type_weight: f64,
    /// Final relevance.
    pub relevance: f64,
    /// Similarity to what ranked above it (MMR).
    pub redundancy: f64,
}

/// One candidate of the receipt.
#[derive(Debug, Clone, Serialize, Type)]
pub struct ReceiptView {
    /// Its key.
    pub key: String,
    /// A readable label.
    pub label: String,
    /// Where it came from.
    pub source: Source,
    /// Tokens it takes in the pack (0 when dropped).
    pub tokens: u32,
    /// Tokens it would take whole.
    pub full_tokens: u32,
    /// Rank after rerank.
    pub rank: Option<u32>,
    /// Score parts.
    pub score: Option<ScoreView>,
    /// Packed or dropped.
    pub included: bool,
    /// Why.
    pub reason: String,
}

/// An assembled context.
#[derive(Debug, Clone, Serialize, Type)]
pub struct ContextView {
    /// The packed text.
    pub text: String,
    /// Its tokens.
    pub tokens: u32,
    /// The budget.
    pub budget: u32,
    /// The tokenizer that counted.
    pub tokenizer: String,
    /// The compressor that shrank.
    pub compressor: String,
    /// Every candidate, packed or dropped, and why.
    pub receipt: Vec<ReceiptView>,
    /// Things the user should know.
    pub notices: Vec<String>,
    /// Time to assemble, milliseconds.
    pub elapsed_ms: f64,
}

/// Reference health: counts and the references that need a look.
#[derive(Debug, Clone, Serialize, Type)]
pub struct HealthView {
    /// References by status.
    pub counts: Vec<StatusCount>,
    /// Drifted (file changed since capture) references that are still found.
    pub drifted: Vec<ReferenceView>,
    /// Missing, unreadable, moved or modified references.
    pub problems: Vec<ReferenceView>,
}

/// An embedding model.
#[derive(Debug, Clone, Serialize, Type)]
pub struct EmbeddingModelView {
    /// The name settings use.
    pub name: String,
    /// Installed.
    pub installed: bool,
    /// Conversation and moment search uses it.
    pub active: bool,
    /// Code search uses it.
    pub code: bool,
    /// Where it downloads from, for known models.
    pub repo: Option<String>,
}

/// A compressor (GGUF) model.
#[derive(Debug, Clone, Serialize, Type)]
pub struct CompressorModelView {
    /// The name settings use.
    pub name: String,
    /// Size in MB.
    pub size_mb: f64,
    /// The compressor uses it.
    pub active: bool,
    /// Why it is unusable, if it is.
    pub problem: Option<String>,
}

/// The settings view.
#[derive(Debug, Clone, Serialize, Type)]
pub struct SettingsView {
    /// The app's own settings.
    pub app: AppConfig,
    /// The open project's storage mode (`None`: no project open).
    pub project_storage_mode: Option<StorageMode>,
    /// Embedding models, installed and known.
    pub embedding_models: Vec<EmbeddingModelView>,
    /// Compressor models installed.
    pub compressor_models: Vec<CompressorModelView>,
    /// What compresses now: `llama:NAME` or `extractive`.
    pub compressor: String,
    /// Why a configured compressor model is not used.
    pub compressor_notice: Option<String>,
    /// Lines of the project's `.zbladeignore`.
    pub ignored_paths: Vec<String>,
}

/// What the wizard decided.
#[derive(Debug, Clone, Deserialize, Type)]
pub struct WizardChoice {
    /// Local (the default) or server.
    pub storage_mode: StorageMode,
    /// Allow network use (model downloads; a sync server).
    pub allow_network: bool,
    /// Coding agents whose sessions may be imported (none unless ticked).
    #[serde(default)]
    pub follow_sources: Vec<String>,
}

/// What a migration will move (the wizard's plan step).
#[derive(Debug, Clone, Serialize, Type)]
pub struct MigrationPlanView {
    /// Which way.
    pub direction: MigrationDirection,
    /// The server.
    pub server: String,
    /// Conversations to move.
    pub conversations: u32,
    /// Moments to move.
    pub moments: u32,
    /// Bytes to move.
    pub bytes: f64,
    /// Files that cannot be moved, with why (they stay where they are).
    pub skipped: Vec<String>,
}

/// A migration that an earlier run (or a crash) left unfinished.
#[derive(Debug, Clone, Serialize, Type)]
pub struct MigrationPendingView {
    /// Which way.
    pub direction: MigrationDirection,
    /// The server.
    pub server: String,
    /// Items planned.
    pub items: u32,
    /// Where it stopped.
    pub phase: MigrationPhase,
}

/// A finished migration.
#[derive(Debug, Clone, Serialize, Type)]
pub struct MigrationResultView {
    /// Whether it finished one an earlier run started.
    pub resumed: bool,
    /// Items copied by this run.
    pub copied: u32,
    /// Items read back from the destination with the expected hash.
    pub verified: u32,
    /// Code blocks turned into references (to-local).
    pub code_blocks_to_references: u32,
    /// The storage mode now.
    pub mode: StorageMode,
}

/// The model proxy, for Settings → Proxy.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Type)]
pub struct ProxyView {
    /// True while it runs.
    pub running: bool,
    /// Where it listens (`http://127.0.0.1:8765`): Claude Code's ANTHROPIC_BASE_URL.
    pub address: Option<String>,
    /// The same with `/v1`: OpenAI clients' base URL.
    pub openai_base_url: Option<String>,
    /// Where OpenAI-style requests go.
    pub openai_upstream: String,
    /// Where Anthropic requests go.
    pub anthropic_upstream: String,
    /// Requests forwarded since it started.
    pub requests: u32,
    /// Requests memory was added to.
    pub injected: u32,
    /// Turns recorded.
    pub recorded: u32,
    /// Requests where something inside zblade failed (they went upstream without memory).
    pub errors: u32,
}

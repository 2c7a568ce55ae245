//! What the UI receives that the engine has no type for: the app's own records (its settings,
//! the wizard's choice, the proxy it runs) and compositions of several engine results. Engine
//! results themselves (search results, contexts, references, summaries, reports) are returned
//! as they are: their crates derive `specta::Type` behind the `specta` feature. All of it is
//! generated into `ui/src/lib/bindings.ts`, so a field renamed breaks the UI's type check, not
//! its runtime.

use serde::{Deserialize, Serialize};
use specta::Type;
use zblade_engine::{CompressorModel, Conversation, ModelEntry, ReferenceReport, StorageMode};

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

/// A coding agent and its connection to the open project's memory, for Settings → Agents
/// (what `zblade doctor` prints): sessions found and imported, zblade's MCP server and hooks.
#[derive(Debug, Clone, Serialize, Deserialize, Type)]
pub struct McpClientView {
    /// `claude-code`, `cursor`, `gemini-cli`, … (the agent's name on the command line).
    pub client: String,
    /// Its name for people.
    pub label: String,
    /// Its files exist in the user's home (its MCP folder, or sessions of any project).
    pub installed: bool,
    /// Its sessions of the open project found on this machine.
    pub sessions: u32,
    /// Conversations of the open project imported from it.
    pub imported: u32,
    /// zblade can write its MCP configuration.
    pub has_mcp: bool,
    /// zblade is in its configuration for the open project (or for the user).
    pub configured: bool,
    /// The file one click writes (its MCP configuration), when zblade can write one.
    pub config_file: String,
    /// zblade can write its hooks.
    pub has_hooks: bool,
    /// zblade's hooks are in its settings.
    pub hooks_wired: bool,
    /// What is not connected and why, each with the command that connects it.
    pub why_not: Vec<String>,
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

/// A reference as lists show it: its code is fetched when the user opens it
/// (`reference_code`), not sent with every message and event.
pub fn without_code(reference: &ReferenceReport) -> ReferenceReport {
    ReferenceReport {
        code: None,
        ..reference.clone()
    }
}

/// A conversation as the Conversations and Chat views show it: the artifact (every message in
/// order) and its code references, checked now, without their code (each message's are those
/// whose `message_id` is its id).
#[derive(Debug, Clone, Serialize, Type)]
pub struct ConversationDetail {
    /// The conversation.
    pub conversation: Conversation,
    /// Its code references.
    pub references: Vec<ReferenceReport>,
}

/// Reference health: counts and the references that need a look.
#[derive(Debug, Clone, Serialize, Type)]
pub struct HealthView {
    /// References by status.
    pub counts: Vec<StatusCount>,
    /// Drifted (file changed since capture) references that are still found.
    pub drifted: Vec<ReferenceReport>,
    /// Missing, unreadable, moved or modified references.
    pub problems: Vec<ReferenceReport>,
}

/// The settings view.
#[derive(Debug, Clone, Serialize, Type)]
pub struct SettingsView {
    /// The app's own settings.
    pub app: AppConfig,
    /// The open project's storage mode (`None`: no project open).
    pub project_storage_mode: Option<StorageMode>,
    /// Idle minutes before the open project's search models are let go (0: never; `None`: no
    /// project open).
    pub release_models_after_minutes: Option<u32>,
    /// Embedding models, installed and known.
    pub embedding_models: Vec<ModelEntry>,
    /// Compressor models installed.
    pub compressor_models: Vec<CompressorModel>,
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

//! `.zblade/config/settings.json`: the RFC-002 settings with their defaults.
//!
//! Every level keeps the fields it does not know in `extra`, so a settings file written by a
//! newer zblade (or edited by hand) loses nothing when this version rewrites it.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{Error, Result, fsio, ids};

/// Where a project's memory lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "lowercase")]
pub enum StorageMode {
    /// Artifacts and index under `.zblade/`; nothing leaves the machine.
    #[default]
    Local,
    /// Conversations live on a sync server.
    Server,
}

impl std::fmt::Display for StorageMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StorageMode::Local => "local",
            StorageMode::Server => "server",
        })
    }
}

/// The whole settings file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Settings {
    /// The project's identity.
    pub project: ProjectSettings,
    /// Where memory is stored.
    pub storage: StorageSettings,
    /// Context assembly.
    pub context: ContextSettings,
    /// Privacy switches.
    pub privacy: PrivacySettings,
    /// Semantic search.
    pub search: SearchSettings,
    /// Which coding agents' sessions are imported automatically.
    pub import: ImportSettings,
    /// `mcp`: the MCP server.
    pub mcp: McpSettings,
    /// `proxy`: the model proxy.
    pub proxy: ProxySettings,
    /// Fields this version does not know; written back unchanged.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `project`: identity of the project the memory belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ProjectSettings {
    /// `proj_…` id, stamped into every conversation as `project_id`; assigned by `init`.
    pub id: String,
    /// Unknown fields.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `storage`: RFC-002 "Storage Mode Configuration".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StorageSettings {
    /// `local` (default) or `server`.
    pub mode: StorageMode,
    /// Sync titles and tags (no content) to a server in local mode. Off until the user opts in:
    /// no byte leaves the machine before consent.
    pub sync_metadata: bool,
    /// The sync server (`http://host:port`) of server mode, or the one metadata is sent to;
    /// empty when none was set up. Its token is kept outside the project (see zblade-sync).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub server_url: String,
    /// Plain `http://` to a `server_url` on another machine: false unless the user passed
    /// `--allow-insecure-http` (or ticked it in the app), since the token and all memory then
    /// cross the network readable by anyone on the path. Loopback http is always allowed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_insecure_http: bool,
    /// The hot cache under `.zblade/cache/`.
    pub cache: CacheSettings,
    /// Unknown fields.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Default for StorageSettings {
    fn default() -> Self {
        StorageSettings {
            mode: StorageMode::Local,
            sync_metadata: false,
            server_url: String::new(),
            allow_insecure_http: false,
            cache: CacheSettings::default(),
            extra: Map::new(),
        }
    }
}

/// `storage.cache`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CacheSettings {
    /// Whether the cache is used.
    pub enabled: bool,
    /// Upper bound of `.zblade/cache/` in MiB.
    pub max_size_mb: u64,
    /// Unknown fields.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Default for CacheSettings {
    fn default() -> Self {
        CacheSettings {
            enabled: true,
            max_size_mb: 100,
            extra: Map::new(),
        }
    }
}

/// `context`: how much memory goes into a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ContextSettings {
    /// Token budget of an assembled context.
    pub max_tokens: u32,
    /// The compressor.
    pub compression: CompressionSettings,
    /// The relevance gate's floor, 0 to 1: retrieved memory is packed only when the prompt's
    /// relevance reaches it (0 turns the gate off). Unset: zblade's default
    /// (`zblade_context::DEFAULT_MIN_RELEVANCE`; docs/CONTEXT.md, "The relevance gate").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_relevance: Option<f64>,
    /// Unknown fields.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Default for ContextSettings {
    fn default() -> Self {
        ContextSettings {
            max_tokens: 8000,
            compression: CompressionSettings::default(),
            min_relevance: None,
            extra: Map::new(),
        }
    }
}

/// `context.compression`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CompressionSettings {
    /// Whether over-budget material is compressed.
    pub enabled: bool,
    /// `local` (llama.cpp on this machine) or `remote`.
    pub model: String,
    /// The local GGUF model the compressor runs: a name installed with `zblade compressor`
    /// (a file in `$ZBLADE_MODELS_DIR/gguf/`) or a path to a `.gguf` file. Empty: no model;
    /// the deterministic extractive compressor does every job.
    pub local_model: String,
    /// Longest a single model job (a summary, an extraction, a shrink) may run, in seconds,
    /// before it is retried once and then done extractively.
    pub timeout_secs: u64,
    /// Seconds of model time one context assembly may spend shrinking over-budget material;
    /// beyond it (and for anything not cached yet) the extractive compressor shrinks.
    pub shrink_budget_secs: f64,
    /// Unknown fields.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Default for CompressionSettings {
    fn default() -> Self {
        CompressionSettings {
            enabled: true,
            model: "local".into(),
            local_model: String::new(),
            timeout_secs: 120,
            shrink_budget_secs: 2.0,
            extra: Map::new(),
        }
    }
}

/// `privacy`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct PrivacySettings {
    /// Always false: zblade has no telemetry. Kept so the file states it plainly.
    pub telemetry: bool,
    /// Whether zblade may use the network at all (model downloads, a sync server). False
    /// until the user agrees; a single command can be allowed with `--allow-network`.
    pub allow_network: bool,
    /// Files zblade must never read as project code, on top of the built-in ones (`.env*`,
    /// private keys, `.git/`, `.zblade/`; see [`crate::protected`]): gitignore-like patterns,
    /// `*.secret` (a file name anywhere) or `config/prod/*` (a path from the project root).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub secret_files: Vec<String>,
    /// Unknown fields.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `mcp`: zblade's MCP server (`zblade mcp`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct McpSettings {
    /// A bearer token `zblade mcp --http` requires of every request (`--token` and
    /// `ZBLADE_MCP_TOKEN` override it). Empty: none on loopback; binding beyond loopback
    /// needs one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub token: String,
    /// Unknown fields.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `proxy`: the model proxy (`zblade proxy`) — where it listens and which providers it forwards to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProxySettings {
    /// Where `zblade proxy` listens.
    pub listen: String,
    /// Where OpenAI-style requests go (Chat Completions, Responses, models, embeddings, ...).
    pub openai_upstream: String,
    /// Where Anthropic requests go (`/v1/messages`, and anything sent with `anthropic-version`).
    pub anthropic_upstream: String,
    /// The most time spent assembling memory for one request, in milliseconds; past it the
    /// request goes upstream without memory (and says why in `x-zblade-error`).
    pub context_timeout_ms: u64,
    /// Unknown fields.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Default for ProxySettings {
    fn default() -> Self {
        ProxySettings {
            listen: "127.0.0.1:8765".into(),
            openai_upstream: "https://api.openai.com".into(),
            anthropic_upstream: "https://api.anthropic.com".into(),
            context_timeout_ms: 2_000,
            extra: Map::new(),
        }
    }
}

/// `import`: the coding agents whose sessions `zblade watch` and the tray follow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ImportSettings {
    /// Source names (`claude-code`, `codex`, `aider`, `continue`, `cline`). Empty until the user
    /// enables one: reading another tool's store is reading outside the project, so it needs
    /// consent. An explicit `zblade import` is consent for that one run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub enabled: Vec<String>,
    /// Unknown fields.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The code model shipped with zblade (trained here on documented public code; docs/SEARCH.md,
/// "How the code model is made"): the default embedding model for code.
pub const DEFAULT_CODE_MODEL: &str = "zblade-code-v2";

/// Code models zblade shipped as the default before [`DEFAULT_CODE_MODEL`], oldest first. A
/// project whose settings name one got it from an older `zblade init`, not by choice, so it
/// follows today's default (see [`SearchSettings::code_model_in_use`]).
pub const FORMER_DEFAULT_CODE_MODELS: &[&str] = &["zblade-code-v1"];

/// The longest `search.release_models_after_minutes` the app and `Project` accept: a day.
pub const MAX_RELEASE_MODELS_AFTER_MINUTES: u32 = 24 * 60;

/// `search`: the embedding models for semantic search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SearchSettings {
    /// The model for conversations and moments: a model name, looked up in
    /// `$ZBLADE_MODELS_DIR` (default `~/.cache/zblade/models`), then among an installed
    /// package's (`/usr/share/zblade/models`), or an absolute path to a model directory.
    pub embedding_model: String,
    /// The model for project code, named the same way. When it is not installed, code is
    /// embedded with `embedding_model`; set it equal to `embedding_model` for one model.
    pub code_model: String,
    /// Minutes the desktop app (its searches and its tray indexer) and `zblade watch` keep the
    /// embedding models and open vector tables after their last use before letting them go; the
    /// next search loads them again. 0 keeps them loaded. (`zblade serve` keeps them: being
    /// warm is its job; `--idle-exit` ends it.) The app's Settings → Indexer sets it.
    pub release_models_after_minutes: u32,
    /// Unknown fields.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Default for SearchSettings {
    fn default() -> Self {
        SearchSettings {
            embedding_model: "all-minilm-l6-v2-int8".into(),
            code_model: DEFAULT_CODE_MODEL.into(),
            release_models_after_minutes: 5,
            extra: Map::new(),
        }
    }
}

impl SearchSettings {
    /// How long the models may sit unused before a long-running process lets them go; `None`:
    /// never ([`SearchSettings::release_models_after_minutes`] is 0).
    pub fn release_models_after(&self) -> Option<std::time::Duration> {
        (self.release_models_after_minutes > 0)
            .then(|| std::time::Duration::from_secs(u64::from(self.release_models_after_minutes) * 60))
    }

    /// The code model code is embedded with: `code_model`, except that a former default means
    /// today's ([`FORMER_DEFAULT_CODE_MODELS`]): the new model re-embeds the project's code on
    /// its next index (vectors are kept per model id), and the package need not carry the old
    /// one. To keep an older model, name its directory by absolute path.
    pub fn code_model_in_use(&self) -> &str {
        if FORMER_DEFAULT_CODE_MODELS.contains(&self.code_model.as_str()) {
            DEFAULT_CODE_MODEL
        } else {
            &self.code_model
        }
    }
}

impl Settings {
    /// Settings for a new project, with a fresh project id.
    pub fn new_project() -> Self {
        let mut settings = Settings::default();
        settings.project.id = ids::new_id(ids::PROJECT);
        settings
    }

    /// Reads and parses `path`, naming the file, line and field on failure.
    pub fn load(path: &Path) -> Result<Self> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        crate::artifact::parse_json(&bytes, &path.display().to_string())
    }

    /// Serialises the settings as pretty JSON with a trailing newline.
    pub fn to_json(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec_pretty(self).expect("settings always serialise");
        bytes.push(b'\n');
        bytes
    }

    /// Writes the settings atomically.
    pub fn save(&self, path: &Path) -> Result<()> {
        fsio::write_atomic(path, &self.to_json())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_rfc_002() {
        let json: Value = serde_json::from_slice(&Settings::default().to_json()).unwrap();
        assert_eq!(json["storage"]["mode"], "local");
        assert_eq!(json["storage"]["cache"]["enabled"], true);
        assert_eq!(json["storage"]["cache"]["max_size_mb"], 100);
        assert_eq!(json["context"]["max_tokens"], 8000);
        assert_eq!(json["context"]["compression"]["enabled"], true);
        assert_eq!(json["context"]["compression"]["model"], "local");
        assert_eq!(json["privacy"]["telemetry"], false);
    }

    #[test]
    fn a_former_default_code_model_follows_the_default() {
        let mut search = SearchSettings::default();
        assert_eq!(search.code_model_in_use(), DEFAULT_CODE_MODEL);
        search.code_model = "zblade-code-v1".into();
        assert_eq!(search.code_model_in_use(), DEFAULT_CODE_MODEL);
        // Chosen by the user (a path, another model): kept.
        search.code_model = "/opt/models/zblade-code-v1".into();
        assert_eq!(search.code_model_in_use(), "/opt/models/zblade-code-v1");
        search.code_model = "all-minilm-l6-v2-int8".into();
        assert_eq!(search.code_model_in_use(), "all-minilm-l6-v2-int8");
    }

    #[test]
    fn unknown_fields_survive_a_round_trip() {
        let text = r#"{"storage": {"mode": "server", "future_knob": [1, 2]}, "theme": "dark"}"#;
        let settings: Settings = serde_json::from_str(text).unwrap();
        assert_eq!(settings.storage.mode, StorageMode::Server);
        let back: Value = serde_json::from_slice(&settings.to_json()).unwrap();
        assert_eq!(back["theme"], "dark");
        assert_eq!(back["storage"]["future_knob"], serde_json::json!([1, 2]));
        assert_eq!(back["context"]["max_tokens"], 8000, "missing fields get their defaults");
    }
}

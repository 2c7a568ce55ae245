//! The app's own settings (not a project's): whether the first-run privacy wizard was
//! completed and what it decided, recent projects, and the indexer switches. Kept in
//! `$ZBLADE_CONFIG_DIR/app.json` (default `$XDG_CONFIG_HOME/zblade`, else `~/.config/zblade`),
//! written atomically; a damaged file is moved aside (never deleted) and the wizard runs again.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use specta::Type;
use zblade_engine::{ContextTier, StorageMode};

/// How many recent projects the Projects view remembers.
const MAX_RECENT: usize = 12;

/// What the first-run wizard decided and what the app remembers between runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
#[serde(default)]
pub struct AppConfig {
    /// The first-run privacy wizard was completed: until then nothing else is shown and
    /// nothing may use the network.
    pub wizard_completed: bool,
    /// Where new projects keep memory: `local` (the default) or `server`.
    pub storage_mode: StorageMode,
    /// The user allowed network use (model downloads; a sync server). Off until they say so.
    pub allow_network: bool,
    /// Recently opened projects, newest first.
    pub recent_projects: Vec<RecentProject>,
    /// The background indexer is paused.
    pub indexer_paused: bool,
    /// Coding agents whose sessions the user agreed to import (the wizard or Settings →
    /// Sources): each project opened follows those of them it has sessions of. Empty until the
    /// user ticks one; reading another tool's store needs consent.
    #[serde(default)]
    pub follow_sources: Vec<String>,
    /// The models the Chat view talks to (Settings → Models). Their API keys are in the
    /// operating system's keyring, never here.
    #[serde(default)]
    pub chat_models: Vec<ChatModelConfig>,
    /// Whether the chat runs a model's tool calls at once or asks first.
    #[serde(default)]
    pub chat_tools: ToolPolicy,
}

/// Where a chat model runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Type)]
#[serde(rename_all = "snake_case")]
pub enum ChatProvider {
    /// An installed GGUF model run by llama.cpp inside the app: nothing leaves the machine.
    Local,
    /// An OpenAI-compatible server (Ollama, LM Studio, llama.cpp's server, vLLM, OpenRouter,
    /// OpenAI).
    Openai,
    /// Anthropic's Messages API.
    Anthropic,
}

/// A model in the registry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
pub struct ChatModelConfig {
    /// Its id in the registry (letters, digits, `-`, `_`, `.`); the keyring entry's name.
    pub id: String,
    /// What the model picker shows.
    pub label: String,
    /// Where it runs.
    pub provider: ChatProvider,
    /// The server's base URL (empty for a local model).
    pub base_url: String,
    /// The model's name at the server, or the installed GGUF model's name.
    pub model: String,
    /// Its tier (seed 004): shapes the memory packed into each turn.
    pub tier: ContextTier,
    /// Its context window in tokens: a turn's memory budget is a share of it.
    pub context_window: u32,
    /// Whether it is offered the project tools (read_project_file, search_project,
    /// search); a local model is told them in its system text.
    pub tools: bool,
}

/// What the chat does when a model calls a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, Type)]
#[serde(rename_all = "snake_case")]
pub enum ToolPolicy {
    /// Ask before each call (the default: a remote model reads what the tool returns).
    #[default]
    Ask,
    /// Run the read-only tools without asking.
    Allow,
}

impl Default for AppConfig {
    fn default() -> Self {
        AppConfig {
            wizard_completed: false,
            storage_mode: StorageMode::Local,
            allow_network: false,
            recent_projects: Vec::new(),
            indexer_paused: false,
            follow_sources: Vec::new(),
            chat_models: Vec::new(),
            chat_tools: ToolPolicy::Ask,
        }
    }
}

/// A project opened before.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
pub struct RecentProject {
    /// Its root folder.
    pub path: String,
    /// The folder's name.
    pub name: String,
    /// When it was last opened (RFC 3339).
    pub opened_at: String,
}

/// The directory holding `app.json`.
pub fn config_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("ZBLADE_CONFIG_DIR") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("zblade");
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
    home.join(".config/zblade")
}

/// Reads the config at `path`. A missing file gives the defaults (first run). A damaged one is
/// renamed to `app.json.damaged-TIMESTAMP` and the defaults are used; the notice says so.
pub fn load(path: &Path) -> (AppConfig, Option<String>) {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (AppConfig::default(), None),
        Err(e) => {
            return (
                AppConfig::default(),
                Some(format!("{}: {e}; using defaults", path.display())),
            );
        }
    };
    match serde_json::from_slice::<AppConfig>(&bytes) {
        Ok(config) => (config, None),
        Err(e) => {
            let stamp = chrono_stamp();
            let aside = path.with_extension(format!("json.damaged-{stamp}"));
            let moved = std::fs::rename(path, &aside).is_ok();
            // serde_json's message ends with its own " at line L column C"; we lead with it.
            let message = e.to_string();
            let message = message.split(" at line ").next().unwrap_or_default();
            let notice = format!(
                "{}:{}:{}: {message}; the app settings were reset{}",
                path.display(),
                e.line(),
                e.column(),
                if moved {
                    format!(" (the old file is kept as {})", aside.display())
                } else {
                    String::new()
                }
            );
            (AppConfig::default(), Some(notice))
        }
    }
}

/// Writes the config atomically (temp file in the same directory, then rename).
pub fn save(path: &Path, config: &AppConfig) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".app.json.{}.tmp", std::process::id()));
    let mut bytes = serde_json::to_vec_pretty(config).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    std::fs::write(&tmp, &bytes)?;
    std::fs::File::open(&tmp)?.sync_all()?;
    std::fs::rename(&tmp, path)
}

impl AppConfig {
    /// Puts `root` first in the recent list (once).
    pub fn remember(&mut self, root: &Path) {
        let path = root.to_string_lossy().into_owned();
        self.recent_projects.retain(|p| p.path != path);
        let name = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.clone());
        self.recent_projects.insert(
            0,
            RecentProject {
                path,
                name,
                opened_at: now_rfc3339(),
            },
        );
        self.recent_projects.truncate(MAX_RECENT);
    }
}

fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn chrono_stamp() -> String {
    now_rfc3339().replace([':', '.'], "-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_file_is_a_first_run() {
        let dir = tempfile::tempdir().unwrap();
        let (config, notice) = load(&dir.path().join("app.json"));
        assert!(!config.wizard_completed);
        assert!(!config.allow_network);
        assert_eq!(config.storage_mode, StorageMode::Local);
        assert!(notice.is_none());
    }

    #[test]
    fn round_trip_and_recent_projects_are_deduplicated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/app.json");
        let mut config = AppConfig::default();
        config.remember(Path::new("/tmp/a"));
        config.remember(Path::new("/tmp/b"));
        config.remember(Path::new("/tmp/a"));
        assert_eq!(config.recent_projects.len(), 2);
        assert_eq!(config.recent_projects[0].name, "a");
        save(&path, &config).unwrap();
        assert_eq!(load(&path).0, config);
        let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temp file left behind");
    }

    #[test]
    fn damaged_file_is_moved_aside_and_named_in_the_notice() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.json");
        std::fs::write(&path, "{\n  \"wizard_completed\": 12\n}").unwrap();
        let (config, notice) = load(&path);
        assert!(!config.wizard_completed);
        let notice = notice.unwrap();
        assert!(notice.contains("app.json:2:"), "{notice}");
        assert!(notice.contains("expected a boolean"), "{notice}");
        assert!(!path.exists());
        let kept: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(kept.len(), 1);
        assert!(kept[0].file_name().to_string_lossy().contains("damaged"));
    }
}

//! The Chat view's side in the app: the model registry (Settings → Models), and turns run by
//! zblade-chat — the same crate as `zblade chat` — streamed to the window as [`ChatStream`]
//! events.
//!
//! - A chat uses a project handle of its own, so a long answer never holds the handle the
//!   other views read with.
//! - A model off this machine is used only after network use is allowed (the wizard's choice)
//!   and, before its first send in a chat, the user has seen exactly what leaves (the packed
//!   memory and the prompt) and said "send" or "always for this model".
//! - Tool calls run here; with the "ask" policy each waits for the user's answer in the window.
//! - API keys are read from the OS keyring ([`crate::keys`]) for each turn and never written
//!   anywhere else.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, mpsc};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use specta::Type;
use tauri::{AppHandle, Manager};
use tauri_specta::Event;
use zblade_chat::{Api, Chat, ChatError, Endpoint, LocalModel, Model, ToolUse, TurnEvents, TurnOptions};
use zblade_engine::Project;

use crate::chat_state::ChatState;
use crate::config::{ChatModelConfig, ChatProvider, ToolPolicy};
use crate::error::{AppError, AppResult, ErrorCode};
use crate::state::{AppState, blocking};

/// How long a tool call waits for the user's answer before it is declined.
const APPROVAL_WAIT: Duration = Duration::from_secs(600);

/// The registry as Settings → Models and the model picker show it.
#[derive(Debug, Clone, Serialize, Type)]
pub struct ChatModels {
    /// The registered models.
    pub models: Vec<ChatModelView>,
    /// What happens when a model calls a tool.
    pub tools: ToolPolicy,
    /// Installed GGUF models a local chat model can name.
    pub local_files: Vec<String>,
}

/// A registered model.
#[derive(Debug, Clone, Serialize, Type)]
pub struct ChatModelView {
    /// The registry entry.
    pub config: ChatModelConfig,
    /// A key is stored for it (keyring or this session).
    pub has_key: bool,
    /// What it sends leaves this machine.
    pub remote: bool,
    /// The memory budget of its turns in the open project (zblade-chat's share of its window);
    /// `None` without a project.
    pub memory_budget: Option<u32>,
}

/// One turn asked by the window.
#[derive(Debug, Clone, Deserialize, Type)]
pub struct ChatRequest {
    /// The registered model's id.
    pub model_id: String,
    /// The chat to go on with; `None` starts one.
    pub conversation_id: Option<String>,
    /// What the user wrote.
    pub prompt: String,
    /// The user's answer to the consent preview, when one was shown.
    pub consent: ConsentAnswer,
}

/// The answer to "this leaves your machine: send it?".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Type)]
#[serde(rename_all = "snake_case")]
pub enum ConsentAnswer {
    /// Not asked yet.
    None,
    /// Send, and do not ask again in this chat.
    Once,
    /// Send, and never ask again for this model.
    Always,
}

/// How a turn asked by the window ended.
#[derive(Debug, Clone, Serialize, Type)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ChatOutcome {
    /// Nothing was sent: the user must first see what would leave the machine.
    NeedsConsent(ConsentPreview),
    /// The turn ran.
    Answered(ChatTurnView),
}

/// What a remote model would receive.
#[derive(Debug, Clone, Serialize, Type)]
pub struct ConsentPreview {
    /// The host it goes to.
    pub host: String,
    /// The model.
    pub model: String,
    /// Exactly what is sent: each message of the request, in order.
    pub text: String,
    /// Tokens of packed memory in it.
    pub memory_tokens: u32,
}

/// A finished turn.
#[derive(Debug, Clone, Serialize, Type)]
pub struct ChatTurnView {
    /// The conversation it is recorded in.
    pub conversation_id: String,
    /// The answer.
    pub text: String,
    /// The answer did not end (stopped, cut off, an error mid-stream).
    pub partial: bool,
    /// An error the model sent mid-answer.
    pub error: Option<String>,
    /// Tokens and entries of memory the turn carried.
    pub memory_tokens: u32,
    /// Entries of memory.
    pub memory_entries: u32,
    /// The tools it called.
    pub tool_calls: Vec<ToolCallView>,
    /// What the turn told the user on the way (asked again with less memory, tools refused).
    pub notices: Vec<String>,
}

/// A tool call, as its card shows it.
#[derive(Debug, Clone, Serialize, Deserialize, Type)]
pub struct ToolCallView {
    /// The tool.
    pub name: String,
    /// Its arguments as the model wrote them.
    pub arguments: String,
    /// Bytes of its result (0 while it waits for an answer).
    pub result_bytes: u32,
    /// The result's start, for the expanded card.
    pub result_preview: String,
    /// It failed or was declined.
    pub is_error: bool,
}

/// What streams into the window while a turn runs.
#[derive(Debug, Clone, Serialize, Deserialize, Type, Event)]
pub struct ChatStream {
    /// The conversation of the turn.
    pub conversation_id: String,
    /// `text` (a piece of the answer), `ask` (a tool call waits for the user), `tool` (a call
    /// ran) or `notice`.
    pub kind: String,
    /// The piece of text, or the notice.
    pub text: String,
    /// The tool call (`ask`, `tool`).
    pub tool: Option<ToolCallView>,
}

/// The registry, with key presence and the installed GGUF models.
pub fn models(state: &AppState) -> ChatModels {
    let config = state.config();
    // What needs the open project, read under its lock; the keyring is asked after.
    let (local_files, budgets): (Vec<String>, Vec<Option<u32>>) = {
        let guard = state.project.lock().ok();
        let project = guard.as_ref().and_then(|p| p.as_ref());
        let files = project
            .map(|p| p.compressor_models())
            .unwrap_or_default()
            .into_iter()
            .filter(|m| m.problem.is_none())
            .map(|m| m.name)
            .collect();
        let budgets = config
            .chat_models
            .iter()
            .map(|m| project.map(|p| turn_options(m).memory_budget(p) as u32))
            .collect();
        (files, budgets)
    };
    ChatModels {
        models: config
            .chat_models
            .iter()
            .zip(budgets)
            .map(|(m, memory_budget)| ChatModelView {
                has_key: m.provider != ChatProvider::Local && state.chat.keys.has(&m.id),
                remote: is_remote(m),
                memory_budget,
                config: m.clone(),
            })
            .collect(),
        tools: config.chat_tools,
        local_files,
    }
}

/// True when what is sent to `model` leaves this machine.
fn is_remote(model: &ChatModelConfig) -> bool {
    model.provider != ChatProvider::Local && !endpoint(model, None).is_local()
}

fn endpoint(model: &ChatModelConfig, api_key: Option<String>) -> Endpoint {
    Endpoint {
        base_url: model.base_url.trim().to_string(),
        model: model.model.trim().to_string(),
        api_key,
        api: match model.provider {
            ChatProvider::Anthropic => Api::Messages,
            _ => Api::ChatCompletions,
        },
    }
}

/// Checks a registry entry before it is saved; the message names the field.
pub fn check(model: &ChatModelConfig) -> AppResult<()> {
    let invalid = |why: String| Err(AppError::new(ErrorCode::InvalidInput, why));
    let id_ok =
        |s: &str| !s.is_empty() && s.len() <= 64 && s.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    if !id_ok(&model.id) {
        return invalid(format!("id {:?}: use 1–64 letters, digits, '.', '_' or '-'", model.id));
    }
    if model.label.trim().is_empty() || model.label.chars().count() > 100 {
        return invalid("label: give the model a name of at most 100 characters".into());
    }
    if !(512..=4_000_000).contains(&model.context_window) {
        return invalid(format!(
            "context window {}: it must be between 512 and 4,000,000 tokens",
            model.context_window
        ));
    }
    match model.provider {
        ChatProvider::Local if !id_ok(&model.model) => invalid(format!(
            "model {:?}: name an installed GGUF model (Settings → Models → Compressor, or `zblade compressor import`)",
            model.model
        )),
        ChatProvider::Local => Ok(()),
        _ => endpoint(model, None)
            .check()
            .map_err(|e| AppError::new(ErrorCode::InvalidInput, format!("base URL or model: {e}"))),
    }
}

/// Checks an API key before it is stored.
pub fn check_key(key: &str) -> AppResult<()> {
    if key.len() > 4096 || key.chars().any(char::is_control) {
        return Err(AppError::new(
            ErrorCode::InvalidInput,
            "API key: at most 4096 characters, without line breaks or control characters",
        ));
    }
    Ok(())
}

/// Runs one turn for the window (on a blocking thread).
pub fn send(app: &AppHandle, state: &AppState, request: ChatRequest) -> AppResult<ChatOutcome> {
    let config = state.config();
    let registered = config
        .chat_models
        .iter()
        .find(|m| m.id == request.model_id)
        .cloned()
        .ok_or_else(|| {
            AppError::new(
                ErrorCode::NotFound,
                format!("no model {:?} in Settings → Models", request.model_id),
            )
        })?;
    let prompt = request.prompt.trim();
    if prompt.is_empty() {
        return Err(AppError::new(ErrorCode::InvalidInput, "Write a prompt first."));
    }
    let remote = is_remote(&registered);
    if remote {
        crate::network::require_consent(&config, &format!("Chatting with {}", registered.label))?;
    }
    let root = state.project_root().ok_or_else(AppError::no_project)?;
    let chat_state = &state.chat;
    let mut guard = chat_state.project.lock().map_err(AppError::internal)?;
    if guard.as_ref().is_none_or(|p| p.layout().root() != root) {
        *guard = Some(Project::open(&root)?);
    }
    let project = guard.as_mut().expect("opened above");

    let model = match registered.provider {
        ChatProvider::Local => Model::Local(local_model(chat_state, project, &registered)?),
        _ => {
            // A server on this machine (Ollama, llama.cpp) rarely wants a key: one that cannot
            // be read from an absent keyring is then left out rather than failing the turn.
            let key = match chat_state.keys.read(&registered.id) {
                Ok(key) => key,
                Err(_) if !remote => None,
                Err(e) => return Err(e),
            };
            Model::Remote(endpoint(&registered, key))
        }
    };
    let mut chat = match &request.conversation_id {
        Some(id) => Chat::resume(project, id).map_err(chat_error)?,
        None => Chat::start(),
    };
    let options = turn_options(&registered);
    let prepared = chat.prepare(project, &model, prompt, options).map_err(chat_error)?;

    if let Model::Remote(endpoint) = &model
        && remote
    {
        let cache = project.layout().cache_dir();
        let this_chat = format!("{}|{}", chat.conversation(), registered.id);
        let mut consented = chat_state.consented.lock().map_err(AppError::internal)?;
        let given = zblade_chat::consent::given(&cache, endpoint) || consented.contains(&this_chat);
        match request.consent {
            _ if given => {}
            ConsentAnswer::None => {
                return Ok(ChatOutcome::NeedsConsent(ConsentPreview {
                    host: endpoint.host().unwrap_or_default(),
                    model: endpoint.model.clone(),
                    text: zblade_chat::consent::preview(&prepared.body),
                    memory_tokens: prepared.memory_tokens as u32,
                }));
            }
            ConsentAnswer::Once => {
                consented.insert(this_chat);
            }
            ConsentAnswer::Always => {
                zblade_chat::consent::remember(&cache, endpoint).map_err(AppError::internal)?;
            }
        }
    }

    chat_state.stop.store(false, Ordering::Relaxed);
    let mut window_events = Window {
        app,
        chat: chat_state,
        conversation: chat.conversation().to_string(),
        ask: config.chat_tools == ToolPolicy::Ask,
        notices: Vec::new(),
    };
    let sent = chat.send(project, &model, prepared, &mut window_events, &chat_state.stop);
    let notices = window_events.notices;
    let turn = sent.map_err(|e| {
        let mut error = chat_error(e);
        error.message = format!("{} (your prompt is kept in this chat)", error.message);
        error
    })?;
    Ok(ChatOutcome::Answered(ChatTurnView {
        conversation_id: chat.conversation().to_string(),
        text: turn.text,
        partial: turn.partial,
        error: turn.error,
        memory_tokens: turn.memory_tokens as u32,
        memory_entries: turn.memory_entries as u32,
        tool_calls: turn.tool_calls.iter().map(tool_view).collect(),
        notices,
    }))
}

/// How a turn with the registered `model` is asked: its tier and tools, and its window (from
/// which zblade-chat decides the memory budget and a local model's answer length).
fn turn_options(model: &ChatModelConfig) -> TurnOptions {
    TurnOptions {
        tier: model.tier,
        budget: None,
        window: Some(model.context_window),
        max_tokens: None,
        tools: model.tools,
    }
}

/// After a turn, on the chat's handle: [`zblade_chat::remember`].
pub fn remember(state: &AppState, conversation: &str) {
    let Ok(mut guard) = state.chat.project.lock() else {
        return;
    };
    if let Some(project) = guard.as_mut() {
        for notice in zblade_chat::remember(project, conversation).notices {
            eprintln!("zblade-app: {notice}");
        }
    }
}

/// Stops the running answer (what arrived is kept, marked partial).
pub fn stop(state: &AppState) {
    state.chat.stop.store(true, Ordering::Relaxed);
    // A call waiting for its answer is declined, so the turn can end.
    answer_tool(state, false);
}

/// The user's answer to the tool call waiting for one.
pub fn answer_tool(state: &AppState, allow: bool) {
    if let Ok(mut pending) = state.chat.approval.lock()
        && let Some(answer) = pending.take()
    {
        let _ = answer.send(allow);
    }
}

/// The installed GGUF model `registered` names, loaded once and kept.
fn local_model(chat: &ChatState, project: &Project, registered: &ChatModelConfig) -> AppResult<Arc<LocalModel>> {
    let installed = project.compressor_models();
    let file = installed.iter().find(|m| m.name == registered.model).ok_or_else(|| {
        AppError::new(
            ErrorCode::NotFound,
            format!(
                "the local model {} is not installed; import a GGUF file in Settings → Models",
                registered.model
            ),
        )
    })?;
    let path = PathBuf::from(&file.path);
    let mut loaded = chat.local.lock().map_err(AppError::internal)?;
    if let Some((p, w, model)) = loaded.as_ref()
        && *p == path
        && *w == registered.context_window
    {
        return Ok(Arc::clone(model));
    }
    *loaded = None; // the previous model's memory goes first
    let model = Arc::new(LocalModel::load(&registered.model, &path, registered.context_window).map_err(chat_error)?);
    *loaded = Some((path, registered.context_window, Arc::clone(&model)));
    Ok(model)
}

/// A turn as the window sees it: text and tool cards as events, tool calls asked about.
struct Window<'a> {
    app: &'a AppHandle,
    chat: &'a ChatState,
    conversation: String,
    ask: bool,
    notices: Vec<String>,
}

impl Window<'_> {
    fn emit(&self, kind: &str, text: &str, tool: Option<ToolCallView>) {
        let _ = ChatStream {
            conversation_id: self.conversation.clone(),
            kind: kind.into(),
            text: text.into(),
            tool,
        }
        .emit(self.app);
    }
}

impl TurnEvents for Window<'_> {
    fn text(&mut self, text: &str) {
        self.emit("text", text, None);
    }

    fn approve(&mut self, name: &str, arguments: &str) -> bool {
        if !self.ask {
            return true;
        }
        if self.chat.stop.load(Ordering::Relaxed) {
            return false;
        }
        let (answer, answered) = mpsc::channel();
        if let Ok(mut pending) = self.chat.approval.lock() {
            *pending = Some(answer);
        }
        let card = ToolCallView {
            name: name.into(),
            arguments: arguments.chars().take(2000).collect(),
            result_bytes: 0,
            result_preview: String::new(),
            is_error: false,
        };
        self.emit("ask", "", Some(card));
        answered.recv_timeout(APPROVAL_WAIT).unwrap_or(false)
    }

    fn tool_done(&mut self, call: &ToolUse) {
        self.emit("tool", "", Some(tool_view(call)));
    }

    fn notice(&mut self, notice: &str) {
        self.notices.push(notice.to_string());
        self.emit("notice", notice, None);
    }
}

fn tool_view(call: &ToolUse) -> ToolCallView {
    ToolCallView {
        name: call.name.clone(),
        arguments: call.arguments.chars().take(2000).collect(),
        result_bytes: call.outcome.size.min(u64::from(u32::MAX)) as u32,
        result_preview: call.outcome.text.chars().take(600).collect(),
        is_error: call.outcome.is_error,
    }
}

fn chat_error(e: ChatError) -> AppError {
    let code = match &e {
        ChatError::Usage(_) | ChatError::TooLong(_) => ErrorCode::InvalidInput,
        ChatError::Connection(_) | ChatError::Provider { .. } => ErrorCode::Network,
        ChatError::Project(_) => ErrorCode::Internal,
    };
    AppError::new(code, e.to_string())
}

// --- commands --------------------------------------------------------------------------------

/// The model registry (Settings → Models, the Chat view's picker).
#[tauri::command]
#[specta::specta]
pub async fn chat_models(app: AppHandle) -> AppResult<ChatModels> {
    blocking(app, |_, state| Ok(models(state))).await
}

/// Adds or replaces a model in the registry; `api_key`, when given, goes to the OS keyring
/// (or, with `session_only`, to this session's memory) — never to the settings file.
#[tauri::command]
#[specta::specta]
pub async fn save_chat_model(
    app: AppHandle,
    model: ChatModelConfig,
    api_key: Option<String>,
    session_only: bool,
) -> AppResult<ChatModels> {
    blocking(app, move |_, state| {
        check(&model)?;
        if let Some(key) = api_key.as_deref().map(str::trim).filter(|k| !k.is_empty()) {
            check_key(key)?;
            state.chat.keys.store(&model.id, key, session_only)?;
        }
        state.update_config(|c| match c.chat_models.iter_mut().find(|m| m.id == model.id) {
            Some(existing) => *existing = model,
            None => c.chat_models.push(model),
        })?;
        Ok(models(state))
    })
    .await
}

/// Removes a model from the registry, and its key from the keyring.
#[tauri::command]
#[specta::specta]
pub async fn remove_chat_model(app: AppHandle, id: String) -> AppResult<ChatModels> {
    blocking(app, move |_, state| {
        state.update_config(|c| c.chat_models.retain(|m| m.id != id))?;
        state.chat.keys.forget(&id)?;
        Ok(models(state))
    })
    .await
}

/// Whether tool calls run at once or are asked about first.
#[tauri::command]
#[specta::specta]
pub async fn set_chat_tools(app: AppHandle, policy: ToolPolicy) -> AppResult<ChatModels> {
    blocking(app, move |_, state| {
        state.update_config(|c| c.chat_tools = policy)?;
        Ok(models(state))
    })
    .await
}

/// Runs one turn: memory packed, the answer streamed as `ChatStream` events, the turn recorded.
/// A remote model's first send in a chat returns `needs_consent` with what would leave.
#[tauri::command]
#[specta::specta]
pub async fn chat_send(app: AppHandle, request: ChatRequest) -> AppResult<ChatOutcome> {
    blocking(app, move |app, state| {
        let outcome = send(app, state, request)?;
        if let ChatOutcome::Answered(turn) = &outcome {
            // Moments and the summary follow on their own thread; the window has its answer.
            let (handle, conversation) = (app.clone(), turn.conversation_id.clone());
            std::thread::spawn(move || remember(&handle.state::<AppState>(), &conversation));
        }
        Ok(outcome)
    })
    .await
}

/// Stops the answer that is streaming.
#[tauri::command]
#[specta::specta]
pub fn chat_stop(app: AppHandle) -> AppResult<()> {
    stop(&app.state::<AppState>());
    Ok(())
}

/// Answers the tool call that waits: run it (`allow`) or decline it.
#[tauri::command]
#[specta::specta]
pub fn chat_answer_tool(app: AppHandle, allow: bool) -> AppResult<()> {
    answer_tool(&app.state::<AppState>(), allow);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use zblade_engine::ContextTier;

    fn model(provider: ChatProvider, base_url: &str) -> ChatModelConfig {
        ChatModelConfig {
            id: "m1".into(),
            label: "A model".into(),
            provider,
            base_url: base_url.into(),
            model: "qwen".into(),
            tier: ContextTier::Balanced,
            context_window: 8192,
            tools: true,
        }
    }

    #[test]
    fn registry_entries_are_checked_with_the_field_named() {
        assert!(check(&model(ChatProvider::Openai, "http://127.0.0.1:11434/v1")).is_ok());
        assert!(check(&model(ChatProvider::Local, "")).is_ok());
        let bad = |m: ChatModelConfig, field: &str| {
            let e = check(&m).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidInput);
            assert!(e.message.starts_with(field), "{field}: {}", e.message);
        };
        bad(model(ChatProvider::Openai, "file:///etc/passwd"), "base URL");
        bad(model(ChatProvider::Anthropic, "not a url"), "base URL");
        bad(
            ChatModelConfig {
                id: "../../x".into(),
                ..model(ChatProvider::Openai, "http://h/v1")
            },
            "id",
        );
        bad(
            ChatModelConfig {
                label: " ".into(),
                ..model(ChatProvider::Openai, "http://h/v1")
            },
            "label",
        );
        bad(
            ChatModelConfig {
                context_window: 10,
                ..model(ChatProvider::Openai, "http://h/v1")
            },
            "context window",
        );
        bad(
            ChatModelConfig {
                model: "../evil".into(),
                ..model(ChatProvider::Local, "")
            },
            "model",
        );
        assert!(check_key("sk-abc").is_ok());
        assert!(
            check_key("sk-abc\nX-Injected: 1").is_err(),
            "a key cannot smuggle a header line"
        );
        assert!(check_key(&"k".repeat(5000)).is_err());
    }

    #[test]
    fn what_leaves_the_machine_is_told_apart() {
        assert!(!is_remote(&model(ChatProvider::Local, "")));
        assert!(!is_remote(&model(ChatProvider::Openai, "http://localhost:1234/v1")));
        assert!(!is_remote(&model(ChatProvider::Openai, "http://[::1]:8080/v1")));
        assert!(is_remote(&model(ChatProvider::Openai, "https://openrouter.ai/api/v1")));
        assert!(is_remote(&model(ChatProvider::Anthropic, "https://api.anthropic.com")));
        assert!(is_remote(&model(ChatProvider::Openai, "http://192.168.1.20:11434/v1")));
    }

    #[test]
    fn the_registry_round_trips_through_app_json_without_keys() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.json");
        let config = crate::config::AppConfig {
            chat_models: vec![model(ChatProvider::Anthropic, "https://api.anthropic.com")],
            chat_tools: ToolPolicy::Allow,
            ..Default::default()
        };
        crate::config::save(&path, &config).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("key"), "the settings hold no key field: {text}");
        assert_eq!(crate::config::load(&path).0, config);
        // An app.json from before the registry reads with an empty one and "ask".
        std::fs::write(&path, r#"{"wizard_completed": true}"#).unwrap();
        let (old, notice) = crate::config::load(&path);
        assert!(notice.is_none() && old.chat_models.is_empty() && old.chat_tools == ToolPolicy::Ask);
    }
}

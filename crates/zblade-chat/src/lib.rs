//! zblade's chat: a conversation with a model where every turn carries the project's memory
//! and is remembered (seed 004, issue "Chat with the project's memory").
//!
//! One turn, in order:
//! 1. **memory** — the prompt is the query of the same engine call as `zblade context`
//!    ([`Project::context`]), packed for the chosen tier and budget; hits from this chat itself
//!    are left out (its turns are sent as history anyway);
//! 2. **request** — an OpenAI Chat Completions request (`POST {base}/chat/completions`,
//!    streamed; Ollama, LM Studio, llama.cpp's server, vLLM, OpenRouter and OpenAI speak it) or
//!    an Anthropic Messages one: the memory, fenced as data, as system text, then the recent
//!    history, then the prompt. A request too long for the model's window is asked again with
//!    less memory;
//! 3. **stream** — tokens are handed to the caller as they arrive; a stop request ends the turn
//!    at once, keeping what arrived;
//! 4. **record** — the prompt and the answer become messages of a zblade conversation
//!    ([`Project::record_exchange`]: secrets redacted, references captured), an answer that
//!    did not end marked `partial`. A chat is resumed from its conversation.
//!
//! The model's words are untrusted: [`printable`] removes terminal control characters before
//! anything is shown, and what is recorded goes through the engine's checks like any import.

pub mod consent;
mod http;
pub mod local;
pub mod tools;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use zblade_core::ToolResult;
use zblade_engine::{ContextRequest, ContextTier, Exchange, Message, Project, Recorded, Role};
use zblade_wire::answer;

use crate::http::{client, provider_message, stream};
pub use zblade_wire::api::Api;

pub use crate::local::LocalModel;

/// The most recent messages sent again with each turn (older ones stay in memory, where the
/// packed context can still bring them back).
pub const HISTORY_MESSAGES: usize = 40;
/// Rounds of tool calls in one turn before the model must answer (it is then asked without
/// tools).
pub const MAX_TOOL_ROUNDS: usize = 6;

/// Where the model runs: an OpenAI-compatible endpoint, or Anthropic's Messages API.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// The API's base URL: up to `/v1` for OpenAI-compatible servers
    /// (`http://127.0.0.1:8080/v1`), the host for Anthropic (`https://api.anthropic.com`).
    pub base_url: String,
    /// The model to ask for.
    pub model: String,
    /// Sent as `Authorization: Bearer …` (Anthropic: `x-api-key`); never written anywhere by
    /// zblade.
    pub api_key: Option<String>,
    /// Which API the server speaks: [`Api::ChatCompletions`] or [`Api::Messages`].
    pub api: Api,
}

/// Anthropic's API version header.
const ANTHROPIC_VERSION: &str = "2023-06-01";
/// Anthropic requires `max_tokens`; this is sent when none is asked for.
const ANTHROPIC_MAX_TOKENS: u32 = 4096;

impl Endpoint {
    /// The host the endpoint names (without user info or port), or `None` if it names none.
    pub fn host(&self) -> Option<String> {
        let url = reqwest::Url::parse(&self.base_url).ok()?;
        url.host_str().map(|h| h.trim_matches(['[', ']']).to_string())
    }

    /// True when the endpoint is on this machine: nothing sent to it leaves the machine.
    pub fn is_local(&self) -> bool {
        match self.host().as_deref() {
            Some("localhost") => true,
            Some(host) => host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback()),
            None => false,
        }
    }

    /// Checks the URL before anything is sent: http or https, with a host.
    pub fn check(&self) -> Result<(), ChatError> {
        let url = reqwest::Url::parse(&self.base_url)
            .map_err(|e| ChatError::Usage(format!("the endpoint {:?} is not a URL: {e}", self.base_url)))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(ChatError::Usage(format!(
                "the endpoint {:?} must be an http:// or https:// URL with a host",
                self.base_url
            )));
        }
        if self.model.trim().is_empty() {
            return Err(ChatError::Usage("no model named (--model)".into()));
        }
        Ok(())
    }

    /// Where a turn is posted.
    fn completions_url(&self) -> String {
        let base = self.base_url.trim_end_matches('/');
        match self.api {
            Api::Messages if base.ends_with("/v1") => format!("{base}/messages"),
            Api::Messages => format!("{base}/v1/messages"),
            _ => format!("{base}/chat/completions"),
        }
    }

    /// Where the models are listed.
    fn models_url(&self) -> String {
        let base = self.base_url.trim_end_matches('/');
        match self.api {
            Api::Messages if !base.ends_with("/v1") => format!("{base}/v1/models"),
            _ => format!("{base}/models"),
        }
    }

    /// The key, as this API wants it.
    fn authorize(&self, request: reqwest::blocking::RequestBuilder) -> reqwest::blocking::RequestBuilder {
        match (self.api, &self.api_key) {
            (Api::Messages, key) => {
                let request = request.header("anthropic-version", ANTHROPIC_VERSION);
                match key {
                    Some(key) => request.header("x-api-key", key),
                    None => request,
                }
            }
            (_, Some(key)) => request.bearer_auth(key),
            (_, None) => request,
        }
    }

    /// What a turn's provenance says about where it went: the model and the host (never a
    /// key or user info from the URL).
    fn channel(&self) -> String {
        format!("{} at {}", self.model, self.host().unwrap_or_default())
    }
}

/// The model a chat talks to: a server ([`Endpoint`]) or a GGUF file run in this process.
#[derive(Debug, Clone)]
pub enum Model {
    /// An OpenAI-compatible or Anthropic endpoint.
    Remote(Endpoint),
    /// A local GGUF model (nothing leaves the machine).
    Local(Arc<LocalModel>),
}

impl Model {
    /// The API whose request body a turn is built in (a local model reads Chat Completions).
    pub fn api(&self) -> Api {
        match self {
            Model::Remote(endpoint) => endpoint.api,
            Model::Local(_) => Api::ChatCompletions,
        }
    }

    /// The model's name, as requests carry it.
    pub fn name(&self) -> &str {
        match self {
            Model::Remote(endpoint) => &endpoint.model,
            Model::Local(local) => local.name(),
        }
    }

    /// True when nothing sent to the model leaves this machine.
    pub fn is_local(&self) -> bool {
        match self {
            Model::Remote(endpoint) => endpoint.is_local(),
            Model::Local(_) => true,
        }
    }

    /// What a turn's provenance says about where it went (never a key).
    fn channel(&self) -> String {
        match self {
            Model::Remote(endpoint) => endpoint.channel(),
            Model::Local(local) => format!("{} (local)", local.name()),
        }
    }

    /// Sends `body` and reads the answer's event stream (see [`stream`]).
    fn stream(&self, body: &Value, on_text: &mut dyn FnMut(&str), stop: &AtomicBool) -> Result<Vec<u8>, ChatError> {
        match self {
            Model::Remote(endpoint) => stream(endpoint, body, on_text, stop),
            Model::Local(local) => local.stream(body, on_text, stop),
        }
    }
}

/// How a turn is asked: how much memory it packs, for which reader, and how long an answer
/// may be.
#[derive(Debug, Clone, Copy)]
pub struct TurnOptions {
    /// The reading model's tier (how the pack is shaped).
    pub tier: ContextTier,
    /// Token budget of the packed memory (`None`: the project's `context.max_tokens`); never
    /// more than a third of `window`; 0 packs none.
    pub budget: Option<usize>,
    /// The model's context window in tokens, when known: the prompt, the history, the memory
    /// and the answer share it.
    pub window: Option<u32>,
    /// The longest answer, in tokens (`max_tokens`); `None`: a local model gets a quarter of
    /// its window (at most 1,024), a server decides for itself.
    pub max_tokens: Option<u32>,
    /// Offer the model the read-only [`tools`].
    pub tools: bool,
}

impl Default for TurnOptions {
    fn default() -> Self {
        TurnOptions {
            tier: ContextTier::Balanced,
            budget: None,
            window: None,
            max_tokens: None,
            tools: true,
        }
    }
}

/// The share of a model's context window the packed memory may take: at most a third (the
/// rest is for the history, the prompt and the answer).
const MEMORY_SHARE: u32 = 3;
/// The longest answer a local model is asked for when none is set: a quarter of its window,
/// at most this.
const LOCAL_ANSWER_TOKENS: u32 = 1_024;

impl TurnOptions {
    /// The memory budget of a turn on `project`: what was asked (else the project's
    /// `context.max_tokens`), within the model's share of its window.
    pub fn memory_budget(&self, project: &Project) -> usize {
        let asked = self.budget.unwrap_or(project.settings().context.max_tokens as usize);
        match self.window {
            Some(window) => asked.min((window / MEMORY_SHARE) as usize),
            None => asked,
        }
    }

    /// The longest answer to ask `model` for (see [`TurnOptions::max_tokens`]).
    pub fn answer_tokens(&self, model: &Model) -> Option<u32> {
        self.max_tokens.or(match (model, self.window) {
            (Model::Local(_), Some(window)) => Some((window / 4).min(LOCAL_ANSWER_TOKENS)),
            _ => None,
        })
    }
}

/// What [`remember`] did after a chat.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Remembered {
    /// Moments written from the chat.
    pub moments: usize,
    /// What could not be done, in words (the chat itself is recorded either way).
    pub notices: Vec<String>,
}

/// After a chat (or a turn of one): the decisions taken in `conversation` become moments and its
/// summary is refreshed, as `zblade index` does for any conversation. With a local compressor
/// model each takes seconds, so a face calls this once at the end or off its window's thread.
/// A chat that recorded nothing yet is left alone.
pub fn remember(project: &mut Project, conversation: &str) -> Remembered {
    let mut done = Remembered::default();
    if project.load_conversation(conversation).is_err() {
        return done;
    }
    match project.extract_moments(Some(conversation)) {
        Ok(report) => done.moments = report.written.len(),
        Err(e) => done
            .notices
            .push(format!("moments of {conversation} were not extracted: {e}")),
    }
    if let Err(e) = project.summarize(Some(conversation), false) {
        done.notices
            .push(format!("the summary of {conversation} was not refreshed: {e}"));
    }
    done
}

/// Why a turn failed.
#[derive(Debug)]
pub enum ChatError {
    /// The request could not be made as asked (bad URL, no model, unknown conversation).
    Usage(String),
    /// The endpoint could not be reached, or the connection failed before any answer.
    Connection(String),
    /// The provider refused the request as too long for the model (its context window), with
    /// no memory left to cut.
    TooLong(String),
    /// The provider refused the request.
    Provider {
        /// The HTTP status.
        status: u16,
        /// What the provider said, made printable and cut to 500 characters.
        message: String,
    },
    /// The project failed (memory assembly, recording).
    Project(String),
}

impl std::fmt::Display for ChatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChatError::Usage(why) => write!(f, "{why}"),
            ChatError::Connection(why) => write!(f, "could not reach the model: {why}"),
            ChatError::Provider { status, message } => write!(f, "the model's server answered {status}: {message}"),
            ChatError::TooLong(message) => write!(f, "the request is too long for the model: {message}"),
            ChatError::Project(why) => write!(f, "{why}"),
        }
    }
}

impl std::error::Error for ChatError {}

/// What one turn sends: the memory it packed and the request body.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The prompt as the user wrote it.
    pub prompt: String,
    /// The packed memory, fenced as it is sent (empty when nothing was found).
    pub memory: String,
    /// Its size in tokens (0 when nothing was found).
    pub memory_tokens: usize,
    /// How many items (messages, moments, code, instructions) it holds.
    pub memory_entries: usize,
    /// How long the memory assembly took.
    pub assembly: Duration,
    /// The request body.
    pub body: Value,
    /// What it was prepared with (a turn asked again with less memory starts from these).
    pub options: TurnOptions,
}

/// How a turn ended.
#[derive(Debug, Clone)]
pub struct Turn {
    /// The answer's text as it arrived.
    pub text: String,
    /// True when the answer did not end (stopped, cut off, or an error mid-stream).
    pub partial: bool,
    /// An error the provider sent in the middle of the answer.
    pub error: Option<String>,
    /// The model that answered, as the provider named it.
    pub model: Option<String>,
    /// The tools the model called, in order.
    pub tool_calls: Vec<ToolUse>,
    /// Tokens of memory the answered request carried (less than prepared when the model's
    /// window made the turn ask again with less).
    pub memory_tokens: usize,
    /// Entries of memory the answered request carried.
    pub memory_entries: usize,
    /// What recording the turn changed.
    pub recorded: Recorded,
}

/// One tool call of a turn.
#[derive(Debug, Clone)]
pub struct ToolUse {
    /// The tool.
    pub name: String,
    /// The arguments as the model wrote them.
    pub arguments: String,
    /// What it gave.
    pub outcome: tools::Outcome,
}

/// What a turn tells its face while it runs.
pub trait TurnEvents {
    /// A piece of the answer's text, as it arrives.
    fn text(&mut self, text: &str);
    /// Whether to run the tool call (`name`, `arguments` as the model wrote them). A declined
    /// call is answered "declined by the user". Default: every call runs (they only read).
    fn approve(&mut self, _name: &str, _arguments: &str) -> bool {
        true
    }
    /// A tool call ran (or was declined).
    fn tool_done(&mut self, _call: &ToolUse) {}
    /// Something the user should know (a server that does not take tools).
    fn notice(&mut self, _notice: &str) {}
}

impl<F: FnMut(&str)> TurnEvents for F {
    fn text(&mut self, text: &str) {
        self(text)
    }
}

/// One chat: a zblade conversation and the messages sent again with each turn.
#[derive(Debug, Clone)]
pub struct Chat {
    conversation: String,
    history: Vec<Message>,
}

impl Chat {
    /// A new chat (its conversation is created by the first turn).
    pub fn start() -> Chat {
        Chat {
            conversation: format!("{}chat-{}", zblade_core::ids::CONVERSATION, ulid_part()),
            history: Vec::new(),
        }
    }

    /// Goes on with the conversation `id`: its messages are the history.
    pub fn resume(project: &Project, id: &str) -> Result<Chat, ChatError> {
        let conversation = project
            .load_conversation(id)
            .map_err(|e| ChatError::Usage(format!("cannot resume {id}: {e}")))?;
        Ok(Chat {
            conversation: conversation.conversation_id,
            history: conversation.messages,
        })
    }

    /// The conversation this chat is recorded in.
    pub fn conversation(&self) -> &str {
        &self.conversation
    }

    /// The messages so far.
    pub fn history(&self) -> &[Message] {
        &self.history
    }

    /// Packs memory for `prompt` and builds the request; sends nothing.
    pub fn prepare(
        &self,
        project: &mut Project,
        model: &Model,
        prompt: &str,
        options: TurnOptions,
    ) -> Result<Prepared, ChatError> {
        let budget = options.memory_budget(project);
        let request = ContextRequest {
            budget: Some(budget),
            tier: options.tier,
            exclude_conversation: Some(self.conversation.clone()),
            ..ContextRequest::new(prompt)
        };
        let started = std::time::Instant::now();
        // A budget of 0 asks for no memory at all (a model whose window is full without it).
        let packed = if budget == 0 {
            None
        } else {
            Some(
                project
                    .context(&request)
                    .map_err(|e| ChatError::Project(format!("memory assembly failed: {e}")))?,
            )
        };
        let assembly = started.elapsed();
        let (text, tokens, entries) = match &packed {
            Some(p) if !p.pack.entries.is_empty() => (p.pack.text.as_str(), p.pack.tokens, p.pack.entries.len()),
            _ => ("", 0, 0),
        };
        let fenced = if entries == 0 {
            String::new()
        } else {
            zblade_wire::fenced(text)
        };
        // Sent again: what the user and the model said (not tool rounds, which carried no text).
        let said: Vec<&Message> = self
            .history
            .iter()
            .filter(|m| matches!(m.role, Role::User | Role::Assistant) && !m.content.trim().is_empty())
            .collect();
        let recent = said.len().saturating_sub(HISTORY_MESSAGES);
        let mut messages: Vec<Value> = said[recent..]
            .iter()
            .map(|m| json!({"role": m.role.as_str(), "content": m.content}))
            .collect();
        messages.push(json!({"role": "user", "content": prompt}));
        // (A local GGUF is told the tools in its system text: see [`local`].)
        let tools = options.tools;
        let body = match model.api() {
            Api::Messages => {
                // Anthropic: the memory is the system text; turns must alternate, so
                // neighbours of one role (a refused prompt, then the next) are joined.
                let mut body = json!({
                    "model": model.name(),
                    "stream": true,
                    "max_tokens": options.answer_tokens(model).unwrap_or(ANTHROPIC_MAX_TOKENS),
                    "messages": alternating(messages),
                });
                if !fenced.is_empty() {
                    body["system"] = json!(fenced);
                }
                if tools {
                    body["tools"] = tools::anthropic_definitions();
                }
                body
            }
            _ => {
                if !fenced.is_empty() {
                    messages.insert(0, json!({"role": "system", "content": fenced}));
                }
                let mut body = json!({"model": model.name(), "stream": true, "messages": messages});
                if let Some(max) = options.answer_tokens(model) {
                    body["max_tokens"] = json!(max);
                }
                if tools {
                    body["tools"] = tools::definitions();
                }
                body
            }
        };
        Ok(Prepared {
            prompt: prompt.to_string(),
            memory_tokens: tokens,
            memory_entries: entries,
            memory: fenced,
            assembly,
            body,
            options,
        })
    }

    /// Sends a prepared turn, hands each piece of the answer to `events` as it arrives, runs
    /// the tools the model calls (asking `events` first) and sends their results back until
    /// it answers, then records the turn. A request the server refuses as too long for the
    /// model's window is prepared again with a quarter of the memory, then none (told through
    /// `events`). `stop` set ends the turn at once (what arrived is kept, marked partial). The
    /// prompt is recorded even when the provider refuses it.
    pub fn send(
        &mut self,
        project: &mut Project,
        model: &Model,
        prepared: Prepared,
        events: &mut dyn TurnEvents,
        stop: &AtomicBool,
    ) -> Result<Turn, ChatError> {
        let mut prompt = Message::new(Role::User, prepared.prompt.clone());
        prompt.id = zblade_core::ids::new_id(zblade_core::ids::MESSAGE);
        // When each was said: history, `zblade history` and time filters read it.
        prompt.timestamp = Some(now());
        let mut memory = (prepared.memory_tokens, prepared.memory_entries);
        let mut options = prepared.options;
        let mut body = prepared.body;
        let mut new_messages = vec![prompt];
        let mut uses: Vec<ToolUse> = Vec::new();
        let mut round = 0;
        let answer = loop {
            let streamed = match model.stream(&body, &mut |t| events.text(t), stop) {
                // A server that does not take tools (llama.cpp without --jinja, some
                // proxies) refuses the request: asked again without them, once.
                Err(ChatError::Provider { status, message })
                    if round == 0
                        && body.get("tools").is_some()
                        && status < 500
                        && message.to_lowercase().contains("tool") =>
                {
                    events.notice(&format!(
                        "the server does not take tools ({message}); asking without them"
                    ));
                    body.as_object_mut().expect("a request is an object").remove("tools");
                    model.stream(&body, &mut |t| events.text(t), stop)
                }
                other => other,
            };
            let bytes = match streamed {
                Ok(bytes) => bytes,
                // Too long with memory in it: asked again with less. Without memory there is
                // nothing to cut, and the prompt is recorded like any refused one.
                Err(ChatError::TooLong(why)) if round == 0 && memory.1 > 0 => {
                    let smaller = match options.memory_budget(project) {
                        budget if budget > 400 => budget / 4,
                        _ => 0,
                    };
                    options.budget = Some(smaller);
                    let less = match smaller {
                        0 => "no memory".to_string(),
                        n => format!("a memory budget of {n} tokens"),
                    };
                    events.notice(&format!("{why}; asking again with {less}"));
                    let smaller = self.prepare(project, model, &prepared.prompt, options)?;
                    (memory, body) = ((smaller.memory_tokens, smaller.memory_entries), smaller.body);
                    continue;
                }
                Err(e) => {
                    // Whatever was said before (the prompt, tool rounds) is remembered.
                    self.record(project, model, new_messages)?;
                    return Err(e);
                }
            };
            let answer = answer::parse(model.api(), &bytes, true);
            let tools_on = body.get("tools").is_some();
            if answer.tool_calls.is_empty() || !tools_on || !answer.complete || stop.load(Ordering::Relaxed) {
                break answer;
            }
            round += 1;
            let (mut message, sent_back) = self.run_tools(project, model.api(), &answer, events, &mut uses);
            message.timestamp = Some(now());
            let messages = body["messages"].as_array_mut().expect("a request has messages");
            messages.push(assistant_with_calls(model.api(), &answer));
            messages.extend(sent_back);
            new_messages.push(message);
            if round >= MAX_TOOL_ROUNDS {
                // Enough: the model answers with what it has.
                body.as_object_mut().expect("a request is an object").remove("tools");
            }
        };
        if !answer.is_empty() {
            let mut message = answer.message(zblade_core::ids::new_id(zblade_core::ids::MESSAGE));
            message.timestamp = Some(now());
            new_messages.push(message);
        }
        let recorded = self.record(project, model, new_messages)?;
        Ok(Turn {
            text: answer.text.clone(),
            partial: !answer.complete,
            error: answer.error.clone(),
            model: answer.model.clone(),
            tool_calls: uses,
            memory_tokens: memory.0,
            memory_entries: memory.1,
            recorded,
        })
    }

    /// Runs the calls of `answer`; returns the assistant message to record (its calls with
    /// their results) and the `tool` messages that send the results back.
    fn run_tools(
        &self,
        project: &mut Project,
        api: Api,
        answer: &answer::Answer,
        events: &mut dyn TurnEvents,
        uses: &mut Vec<ToolUse>,
    ) -> (Message, Vec<Value>) {
        let mut message = answer.message(zblade_core::ids::new_id(zblade_core::ids::MESSAGE));
        let mut sent_back = Vec::new();
        for (i, (id, name, arguments)) in answer.tool_calls.iter().enumerate() {
            let outcome = if events.approve(name, arguments) {
                tools::run(project, name, arguments)
            } else {
                tools::Outcome {
                    text: "error: the user declined this call".into(),
                    size: 0,
                    is_error: true,
                }
            };
            if let Some(call) = message.tool_calls.get_mut(i) {
                call.result = Some(ToolResult {
                    text: outcome.text.clone(),
                    size: outcome.size,
                    is_error: outcome.is_error,
                    extra: Default::default(),
                });
            }
            sent_back.push(match api {
                Api::Messages => json!({"type": "tool_result", "tool_use_id": call_id(id, i),
                                        "content": outcome.text, "is_error": outcome.is_error}),
                _ => json!({"role": "tool", "tool_call_id": call_id(id, i), "content": outcome.text}),
            });
            let used = ToolUse {
                name: name.clone(),
                arguments: arguments.clone(),
                outcome,
            };
            events.tool_done(&used);
            uses.push(used);
        }
        // Anthropic takes every result of a round in one user message.
        if api == Api::Messages {
            sent_back = vec![json!({"role": "user", "content": sent_back})];
        }
        (message, sent_back)
    }

    /// Records `new` after the history, and keeps them in it. Only the new messages are sent:
    /// the earlier ones are recorded already, and each message passed is redacted and compared
    /// again.
    fn record(&mut self, project: &mut Project, model: &Model, new: Vec<Message>) -> Result<Recorded, ChatError> {
        let exchange = Exchange {
            conversation: self.conversation.clone(),
            messages: new.clone(),
            tool: "chat".into(),
            channel: model.channel(),
        };
        let recorded = project
            .record_exchange(exchange)
            .map_err(|e| ChatError::Project(format!("the turn could not be recorded: {e}")))?;
        // Searchable by meaning from the next turn on; a model that cannot load leaves it to
        // keyword search and `zblade index`.
        let _ = project.embed_new_memory();
        self.history.extend(new);
        Ok(recorded)
    }
}

/// The first model `endpoint` lists (`GET {base}/models`): what a chat asks for when no model
/// is named (llama.cpp's server and LM Studio serve the one they loaded; Ollama lists all).
pub fn first_model(endpoint: &Endpoint) -> Result<String, ChatError> {
    let request = endpoint.authorize(client()?.get(endpoint.models_url()).timeout(Duration::from_secs(30)));
    let response = request.send().map_err(|e| ChatError::Connection(e.to_string()))?;
    let status = response.status();
    let text = response.text().map_err(|e| ChatError::Connection(e.to_string()))?;
    if !status.is_success() {
        return Err(ChatError::Provider {
            status: status.as_u16(),
            message: provider_message(&text),
        });
    }
    let listed: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    listed
        .pointer("/data/0/id")
        .and_then(Value::as_str)
        .filter(|id| !id.trim().is_empty() && id.len() <= 200)
        .map(printable)
        .ok_or_else(|| ChatError::Usage(format!("{} lists no model: name one with --model", endpoint.base_url)))
}

/// The assistant message that asked for tools, as the request carries it back.
fn assistant_with_calls(api: Api, answer: &answer::Answer) -> Value {
    if api == Api::Messages {
        let mut content = Vec::new();
        if !answer.text.is_empty() {
            content.push(json!({"type": "text", "text": answer.text}));
        }
        for (i, (id, name, arguments)) in answer.tool_calls.iter().enumerate() {
            // The input as the model wrote it, when it is an object; else an empty one (the
            // tool has already told the model what was wrong with it).
            let input = serde_json::from_str::<Value>(arguments)
                .ok()
                .filter(Value::is_object)
                .unwrap_or_else(|| json!({}));
            content.push(json!({"type": "tool_use", "id": call_id(id, i), "name": name, "input": input}));
        }
        return json!({"role": "assistant", "content": content});
    }
    let calls: Vec<Value> = answer
        .tool_calls
        .iter()
        .enumerate()
        .map(|(i, (id, name, arguments))| {
            json!({"id": call_id(id, i), "type": "function", "function": {"name": name, "arguments": arguments}})
        })
        .collect();
    let content = if answer.text.is_empty() {
        Value::Null
    } else {
        Value::String(answer.text.clone())
    };
    json!({"role": "assistant", "content": content, "tool_calls": calls})
}

/// Messages of the same role in a row joined into one (Anthropic wants turns to alternate).
fn alternating(messages: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(messages.len());
    for m in messages {
        match out.last_mut() {
            Some(last) if last["role"] == m["role"] => {
                let joined = format!(
                    "{}\n\n{}",
                    last["content"].as_str().unwrap_or(""),
                    m["content"].as_str().unwrap_or("")
                );
                last["content"] = json!(joined);
            }
            _ => out.push(m),
        }
    }
    out
}

/// A call's id, made up when the server sent none (some do not).
fn call_id(id: &str, index: usize) -> String {
    if id.is_empty() {
        format!("call_{index}")
    } else {
        id.to_string()
    }
}

/// Now, to the millisecond (as artifacts store times).
fn now() -> chrono::DateTime<chrono::Utc> {
    use chrono::SubsecRound;
    chrono::Utc::now().trunc_subsecs(3)
}

/// The ULID part of a fresh id.
fn ulid_part() -> String {
    zblade_core::ids::new_id("")
}

/// `text` safe to print on a terminal: control characters other than newline and tab (which
/// could move the cursor, rewrite the screen or set the window title) are removed.
pub fn printable(text: &str) -> String {
    text.chars()
        .filter(|c| *c == '\n' || *c == '\t' || !(c.is_control()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_control_sequences_from_a_model_are_removed() {
        let hostile = "ok\x1b]0;owned\x07 \x1b[2J\x1b[1;1Hdone\r\nnext\tline\u{9b}31m";
        let shown = printable(hostile);
        assert!(
            !shown.chars().any(|c| c.is_control() && c != '\n' && c != '\t'),
            "{shown:?}"
        );
        assert!(shown.starts_with("ok]0;owned [2J[1;1Hdone\nnext\tline"), "{shown:?}");
    }

    #[test]
    fn endpoints_say_whether_they_are_on_this_machine() {
        let at = |url: &str| Endpoint {
            base_url: url.into(),
            model: "m".into(),
            api_key: None,
            api: Api::ChatCompletions,
        };
        assert!(at("http://127.0.0.1:8080/v1").is_local());
        assert!(at("http://localhost:11434/v1").is_local());
        assert!(at("http://[::1]:8080/v1").is_local());
        assert!(!at("https://api.openai.com/v1").is_local());
        assert!(!at("http://127.0.0.1.evil.example/v1").is_local());
        assert!(!at("https://user:pw@10.0.0.2/v1").is_local());
        assert_eq!(at("https://user:pw@10.0.0.2/v1").channel(), "m at 10.0.0.2");
        assert!(at("ftp://127.0.0.1/v1").check().is_err());
        assert!(at("not a url").check().is_err());
        assert!(at("http://127.0.0.1:8080/v1").check().is_ok());
    }

    #[test]
    fn provider_errors_are_read_from_their_json_or_shown_short() {
        assert_eq!(
            provider_message(r#"{"error":{"message":"model not found","type":"x"}}"#),
            "model not found"
        );
        assert_eq!(provider_message("Bad Gateway\n"), "Bad Gateway");
        assert_eq!(provider_message(&"x".repeat(2000)).len(), 500);
    }

    #[test]
    fn a_prepared_turn_fences_memory_and_sends_recent_history_then_the_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let (mut project, _) = Project::init(dir.path()).unwrap();
        let json = serde_json::json!({"title": "Hashing", "messages": [
            {"role": "user", "content": "Which password hashing should we use?"},
            {"role": "assistant", "content": "We chose Argon2id for password hashing."},
        ]});
        project.add_conversation(json.to_string().as_bytes(), "c.json").unwrap();
        let endpoint = Model::Remote(Endpoint {
            base_url: "http://127.0.0.1:9/v1".into(),
            model: "tiny".into(),
            api_key: None,
            api: Api::ChatCompletions,
        });
        let mut chat = Chat::start();
        for i in 0..(HISTORY_MESSAGES + 3) {
            chat.history.push(Message::new(Role::User, format!("earlier {i}")));
        }
        let prepared = chat
            .prepare(
                &mut project,
                &endpoint,
                "what password hashing did we choose?",
                TurnOptions::default(),
            )
            .unwrap();
        let messages = prepared.body["messages"].as_array().unwrap();
        assert_eq!(messages[0]["role"], "system");
        let system = messages[0]["content"].as_str().unwrap();
        assert!(
            system.contains("<zblade-memory>") && system.contains("Argon2id"),
            "{system}"
        );
        assert!(prepared.memory_tokens > 0 && prepared.memory_entries > 0);
        assert_eq!(messages.len(), 1 + HISTORY_MESSAGES + 1);
        assert_eq!(messages[1]["content"], "earlier 3");
        assert_eq!(
            messages.last().unwrap()["content"],
            "what password hashing did we choose?"
        );
        assert_eq!(prepared.body["stream"], true);
        assert_eq!(prepared.body["model"], "tiny");
    }

    #[test]
    fn an_unreachable_model_fails_clearly_and_the_prompt_is_still_remembered() {
        let dir = tempfile::tempdir().unwrap();
        let (mut project, _) = Project::init(dir.path()).unwrap();
        // A port nothing listens on.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let endpoint = Model::Remote(Endpoint {
            base_url: format!("http://127.0.0.1:{port}/v1"),
            model: "tiny".into(),
            api_key: None,
            api: Api::ChatCompletions,
        });
        let mut chat = Chat::start();
        let prepared = chat
            .prepare(
                &mut project,
                &endpoint,
                "remember this question",
                TurnOptions::default(),
            )
            .unwrap();
        let err = chat
            .send(
                &mut project,
                &endpoint,
                prepared,
                &mut |_: &str| {},
                &AtomicBool::new(false),
            )
            .unwrap_err();
        assert!(matches!(err, ChatError::Connection(_)), "{err}");
        let stored = project.load_conversation(chat.conversation()).unwrap();
        assert_eq!(stored.messages.len(), 1);
        assert_eq!(stored.messages[0].content, "remember this question");
        let resumed = Chat::resume(&project, chat.conversation()).unwrap();
        assert_eq!(resumed.history().len(), 1);
    }

    #[test]
    fn a_turn_packs_at_most_a_third_of_the_window_and_an_asked_answer_length_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let (project, _) = Project::init(dir.path()).unwrap();
        let setting = project.settings().context.max_tokens as usize;
        let options = TurnOptions::default();
        assert_eq!(
            options.memory_budget(&project),
            setting,
            "no window: the project's setting"
        );
        let small = TurnOptions {
            window: Some(6_000),
            ..TurnOptions::default()
        };
        assert_eq!(small.memory_budget(&project), 2_000.min(setting));
        let asked = TurnOptions {
            budget: Some(500),
            window: Some(1_000_000),
            ..TurnOptions::default()
        };
        assert_eq!(
            asked.memory_budget(&project),
            500,
            "an asked budget within the window stays"
        );

        let remote = Model::Remote(Endpoint {
            base_url: "http://127.0.0.1:1".into(),
            model: "m".into(),
            api_key: None,
            api: Api::ChatCompletions,
        });
        assert_eq!(
            small.answer_tokens(&remote),
            None,
            "a server decides its own answer length"
        );
        let capped = TurnOptions {
            max_tokens: Some(77),
            ..small
        };
        assert_eq!(capped.answer_tokens(&remote), Some(77));
    }
}

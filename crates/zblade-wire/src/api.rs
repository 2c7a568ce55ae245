//! The three model APIs the proxy understands — what it reads from a request (the model, the
//! question, the history) and where it puts memory. Everything else passes through untouched.
//!
//! | API | path | memory goes into |
//! |---|---|---|
//! | OpenAI Chat Completions | `/v1/chat/completions` | the first `system`/`developer` message, or a new one |
//! | OpenAI Responses | `/v1/responses` | `instructions` |
//! | Anthropic Messages | `/v1/messages` | `system` |

use serde_json::Value;
use zblade_core::{Message, Role};

use crate::span;

/// An API whose requests carry a conversation. As a command-line value (`zblade chat --api`),
/// Chat Completions is `openai` and Messages `anthropic`; the chat does not speak Responses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Api {
    /// OpenAI Chat Completions: llama.cpp, Ollama, LM Studio, vLLM, OpenRouter, OpenAI.
    #[cfg_attr(feature = "clap", value(name = "openai"))]
    ChatCompletions,
    /// OpenAI Responses.
    #[cfg_attr(feature = "clap", value(skip))]
    Responses,
    /// Anthropic Messages (Claude Code's API).
    #[cfg_attr(feature = "clap", value(name = "anthropic"))]
    Messages,
}

impl Api {
    /// The API a `POST` to `path` speaks (with or without the `/v1` prefix), if any.
    pub fn for_path(path: &str) -> Option<Api> {
        let path = path.strip_prefix("/v1").unwrap_or(path);
        match path.trim_end_matches('/') {
            "/chat/completions" => Some(Api::ChatCompletions),
            "/responses" => Some(Api::Responses),
            "/messages" => Some(Api::Messages),
            _ => None,
        }
    }

    /// A short name for receipts and headers.
    pub fn name(self) -> &'static str {
        match self {
            Api::ChatCompletions => "chat.completions",
            Api::Responses => "responses",
            Api::Messages => "messages",
        }
    }
}

/// What the proxy reads from one request.
#[derive(Debug, Clone, Default)]
pub struct Conversation {
    /// The model asked for.
    pub model: String,
    /// True when the client asked for a stream.
    pub stream: bool,
    /// The text of the last user message that has text: what memory is searched for.
    pub query: String,
    /// The client's own system prompt (for the fingerprint; never recorded).
    pub system: String,
    /// The history, system prompts left out, in order.
    pub history: Vec<Message>,
    /// Responses: the answer this request continues (its history is on the provider's side).
    pub previous_response: Option<String>,
}

/// Reads a request body. Fails when it is not a JSON object.
pub fn read(api: Api, body: &Value) -> Result<Conversation, String> {
    let object = body.as_object().ok_or("the request body is not a JSON object")?;
    let mut read = Conversation {
        model: object
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        stream: object.get("stream").and_then(Value::as_bool).unwrap_or(false),
        ..Default::default()
    };
    match api {
        Api::ChatCompletions => {
            for message in object.get("messages").and_then(Value::as_array).into_iter().flatten() {
                chat_message(message, &mut read);
            }
        }
        Api::Responses => {
            read.system = text_of(object.get("instructions").unwrap_or(&Value::Null));
            read.previous_response = object
                .get("previous_response_id")
                .and_then(Value::as_str)
                .map(str::to_string);
            match object.get("input") {
                Some(Value::String(text)) => read.history.push(Message::new(Role::User, text.clone())),
                Some(Value::Array(items)) => items.iter().for_each(|item| response_item(item, &mut read)),
                _ => {}
            }
        }
        Api::Messages => {
            read.system = text_of(object.get("system").unwrap_or(&Value::Null));
            for message in object.get("messages").and_then(Value::as_array).into_iter().flatten() {
                anthropic_message(message, &mut read);
            }
        }
    }
    read.query = read
        .history
        .iter()
        .rev()
        .find(|m| m.role == Role::User && !m.content.trim().is_empty())
        .map(|m| m.content.clone())
        .unwrap_or_default();
    Ok(read)
}

fn chat_message(message: &Value, read: &mut Conversation) {
    let role = message.get("role").and_then(Value::as_str).unwrap_or_default();
    let text = text_of(message.get("content").unwrap_or(&Value::Null));
    match role {
        "system" | "developer" => push_system(&mut read.system, &text),
        "user" => read.history.push(Message::new(Role::User, text)),
        "assistant" => {
            let mut m = Message::new(Role::Assistant, text);
            for (id, name, args) in chat_tool_calls(message) {
                m.tool_calls.push(zblade_core::ToolCall::new(id, name, arguments(args)));
            }
            read.history.push(m);
        }
        "tool" | "function" => {
            let mut m = Message::new(Role::Tool, text);
            m.extra
                .insert("tool_call_id".into(), Value::String(str_of(message, "tool_call_id")));
            read.history.push(m);
        }
        _ => {}
    }
}

fn response_item(item: &Value, read: &mut Conversation) {
    match item.get("type").and_then(Value::as_str) {
        Some("function_call") => {
            let call = zblade_core::ToolCall::new(
                str_of(item, "call_id"),
                str_of(item, "name"),
                arguments(item.get("arguments")),
            );
            // Calls follow the assistant text they belong to.
            match read.history.last_mut() {
                Some(last) if last.role == Role::Assistant => last.tool_calls.push(call),
                _ => {
                    let mut m = Message::new(Role::Assistant, "");
                    m.tool_calls.push(call);
                    read.history.push(m);
                }
            }
        }
        Some("function_call_output") => {
            let mut m = Message::new(Role::Tool, text_of(item.get("output").unwrap_or(&Value::Null)));
            m.extra
                .insert("tool_call_id".into(), Value::String(str_of(item, "call_id")));
            read.history.push(m);
        }
        Some("message") | None => {
            let text = text_of(item.get("content").unwrap_or(&Value::Null));
            match item.get("role").and_then(Value::as_str) {
                Some("system" | "developer") => push_system(&mut read.system, &text),
                Some("user") => read.history.push(Message::new(Role::User, text)),
                Some("assistant") => read.history.push(Message::new(Role::Assistant, text)),
                _ => {}
            }
        }
        Some(_) => {} // reasoning, web search calls, ...: the provider's, not the conversation's
    }
}

fn anthropic_message(message: &Value, read: &mut Conversation) {
    let role = match message.get("role").and_then(Value::as_str) {
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        _ => return,
    };
    let content = message.get("content").unwrap_or(&Value::Null);
    let mut m = Message::new(role, text_of(content));
    let mut results = Vec::new();
    for block in content.as_array().into_iter().flatten() {
        match block.get("type").and_then(Value::as_str) {
            Some("tool_use") => m.tool_calls.push(zblade_core::ToolCall::new(
                str_of(block, "id"),
                str_of(block, "name"),
                block.get("input").cloned().unwrap_or(Value::Null),
            )),
            Some("tool_result") => {
                let mut r = Message::new(Role::Tool, text_of(block.get("content").unwrap_or(&Value::Null)));
                r.extra
                    .insert("tool_call_id".into(), Value::String(str_of(block, "tool_use_id")));
                results.push(r);
            }
            _ => {}
        }
    }
    // A user turn that only carries tool results is the tools' output, not the person.
    if !(role == Role::User && m.content.trim().is_empty() && !results.is_empty()) {
        read.history.push(m);
    }
    read.history.extend(results);
}

/// The text of a content value: a string, or the text parts of an array of parts/blocks
/// (images and files become a marker: the bytes are the provider's business, not memory's).
pub(crate) fn text_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => {
            let mut out = Vec::new();
            for part in parts {
                match part.get("type").and_then(Value::as_str) {
                    Some("text" | "input_text" | "output_text") => {
                        out.push(part.get("text").and_then(Value::as_str).unwrap_or_default().to_string())
                    }
                    Some("image" | "image_url" | "input_image") => out.push("[image]".into()),
                    Some("file" | "input_file" | "document") => out.push("[file]".into()),
                    None if part.is_string() => out.push(part.as_str().unwrap_or_default().to_string()),
                    _ => {}
                }
            }
            out.join("\n")
        }
        _ => String::new(),
    }
}

fn push_system(system: &mut String, text: &str) {
    if !system.is_empty() {
        system.push('\n');
    }
    system.push_str(text);
}

/// The tool calls of a Chat Completions assistant message, each as (id, function name, the
/// function's `arguments` as sent: a JSON string, or an object from lenient clients).
pub(crate) fn chat_tool_calls(message: &Value) -> impl Iterator<Item = (String, String, Option<&Value>)> {
    message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|call| {
            let function = call.get("function").unwrap_or(&Value::Null);
            (str_of(call, "id"), str_of(function, "name"), function.get("arguments"))
        })
}

pub(crate) fn str_of(value: &Value, key: &str) -> String {
    value.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// Tool arguments: OpenAI sends them as a JSON string; kept as JSON when they parse.
pub(crate) fn arguments(value: Option<&Value>) -> Value {
    match value {
        Some(Value::String(text)) => serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone())),
        Some(other) => other.clone(),
        None => Value::Null,
    }
}

/// The request body with `memory` added where `api` keeps system text; every other byte as
/// sent. `body` must be a JSON object (checked by [`read`]).
pub fn inject(api: Api, body: &[u8], memory: &str) -> Result<Vec<u8>, String> {
    let malformed = || "the request body is not a JSON object".to_string();
    let object_start = body
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .ok_or_else(malformed)?;
    let members = span::members(body, object_start).ok_or_else(malformed)?;
    let find = |key: &str| members.iter().rev().find(|(k, _)| k == key).map(|(_, s)| s.clone());
    let after_brace = object_start + 1;
    let string = |text: &str| format!("\"{}\"", span::escaped(text));
    match api {
        Api::ChatCompletions => {
            let messages = find("messages").ok_or("the request has no `messages`")?;
            let items = span::elements(body, messages.start).ok_or("`messages` is not an array")?;
            if let Some(first) = items.first()
                && let Some(role) = span::member(body, first.start, "role")
                && matches!(&body[role], br#""system""# | br#""developer""#)
                && let Some(content) = span::member(body, first.start, "content")
            {
                return append_to_text(body, content, memory, "text");
            }
            let comma = if items.is_empty() { "" } else { "," };
            let message = format!("{{\"role\":\"system\",\"content\":{}}}{comma}", string(memory));
            Ok(span::splice(body, messages.start + 1, &message))
        }
        Api::Responses => match find("instructions") {
            Some(span) if &body[span.clone()] == b"null" => {
                let mut out = body[..span.start].to_vec();
                out.extend_from_slice(string(memory).as_bytes());
                out.extend_from_slice(&body[span.end..]);
                Ok(out)
            }
            Some(span) => append_to_text(body, span, memory, "input_text"),
            None => Ok(span::splice(
                body,
                after_brace,
                &format!("\"instructions\":{},", string(memory)),
            )),
        },
        Api::Messages => match find("system") {
            Some(span) => append_to_text(body, span, memory, "text"),
            None => Ok(span::splice(
                body,
                after_brace,
                &format!("\"system\":{},", string(memory)),
            )),
        },
    }
}

/// Adds `memory` to a text value: at the end of a string, or as a last part of an array of
/// parts (after any cached ones, so a provider's prompt cache of the client's prefix holds).
fn append_to_text(
    body: &[u8],
    value: std::ops::Range<usize>,
    memory: &str,
    part_type: &str,
) -> Result<Vec<u8>, String> {
    match body[value.start] {
        b'"' => Ok(span::splice(
            body,
            value.end - 1,
            &span::escaped(&format!("\n\n{memory}")),
        )),
        b'[' => {
            let empty = span::elements(body, value.start).is_none_or(|items| items.is_empty());
            let comma = if empty { "" } else { "," };
            let part = format!(
                "{comma}{{\"type\":\"{part_type}\",\"text\":\"{}\"}}",
                span::escaped(memory)
            );
            Ok(span::splice(body, value.end - 1, &part))
        }
        _ => Err("the system text is neither a string nor a list of parts".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn injected(api: Api, body: &str) -> Value {
        serde_json::from_slice(&inject(api, body.as_bytes(), "MEMORY").unwrap()).unwrap()
    }

    #[test]
    fn memory_goes_where_each_api_keeps_system_text() {
        let chat = injected(
            Api::ChatCompletions,
            r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#,
        );
        assert_eq!(chat["messages"][0], json!({"role": "system", "content": "MEMORY"}));
        assert_eq!(chat["messages"][1]["content"], "hi");

        let chat = injected(
            Api::ChatCompletions,
            r#"{"messages":[{"role":"developer","content":[{"type":"text","text":"be brief"}]},{"role":"user","content":"hi"}]}"#,
        );
        assert_eq!(
            chat["messages"][0]["content"][1],
            json!({"type": "text", "text": "MEMORY"})
        );

        let responses = injected(Api::Responses, r#"{"model":"m","input":"hi"}"#);
        assert_eq!(responses["instructions"], "MEMORY");
        let responses = injected(Api::Responses, r#"{"model":"m","instructions":null,"input":"hi"}"#);
        assert_eq!(responses["instructions"], "MEMORY");
        let responses = injected(
            Api::Responses,
            r#"{"model":"m","instructions":"Be brief.","input":"hi"}"#,
        );
        assert_eq!(responses["instructions"], "Be brief.\n\nMEMORY");

        let messages = injected(Api::Messages, r#"{"model":"m","messages":[]}"#);
        assert_eq!(messages["system"], "MEMORY");
        let messages = injected(
            Api::Messages,
            r#"{"system":[{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}],"messages":[]}"#,
        );
        assert_eq!(messages["system"][1], json!({"type": "text", "text": "MEMORY"}));
        assert_eq!(messages["system"][0]["cache_control"]["type"], "ephemeral");
    }

    #[test]
    fn the_question_is_the_last_user_text_and_tool_results_are_not_the_person() {
        let body = json!({"model": "claude", "system": "sys", "messages": [
            {"role": "user", "content": "Why does login fail?"},
            {"role": "assistant", "content": [{"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "a.rs"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "fn a() {}"}]}
        ]});
        let read = read(Api::Messages, &body).unwrap();
        assert_eq!(read.query, "Why does login fail?");
        assert_eq!(read.system, "sys");
        let roles: Vec<Role> = read.history.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool]);
        assert_eq!(read.history[1].tool_calls[0].arguments["file_path"], "a.rs");
    }

    #[test]
    fn chat_tool_arguments_are_kept_as_json() {
        let body = json!({"messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "data:"}}]},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
                "function": {"name": "grep", "arguments": "{\"q\":\"x\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "found"}
        ]});
        let read = read(Api::ChatCompletions, &body).unwrap();
        assert_eq!(read.query, "look\n[image]");
        assert_eq!(read.history[1].tool_calls[0].arguments, json!({"q": "x"}));
        assert_eq!(read.history[2].extra["tool_call_id"], "call_1");
    }
}

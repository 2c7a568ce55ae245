//! A chat model run inside this process: a GGUF file on llama.cpp through zblade-llm (the
//! compressor's runtime), so nothing of the chat leaves the machine.
//!
//! A turn is the same Chat Completions body a remote model gets; [`LocalModel::stream`] runs
//! it and writes the answer as the event stream an OpenAI-compatible server would send, so
//! one parser ([`zblade_wire::answer`]) reads both and a local turn is recorded exactly like a
//! remote one.
//!
//! Tools: llama.cpp's raw API has no tool-call format, so the tools are described in the system
//! text and the model is asked to call one with a `<tool_call>{"name": …, "arguments": {…}}
//! </tool_call>` block (the format Qwen and Hermes instruct models are trained on); results go
//! back in `<tool_response>` blocks. A block is never shown as answer text: it is held back
//! while it streams, then parsed strictly — what is not a JSON object with a known `name` and
//! object `arguments` stays text.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use serde_json::{Value, json};
use zblade_llm::{Compressor, LlmError, Options, Request, Stop, TextSink};

use crate::ChatError;

/// The longest answer when the turn names none.
const DEFAULT_MAX_TOKENS: u32 = 1024;
/// How often a running turn looks at its stop flag.
const STOP_POLL: Duration = Duration::from_millis(20);
/// The longest a local answer may run.
const TIMEOUT: Duration = Duration::from_secs(600);
/// Where a tool call starts and ends in a local model's answer.
const CALL_OPEN: &str = "<tool_call>";
const CALL_CLOSE: &str = "</tool_call>";

/// A loaded local model.
pub struct LocalModel {
    name: String,
    runtime: Compressor,
}

impl std::fmt::Debug for LocalModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalModel")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl LocalModel {
    /// Loads the GGUF file at `path` with a window of `context_tokens` (capped at what the
    /// model was trained on); `name` is how turns name it.
    pub fn load(name: &str, path: &Path, context_tokens: u32) -> Result<LocalModel, ChatError> {
        let options = Options {
            context_tokens,
            ..Options::default()
        };
        let runtime = Compressor::load(path, &options).map_err(|e| ChatError::Usage(e.to_string()))?;
        Ok(LocalModel {
            name: name.to_string(),
            runtime,
        })
    }

    /// The model's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs the Chat Completions `body`, handing each piece of the answer to `on_text`; returns
    /// the answer as an OpenAI event stream. `stop` set cancels the generation before its next
    /// token (the stream then has no end, so the answer reads as partial).
    pub(crate) fn stream(
        &self,
        body: &Value,
        on_text: &mut dyn FnMut(&str),
        stop: &AtomicBool,
    ) -> Result<Vec<u8>, ChatError> {
        let request = self.request(body)?;
        let (pieces, arrived) = mpsc::channel::<String>();
        let sink = TextSink(Arc::new(move |piece: &str| {
            let _ = pieces.send(piece.to_string());
        }));
        let job = self.runtime.submit(Request {
            on_text: Some(sink),
            ..request
        });
        let tools_offered = body.get("tools").is_some();
        let mut events = Vec::new();
        // Everything generated, and how much of it was shown: a tool-call block is held back.
        let mut generated = String::new();
        let mut shown = 0usize;
        let mut pass_on = |piece: String, events: &mut Vec<u8>, generated: &mut String, shown: &mut usize| {
            generated.push_str(&piece);
            let visible = if tools_offered {
                visible_end(generated)
            } else {
                generated.len()
            };
            if visible > *shown {
                let text = &generated[*shown..visible];
                on_text(text);
                events.extend_from_slice(content_event(&self.name, text).as_bytes());
                *shown = visible;
            }
        };
        let ended = loop {
            if stop.load(Ordering::Relaxed) {
                job.cancel();
            }
            while let Ok(piece) = arrived.try_recv() {
                pass_on(piece, &mut events, &mut generated, &mut shown);
            }
            if let Some(ended) = job.wait_timeout(STOP_POLL) {
                break ended;
            }
        };
        // Pieces sent just before the job ended.
        while let Ok(piece) = arrived.try_recv() {
            pass_on(piece, &mut events, &mut generated, &mut shown);
        }
        match ended {
            Ok(generation) => {
                let calls = if tools_offered {
                    tool_calls(&generated)
                } else {
                    Vec::new()
                };
                let reason = if !calls.is_empty() {
                    let deltas: Vec<Value> = calls
                        .iter()
                        .enumerate()
                        .map(|(i, (name, arguments))| {
                            json!({"index": i, "id": format!("call_{i}"), "type": "function",
                                   "function": {"name": name, "arguments": arguments}})
                        })
                        .collect();
                    let chunk = json!({"model": self.name, "choices": [{"index": 0, "delta": {"tool_calls": deltas}}]});
                    events.extend_from_slice(format!("data: {chunk}\n\n").as_bytes());
                    "tool_calls"
                } else {
                    // Held back as the start of a block that never came: it was text after all.
                    if shown < generated.len() {
                        let rest = &generated[shown..];
                        on_text(rest);
                        events.extend_from_slice(content_event(&self.name, rest).as_bytes());
                    }
                    match generation.stop {
                        Stop::End => "stop",
                        Stop::MaxTokens => "length",
                    }
                };
                let last = json!({"model": self.name, "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]});
                events.extend_from_slice(format!("data: {last}\n\ndata: [DONE]\n\n").as_bytes());
                Ok(events)
            }
            // Stopped by the user: what arrived is the (partial) answer.
            Err(LlmError::Cancelled) => Ok(events),
            Err(LlmError::PromptTooLong {
                tokens,
                output,
                context,
            }) => Err(ChatError::TooLong(format!(
                "{tokens} prompt tokens and {output} for the answer exceed the local model's {context}-token window"
            ))),
            Err(e) if events.is_empty() => Err(ChatError::Connection(format!("the local model failed: {e}"))),
            // Failed mid-answer: the answer is partial, and says why.
            Err(e) => {
                let error = json!({"error": {"message": format!("the local model failed: {e}")}});
                events.extend_from_slice(format!("data: {error}\n\n").as_bytes());
                Ok(events)
            }
        }
    }

    fn request(&self, body: &Value) -> Result<Request, ChatError> {
        request_for(body)
    }
}

/// The generation job for a Chat Completions body: system messages (the memory) become the
/// system text, the last user message the prompt, the rest the earlier turns; tool calls and
/// results are written as blocks (see the module's header).
fn request_for(body: &Value) -> Result<Request, ChatError> {
    let messages = body["messages"]
        .as_array()
        .ok_or_else(|| ChatError::Usage("a chat request has no messages".into()))?;
    let mut system = Vec::new();
    let mut turns: Vec<(String, String)> = Vec::new();
    for message in messages {
        let text = message["content"].as_str().unwrap_or_default().to_string();
        match message["role"].as_str() {
            Some("system") => system.push(text),
            Some("user") => turns.push(("user".into(), text)),
            Some("assistant") => {
                // The calls it made, written back in the block format it used.
                let mut said = text;
                for call in message["tool_calls"].as_array().into_iter().flatten() {
                    let arguments: Value = serde_json::from_str(call["function"]["arguments"].as_str().unwrap_or("{}"))
                        .unwrap_or_else(|_| json!({}));
                    let block = json!({"name": call["function"]["name"], "arguments": arguments});
                    said.push_str(&format!("\n{CALL_OPEN}\n{block}\n{CALL_CLOSE}"));
                }
                turns.push(("assistant".into(), said.trim().to_string()));
            }
            // A tool's result goes back as the user's turn (templates without a tool role
            // take it too); the results of one round share that turn.
            Some("tool") => {
                let block = format!("<tool_response>\n{text}\n</tool_response>");
                match turns.last_mut() {
                    Some((role, said)) if role == "tool" => *said = format!("{said}\n{block}"),
                    _ => turns.push(("tool".into(), block)),
                }
            }
            _ => {}
        }
    }
    for (role, _) in &mut turns {
        if role == "tool" {
            *role = "user".into();
        }
    }
    if let Some(tools) = body["tools"].as_array() {
        system.push(tool_instructions(tools));
    }
    // After a tool round the model answers from the results: the last turn is theirs.
    if turns
        .last()
        .is_some_and(|(_, text)| text.starts_with("<tool_response>"))
    {
        let (_, results) = turns.pop().expect("checked above");
        return Ok(Request {
            turns,
            timeout: TIMEOUT,
            ..Request::new(system.join("\n\n"), results, max_tokens(body))
        });
    }
    let prompt = match turns.pop() {
        Some((role, text)) if role == "user" => text,
        _ => {
            return Err(ChatError::Usage(
                "a chat request must end with the user's prompt".into(),
            ));
        }
    };
    Ok(Request {
        turns,
        timeout: TIMEOUT,
        ..Request::new(system.join("\n\n"), prompt, max_tokens(body))
    })
}

/// The longest answer the body asks for.
fn max_tokens(body: &Value) -> u32 {
    body["max_tokens"]
        .as_u64()
        .map_or(DEFAULT_MAX_TOKENS, |n| n.min(u64::from(u32::MAX)) as u32)
}

/// One streamed piece of answer text, as a Chat Completions event.
fn content_event(model: &str, text: &str) -> String {
    let chunk = json!({"model": model, "choices": [{"index": 0, "delta": {"content": text}}]});
    format!("data: {chunk}\n\n")
}

/// The system text that describes the tools and how to call them.
fn tool_instructions(tools: &[Value]) -> String {
    let listed: Vec<Value> = tools.iter().map(|t| t["function"].clone()).collect();
    format!(
        "You can call these tools, which read this project on the user's machine:\n{}\n\n\
         To call one, answer with nothing but one block per call:\n{CALL_OPEN}\n\
         {{\"name\": \"read_project_file\", \"arguments\": {{\"path\": \"src/main.rs\"}}}}\n{CALL_CLOSE}\n\
         The results come back in <tool_response> blocks. Then answer the user.",
        Value::Array(listed)
    )
}

/// How much of `generated` may be shown: all of it, except from the start of a tool-call block
/// (or of what may still become one: a trailing `<tool_c`).
fn visible_end(generated: &str) -> usize {
    if let Some(at) = generated.find(CALL_OPEN) {
        return at;
    }
    // The longest end of the text that begins the opening tag (ASCII: a char boundary).
    (1..CALL_OPEN.len())
        .rev()
        .find(|&n| generated.ends_with(&CALL_OPEN[..n]))
        .map_or(generated.len(), |n| generated.len() - n)
}

/// The tool calls in a local model's answer: each `<tool_call>` block holding a JSON object
/// with a string `name` and an object `arguments` (sent on as a JSON string). Anything else —
/// an unclosed block, broken JSON, a missing name — is not a call.
fn tool_calls(generated: &str) -> Vec<(String, String)> {
    let mut calls = Vec::new();
    let mut rest = generated;
    while let Some(open) = rest.find(CALL_OPEN) {
        let after = &rest[open + CALL_OPEN.len()..];
        let Some(close) = after.find(CALL_CLOSE) else { break };
        if let Ok(call) = serde_json::from_str::<Value>(after[..close].trim())
            && let (Some(name), Some(arguments)) =
                (call["name"].as_str(), call.get("arguments").filter(|a| a.is_object()))
            && !name.is_empty()
            && name.len() <= 64
        {
            calls.push((name.to_string(), arguments.to_string()));
        }
        rest = &after[close + CALL_CLOSE.len()..];
    }
    calls
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_call_block_is_held_back_while_it_streams() {
        assert_eq!(visible_end("The answer."), 11);
        assert_eq!(visible_end("Let me look. <tool_"), 13, "a tag may be starting");
        assert_eq!(visible_end("Let me look. <tool_call>{\"na"), 13);
        assert_eq!(visible_end("a < b"), 5, "a lone < that cannot start the tag is text");
        assert_eq!(visible_end("é<"), "é".len(), "cut at a char boundary");
    }

    #[test]
    fn only_well_formed_blocks_are_calls() {
        let answer = "Reading it.\n<tool_call>\n{\"name\": \"read_project_file\", \"arguments\": {\"path\": \"src/auth.rs\"}}\n</tool_call>\n\
                      <tool_call>{\"name\": \"search\", \"arguments\": {\"query\": \"tokens\"}}</tool_call>";
        assert_eq!(
            tool_calls(answer),
            vec![
                ("read_project_file".to_string(), r#"{"path":"src/auth.rs"}"#.to_string()),
                ("search".to_string(), r#"{"query":"tokens"}"#.to_string()),
            ]
        );
        for broken in [
            "<tool_call>{\"name\": \"x\", \"arguments\": {}}", // never closed
            "<tool_call>{\"name\": 3, \"arguments\": {}}</tool_call>", // name not a string
            "<tool_call>{\"name\": \"x\", \"arguments\": \"rm\"}</tool_call>", // arguments not an object
            "<tool_call>not json</tool_call>",
        ] {
            assert!(tool_calls(broken).is_empty(), "{broken}");
        }
    }

    #[test]
    fn tool_rounds_are_laid_out_as_blocks_for_the_model() {
        let body = json!({
            "messages": [
                {"role": "system", "content": "memory"},
                {"role": "user", "content": "where are tokens checked?"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_0", "type": "function", "function": {"name": "read_project_file", "arguments": "{\"path\":\"src/auth.rs\"}"}}]},
                {"role": "tool", "tool_call_id": "call_0", "content": "fn check() {}"},
            ],
            "tools": crate::tools::definitions(),
        });
        let request = request_for(&body).unwrap();
        assert!(request.system.starts_with("memory") && request.system.contains("<tool_call>"));
        assert!(request.system.contains("read_project_file"));
        assert_eq!(request.turns.len(), 2);
        assert_eq!(
            request.turns[0],
            ("user".to_string(), "where are tokens checked?".to_string())
        );
        let (role, said) = &request.turns[1];
        assert_eq!(role, "assistant");
        assert!(
            said.starts_with("<tool_call>") && said.ends_with("</tool_call>"),
            "{said}"
        );
        let block: Value = serde_json::from_str(
            said.trim_start_matches("<tool_call>")
                .trim_end_matches("</tool_call>")
                .trim(),
        )
        .unwrap();
        assert_eq!(
            block,
            json!({"name": "read_project_file", "arguments": {"path": "src/auth.rs"}})
        );
        assert_eq!(request.user, "<tool_response>\nfn check() {}\n</tool_response>");
    }
}

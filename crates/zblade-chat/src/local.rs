//! A chat model run inside this process: a GGUF file on llama.cpp through zblade-llm (the
//! compressor's runtime), so nothing of the chat leaves the machine.
//!
//! A turn is the same Chat Completions body a remote model gets; [`LocalModel::stream`] runs
//! it and writes the answer as the event stream an OpenAI-compatible server would send, so
//! one parser ([`zblade_proxy::answer`]) reads both and a local turn is recorded exactly like a
//! remote one. Tools are not offered: a raw GGUF has no tool-call format zblade could trust.

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
        let mut events = Vec::new();
        let mut pass_on = |piece: String, events: &mut Vec<u8>| {
            on_text(&piece);
            let chunk = json!({"model": self.name, "choices": [{"index": 0, "delta": {"content": piece}}]});
            events.extend_from_slice(format!("data: {chunk}\n\n").as_bytes());
        };
        let ended = loop {
            if stop.load(Ordering::Relaxed) {
                job.cancel();
            }
            while let Ok(piece) = arrived.try_recv() {
                pass_on(piece, &mut events);
            }
            if let Some(ended) = job.wait_timeout(STOP_POLL) {
                break ended;
            }
        };
        // Pieces sent just before the job ended.
        while let Ok(piece) = arrived.try_recv() {
            pass_on(piece, &mut events);
        }
        match ended {
            Ok(generation) => {
                let reason = match generation.stop {
                    Stop::End => "stop",
                    Stop::MaxTokens => "length",
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

    /// The generation job for a Chat Completions body: system messages (the memory) become
    /// the system text, the last user message the prompt, the rest the earlier turns.
    fn request(&self, body: &Value) -> Result<Request, ChatError> {
        let messages = body["messages"]
            .as_array()
            .ok_or_else(|| ChatError::Usage("a chat request has no messages".into()))?;
        let mut system = Vec::new();
        let mut turns = Vec::new();
        for message in messages {
            let text = message["content"].as_str().unwrap_or_default().to_string();
            match message["role"].as_str() {
                Some("system") => system.push(text),
                Some(role @ ("user" | "assistant")) => turns.push((role.to_string(), text)),
                _ => {}
            }
        }
        let prompt = match turns.pop() {
            Some((role, text)) if role == "user" => text,
            _ => {
                return Err(ChatError::Usage(
                    "a chat request must end with the user's prompt".into(),
                ));
            }
        };
        let max_tokens = body["max_tokens"]
            .as_u64()
            .map_or(DEFAULT_MAX_TOKENS, |n| n.min(u64::from(u32::MAX)) as u32);
        Ok(Request {
            turns,
            timeout: TIMEOUT,
            ..Request::new(system.join("\n\n"), prompt, max_tokens)
        })
    }
}

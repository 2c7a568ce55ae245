//! The chat's HTTP: one client for every turn, a request's event stream read on a thread of
//! its own (so a stop is honoured while the model is silent), each line's text handed on as
//! zblade-wire decodes it, and a provider's error body turned into a message. The turn's logic
//! (memory, history, tools, recording) is `lib.rs`'s.

use std::io::BufRead;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use serde_json::Value;

use crate::{ChatError, Endpoint, printable};

/// How often a waiting turn looks at its stop flag.
const STOP_POLL: Duration = Duration::from_millis(50);

/// How long a model may take to start answering, and to send the next token.
const FIRST_BYTE: Duration = Duration::from_secs(300);

/// The HTTP client of every turn, built once: building one loads the system's certificates
/// (milliseconds on each turn), and one client keeps connections to the server open.
pub(crate) fn client() -> Result<&'static reqwest::blocking::Client, ChatError> {
    static CLIENT: std::sync::OnceLock<reqwest::blocking::Client> = std::sync::OnceLock::new();
    if let Some(client) = CLIENT.get() {
        return Ok(client);
    }
    let built = reqwest::blocking::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .timeout(None)
        .build()
        .map_err(|e| ChatError::Connection(e.to_string()))?;
    Ok(CLIENT.get_or_init(|| built))
}

/// Posts `body` and reads the event stream, handing each text delta to `on_text`; returns the
/// stream's bytes (for [`answer::parse`]). The reading runs on its own thread so a stop
/// request is honoured even while the model is silent.
pub(crate) fn stream(
    endpoint: &Endpoint,
    body: &Value,
    on_text: &mut dyn FnMut(&str),
    stop: &AtomicBool,
) -> Result<Vec<u8>, ChatError> {
    let request = endpoint.authorize(client()?.post(endpoint.completions_url()).json(body));
    let (sender, events) = mpsc::channel::<Result<Vec<u8>, String>>();
    let reader = std::thread::spawn(move || {
        let response = match request.send() {
            Ok(response) => response,
            Err(e) => {
                let _ = sender.send(Err(e.to_string()));
                return Ok(());
            }
        };
        let status = response.status();
        if !status.is_success() {
            let text = response.text().unwrap_or_default();
            if matches!(status.as_u16(), 400 | 413 | 422) && zblade_wire::refused_for_size(text.as_bytes()) {
                return Err(ChatError::TooLong(provider_message(&text)));
            }
            return Err(ChatError::Provider {
                status: status.as_u16(),
                message: provider_message(&text),
            });
        }
        let mut lines = std::io::BufReader::new(response);
        loop {
            let mut line = Vec::new();
            match lines.read_until(b'\n', &mut line) {
                Ok(0) => return Ok(()),
                Ok(_) => {
                    if sender.send(Ok(line)).is_err() {
                        return Ok(()); // the turn was stopped
                    }
                }
                Err(e) => {
                    let _ = sender.send(Err(e.to_string()));
                    return Ok(());
                }
            }
        }
    });
    let mut bytes = Vec::new();
    let mut waited = Duration::ZERO;
    loop {
        if stop.load(Ordering::Relaxed) {
            // The reader ends on its own when its next line finds nobody listening.
            return Ok(bytes);
        }
        match events.recv_timeout(STOP_POLL) {
            Ok(Ok(line)) => {
                waited = Duration::ZERO;
                if let Some(text) = zblade_wire::answer::text_delta(endpoint.api, &line) {
                    on_text(&text);
                }
                bytes.extend_from_slice(&line);
            }
            Ok(Err(e)) if bytes.is_empty() => return Err(ChatError::Connection(e)),
            // Cut off mid-answer: what arrived is the (partial) answer.
            Ok(Err(_)) => return Ok(bytes),
            Err(RecvTimeoutError::Timeout) => {
                waited += STOP_POLL;
                if waited >= FIRST_BYTE {
                    return if bytes.is_empty() {
                        Err(ChatError::Connection(format!(
                            "no answer in {} s",
                            FIRST_BYTE.as_secs()
                        )))
                    } else {
                        Ok(bytes)
                    };
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                return match reader.join() {
                    Ok(Ok(())) => Ok(bytes),
                    Ok(Err(e)) => Err(e),
                    Err(_) => Err(ChatError::Connection("the reader stopped".into())),
                };
            }
        }
    }
}

/// The message of a provider's error body (`{"error": {"message": …}}`), or the body's start.
pub(crate) fn provider_message(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let message = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("error"))
            .or_else(|| v.get("detail"))
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    let text = message.unwrap_or_else(|| body.trim().to_string());
    printable(&text.chars().take(500).collect::<String>())
}

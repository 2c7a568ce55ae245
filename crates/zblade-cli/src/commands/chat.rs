//! `zblade chat`: a chat with a model in the terminal, the project's memory packed into every
//! turn and every turn recorded as a conversation. The chat itself is in zblade-chat; this
//! reads prompts, prints the answer as it streams, and maps Ctrl-C to "stop this answer".

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;
use zblade_chat::{Chat, ChatError, Endpoint, TurnOptions, printable};
use zblade_engine::Error;

use super::Ctx;
use crate::cli::ChatArgs;

/// Where a chat goes when neither `--endpoint` nor `$ZBLADE_CHAT_ENDPOINT` says: llama.cpp's
/// server on its default port, on this machine.
const DEFAULT_ENDPOINT: &str = "http://127.0.0.1:8080/v1";

/// One turn, for `--json` (a line per turn).
#[derive(Serialize)]
struct TurnLine<'a> {
    conversation: &'a str,
    prompt: &'a str,
    answer: Option<&'a str>,
    partial: bool,
    error: Option<String>,
    model: Option<&'a str>,
    memory_tokens: usize,
    memory_entries: usize,
}

pub(crate) fn run(cx: &mut Ctx, args: ChatArgs) -> Result<(), Error> {
    let mut project = cx.open()?;
    let base_url = args
        .endpoint
        .or_else(|| std::env::var("ZBLADE_CHAT_ENDPOINT").ok())
        .unwrap_or_else(|| DEFAULT_ENDPOINT.to_string());
    let api_key = match &args.api_key_env {
        Some(var) => Some(
            std::env::var(var)
                .map_err(|_| Error::Usage(format!("--api-key-env {var}: that environment variable is not set")))?,
        ),
        None => None,
    };
    let mut endpoint = Endpoint {
        base_url,
        model: String::new(),
        api_key,
    };
    if !endpoint.is_local() && !args.allow_remote {
        return Err(Error::Usage(format!(
            "{} is not on this machine: each turn would send it the packed project memory and your prompt. \
             Run again with --allow-remote to consent for this chat.",
            endpoint.base_url
        )));
    }
    endpoint.model = match args.model.or_else(|| std::env::var("ZBLADE_CHAT_MODEL").ok()) {
        Some(model) => model,
        None => zblade_chat::first_model(&endpoint).map_err(chat_error)?,
    };
    endpoint.check().map_err(chat_error)?;
    let options = TurnOptions {
        tier: args.tier.into(),
        budget: args.budget.unwrap_or(project.settings().context.max_tokens as usize),
        max_tokens: args.max_tokens,
    };
    let mut chat = match &args.conversation {
        Some(id) => Chat::resume(&project, id).map_err(chat_error)?,
        None => Chat::start(),
    };

    // Ctrl-C while an answer streams stops that answer; at the prompt it ends the chat.
    let stop = Arc::new(AtomicBool::new(false));
    let answering = Arc::new(AtomicBool::new(false));
    {
        let (stop, answering) = (stop.clone(), answering.clone());
        ctrlc::set_handler(move || {
            if answering.load(Ordering::Relaxed) {
                stop.store(true, Ordering::Relaxed);
            } else {
                std::process::exit(130);
            }
        })
        .map_err(|e| Error::Usage(format!("cannot install the Ctrl-C handler: {e}")))?;
    }

    let people = std::io::stdin().is_terminal() && !cx.json;
    if !cx.json {
        eprintln!(
            "zblade: chatting with {} ({}); conversation {}{}",
            endpoint.model,
            if endpoint.is_local() {
                "on this machine"
            } else {
                "remote"
            },
            chat.conversation(),
            if people {
                ". Ctrl-C stops an answer, Ctrl-D ends."
            } else {
                ""
            }
        );
    }
    let one_shot = args.prompt.is_some();
    let mut given = args.prompt;
    let mut stdin = std::io::stdin().lock();
    let mut failures = 0;
    loop {
        let prompt = match given.take() {
            Some(prompt) => prompt,
            None if one_shot => break,
            None => {
                if people {
                    eprint!("you> ");
                }
                let mut line = String::new();
                let read = stdin
                    .read_line(&mut line)
                    .map_err(|e| Error::Usage(format!("reading the prompt: {e}")))?;
                if read == 0 {
                    break; // Ctrl-D, or the end of piped input
                }
                line
            }
        };
        let prompt = prompt.trim();
        if prompt.is_empty() {
            continue;
        }
        if prompt == "/exit" || prompt == "/quit" {
            break;
        }
        let prepared = chat
            .prepare(&mut project, &endpoint, prompt, options)
            .map_err(chat_error)?;
        if !cx.json && prepared.memory_entries > 0 {
            eprintln!(
                "zblade: memory: {} entries, {} tokens",
                prepared.memory_entries, prepared.memory_tokens
            );
        }
        let (tokens, entries) = (prepared.memory_tokens, prepared.memory_entries);
        stop.store(false, Ordering::Relaxed);
        answering.store(true, Ordering::Relaxed);
        let json = cx.json;
        let out = cx.out.writer();
        let sent = chat.send(
            &mut project,
            &endpoint,
            prepared,
            &mut |text| {
                if !json {
                    // The model's words, never its control sequences, reach the terminal.
                    let _ = out.write_all(printable(text).as_bytes());
                    let _ = out.flush();
                }
            },
            &stop,
        );
        answering.store(false, Ordering::Relaxed);
        match sent {
            Ok(turn) => {
                if cx.json {
                    let line = TurnLine {
                        conversation: chat.conversation(),
                        prompt,
                        answer: Some(&turn.text),
                        partial: turn.partial,
                        error: turn.error.clone(),
                        model: turn.model.as_deref(),
                        memory_tokens: tokens,
                        memory_entries: entries,
                    };
                    json_line(cx, &line)?;
                } else {
                    let out = cx.out.writer();
                    writeln!(out)
                        .and_then(|_| out.flush())
                        .map_err(|e| Error::io("<stdout>", e))?;
                    if let Some(error) = &turn.error {
                        eprintln!("zblade: the model stopped with an error: {}", printable(error));
                    }
                    if turn.partial {
                        eprintln!("zblade: the answer did not end; what arrived is kept, marked partial");
                    }
                }
                if turn.partial {
                    failures += 1;
                }
            }
            Err(e) => {
                failures += 1;
                if cx.json {
                    let line = TurnLine {
                        conversation: chat.conversation(),
                        prompt,
                        answer: None,
                        partial: false,
                        error: Some(e.to_string()),
                        model: None,
                        memory_tokens: tokens,
                        memory_entries: entries,
                    };
                    json_line(cx, &line)?;
                } else {
                    eprintln!("zblade: {e} (your prompt is kept in {})", chat.conversation());
                }
            }
        }
    }
    if failures > 0 && one_shot {
        return Err(Error::Usage("the turn did not complete".into()));
    }
    Ok(())
}

/// One turn as one line of JSON, written at once (a script reads them as they come).
fn json_line(cx: &mut Ctx, line: &TurnLine) -> Result<(), Error> {
    let out = cx.out.writer();
    serde_json::to_writer(&mut *out, line).map_err(|e| Error::io("<stdout>", e.into()))?;
    writeln!(out)
        .and_then(|_| out.flush())
        .map_err(|e| Error::io("<stdout>", e))
}

fn chat_error(e: ChatError) -> Error {
    match e {
        ChatError::Usage(why) => Error::Usage(why),
        other => Error::Usage(other.to_string()),
    }
}

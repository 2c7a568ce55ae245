//! `zblade chat`: a chat with a model in the terminal, the project's memory packed into every
//! turn and every turn recorded as a conversation. The chat itself is in zblade-chat; this
//! reads prompts, prints the answer as it streams, and maps Ctrl-C to "stop this answer".

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;
use serde::Serialize;
use zblade_chat::{
    Api, Chat, ChatError, Endpoint, LocalModel, Model, ToolUse, Turn, TurnEvents, TurnOptions, printable,
};
use zblade_engine::Error;

use super::Ctx;
use crate::cli::{ChatArgs, ToolsArg};

/// Where a chat goes when neither `--endpoint` nor `$ZBLADE_CHAT_ENDPOINT` says: llama.cpp's
/// server on its default port, on this machine.
const DEFAULT_ENDPOINT: &str = "http://127.0.0.1:8080/v1";
/// Where `--api anthropic` goes by default.
const ANTHROPIC_ENDPOINT: &str = "https://api.anthropic.com";

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
    tool_calls: Vec<ToolLine<'a>>,
}

/// A tool call in a `--json` turn line.
#[derive(Serialize)]
struct ToolLine<'a> {
    name: &'a str,
    arguments: &'a str,
    result_bytes: u64,
    is_error: bool,
}

/// The terminal as a turn sees it: the answer printed as it streams (without control
/// sequences), tool calls shown on standard error, and asked about with `--tools ask`.
struct Terminal<'a, W: Write, R: BufRead> {
    out: &'a mut W,
    json: bool,
    ask: bool,
    answers: &'a mut R,
}

impl<W: Write, R: BufRead> TurnEvents for Terminal<'_, W, R> {
    fn text(&mut self, text: &str) {
        if !self.json {
            // The model's words, never its control sequences, reach the terminal.
            let _ = self.out.write_all(printable(text).as_bytes());
            let _ = self.out.flush();
        }
    }

    fn approve(&mut self, name: &str, arguments: &str) -> bool {
        if !self.ask {
            return true;
        }
        eprint!(
            "\nzblade: the model asks to run {name} {} — allow? [y/N] ",
            printable(arguments)
        );
        let mut answer = String::new();
        self.answers.read_line(&mut answer).is_ok() && matches!(answer.trim(), "y" | "Y" | "yes")
    }

    fn tool_done(&mut self, call: &ToolUse) {
        if !self.json {
            let what = if call.outcome.is_error { "refused" } else { "read" };
            eprintln!(
                "\nzblade: tool {} {} — {what}, {} bytes",
                call.name,
                printable(&call.arguments),
                call.outcome.size
            );
        }
    }

    fn notice(&mut self, notice: &str) {
        if !self.json {
            eprintln!("zblade: note: {}", printable(notice));
        }
    }
}

pub(crate) fn run(cx: &mut Ctx, args: ChatArgs) -> Result<(), Error> {
    let mut project = cx.open()?;
    let model = match &args.local {
        Some(name) => Model::Local(Arc::new(local_model(&project, name, args.context_window)?)),
        None => Model::Remote(remote_endpoint(&args)?),
    };
    let options = TurnOptions {
        tier: args.tier,
        budget: args.budget,
        window: args.local.is_some().then_some(args.context_window),
        max_tokens: args.max_tokens,
        tools: args.tools != ToolsArg::Off,
    };
    let at_terminal = std::io::stdin().is_terminal();
    if args.tools == ToolsArg::Ask && !at_terminal {
        return Err(Error::Usage("--tools ask needs a terminal to ask on".into()));
    }
    let mut chat = match &args.conversation {
        Some(id) => Chat::resume(&project, id).map_err(chat_error)?,
        None => Chat::start(),
    };

    let people = at_terminal && !cx.json;
    if !cx.json {
        eprintln!(
            "zblade: chatting with {} ({}); conversation {}{}",
            model.name(),
            if model.is_local() { "on this machine" } else { "remote" },
            chat.conversation(),
            if people {
                ". Ctrl-C stops an answer, Ctrl-D ends."
            } else {
                ""
            }
        );
    }
    // --allow-remote is the consent of a chat without a terminal (a script); at a terminal the
    // user also sees what leaves before the first send, unless they said "always" before.
    let mut consented = match &model {
        Model::Remote(endpoint) if !endpoint.is_local() && at_terminal => {
            zblade_chat::consent::given(&project.layout().cache_dir(), endpoint)
        }
        _ => true,
    };
    let one_shot = args.prompt.is_some();
    let mut given = args.prompt;
    // At a terminal, prompts are read with a line editor whose history holds the project's
    // earlier prompts (oldest first, so up-arrow brings the newest back; Ctrl-R searches).
    let mut editor = if people && !one_shot {
        Some(line_editor(&project)?)
    } else {
        None
    };
    // Ctrl-C while an answer streams stops that answer; at the prompt it ends the chat.
    // Installed after the line editor, which takes SIGINT for itself when it is created (it
    // reads Ctrl-C as a key at the prompt, so it does not need the signal).
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
        .map_err(|e| Error::Environment(format!("cannot install the Ctrl-C handler: {e}")))?;
    }

    let mut stdin = std::io::stdin().lock();
    let mut failures = 0;
    loop {
        let prompt = match given.take() {
            Some(prompt) => prompt,
            None if one_shot => break,
            None if editor.is_some() => {
                let editor = editor.as_mut().expect("checked above");
                match editor.readline("you> ") {
                    Ok(line) => {
                        let _ = editor.add_history_entry(line.trim());
                        line
                    }
                    // Ctrl-D, or Ctrl-C at the prompt: the chat ends.
                    Err(ReadlineError::Eof | ReadlineError::Interrupted) => break,
                    Err(e) => return Err(Error::Environment(format!("reading the prompt: {e}"))),
                }
            }
            None => {
                let mut line = String::new();
                let read = stdin
                    .read_line(&mut line)
                    .map_err(|e| Error::Environment(format!("reading the prompt: {e}")))?;
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
            .prepare(&mut project, &model, prompt, options)
            .map_err(chat_error)?;
        if !cx.json && prepared.memory_entries > 0 {
            eprintln!(
                "zblade: memory: {} entries, {} tokens",
                prepared.memory_entries, prepared.memory_tokens
            );
        }

        // Before the first send to a model off this machine, the user sees exactly what leaves
        // it and says yes, no, or always for this model (remembered in .zblade/cache/, not committed).
        if let Model::Remote(endpoint) = &model
            && !consented
        {
            match ask_to_send(endpoint, &prepared.body, &mut stdin) {
                Consent::Once => consented = true,
                Consent::Always => {
                    consented = true;
                    if let Err(e) = zblade_chat::consent::remember(&project.layout().cache_dir(), endpoint) {
                        cx.notice(&format!("could not remember the consent: {e}"));
                    }
                }
                Consent::No => {
                    eprintln!("zblade: not sent; nothing left this machine");
                    continue;
                }
            }
        }
        stop.store(false, Ordering::Relaxed);
        answering.store(true, Ordering::Relaxed);
        let mut terminal = Terminal {
            out: cx.out.writer(),
            json: cx.json,
            ask: args.tools == ToolsArg::Ask,
            answers: &mut stdin,
        };
        let sent = chat.send(&mut project, &model, prepared, &mut terminal, &stop);
        answering.store(false, Ordering::Relaxed);
        if !matches!(&sent, Ok(turn) if !turn.partial) {
            failures += 1;
        }
        if cx.json {
            json_line(cx, &turn_line(chat.conversation(), prompt, &sent))?;
            continue;
        }
        match sent {
            Ok(turn) => {
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
            Err(e) => eprintln!("zblade: {e} (your prompt is kept in {})", chat.conversation()),
        }
    }
    // Once at the end: with a local compressor model, moments and the summary take seconds each.
    let remembered = zblade_chat::remember(&mut project, chat.conversation());
    if remembered.moments > 0 {
        cx.notice(&format!("{} moments from this chat", remembered.moments));
    }
    for notice in &remembered.notices {
        cx.notice(notice);
    }
    if failures > 0 && one_shot {
        return Err(Error::Usage("the turn did not complete".into()));
    }
    Ok(())
}

/// The server the chat talks to, from the options and the environment; refused when it is
/// off this machine without `--allow-remote`.
fn remote_endpoint(args: &ChatArgs) -> Result<Endpoint, Error> {
    let api = args.api;
    let base_url = args
        .endpoint
        .clone()
        .or_else(|| std::env::var("ZBLADE_CHAT_ENDPOINT").ok())
        .unwrap_or_else(|| match api {
            Api::Messages => ANTHROPIC_ENDPOINT.to_string(),
            _ => DEFAULT_ENDPOINT.to_string(),
        });
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
        api,
    };
    if !endpoint.is_local() && !args.allow_remote {
        return Err(Error::Usage(format!(
            "{} is not on this machine: each turn would send it the packed project memory and your prompt. \
             Run again with --allow-remote to consent for this chat.",
            endpoint.base_url
        )));
    }
    endpoint.model = match args.model.clone().or_else(|| std::env::var("ZBLADE_CHAT_MODEL").ok()) {
        Some(model) => model,
        None => zblade_chat::first_model(&endpoint).map_err(chat_error)?,
    };
    endpoint.check().map_err(chat_error)?;
    Ok(endpoint)
}

/// The installed GGUF model `name`, loaded.
fn local_model(project: &zblade_engine::Project, name: &str, context_window: u32) -> Result<LocalModel, Error> {
    let installed = project.compressor_models();
    let Some(found) = installed.iter().find(|m| m.name == name) else {
        let names: Vec<&str> = installed.iter().map(|m| m.name.as_str()).collect();
        return Err(Error::Usage(format!(
            "no local model named {name} (installed: {}); add one with `zblade compressor import FILE`",
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        )));
    };
    LocalModel::load(name, std::path::Path::new(&found.path), context_window).map_err(chat_error)
}

/// One turn as `--json` prints it.
fn turn_line<'a>(conversation: &'a str, prompt: &'a str, sent: &'a Result<Turn, ChatError>) -> TurnLine<'a> {
    match sent {
        Ok(turn) => TurnLine {
            conversation,
            prompt,
            answer: Some(&turn.text),
            partial: turn.partial,
            error: turn.error.clone(),
            model: turn.model.as_deref(),
            memory_tokens: turn.memory_tokens,
            memory_entries: turn.memory_entries,
            tool_calls: turn
                .tool_calls
                .iter()
                .map(|c| ToolLine {
                    name: &c.name,
                    arguments: &c.arguments,
                    result_bytes: c.outcome.size,
                    is_error: c.outcome.is_error,
                })
                .collect(),
        },
        Err(e) => TurnLine {
            conversation,
            prompt,
            answer: None,
            partial: false,
            error: Some(e.to_string()),
            model: None,
            memory_tokens: 0,
            memory_entries: 0,
            tool_calls: Vec::new(),
        },
    }
}

/// A line editor for prompts, its history the project's earlier prompts (at most 1,000).
fn line_editor(project: &zblade_engine::Project) -> Result<DefaultEditor, Error> {
    let mut editor =
        DefaultEditor::new().map_err(|e| Error::Environment(format!("cannot set up the terminal: {e}")))?;
    // Newest first from the index; added oldest first.
    let earlier = project.history(None, 1_000).unwrap_or_default();
    for prompt in earlier.iter().rev() {
        let _ = editor.add_history_entry(prompt.text.as_str());
    }
    Ok(editor)
}

/// A user's answer to "send this?".
enum Consent {
    Once,
    Always,
    No,
}

/// Shows what a request sends to a remote model and asks whether to send it.
fn ask_to_send(endpoint: &Endpoint, body: &serde_json::Value, answers: &mut impl BufRead) -> Consent {
    eprintln!(
        "zblade: this leaves your machine for {} (model {}):\n{}",
        endpoint.host().unwrap_or_default(),
        endpoint.model,
        zblade_chat::consent::preview(body)
    );
    eprint!("zblade: send it? [y]es / [n]o / [a]lways for this model: ");
    let mut answer = String::new();
    if answers.read_line(&mut answer).is_err() {
        return Consent::No;
    }
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Consent::Once,
        "a" | "always" => Consent::Always,
        _ => Consent::No,
    }
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

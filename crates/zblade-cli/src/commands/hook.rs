//! `zblade hook prompt|stop|pre-tool [--agent NAME]`: what an agent's hooks run (`zblade hooks
//! install` writes them; Claude Code, Gemini CLI, Qwen Code). The agent sends the event as JSON
//! on stdin. A hook runs on every prompt, so it is quick and
//! never stands in the user's way: whatever goes wrong, it says so in one line on stderr and
//! exits 0 — the prompt goes through without memory rather than not at all.
//!
//! - `prompt` (`UserPromptSubmit`; Gemini CLI's `BeforeAgent`): prints the packed context for
//!   the prompt, which the agent adds to what the model reads — no tool call needed (as plain
//!   text, or as `hookSpecificOutput.additionalContext` where the agent reads JSON only);
//! - `stop` (`Stop`; Gemini CLI's `AfterAgent`): imports the session's transcript, read by the
//!   agent's own reader (only what is new);
//! - `pre-tool` (Claude Code's `PreToolUse`; Gemini CLI's `AfterTool` and Qwen Code's
//!   `PostToolUse` on reads): what memory holds about the lines the agent reads or edits
//!   (docs/HOOKS.md), answered as the event's `hookSpecificOutput.additionalContext`; nothing
//!   when nothing bears on them.

use std::io::Read;
use std::path::PathBuf;

use serde_json::Value;
use zblade_engine::warm;
use zblade_engine::{
    ACTION_BUDGET, ActionAnswer, ActionCache, DATA_NOTICE, Error, ImportRequest, ImportSource, PromptEvent,
};

use super::context::WARM_TIMEOUT;

use super::Ctx;
use crate::cli::HookEvent;

pub(crate) fn run(cx: &mut Ctx, event: HookEvent, agent: &str) -> Result<(), Error> {
    let outcome = ImportSource::parse(agent)
        .ok_or_else(|| Error::Usage(format!("unknown agent {agent:?}")))
        .and_then(|source| Ok((source, read_event()?)))
        .and_then(|(source, event_json)| match event {
            HookEvent::Prompt => prompt(cx, agent, &event_json),
            HookEvent::Stop => stop(cx, source, &event_json),
            HookEvent::PreTool => pre_tool(cx, &event_json),
        });
    if let Err(e) = outcome {
        eprintln!("zblade hook: {e}");
    }
    Ok(())
}

fn read_event() -> Result<serde_json::Value, Error> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(zblade_warm::MAX_EVENT_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io("<stdin>", e))?;
    serde_json::from_slice(&bytes).map_err(|e| Error::Usage(format!("the hook event on stdin is not JSON: {e}")))
}

/// The packed context for the prompt, as the engine renders it for the agent
/// (`zblade_engine::prompt_hook`). The front door (`zblade`, src/front.rs) asks a warm engine
/// the same question without coming here; this runs when it found none.
fn prompt(cx: &mut Ctx, agent: &str, event: &serde_json::Value) -> Result<(), Error> {
    let event = PromptEvent::from_event(event, agent);
    // The warm engine when one runs (the app, `zblade serve`); else this process does it, and
    // starts one in the background so that only a session's first prompt pays the cold start.
    let answer = match warm::ask_prompt_hook(&cx.root, &event, WARM_TIMEOUT) {
        Some(answer) => answer.map_err(Error::Usage)?,
        None if event.prompt.trim().is_empty() => return Ok(()), // no engine started for nothing
        None => {
            super::serve::start_detached(&cx.root);
            zblade_engine::prompt_hook(&cx.open()?, &event).map_err(Error::Usage)?
        }
    };
    if !answer.text.is_empty() {
        println!("{}", answer.text);
    }
    Ok(())
}

fn stop(cx: &mut Ctx, source: ImportSource, event: &serde_json::Value) -> Result<(), Error> {
    let Some(transcript) = event.get("transcript_path").and_then(|p| p.as_str()) else {
        return Err(Error::Usage("the Stop event names no transcript_path".into()));
    };
    let transcript = PathBuf::from(transcript);
    // The path comes from the agent: only an existing JSON or JSON Lines file is read, and by
    // that agent's reader, which refuses anything not in its format.
    let is_transcript = transcript.extension().is_some_and(|e| e == "jsonl" || e == "json")
        && std::fs::metadata(&transcript).is_ok_and(|m| m.is_file());
    if !is_transcript {
        return Err(Error::Usage(format!(
            "{} is not a session transcript (.jsonl or .json file)",
            transcript.display()
        )));
    }
    let mut project = cx.open()?;
    let mut request = ImportRequest::new(source);
    request.paths = vec![transcript];
    project.import(&request, &mut |_, _, _| {})?;
    // The finished turn is found by meaning in the next prompt's context.
    super::embed_added(cx, &mut project);
    Ok(())
}

fn pre_tool(cx: &mut Ctx, event: &Value) -> Result<(), Error> {
    let input = event.get("tool_input").unwrap_or(&Value::Null);
    if zblade_engine::tool_file_argument(input).is_none() {
        return Ok(()); // not a call on a file: no project to open
    }
    let project = cx.open()?;
    let Some((absolute, lines)) = project.tool_target(input) else {
        return Ok(());
    };
    let session = event.get("session_id").and_then(Value::as_str).unwrap_or("");
    let key = ActionCache::key(&absolute.to_string_lossy(), lines);
    let mut cache = (!session.is_empty()).then(|| ActionCache::open(&project, session));
    let answer = match cache.as_ref().and_then(|c| c.get(&key)) {
        Some(answer) => answer,
        None => {
            let answer = action_answer(cx, &project, &absolute.to_string_lossy(), lines)?;
            if let Some(cache) = cache.as_mut() {
                cache.put(key, &answer);
            }
            answer
        }
    };
    if answer.text.is_empty() {
        return Ok(());
    }
    let event_name = event
        .get("hook_event_name")
        .and_then(Value::as_str)
        .unwrap_or("PreToolUse");
    let output = serde_json::json!({
        "hookSpecificOutput": {
            "hookEventName": event_name,
            "additionalContext": format!("{DATA_NOTICE}\n{}", answer.text),
        }
    });
    println!("{output}");
    Ok(())
}

/// What memory holds about the lines: from the warm engine, which has the tokenizer loaded,
/// when one runs; else from this process, starting one in the background for the next call.
fn action_answer(
    cx: &Ctx,
    project: &zblade_engine::Project,
    file: &str,
    lines: Option<(u32, u32)>,
) -> Result<ActionAnswer, Error> {
    let request = warm::ActionRequest {
        file: file.to_string(),
        lines,
        budget: ACTION_BUDGET,
    };
    match warm::ask_action(&cx.root, request, WARM_TIMEOUT) {
        Some(answer) => {
            let answer = answer.map_err(Error::Usage)?;
            Ok(ActionAnswer {
                text: answer.text,
                entries: answer.entries,
                cached: false,
            })
        }
        None => {
            super::serve::start_detached(&cx.root);
            Ok(project.point_of_action(file, lines, ACTION_BUDGET)?)
        }
    }
}

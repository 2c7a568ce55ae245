//! What an agent's prompt hook prints (`zblade hook prompt`; Claude Code's and Qwen Code's
//! `UserPromptSubmit`, Gemini CLI's `BeforeAgent`): the packed context for the prompt, said to
//! be data, in the form the agent reads — or nothing, when nothing remembered bears on it.
//!
//! One function for every way the hook is answered: by the warm engine for the front door
//! (`zblade`, which does not link the engine) and for the full program, or in-process when no
//! engine runs. A new prompt also makes the session's point-of-action answers stale.

use serde_json::json;
pub use zblade_warm::PromptEvent;
use zblade_warm::WarmAnswer;

use crate::context::{ContextRequest, DATA_NOTICE};
use crate::import::ImportSource;
use crate::point_of_action::ActionCache;
use crate::project::Project;

/// The context budget of a prompt hook: it rides along with every prompt.
pub const PROMPT_HOOK_BUDGET: usize = 2_000;

/// The hook's answer to `event` on `project`: `text` is exactly what the hook prints (empty:
/// print nothing). An unknown agent is an error.
pub fn prompt_hook(project: &Project, event: &PromptEvent) -> Result<WarmAnswer, String> {
    if ImportSource::parse(&event.agent).is_none() {
        return Err(format!("unknown agent {:?}", event.agent));
    }
    if event.prompt.trim().is_empty() {
        return Ok(nothing()); // nothing asked, nothing to add
    }
    // A new prompt: what was said about lines earlier in the session may have changed.
    if let Some(session) = &event.session_id {
        ActionCache::clear(project, session);
    }
    let request = ContextRequest {
        budget: Some(PROMPT_HOOK_BUDGET),
        ..ContextRequest::new(event.prompt.as_str())
    };
    let result = project.context(&request).map_err(|e| e.to_string())?;
    // Nothing remembered bears on the prompt (the relevance gate closed): print nothing.
    if result.pack.entries.is_empty() || result.pack.nothing_relevant() {
        return Ok(WarmAnswer {
            notices: result.notices,
            ..nothing()
        });
    }
    let context = format!("{DATA_NOTICE}\n{}", result.pack.text);
    // Claude Code and Qwen Code add a prompt hook's plain output to the prompt; Gemini CLI
    // reads JSON only (its `BeforeAgent`).
    let text = match event.hook_event_name.as_deref() {
        Some(name) if name != "UserPromptSubmit" => {
            json!({"hookSpecificOutput": {"hookEventName": name, "additionalContext": context}}).to_string()
        }
        _ => context,
    };
    Ok(WarmAnswer {
        text,
        entries: result.pack.entries.len(),
        notices: result.notices,
        nothing_relevant: false,
        result: None,
        receipt: None,
        prompt_hook: true,
    })
}

/// An answer that prints nothing.
fn nothing() -> WarmAnswer {
    WarmAnswer {
        text: String::new(),
        entries: 0,
        notices: Vec::new(),
        nothing_relevant: true,
        result: None,
        receipt: None,
        prompt_hook: true,
    }
}

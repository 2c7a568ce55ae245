//! Folding what a read of a store file found into the conversation stored for that session.
//!
//! A session arrives in pieces (an incremental read resumes mid-session; a whole-file store is
//! read again when it changes), so a piece is merged by message id: a new id is appended; a
//! known id is updated in place (the same record read again, or more blocks of one response);
//! a tool result for a call read earlier is attached to that call.

use std::collections::HashMap;

use zblade_core::{CodeReference, Conversation, Message, Provenance};
use zblade_import::Session;

/// Merges the turns of `session` (their references already made) into `conversation`.
/// Returns how many messages were new.
pub(crate) fn merge(
    conversation: &mut Conversation,
    session: &Session,
    turns: Vec<(Message, Vec<CodeReference>)>,
    late: Vec<(String, zblade_core::ToolResult, Vec<CodeReference>)>,
) -> usize {
    let mut added = 0;
    // Where each message id is, built once: looking each turn up by a scan was quadratic in
    // the session's length.
    let mut place: HashMap<String, usize> = HashMap::with_capacity(conversation.messages.len());
    for (i, m) in conversation.messages.iter().enumerate() {
        if !m.id.is_empty() {
            place.entry(m.id.clone()).or_insert(i);
        }
    }
    for (mut message, references) in turns {
        message.code_references = references;
        // The first message with an id is the one updated, as a scan from the start found.
        match place.get(&message.id).filter(|_| !message.id.is_empty()) {
            Some(&i) => update(&mut conversation.messages[i], message),
            None => {
                if !message.id.is_empty() {
                    place.insert(message.id.clone(), conversation.messages.len());
                }
                conversation.messages.push(message);
                added += 1;
            }
        }
    }
    for (call_id, result, references) in late {
        let found = conversation.messages.iter_mut().rev().find_map(|m| {
            let call = m.tool_calls.iter_mut().find(|c| c.id == call_id)?;
            call.result = Some(result.clone());
            Some(m)
        });
        if let Some(message) = found {
            add_references(&mut message.code_references, references);
        }
    }
    if let Some(title) = session.title.as_ref().filter(|t| !t.trim().is_empty()) {
        conversation.title = title.chars().take(200).collect();
    } else if conversation.title.trim().is_empty() {
        conversation.title = derived_title(&conversation.messages);
    }
    conversation.created_at = match (conversation.created_at, session.started) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    conversation.updated_at = conversation.messages.iter().filter_map(|m| m.timestamp).max();
    for model in conversation.messages.iter().filter_map(|m| m.model.clone()) {
        if !conversation.metadata.models_used.contains(&model) {
            conversation.metadata.models_used.push(model);
        }
    }
    conversation.metadata.source = Some(Provenance {
        tool: session.source.as_str().to_string(),
        file: session.file.display().to_string(),
        session_id: session.id.clone(),
        imported_at: chrono::Utc::now(),
        extra: Default::default(),
    });
    added
}

/// The same message read again, or more of it.
fn update(existing: &mut Message, new: Message) {
    if new.content.starts_with(&existing.content) {
        existing.content = new.content; // read again in full
    } else if !new.content.is_empty() && !existing.content.contains(&new.content) {
        existing.content = format!("{}\n\n{}", existing.content, new.content); // more blocks
    }
    for call in new.tool_calls {
        match existing.tool_calls.iter_mut().find(|c| c.id == call.id) {
            Some(known) if call.result.is_some() || known.result.is_none() => *known = call,
            Some(_) => {}
            None => existing.tool_calls.push(call),
        }
    }
    add_references(&mut existing.code_references, new.code_references);
    if existing.model.is_none() {
        existing.model = new.model;
    }
    existing.timestamp = existing.timestamp.or(new.timestamp);
}

/// Adds references not already there (same file and lines).
pub(crate) fn add_references(to: &mut Vec<CodeReference>, new: Vec<CodeReference>) {
    for reference in new {
        if !to
            .iter()
            .any(|r| r.file == reference.file && r.lines == reference.lines)
        {
            to.push(reference);
        }
    }
}

/// The first thing the user typed (not a slash command), as a title.
fn derived_title(messages: &[Message]) -> String {
    let text = messages
        .iter()
        .find(|m| m.role == zblade_core::Role::User && !m.content.starts_with('/'))
        .or(messages.first())
        .map_or("", |m| m.content.as_str());
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("Imported session");
    let mut title: String = line.chars().take(80).collect();
    if line.chars().count() > 80 {
        title.push('…');
    }
    title
}

#[cfg(test)]
mod tests {
    use zblade_core::{Role, ToolCall};
    use zblade_import::Source;

    use super::*;

    /// A session as a reader returns it (the readers' own tests cover parsing).
    fn session() -> Session {
        Session {
            source: Source::CLAUDE_CODE,
            id: "s1".into(),
            file: "/store/s1.jsonl".into(),
            cwd: None,
            title: Some("Hashing".into()),
            started: None,
            turns: Vec::new(),
            late_results: Vec::new(),
            redacted: 0,
        }
    }

    fn message(id: &str, role: Role, text: &str) -> Message {
        let mut m = Message::new(role, text);
        m.id = id.into();
        m
    }

    fn empty() -> Conversation {
        let mut c: Conversation = serde_json::from_str("{}").unwrap();
        c.conversation_id = "conv_cc-s1".into();
        c
    }

    #[test]
    fn pieces_of_one_response_and_late_results_fold_into_one_message() {
        let s = session();
        let mut conversation = empty();
        let mut call = message("msg_a", Role::Assistant, "Reading it.");
        call.tool_calls.push(ToolCall::new("t1", "Read", serde_json::json!({})));
        let added = merge(
            &mut conversation,
            &s,
            vec![(message("msg_u", Role::User, "Fix it"), vec![]), (call, vec![])],
            vec![],
        );
        assert_eq!(added, 2);
        // The next read: more of the same response, then the call's result.
        let more = message("msg_a", Role::Assistant, "Done reading.");
        let result = zblade_core::ToolResult {
            text: "fn x() {}".into(),
            size: 9,
            is_error: false,
            extra: Default::default(),
        };
        let added = merge(
            &mut conversation,
            &s,
            vec![(more, vec![])],
            vec![("t1".into(), result, vec![])],
        );
        assert_eq!(added, 0);
        assert_eq!(conversation.messages.len(), 2);
        assert_eq!(conversation.messages[1].content, "Reading it.\n\nDone reading.");
        assert_eq!(conversation.messages[1].tool_calls[0].result.as_ref().unwrap().size, 9);
        assert_eq!(conversation.title, "Hashing");
        assert_eq!(conversation.metadata.source.as_ref().unwrap().tool, "claude-code");
        // Reading the same piece again changes nothing.
        merge(
            &mut conversation,
            &s,
            vec![(message("msg_u", Role::User, "Fix it"), vec![])],
            vec![],
        );
        assert_eq!(conversation.messages[0].content, "Fix it");
        assert_eq!(conversation.messages.len(), 2);
    }
}

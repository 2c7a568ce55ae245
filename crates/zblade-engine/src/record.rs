//! Recording exchanges seen by a face that sits in the conversation itself (the model proxy):
//! the client resends its whole history with every request, so the messages arrive again and
//! again. Each carries an id that is stable across resends (its position in the history); a
//! known id is updated in place, a new one appended — the conversation grows by what is new.
//!
//! Secrets are redacted and code blocks that copy lines of the working tree become code
//! references, as for imported sessions.

use chrono::Utc;
use zblade_core::{Conversation, Error, Message, Provenance, Result};

use crate::codeblocks::{TreeLines, convert};
use crate::import::merge::add_references;
use crate::project::Project;

/// One request and its answer, as a face saw them.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// The conversation to add to (created when missing).
    pub conversation: String,
    /// The messages of the history and the answer, each with an id stable across resends.
    /// System prompts are the client's, not the conversation's: leave them out.
    pub messages: Vec<Message>,
    /// What saw the exchange (`proxy`), for the conversation's provenance.
    pub tool: String,
    /// Where it was seen (`POST /v1/messages`).
    pub channel: String,
}

/// What recording changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// The conversation.
    pub conversation: String,
    /// True when this exchange started it.
    pub created: bool,
    /// Messages not seen before.
    pub new_messages: usize,
    /// Messages seen before whose content changed (a partial answer completed, an edit).
    pub updated_messages: usize,
    /// Secrets replaced by markers.
    pub redacted: usize,
}

impl Project {
    /// Adds what is new in `exchange` to its conversation; messages already recorded (same id,
    /// same content) are left as they are, so resending a history changes nothing.
    pub fn record_exchange(&mut self, exchange: Exchange) -> Result<Recorded> {
        zblade_core::ids::check_id(&exchange.conversation, Some(zblade_core::ids::CONVERSATION))
            .map_err(|why| Error::Usage(format!("conversation id {why}")))?;
        let (mut conversation, created) = match self.storage.conversation(&self.parts, &exchange.conversation) {
            Ok(existing) => (existing, false),
            Err(Error::NotFound(_)) => (new_conversation(&exchange.conversation), true),
            Err(e) => return Err(e),
        };
        let mut recorded = Recorded {
            conversation: exchange.conversation.clone(),
            created,
            new_messages: 0,
            updated_messages: 0,
            redacted: 0,
        };
        let mut tree: Option<TreeLines> = None;
        for mut message in exchange.messages {
            if message.id.is_empty() {
                return Err(Error::Usage(
                    "a recorded message needs an id stable across resends".into(),
                ));
            }
            recorded.redacted += zblade_import::redact::redact_message(&mut message);
            let known = conversation.messages.iter_mut().find(|m| m.id == message.id);
            if let Some(known) = &known
                && same_turn(known, &message)
            {
                continue;
            }
            if message.content.contains("```") {
                let tree = tree.get_or_insert_with(|| TreeLines::load(&self.parts));
                let (content, found) = convert(&message.content, tree);
                if !found.is_empty() {
                    message.content = content;
                    add_references(&mut message.code_references, found);
                }
            }
            match known {
                Some(known) => {
                    *known = message;
                    recorded.updated_messages += 1;
                }
                None => {
                    conversation.messages.push(message);
                    recorded.new_messages += 1;
                }
            }
        }
        if recorded.new_messages == 0 && recorded.updated_messages == 0 {
            return Ok(recorded);
        }
        conversation.updated_at = Some(Utc::now());
        for model in conversation.messages.iter().filter_map(|m| m.model.clone()) {
            if !conversation.metadata.models_used.contains(&model) {
                conversation.metadata.models_used.push(model);
            }
        }
        conversation.metadata.source = Some(Provenance {
            tool: exchange.tool,
            file: exchange.channel.clone(),
            session_id: exchange.conversation.clone(),
            imported_at: Utc::now(),
            extra: Default::default(),
        });
        // `add` derives a title from the first message when there is none.
        self.store_conversations(vec![(conversation, exchange.channel)])?;
        Ok(recorded)
    }
}

/// The same turn resent: what a client sends back is what was recorded (a code block turned
/// into a reference does not count as a change, nor does the answer's metadata).
fn same_turn(known: &Message, new: &Message) -> bool {
    known.role == new.role
        && (known.content == new.content || (!known.code_references.is_empty() && new.content.contains("```")))
        && known.tool_calls.len() == new.tool_calls.len()
        && known.extra.get("partial") == new.extra.get("partial")
}

fn new_conversation(id: &str) -> Conversation {
    let mut conversation = crate::import::empty_conversation(id);
    conversation.created_at = Some(Utc::now());
    conversation
}

#[cfg(test)]
mod tests {
    use super::*;
    use zblade_core::Role;

    fn message(id: &str, role: Role, text: &str) -> Message {
        let mut m = Message::new(role, text);
        m.id = id.into();
        m
    }

    #[test]
    fn resending_a_history_adds_only_what_is_new() {
        let dir = tempfile::tempdir().unwrap();
        let (mut project, _) = Project::init(dir.path()).unwrap();
        let first = vec![
            message("msg_t_00000", Role::User, "Why does login fail?"),
            message("msg_t_00001", Role::Assistant, "The token expired."),
        ];
        let exchange = |messages: Vec<Message>| Exchange {
            conversation: "conv_proxy-test".into(),
            messages,
            tool: "proxy".into(),
            channel: "POST /v1/chat/completions".into(),
        };
        let done = project.record_exchange(exchange(first.clone())).unwrap();
        assert!(done.created);
        assert_eq!(done.new_messages, 2);

        let mut second = first.clone();
        second.push(message(
            "msg_t_00002",
            Role::User,
            "Fix it, key sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789",
        ));
        second.push(message("msg_t_00003", Role::Assistant, "Done."));
        let done = project.record_exchange(exchange(second.clone())).unwrap();
        assert_eq!((done.created, done.new_messages, done.updated_messages), (false, 2, 0));
        assert_eq!(done.redacted, 1);

        let again = project.record_exchange(exchange(second)).unwrap();
        assert_eq!((again.new_messages, again.updated_messages), (0, 0));

        let shown = project.show("conv_proxy-test").unwrap();
        let text = serde_json::to_string(&shown).unwrap();
        assert!(text.contains("The token expired."));
        assert!(
            !text.contains("abcdefghijklmnopqrstuvwxyz0123456789"),
            "the secret was stored"
        );
    }

    #[test]
    fn an_unsafe_conversation_id_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (mut project, _) = Project::init(dir.path()).unwrap();
        let err = project
            .record_exchange(Exchange {
                conversation: "conv_../../x".into(),
                messages: vec![message("msg_a", Role::User, "hi")],
                tool: "proxy".into(),
                channel: "test".into(),
            })
            .unwrap_err();
        assert!(err.to_string().contains("conversation id"), "{err}");
    }
}

//! Secrets are replaced before memory is written, whichever way it came in: `add`, a recorded
//! turn (proxy, hooks, chat), a teammate's share or the sync server's copy. Importers redact
//! their sessions with the same redactor (`zblade_import::redact`) while they read them.

use zblade_core::{Conversation, Moment};
use zblade_import::redact::{redact_in_place, redact_message};

/// Redacts a conversation's title, messages (text, tool calls) and inline moments; returns how
/// many secrets were replaced.
pub(crate) fn redact_conversation(conversation: &mut Conversation) -> usize {
    let mut count = redact_in_place(&mut conversation.title);
    for message in &mut conversation.messages {
        count += redact_message(message);
    }
    for moment in &mut conversation.moments {
        count += redact_in_place(&mut moment.content);
    }
    count
}

/// Redacts a moment's text and the discussion around it; returns how many were replaced.
pub(crate) fn redact_moment(moment: &mut Moment) -> usize {
    let mut count = redact_in_place(&mut moment.content);
    if let Some(context) = &mut moment.context {
        count += redact_in_place(context);
    }
    count
}

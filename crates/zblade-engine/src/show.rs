//! `zblade show ID`: one conversation, moment or message, read from its artifact (the truth),
//! or one commit of the project's repository, with what became of its lines.

use serde::Serialize;
use zblade_core::{Conversation, Error, InlineMoment, Moment, Result, ids};

use crate::project::Project;
use crate::refs::ReferenceReport;
use crate::storage::FoundMoment;
use crate::storage::MessageMatch;

/// What an id named.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Shown {
    /// A whole conversation.
    Conversation {
        /// The artifact.
        conversation: Box<Conversation>,
        /// Its code references, checked against the working tree now, with current code.
        references: Vec<ReferenceReport>,
    },
    /// A standalone moment.
    Moment {
        /// The artifact.
        moment: Box<Moment>,
        /// Its code references, checked now, with current code.
        references: Vec<ReferenceReport>,
    },
    /// A moment stored inside a conversation.
    InlineMoment {
        /// The conversation's id.
        conversation_id: String,
        /// The moment.
        moment: Box<InlineMoment>,
    },
    /// A commit of the project's repository.
    Commit {
        /// The commit and what became of its lines.
        commit: Box<crate::CommitView>,
    },
    /// Messages with this id (ids are unique only within a conversation, so there may be several).
    Messages {
        /// Each match with its conversation's id and title.
        matches: Vec<MessageMatch>,
    },
}

impl Project {
    /// Finds a conversation (`conv_…`), moment (`moment_…`) or message by id.
    pub fn show(&self, id: &str) -> Result<Shown> {
        let storage = &self.storage;
        // `conv_…/msg_…`: one message of one conversation (the form context pointers give; a
        // message id alone may be used by several conversations).
        if let Some((conversation, message)) = id.split_once('/') {
            ids::check_id(conversation, Some(ids::CONVERSATION))
                .map_err(|why| Error::Usage(format!("invalid conversation id: {why}")))?;
            ids::check_id(message, None).map_err(|why| Error::Usage(format!("invalid message id: {why}")))?;
            let mut matches = storage.messages(&self.parts, message)?;
            matches.retain(|m| m.conversation_id == conversation);
            if matches.is_empty() {
                return Err(Error::NotFound(format!(
                    "no message {message} in conversation {conversation} {}",
                    storage.place()
                )));
            }
            return Ok(Shown::Messages { matches });
        }
        ids::check_id(id, None).map_err(|why| Error::Usage(format!("invalid id: {why}")))?;
        if id.starts_with(ids::CONVERSATION) {
            let conversation = storage.conversation(&self.parts, id)?;
            let references = storage.conversation_references(&self.parts, &conversation)?;
            return Ok(Shown::Conversation {
                conversation: Box::new(conversation),
                references,
            });
        }
        if id.starts_with(ids::MOMENT) {
            return match storage.moment(&self.parts, id)? {
                Some(FoundMoment::Standalone(moment)) => Ok(Shown::Moment {
                    references: storage.moment_references(&self.parts, &moment)?,
                    moment: Box::new(moment),
                }),
                Some(FoundMoment::Inline {
                    conversation_id,
                    moment,
                }) => Ok(Shown::InlineMoment {
                    conversation_id,
                    moment: Box::new(moment),
                }),
                None => Err(Error::NotFound(format!("no moment {id} {}", storage.place()))),
            };
        }
        // 4 to 40 hex digits name a commit, when one is indexed (else it may be a message id).
        if (4..=40).contains(&id.len())
            && id.chars().all(|c| c.is_ascii_hexdigit())
            && let Ok(commit) = self.commit(id)
        {
            return Ok(Shown::Commit {
                commit: Box::new(commit),
            });
        }
        let matches = storage.messages(&self.parts, id)?;
        if matches.is_empty() {
            return Err(Error::NotFound(format!(
                "no conversation, moment or message with id {id} {}",
                storage.place()
            )));
        }
        Ok(Shown::Messages { matches })
    }

    /// A conversation artifact, from wherever this project keeps its memory.
    pub fn load_conversation(&self, id: &str) -> Result<Conversation> {
        self.storage.conversation(&self.parts, id)
    }
}

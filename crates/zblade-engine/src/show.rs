//! `zblade show ID`: one conversation, moment or message, read from its artifact (the truth).

use serde::Serialize;
use zblade_core::{Conversation, Error, InlineMoment, Message, Moment, Result, ids};

use crate::{Project, ReferenceReport, refs, scan};

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
    /// Messages with this id (ids are unique only within a conversation, so there may be several).
    Messages {
        /// Each match with its conversation's id and title.
        matches: Vec<MessageMatch>,
    },
}

/// A message found by id.
#[derive(Debug, Clone, Serialize)]
pub struct MessageMatch {
    /// Its conversation.
    pub conversation_id: String,
    /// The conversation's title.
    pub title: String,
    /// The message.
    pub message: Message,
    /// Its code references, checked now, with current code.
    pub references: Vec<ReferenceReport>,
}

impl Project {
    /// Finds a conversation (`conv_…`), moment (`moment_…`) or message by id.
    pub fn show(&self, id: &str) -> Result<Shown> {
        ids::check_id(id, None).map_err(|why| Error::Usage(format!("invalid id: {why}")))?;
        if self.is_server_mode() {
            return self.show_from_server(id);
        }
        if id.starts_with(ids::CONVERSATION) {
            let conversation = self.load_conversation(id)?;
            let owners: Vec<String> = conversation.messages.iter().map(|m| format!("{id}/{}", m.id)).collect();
            let references = self.references_of_many(&owners)?.into_iter().flatten().collect();
            return Ok(Shown::Conversation {
                conversation: Box::new(conversation),
                references,
            });
        }
        if id.starts_with(ids::MOMENT) {
            let path = self.layout.moment_path(id);
            if path.exists() {
                let loaded = scan::load_moment(&self.layout, &path)?;
                let references = self.references_of(id)?;
                return Ok(Shown::Moment {
                    moment: Box::new(loaded.artifact),
                    references,
                });
            }
            if let Some(artifact) = self.index()?.moment_artifact(id)? {
                let conv_id = artifact
                    .rsplit('/')
                    .next()
                    .unwrap_or_default()
                    .trim_end_matches(".json");
                let conv = self.load_conversation(conv_id)?;
                if let Some(moment) = conv.moments.into_iter().find(|m| m.id == id) {
                    return Ok(Shown::InlineMoment {
                        conversation_id: conv.conversation_id,
                        moment: Box::new(moment),
                    });
                }
            }
            return Err(Error::NotFound(format!("no moment {id} in this project")));
        }
        let mut matches = Vec::new();
        for location in self.index()?.locate_message(id)? {
            let conv = self.load_conversation(&location.conversation_id)?;
            if let Some(message) = conv.messages.get(location.seq as usize).filter(|m| m.id == id) {
                matches.push(MessageMatch {
                    conversation_id: conv.conversation_id.clone(),
                    title: conv.title.clone(),
                    message: message.clone(),
                    references: self.references_of(&format!("{}/{id}", conv.conversation_id))?,
                });
            }
        }
        if matches.is_empty() {
            return Err(Error::NotFound(format!(
                "no conversation, moment or message with id {id} in this project"
            )));
        }
        Ok(Shown::Messages { matches })
    }

    /// Server mode's `show`: the artifact from the server, its references checked against
    /// the working tree here. Messages are found through search (the server keeps no
    /// per-message index).
    fn show_from_server(&self, id: &str) -> Result<Shown> {
        if id.starts_with(ids::CONVERSATION) {
            let conversation = self.conversation_from_server(id)?;
            let references = self.hydrate(&refs::references_in_conversation(&conversation));
            return Ok(Shown::Conversation {
                conversation: Box::new(conversation),
                references,
            });
        }
        if id.starts_with(ids::MOMENT) {
            let moment = self
                .moment_from_server(id)?
                .ok_or_else(|| Error::NotFound(format!("no moment {id} on the sync server")))?;
            let references = self.hydrate(&refs::references_in_moment(&moment));
            return Ok(Shown::Moment {
                moment: Box::new(moment),
                references,
            });
        }
        Err(Error::Usage(format!(
            "{id} is not a conversation or moment id; in server mode `zblade show` takes those \
             (find messages with `zblade search`)"
        )))
    }

    /// A conversation artifact: from `.zblade/`, or in server mode from the server.
    pub(crate) fn load_conversation(&self, id: &str) -> Result<Conversation> {
        if self.is_server_mode() {
            return self.conversation_from_server(id);
        }
        let path = self.layout.conversation_path(id);
        if !path.exists() {
            return Err(Error::NotFound(format!("no conversation {id} in this project")));
        }
        Ok(scan::load_conversation(&self.layout, &path)?.artifact)
    }
}

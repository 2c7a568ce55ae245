//! [`MessageSelector`]: a message of a conversation named as the user names it, by its
//! 0-based index or its id (fork, merge, cherry-pick, export ranges).

use zblade_core::{Error, Result};

/// A message of a conversation, named by its 0-based index or its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MessageSelector {
    /// The message at this 0-based index.
    Index(usize),
    /// The message with this id.
    Id(String),
}

impl std::str::FromStr for MessageSelector {
    type Err = Error;

    /// `5` is an index, anything else a message id.
    fn from_str(text: &str) -> Result<MessageSelector> {
        let text = text.trim();
        match text.parse::<usize>() {
            Ok(index) => Ok(MessageSelector::Index(index)),
            Err(_) if !text.is_empty() => Ok(MessageSelector::Id(text.to_string())),
            Err(_) => Err(Error::Usage(
                "name a message by its index (0 is the first) or its id".into(),
            )),
        }
    }
}

impl MessageSelector {
    /// The index this selector names among `ids` (the messages of `conversation`, in order).
    pub(crate) fn position<'a>(
        &self,
        conversation: &str,
        ids: impl ExactSizeIterator<Item = &'a str>,
    ) -> Result<usize> {
        let len = ids.len();
        match self {
            MessageSelector::Index(index) if *index < len => Ok(*index),
            MessageSelector::Index(index) => Err(out_of_range(conversation, *index, len)),
            MessageSelector::Id(id) => {
                let mut ids = ids;
                ids.position(|m| m == id)
                    .ok_or_else(|| Error::NotFound(format!("conversation {conversation} has no message {id}")))
            }
        }
    }
}

pub(crate) fn out_of_range(conversation: &str, index: usize, len: usize) -> Error {
    match len {
        0 => Error::Usage(format!(
            "message index {index} is out of range: {conversation} has no messages"
        )),
        _ => Error::Usage(format!(
            "message index {index} is out of range: {conversation} has {len} messages (0–{})",
            len - 1
        )),
    }
}

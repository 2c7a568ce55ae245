//! The conversation graph's on-disk format (seed 003, "git for conversations").
//!
//! Messages are immutable and stored once per project, named by the SHA-256 of their canonical
//! JSON. The new messages of one write are kept together in a *pack*
//! (`artifacts/messages/packs/<name>.jsonl`, one canonical message per line, named by 32 hex digits of the
//! hash of the whole pack) and each reference says where in the pack its message is
//! ([`PackPlace`]); messages stored by earlier versions as one file each
//! (`artifacts/messages/ab/<sha256>.json`) are still read. A file per message made importing
//! tens of thousands of messages pay for tens of thousands of file creations (on a journal-less
//! ext4, 180 µs each: most of the import). A conversation's artifact is a [`Manifest`]:
//! its metadata and the ordered [`MessageRef`]s of its messages. A fork does not copy its
//! parent's references either: its manifest says "my first N messages are the first N of
//! conversation X" ([`SharedPrefix`]) and lists only the messages written after the fork, so
//! forking a 10,000-message conversation writes a few hundred bytes.
//!
//! Everything above the storage layer sees a resolved [`Conversation`]; the graph shows there
//! as [`Conversation::forked_from`], [`Conversation::merged_from`] and each message's
//! [`Message::origin`].

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::artifact::{ConversationMetadata, InlineMoment, parse_json};
use crate::lineage::{Compaction, ForkPoint, MergeRecord, MessageOrigin, SharedPrefix, TokenUsage};
use crate::{Conversation, Error, Message, Result, ids, sha256_hex};

/// The manifest version this build writes (conversation artifacts of format 1 hold their
/// messages inline and are still read).
pub const MANIFEST_VERSION: &str = "2.0";

/// One message of a manifest: which stored message, where it is, and how it got here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageRef {
    /// The message's id (unique within a conversation, as in format 1).
    pub id: String,
    /// SHA-256 of the stored message's canonical JSON: its name, checked on every read.
    pub sha256: String,
    /// How the message got into this conversation.
    #[serde(default, skip_serializing_if = "MessageOrigin::is_native")]
    pub origin: MessageOrigin,
    /// The pack holding the message; absent: a file of its own (`messages/ab/<sha256>.json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pack: Option<PackPlace>,
}

/// Where a message is inside a pack: the pack's name and the bytes of its line. Written as one
/// string, `name:offset:len`: a manifest lists thousands of these, and as a JSON object each
/// tripled the time to parse a 10,000-message manifest (and so to fork it).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct PackPlace {
    /// The pack's name: the first 32 hex digits of its SHA-256 (`messages/packs/<name>.jsonl`).
    pub name: String,
    /// Byte offset of the message's line in the pack.
    pub offset: u64,
    /// Its length in bytes, the newline included.
    pub len: u64,
}

impl From<PackPlace> for String {
    fn from(place: PackPlace) -> String {
        format!("{}:{}:{}", place.name, place.offset, place.len)
    }
}

impl TryFrom<String> for PackPlace {
    type Error = String;

    /// The name is checked by [`Manifest::validate`], which names the field.
    fn try_from(text: String) -> std::result::Result<PackPlace, String> {
        let mut parts = text.rsplitn(3, ':');
        let (Some(len), Some(offset), Some(name)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(format!("{text:?} is not a pack place (name:offset:len)"));
        };
        let number = |n: &str| {
            n.parse::<u64>()
                .map_err(|_| format!("{text:?} is not a pack place (name:offset:len)"))
        };
        Ok(PackPlace {
            name: name.to_string(),
            offset: number(offset)?,
            len: number(len)?,
        })
    }
}

/// The name of the pack holding `bytes`: the first 32 hex digits of their SHA-256 (128 bits,
/// plenty for the packs of one project, and half the bytes in every reference).
pub fn pack_name(bytes: &[u8]) -> String {
    let mut name = sha256_hex(bytes);
    name.truncate(32);
    name
}

/// True for 32 lowercase hex digits: a pack's name (it becomes a file name).
pub fn is_pack_name(text: &str) -> bool {
    is_lower_hex(text, 32)
}

/// The longest message a pack entry may claim, so a hostile manifest cannot make a reader
/// allocate without bound.
pub const MAX_PACKED_MESSAGE: u64 = 256 * 1024 * 1024;

/// A conversation artifact of format 2: metadata and ordered message references.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// `2.0`.
    pub version: String,
    /// `conv_…`.
    pub conversation_id: String,
    /// The project it belongs to.
    #[serde(default)]
    pub project_id: String,
    /// When the conversation started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<DateTime<Utc>>,
    /// When it last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<DateTime<Utc>>,
    /// Its title.
    #[serde(default)]
    pub title: String,
    /// Messages shared with another conversation, before [`Manifest::messages`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_prefix: Option<SharedPrefix>,
    /// This conversation's own messages, in order, after the shared prefix.
    #[serde(default)]
    pub messages: Vec<MessageRef>,
    /// Moments recorded inline with the conversation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub moments: Vec<InlineMoment>,
    /// Counters and tags.
    #[serde(default)]
    pub metadata: ConversationMetadata,
    /// Where a fork came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkPoint>,
    /// Merges and cherry-picks into this conversation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<MergeRecord>,
    /// What a compaction summarised.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<Compaction>,
    /// Tokens used.
    #[serde(default, skip_serializing_if = "TokenUsage::is_empty")]
    pub token_usage: TokenUsage,
    /// Fields this version does not know.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A conversation artifact as found on disk: format 1 (messages inline) or 2 (a manifest).
#[derive(Debug, Clone)]
pub enum StoredConversation {
    /// Format 1: the whole conversation.
    Inline(Conversation),
    /// Format 2: a manifest of message references.
    Manifest(Manifest),
}

/// Parses a conversation artifact of either format, by its `version`'s major number.
pub fn parse_stored_conversation(bytes: &[u8], source_name: &str) -> Result<StoredConversation> {
    #[derive(Deserialize)]
    struct Probe {
        #[serde(default)]
        version: String,
    }
    let probe: Probe = parse_json(bytes, source_name)?;
    if probe.version.split('.').next() == Some("2") {
        let manifest: Manifest = parse_json(bytes, source_name)?;
        manifest.validate(source_name)?;
        Ok(StoredConversation::Manifest(manifest))
    } else {
        let conv: Conversation = parse_json(bytes, source_name)?;
        conv.validate(source_name)?;
        Ok(StoredConversation::Inline(conv))
    }
}

/// The stored form of a message: its JSON without what belongs to a conversation — its id
/// there (kept by the manifest's reference) and its [`Message::origin`]. Its SHA-256 is the
/// message's name, so the same message merged into three conversations is stored once.
pub fn canonical_message(message: &Message) -> Vec<u8> {
    let mut bare = message.clone();
    bare.id = String::new();
    bare.origin = None;
    let mut bytes = serde_json::to_vec(&bare).expect("messages serialise");
    bytes.push(b'\n');
    bytes
}

/// The SHA-256 naming `message` in the store.
pub fn message_sha256(message: &Message) -> String {
    sha256_hex(&canonical_message(message))
}

/// True for 64 lowercase hex digits: the only names a manifest may point at, since they
/// become file names.
pub fn is_sha256(text: &str) -> bool {
    is_lower_hex(text, 64)
}

/// True for exactly `len` lowercase hex digits.
fn is_lower_hex(text: &str, len: usize) -> bool {
    text.len() == len && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl Manifest {
    /// The manifest of `conv`, whose messages (after `shared_prefix`) are named by `refs`.
    pub fn of(conv: &Conversation, shared_prefix: Option<SharedPrefix>, refs: Vec<MessageRef>) -> Manifest {
        Manifest {
            version: MANIFEST_VERSION.to_string(),
            conversation_id: conv.conversation_id.clone(),
            project_id: conv.project_id.clone(),
            created_at: conv.created_at,
            updated_at: conv.updated_at,
            title: conv.title.clone(),
            shared_prefix,
            messages: refs,
            moments: conv.moments.clone(),
            metadata: conv.metadata.clone(),
            forked_from: conv.forked_from.clone(),
            merged_from: conv.merged_from.clone(),
            compaction: conv.compaction.clone(),
            token_usage: conv.token_usage.clone(),
            extra: conv.extra.clone(),
        }
    }

    /// The conversation this manifest describes, given all its messages in order (the shared
    /// prefix's first). The conversation reads as format 1 (`1.0`) to everything above storage.
    pub fn into_conversation(self, messages: Vec<Message>) -> Conversation {
        Conversation {
            version: crate::ARTIFACT_VERSION.to_string(),
            conversation_id: self.conversation_id,
            project_id: self.project_id,
            created_at: self.created_at,
            updated_at: self.updated_at,
            title: self.title,
            messages,
            moments: self.moments,
            metadata: self.metadata,
            forked_from: self.forked_from,
            merged_from: self.merged_from,
            compaction: self.compaction,
            token_usage: self.token_usage,
            shared_prefix: self.shared_prefix,
            extra: self.extra,
        }
    }

    /// Messages in the conversation: the shared prefix and its own.
    pub fn len(&self) -> usize {
        self.shared_prefix.as_ref().map_or(0, |p| p.messages) + self.messages.len()
    }

    /// True when the conversation has no messages.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The artifact as pretty JSON with a trailing newline.
    pub fn to_artifact_json(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec_pretty(self).expect("manifests serialise");
        bytes.push(b'\n');
        bytes
    }

    /// Checks what a manifest names before anything is read through it: a known version,
    /// valid ids, and message names that are SHA-256 digests (they become file names).
    pub fn validate(&self, source: &str) -> Result<()> {
        if self.version.split('.').next() != Some("2") {
            return Err(Error::field(
                source,
                "version",
                format!("{:?} is not a manifest version (2.x)", self.version),
            ));
        }
        let id_error = |field: String, reason: String| Error::field(source, field, reason);
        ids::check_id(&self.conversation_id, Some(ids::CONVERSATION))
            .map_err(|r| id_error("conversation_id".into(), r))?;
        if let Some(prefix) = &self.shared_prefix {
            ids::check_id(&prefix.conversation_id, Some(ids::CONVERSATION))
                .map_err(|r| id_error("shared_prefix.conversation_id".into(), r))?;
            if prefix.conversation_id == self.conversation_id {
                return Err(id_error(
                    "shared_prefix.conversation_id".into(),
                    "a conversation cannot share its own messages".into(),
                ));
            }
        }
        let mut seen = std::collections::HashSet::new();
        for (i, message) in self.messages.iter().enumerate() {
            ids::check_id(&message.id, None).map_err(|r| id_error(format!("messages[{i}].id"), r))?;
            if !is_sha256(&message.sha256) {
                return Err(id_error(
                    format!("messages[{i}].sha256"),
                    format!("{:?} is not a SHA-256 digest", message.sha256),
                ));
            }
            if let Some(place) = &message.pack {
                if !is_pack_name(&place.name) {
                    return Err(id_error(
                        format!("messages[{i}].pack.name"),
                        format!("{:?} is not a pack name (32 hex digits)", place.name),
                    ));
                }
                if place.len == 0 || place.len > MAX_PACKED_MESSAGE || place.offset.checked_add(place.len).is_none() {
                    return Err(id_error(
                        format!("messages[{i}].pack.len"),
                        format!("{} bytes is not a message length", place.len),
                    ));
                }
            }
            if !seen.insert(message.id.as_str()) {
                return Err(id_error(
                    format!("messages[{i}].id"),
                    format!("{:?} appears twice", message.id),
                ));
            }
        }
        Ok(())
    }
}

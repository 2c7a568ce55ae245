//! Conversations as a graph (seed 003): fork, merge, cherry-pick, lineage, rename, delete,
//! export, resume, and the user's prompt history.
//!
//! Every operation is written once here, over the storage seam: local storage shares messages
//! by reference (see `storage::manifests`), a sync server gets whole conversations. Indices in
//! this API are 0-based; the CLI says so in its help.

use std::collections::HashSet;

use chrono::Utc;
use serde::Serialize;
use zblade_core::{Conversation, Error, MergeRecord, MessageOrigin, Result, Role};
use zblade_index::Prompt;

use crate::lineage::Lineage;
use crate::project::Project;
use crate::storage::ForkRequest;

use crate::selector::{MessageSelector, out_of_range};

/// The most prompts [`Project::history`] lists at once.
pub const MAX_HISTORY: usize = 1000;

/// What a fork, merge or cherry-pick made.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct GraphOutcome {
    /// The conversation created or changed.
    pub conversation_id: String,
    /// Its title.
    pub title: String,
    /// Messages in it now.
    pub messages: usize,
    /// Messages brought in (merge, cherry-pick) or kept (fork).
    pub affected: usize,
}

/// What sharing saves, as `zblade stats` reports it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StoreStats {
    /// Conversation artifacts.
    pub conversations: usize,
    /// Of them, still in format 1 (messages inline; `zblade index` converts them).
    pub inline_conversations: usize,
    /// Messages as conversations list them (a message in two conversations counts twice).
    pub message_references: usize,
    /// Distinct messages stored.
    pub stored_messages: usize,
    /// Stored messages used by more than one conversation.
    pub shared_messages: usize,
    /// Bytes of stored messages.
    pub stored_bytes: u64,
    /// Bytes that copying every conversation's messages would take.
    pub bytes_if_copied: u64,
    /// Bytes saved by sharing.
    pub bytes_saved: u64,
    /// Stored messages no conversation uses (`zblade gc` removes them).
    pub orphans: usize,
    /// Conversations that could not be read, with the reason.
    pub unreadable: Vec<String>,
}

/// Export formats of `zblade conv export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum ExportFormat {
    /// A readable transcript.
    Markdown,
    /// The conversation artifact in format 1 (every message inline, with its origin).
    Json,
}

impl Project {
    /// Forks conversation `id` after message `after`: a new conversation that starts with the
    /// parent's messages up to and including that one.
    pub fn fork_conversation(
        &mut self,
        id: &str,
        after: &MessageSelector,
        title: Option<&str>,
    ) -> Result<GraphOutcome> {
        check_conversation_id(id)?;
        let request = ForkRequest {
            parent: id.to_string(),
            after: after.clone(),
            title: title.map(clean_title).transpose()?,
            now: Utc::now(),
        };
        let storage = self.storage.clone();
        let fork = storage.fork(&mut self.parts, &request)?;
        let kept = fork.forked_from.as_ref().map_or(0, |f| f.after_index + 1);
        Ok(GraphOutcome {
            conversation_id: fork.conversation_id,
            title: fork.title,
            messages: kept,
            affected: kept,
        })
    }

    /// Brings messages `indices` of `source` into `target`, appended or inserted at `at`.
    /// The messages are not copied: `target` refers to them.
    pub fn merge_messages(
        &mut self,
        target: &str,
        source: &str,
        indices: &[usize],
        at: Option<usize>,
    ) -> Result<GraphOutcome> {
        check_conversation_id(target)?;
        check_conversation_id(source)?;
        if target == source {
            return Err(Error::Usage(format!(
                "cannot merge {target} into itself; fork it to rearrange its messages"
            )));
        }
        if indices.is_empty() {
            return Err(Error::Usage(
                "name at least one message to merge (--messages 3,4)".into(),
            ));
        }
        let mut target_conv = self.load_conversation(target)?;
        let source_conv = self.load_conversation(source)?;
        let mut seen = HashSet::new();
        let mut brought = Vec::new();
        for &index in indices {
            if !seen.insert(index) {
                continue;
            }
            let Some(message) = source_conv.messages.get(index) else {
                return Err(out_of_range(source, index, source_conv.messages.len()));
            };
            let mut message = message.clone();
            if let Some(same_id) = target_conv.messages.iter().find(|m| m.id == message.id) {
                let sha = zblade_core::message_sha256(&message);
                if zblade_core::message_sha256(same_id) == sha {
                    return Err(Error::Usage(format!(
                        "message {index} of {source} ({}) is already in {target}",
                        message.id
                    )));
                }
                // Another message of the target has this id (ids are unique only within a
                // conversation): the copy is named apart; its content is still stored once.
                let renamed = format!("{}-{}", message.id, &sha[..8]);
                if target_conv.messages.iter().any(|m| m.id == renamed) {
                    return Err(Error::Usage(format!(
                        "message {index} of {source} ({}) is already in {target} (as {renamed})",
                        message.id
                    )));
                }
                message.id = renamed;
            }
            message.origin = Some(MessageOrigin::Merged {
                conversation_id: source.to_string(),
                index,
            });
            brought.push(message);
        }
        let len = target_conv.messages.len();
        let position = match at {
            Some(at) if at > len => {
                return Err(Error::Usage(format!(
                    "--at {at} is out of range: {target} has {len} messages, so 0–{len} (where {len} appends)"
                )));
            }
            Some(at) => at,
            None => len,
        };
        let now = Utc::now();
        let count = brought.len();
        target_conv.messages.splice(position..position, brought);
        target_conv.merged_from.push(MergeRecord {
            conversation_id: source.to_string(),
            indices: seen
                .into_iter()
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect(),
            inserted_at: at,
            merged_at: now,
        });
        target_conv.updated_at = Some(now);
        target_conv.metadata.total_messages = target_conv.messages.len() as u64;
        let storage = self.storage.clone();
        storage.put_conversations(&mut self.parts, std::slice::from_ref(&target_conv))?;
        Ok(GraphOutcome {
            conversation_id: target_conv.conversation_id,
            title: target_conv.title,
            messages: target_conv.messages.len(),
            affected: count,
        })
    }

    /// Brings message `index` of `source` into `target` with the `context` messages before
    /// it (the question an answer needs), appended.
    pub fn cherry_pick(&mut self, target: &str, source: &str, index: usize, context: usize) -> Result<GraphOutcome> {
        let first = index.saturating_sub(context);
        let indices: Vec<usize> = (first..=index).collect();
        self.merge_messages(target, source, &indices, None)
    }

    /// Renames a conversation.
    pub fn rename_conversation(&mut self, id: &str, title: &str) -> Result<()> {
        check_conversation_id(id)?;
        let title = clean_title(title)?;
        let mut conv = self.load_conversation(id)?;
        conv.title = title;
        conv.updated_at = Some(Utc::now());
        let storage = self.storage.clone();
        storage.put_conversations(&mut self.parts, std::slice::from_ref(&conv))?;
        Ok(())
    }

    /// Deletes a conversation; the messages other conversations use stay (`zblade gc` removes
    /// the ones nothing uses any more).
    pub fn delete_conversation(&mut self, id: &str) -> Result<()> {
        check_conversation_id(id)?;
        let storage = self.storage.clone();
        storage.delete_conversation(&mut self.parts, id)
    }

    /// Where conversation `id` sits: ancestors, forks (recursively) and merges. On a sync
    /// server, which keeps no graph index, every conversation is read (one request each).
    pub fn lineage(&self, id: &str) -> Result<Lineage> {
        check_conversation_id(id)?;
        self.storage.lineage(&self.parts, id)
    }

    /// Conversation `id` as text: a markdown transcript or format-1 JSON.
    pub fn export_conversation(&self, id: &str, format: ExportFormat) -> Result<String> {
        check_conversation_id(id)?;
        let conv = self.load_conversation(id)?;
        Ok(match format {
            ExportFormat::Json => String::from_utf8(conv.to_artifact_json()).expect("JSON is UTF-8"),
            ExportFormat::Markdown => markdown(&conv),
        })
    }

    /// The conversation to resume: `id`, or the project's most recently updated one.
    pub fn resume_conversation(&self, id: Option<&str>) -> Result<Conversation> {
        let id = match id {
            Some(id) => {
                check_conversation_id(id)?;
                id.to_string()
            }
            None => self
                .newest_conversation()?
                .ok_or_else(|| Error::NotFound("this project has no conversations to resume yet".into()))?,
        };
        self.load_conversation(&id)
    }

    /// Prompts the user typed in this project, newest first, each text once; only those
    /// holding every word of `search` (the last as a prefix) when given. On a sync server every
    /// conversation is read (one request each). At least one and at most [`MAX_HISTORY`]
    /// prompts are listed, whatever `limit` asks.
    pub fn history(&self, search: Option<&str>, limit: usize) -> Result<Vec<Prompt>> {
        self.storage.prompts(&self.parts, search, limit.clamp(1, MAX_HISTORY))
    }

    /// The most recently updated conversation.
    fn newest_conversation(&self) -> Result<Option<String>> {
        self.storage.newest_conversation(&self.parts)
    }
}

/// Forks of `id` as a tree, from the children of each conversation (consumed).
/// The conversation `id` stored under `root/.zblade/`, as format-1 JSON (every message inline,
/// what a sync server stores), whatever the project's storage mode; for tools and tests that
/// compare what is on disk with what is elsewhere.
pub fn local_conversation_json(root: &std::path::Path, id: &str) -> Result<Vec<u8>> {
    check_conversation_id(id)?;
    let layout = zblade_core::Layout::new(root);
    let path = layout.conversation_path(id);
    Ok(crate::scan::load_conversation(&layout, &path)?
        .artifact
        .to_artifact_json())
}

fn check_conversation_id(id: &str) -> Result<()> {
    zblade_core::ids::check_id(id, Some(zblade_core::ids::CONVERSATION))
        .map_err(|reason| Error::Usage(format!("not a conversation id: {reason}")))
}

fn clean_title(title: &str) -> Result<String> {
    let title = title.trim();
    if title.is_empty() {
        return Err(Error::Usage("a title must not be empty".into()));
    }
    if title.chars().any(char::is_control) {
        return Err(Error::Usage(
            "a title must be one line without control characters".into(),
        ));
    }
    Ok(title.chars().take(200).collect())
}

fn markdown(conv: &Conversation) -> String {
    let mut out = format!("# {}\n\n", conv.title);
    out.push_str(&format!("- id: `{}`\n", conv.conversation_id));
    if let Some(created) = conv.created_at {
        out.push_str(&format!("- created: {}\n", created.to_rfc3339()));
    }
    if let Some(fork) = &conv.forked_from {
        out.push_str(&format!(
            "- forked from `{}` after message {}\n",
            fork.conversation_id, fork.after_index
        ));
    }
    for merge in &conv.merged_from {
        out.push_str(&format!(
            "- merged {} message(s) from `{}`\n",
            merge.indices.len(),
            merge.conversation_id
        ));
    }
    for (i, message) in conv.messages.iter().enumerate() {
        let who = match message.role {
            Role::User => "User",
            Role::Assistant => "Assistant",
            Role::System => "System",
            Role::Tool => "Tool",
        };
        out.push_str(&format!("\n## {i} · {who}"));
        if let Some(time) = message.timestamp {
            out.push_str(&format!(" · {}", time.format("%Y-%m-%d %H:%M")));
        }
        match &message.origin {
            Some(MessageOrigin::Merged { conversation_id, index }) => {
                out.push_str(&format!(" · from `{conversation_id}` #{index}"))
            }
            Some(MessageOrigin::Inherited { conversation_id }) => {
                out.push_str(&format!(" · inherited from `{conversation_id}`"))
            }
            _ => {}
        }
        out.push_str("\n\n");
        out.push_str(message.content.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
#[path = "graph_tests.rs"]
mod tests;

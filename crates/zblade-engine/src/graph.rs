//! Conversations as a graph (seed 003): fork, merge, cherry-pick, lineage, rename, delete,
//! export, resume, and the user's prompt history.
//!
//! Every operation is written once here, over the storage seam: local storage shares messages
//! by reference (see `storage::manifests`), a sync server gets whole conversations. Indices in
//! this API are 0-based; the CLI says so in its help.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use chrono::Utc;
use serde::Serialize;
use zblade_core::{
    Conversation, Error, MergeRecord, MessageOrigin, PackPlace, Result, Role, StoredConversation, sha256_hex,
};
use zblade_index::Prompt;

use crate::lineage::Lineage;
use crate::project::Project;
use crate::storage::{ForkRequest, manifests};

use crate::selector::{MessageSelector, out_of_range};

/// What a fork, merge or cherry-pick made.
#[derive(Debug, Clone, Serialize)]
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
    /// conversation is read (one request each).
    pub fn history(&self, search: Option<&str>, limit: usize) -> Result<Vec<Prompt>> {
        self.storage.prompts(&self.parts, search, limit)
    }

    /// The most recently updated conversation.
    fn newest_conversation(&self) -> Result<Option<String>> {
        self.storage.newest_conversation(&self.parts)
    }

    /// How messages are stored and what sharing saves (local storage).
    pub fn store_stats(&self) -> Result<StoreStats> {
        self.local_only("stats")?;
        let layout = self.layout();
        let mut stats = StoreStats::default();
        let mut uses: HashMap<String, usize> = HashMap::new();
        let mut listed: Vec<String> = Vec::new();
        for entry in conversation_files(layout)? {
            stats.conversations += 1;
            let id = entry.trim_end_matches(".json");
            let refs = manifests::read_stored(layout, id).and_then(|stored| match stored {
                Some((stored, _)) => {
                    if matches!(stored, StoredConversation::Inline(_)) {
                        stats.inline_conversations += 1;
                    }
                    manifests::resolve_refs(layout, &stored)
                }
                None => Ok(Vec::new()),
            });
            match refs {
                Ok(refs) => {
                    stats.message_references += refs.len();
                    for r in refs {
                        *uses.entry(r.sha256.clone()).or_default() += 1;
                        listed.push(r.sha256);
                    }
                }
                Err(e) => stats.unreadable.push(format!("{entry}: {e}")),
            }
        }
        let mut sizes: HashMap<String, u64> = HashMap::new();
        for stored in manifests::stored_messages(layout)? {
            stats.stored_messages += 1;
            stats.stored_bytes += stored.size;
            if !uses.contains_key(&stored.sha256) {
                stats.orphans += 1;
            }
            sizes.insert(stored.sha256, stored.size);
        }
        stats.shared_messages = uses.values().filter(|&&n| n > 1).count();
        stats.bytes_if_copied = listed.iter().map(|sha| sizes.get(sha).copied().unwrap_or(0)).sum();
        let used_bytes: u64 = uses.keys().map(|sha| sizes.get(sha).copied().unwrap_or(0)).sum();
        stats.bytes_saved = stats.bytes_if_copied.saturating_sub(used_bytes);
        Ok(stats)
    }

    /// Removes stored messages no conversation uses; returns how many. A pack nobody uses is
    /// removed; a pack partly used is rewritten with only its used messages (the new pack
    /// synced first, then the manifests that name them, then the old pack removed), so a
    /// crash at any point leaves every manifest naming a message that is there. A
    /// conversation that cannot be read stops the collection (its messages might be the ones
    /// in question).
    pub fn gc_messages(&mut self) -> Result<usize> {
        if !self.storage.on_this_machine() {
            return Ok(0);
        }
        let layout = self.layout().clone();
        let _lock = crate::lock::WriteLock::acquire(&layout)?;
        // Every message name in use, and every manifest's own references: a fork's shared
        // prefix is listed in its source's manifest, so these hold every place on disk.
        let mut used: HashSet<String> = HashSet::new();
        let mut owners: Vec<zblade_core::Manifest> = Vec::new();
        for entry in conversation_files(&layout)? {
            let id = entry.trim_end_matches(".json");
            if let Some((stored, _)) = manifests::read_stored(&layout, id)? {
                used.extend(manifests::resolve_refs(&layout, &stored)?.into_iter().map(|r| r.sha256));
                if let StoredConversation::Manifest(m) = stored
                    && m.messages.iter().any(|r| r.pack.is_some())
                {
                    owners.push(m);
                }
            }
        }
        let mut used_places: HashMap<&str, HashSet<u64>> = HashMap::new();
        for r in owners.iter().flat_map(|m| &m.messages) {
            if let Some(place) = &r.pack {
                used_places.entry(place.name.as_str()).or_default().insert(place.offset);
            }
        }
        let mut files: HashMap<PathBuf, Vec<manifests::StoredMessage>> = HashMap::new();
        for stored in manifests::stored_messages(&layout)? {
            files.entry(stored.file.clone()).or_default().push(stored);
        }
        let mut removed = 0;
        let mut gone: Vec<(PathBuf, usize)> = Vec::new();
        let mut new_packs: Vec<(PathBuf, Vec<u8>)> = Vec::new();
        let mut moved: HashMap<(String, u64), PackPlace> = HashMap::new();
        for (path, mut entries) in files {
            let Some(name) = entries[0].pack.clone() else {
                // Files of their own (written before packs): one message each.
                let unused = entries.iter().filter(|e| !used.contains(&e.sha256)).count();
                if unused > 0 {
                    gone.push((path, unused));
                }
                continue;
            };
            let offsets = used_places.get(name.as_str());
            let kept = entries
                .iter()
                .filter(|e| offsets.is_some_and(|o| o.contains(&e.offset)))
                .count();
            // A place that is no entry's start (a damaged manifest) keeps the pack whole.
            if offsets.is_some_and(|o| o.len() != kept) || kept == entries.len() {
                continue;
            }
            if kept > 0 {
                entries.sort_by_key(|e| e.offset);
                let old = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
                let mut pack = Vec::new();
                let mut places = Vec::new();
                for e in entries
                    .iter()
                    .filter(|e| offsets.is_some_and(|o| o.contains(&e.offset)))
                {
                    places.push((e.offset, pack.len() as u64, e.size));
                    pack.extend_from_slice(&old[e.offset as usize..(e.offset + e.size) as usize]);
                }
                let new_name = zblade_core::pack_name(&pack);
                for (from, offset, len) in places {
                    let place = PackPlace {
                        name: new_name.clone(),
                        offset,
                        len,
                    };
                    moved.insert((name.clone(), from), place);
                }
                new_packs.push((layout.pack_path(&new_name), pack));
            }
            gone.push((path, entries.len() - kept));
        }
        if !moved.is_empty() {
            zblade_core::fsio::write_atomic_batch(&new_packs)?;
            let mut rewritten: Vec<(PathBuf, Vec<u8>)> = Vec::new();
            let mut ids: Vec<String> = Vec::new();
            for mut manifest in owners {
                let mut changed = false;
                for r in &mut manifest.messages {
                    if let Some(place) = &r.pack
                        && let Some(new) = moved.get(&(place.name.clone(), place.offset))
                    {
                        r.pack = Some(new.clone());
                        changed = true;
                    }
                }
                if changed {
                    rewritten.push((
                        layout.conversation_path(&manifest.conversation_id),
                        manifest.to_artifact_json(),
                    ));
                    ids.push(manifest.conversation_id);
                }
            }
            zblade_core::fsio::write_atomic_batch(&rewritten)?;
            let index = self.index_mut()?;
            for ((_, bytes), id) in rewritten.iter().zip(&ids) {
                index.set_artifact_sha256(id, &sha256_hex(bytes))?;
            }
        }
        let mut dirs = HashSet::new();
        for (path, messages) in gone {
            std::fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
            dirs.insert(path.parent().map(|p| p.to_path_buf()).unwrap_or_default());
            removed += messages;
        }
        for dir in dirs {
            zblade_core::fsio::sync_dir(&dir)?;
        }
        Ok(removed)
    }

    /// Converts conversations still in format 1 (messages inline) to manifests over the
    /// message store, one at a time; returns how many. Each conversation is checked before
    /// its file is replaced (its messages read back from the store must equal the originals),
    /// so an interruption at any point leaves every conversation readable, and running again
    /// finishes the rest. `progress` gets (done, total).
    pub fn convert_conversations(&mut self, progress: &mut dyn FnMut(usize, usize)) -> Result<usize> {
        if !self.storage.on_this_machine() {
            return Ok(0);
        }
        let layout = self.layout().clone();
        let mut pending = Vec::new();
        for entry in conversation_files(&layout)? {
            let id = entry.trim_end_matches(".json").to_string();
            // Unreadable files are fsck's to report; conversion skips them.
            if let Ok(Some((StoredConversation::Inline(_), _))) = manifests::read_stored(&layout, &id) {
                pending.push(id);
            }
        }
        let total = pending.len();
        for (done, id) in pending.iter().enumerate() {
            progress(done, total);
            let _lock = crate::lock::WriteLock::acquire(&layout)?;
            let Some((StoredConversation::Inline(conv), _)) = manifests::read_stored(&layout, id)? else {
                continue;
            };
            let writes = manifests::plan_writes(&layout, std::slice::from_ref(&conv))?;
            manifests::write_messages(&writes)?;
            let mut reader = manifests::MessageReader::new(&layout);
            for (i, (message, r)) in conv.messages.iter().zip(&writes.refs[0]).enumerate() {
                let mut stored = reader.read(r)?;
                stored.id = message.id.clone();
                stored.origin = message.origin.clone();
                if &stored != message {
                    return Err(Error::field(
                        &layout.relative(&layout.conversation_path(id)),
                        format!("messages[{i}]"),
                        "reads back differently from the message store; the conversation was left as it was",
                    ));
                }
            }
            let hashes = manifests::write_manifests(&writes)?;
            self.index_mut()?.set_artifact_sha256(id, &hashes[0])?;
        }
        progress(total, total);
        Ok(total)
    }

    fn local_only(&self, what: &str) -> Result<()> {
        if self.storage.on_this_machine() {
            return Ok(());
        }
        Err(Error::Usage(format!(
            "`zblade {what}` reads this machine's store; this project keeps its memory on a sync server"
        )))
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

/// The file names of `artifacts/conversations/*.json`, sorted.
fn conversation_files(layout: &zblade_core::Layout) -> Result<Vec<String>> {
    let dir = layout.conversations_dir();
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(&dir, e)),
    };
    let mut names = Vec::new();
    for entry in entries {
        let name = entry
            .map_err(|e| Error::io(&dir, e))?
            .file_name()
            .to_string_lossy()
            .into_owned();
        if name.ends_with(".json") && !name.starts_with('.') && !name.contains(zblade_core::fsio::TEMP_MARKER) {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
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

//! Conversation artifacts on disk in local mode: format 1 (messages inline) is read as ever;
//! everything written is format 2, a manifest of references into the message store
//! (`artifacts/messages/`, one file per distinct message, named by its SHA-256).
//!
//! Reading resolves a manifest: its shared prefix (a fork's inherited messages) through the
//! manifests it names, then each message file, whose content must still hash to its name —
//! a corrupt message is named and fails only the conversations that use it.
//!
//! Writing stores the messages first and the manifests after, each batch atomic and durable,
//! so a crash can leave unreferenced messages (which `zblade gc` removes) but never a manifest
//! pointing at a message that is not there.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use zblade_core::graph::{canonical_message, is_sha256};
use zblade_core::{
    Conversation, Error, Layout, Manifest, Message, MessageOrigin, MessageRef, Result, SharedPrefix,
    StoredConversation, fsio, parse_stored_conversation, sha256_hex,
};

use super::ForkRequest;
use crate::scan::Loaded;

/// The deepest chain of shared prefixes followed (a fork of a fork of …); deeper chains are
/// refused as damage rather than walked forever.
const MAX_PREFIX_DEPTH: usize = 10_000;

/// Reads and parses conversation `id`'s artifact; `Ok(None)` when there is none.
pub(crate) fn read_stored(layout: &Layout, id: &str) -> Result<Option<(StoredConversation, Vec<u8>)>> {
    let path = layout.conversation_path(id);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(&path, e)),
    };
    let stored = parse_stored_conversation(&bytes, &layout.relative(&path))?;
    Ok(Some((stored, bytes)))
}

/// The conversation's id, whichever the format.
pub(crate) fn stored_id(stored: &StoredConversation) -> &str {
    match stored {
        StoredConversation::Inline(conv) => &conv.conversation_id,
        StoredConversation::Manifest(manifest) => &manifest.conversation_id,
    }
}

/// Every message reference of a stored conversation, in order, its shared prefix resolved.
/// Reads manifests only, never message files.
pub(crate) fn resolve_refs(layout: &Layout, stored: &StoredConversation) -> Result<Vec<MessageRef>> {
    let mut chain = vec![stored_id(stored).to_string()];
    resolve_refs_in(layout, stored, &mut chain)
}

fn resolve_refs_in(layout: &Layout, stored: &StoredConversation, chain: &mut Vec<String>) -> Result<Vec<MessageRef>> {
    let manifest = match stored {
        StoredConversation::Inline(conv) => return Ok(refs_of(&conv.messages)),
        StoredConversation::Manifest(manifest) => manifest,
    };
    let mut refs = Vec::with_capacity(manifest.len());
    if let Some(prefix) = &manifest.shared_prefix {
        let source = layout.relative(&layout.conversation_path(&manifest.conversation_id));
        if chain.contains(&prefix.conversation_id) || chain.len() > MAX_PREFIX_DEPTH {
            chain.push(prefix.conversation_id.clone());
            return Err(Error::field(
                &source,
                "shared_prefix",
                format!("shared prefixes form a cycle: {}", chain.join(" → ")),
            ));
        }
        let Some((base, _)) = read_stored(layout, &prefix.conversation_id)? else {
            return Err(Error::field(
                &source,
                "shared_prefix",
                format!(
                    "shares the first {} messages of {}, which is missing",
                    prefix.messages, prefix.conversation_id
                ),
            ));
        };
        chain.push(prefix.conversation_id.clone());
        let base_refs = resolve_refs_in(layout, &base, chain)?;
        chain.pop();
        if base_refs.len() < prefix.messages {
            return Err(Error::field(
                &source,
                "shared_prefix.messages",
                format!(
                    "shares the first {} messages of {}, which has only {}",
                    prefix.messages,
                    prefix.conversation_id,
                    base_refs.len()
                ),
            ));
        }
        refs.extend(base_refs.into_iter().take(prefix.messages).map(|mut r| {
            if r.origin == MessageOrigin::Native {
                r.origin = MessageOrigin::Inherited {
                    conversation_id: prefix.conversation_id.clone(),
                };
            }
            r
        }));
    }
    refs.extend(manifest.messages.iter().cloned());
    Ok(refs)
}

/// References naming `messages` as they would be stored.
pub(crate) fn refs_of(messages: &[Message]) -> Vec<MessageRef> {
    messages
        .iter()
        .map(|m| MessageRef {
            id: m.id.clone(),
            sha256: sha256_hex(&canonical_message(m)),
            origin: m.origin.clone().unwrap_or_default(),
        })
        .collect()
}

/// Reads the stored message `sha256`, checking that its content still hashes to its name.
pub(crate) fn read_message(layout: &Layout, sha256: &str) -> Result<Message> {
    let path = layout.message_path(sha256);
    let rel = layout.relative(&path);
    let bytes = std::fs::read(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::NotFound(format!("message {rel} is missing from the store")),
        _ => Error::io(&path, e),
    })?;
    if sha256_hex(&bytes) != sha256 {
        return Err(Error::field(
            &rel,
            "content",
            "the file's content does not match its name: the message is corrupted",
        ));
    }
    zblade_core::artifact::parse_message(&bytes, &rel)
}

/// Reads, resolves and validates one conversation artifact; the file name must match its id.
pub(crate) fn load_conversation(layout: &Layout, path: &Path) -> Result<Loaded<Conversation>> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let rel = layout.relative(path);
    let stored = parse_stored_conversation(&bytes, &rel)?;
    let conv = match stored {
        StoredConversation::Inline(conv) => conv,
        StoredConversation::Manifest(manifest) => {
            let refs = resolve_refs(layout, &StoredConversation::Manifest(manifest.clone()))?;
            let mut messages = Vec::with_capacity(refs.len());
            for r in refs {
                let mut message = read_message(layout, &r.sha256)
                    .map_err(|e| Error::field(&rel, "messages", format!("message {}: {e}", r.id)))?;
                // The id is the conversation's name for the message (the store keeps content).
                message.id = r.id.clone();
                message.origin = (r.origin != MessageOrigin::Native).then_some(r.origin);
                messages.push(message);
            }
            let conv = manifest.into_conversation(messages);
            conv.validate(&rel)?;
            conv
        }
    };
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if stem != conv.conversation_id {
        return Err(Error::field(
            &rel,
            "conversation_id",
            format!("{:?} does not match the file name {stem:?}.json", conv.conversation_id),
        ));
    }
    Ok(Loaded {
        artifact: conv,
        sha256: sha256_hex(&bytes),
        path: rel,
    })
}

/// What storing some conversations takes: the message files not yet in the store, then the
/// manifests; and the shared prefix each conversation ended up with (for the index).
pub(crate) struct Writes {
    /// New message files (written first).
    pub messages: Vec<(PathBuf, Vec<u8>)>,
    /// Manifests, one per conversation, in input order.
    pub manifests: Vec<(PathBuf, Vec<u8>)>,
    /// The shared prefix of each conversation, in input order.
    pub prefixes: Vec<Option<SharedPrefix>>,
}

/// Plans the files that store `convs`. A conversation keeps its `shared_prefix` only while its
/// first messages are still exactly the shared ones; otherwise all its messages are listed in
/// its own manifest.
pub(crate) fn plan_writes(layout: &Layout, convs: &[Conversation]) -> Result<Writes> {
    let mut writes = Writes {
        messages: Vec::new(),
        manifests: Vec::with_capacity(convs.len()),
        prefixes: Vec::with_capacity(convs.len()),
    };
    let mut planned: HashSet<String> = HashSet::new();
    let mut base_refs: HashMap<String, Vec<MessageRef>> = HashMap::new();
    for conv in convs {
        let refs = refs_of(&conv.messages);
        // A conversation read from a manifest carries its shared prefix; one built afresh
        // (an import, `zblade add`) lists all its messages.
        let prefix = match conv.shared_prefix.clone() {
            Some(prefix) if prefix.messages <= refs.len() => {
                if !base_refs.contains_key(&prefix.conversation_id) {
                    let resolved = match read_stored(layout, &prefix.conversation_id)? {
                        Some((base, _)) => resolve_refs(layout, &base)?,
                        None => Vec::new(),
                    };
                    base_refs.insert(prefix.conversation_id.clone(), resolved);
                }
                let base = &base_refs[&prefix.conversation_id];
                let same = base.len() >= prefix.messages
                    && base[..prefix.messages]
                        .iter()
                        .zip(&refs)
                        .all(|(a, b)| a.sha256 == b.sha256 && a.id == b.id);
                same.then_some(prefix)
            }
            _ => None,
        };
        let shared = prefix.as_ref().map_or(0, |p| p.messages);
        for (message, r) in conv.messages.iter().zip(&refs).skip(shared) {
            if planned.insert(r.sha256.clone()) {
                let path = layout.message_path(&r.sha256);
                if !path.exists() {
                    writes.messages.push((path, canonical_message(message)));
                }
            }
        }
        let own: Vec<MessageRef> = refs.into_iter().skip(shared).collect();
        let manifest = Manifest::of(conv, prefix.clone(), own);
        writes.manifests.push((
            layout.conversation_path(&conv.conversation_id),
            manifest.to_artifact_json(),
        ));
        writes.prefixes.push(prefix);
    }
    Ok(writes)
}

/// Writes planned files: messages (and their folders) first, then the manifests; returns each
/// manifest's SHA-256 for the index.
pub(crate) fn write(writes: &Writes) -> Result<Vec<String>> {
    write_messages(writes)?;
    write_manifests(writes)
}

/// The first half of [`write`]: the new message files, durable before any manifest names them.
pub(crate) fn write_messages(writes: &Writes) -> Result<()> {
    let mut dirs: Vec<&Path> = writes.messages.iter().filter_map(|(p, _)| p.parent()).collect();
    dirs.sort();
    dirs.dedup();
    for dir in dirs {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    // Message files never change once written (their name is their content's hash): one
    // filesystem sync for the batch rather than one fsync per message.
    fsio::write_new_batch(&writes.messages)
}

/// The second half of [`write`]: the manifests; returns each one's SHA-256 for the index.
pub(crate) fn write_manifests(writes: &Writes) -> Result<Vec<String>> {
    fsio::write_atomic_batch(&writes.manifests)?;
    Ok(writes.manifests.iter().map(|(_, bytes)| sha256_hex(bytes)).collect())
}

/// Every stored message file's SHA-256 name (files whose name is not a digest are skipped).
pub(crate) fn stored_messages(layout: &Layout) -> Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    let dir = layout.messages_dir();
    let shards = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(Error::io(&dir, e)),
    };
    for shard in shards {
        let shard = shard.map_err(|e| Error::io(&dir, e))?.path();
        if !shard.is_dir() {
            continue;
        }
        for entry in std::fs::read_dir(&shard).map_err(|e| Error::io(&shard, e))? {
            let path = entry.map_err(|e| Error::io(&shard, e))?.path();
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if let Some(sha) = name.strip_suffix(".json").filter(|s| is_sha256(s)) {
                out.push((sha.to_string(), path));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// A fork planned from its parent's manifest alone (no message is read).
pub(crate) struct Fork {
    /// The new conversation's id.
    pub conversation_id: String,
    /// Its manifest: the parent's first messages as a shared prefix, nothing of its own yet.
    pub manifest: Manifest,
}

/// Plans the fork `request` asks for; the caller writes it under the write lock.
pub(crate) fn fork(layout: &Layout, request: &ForkRequest) -> Result<Fork> {
    let Some((parent, _)) = read_stored(layout, &request.parent)? else {
        return Err(Error::NotFound(format!(
            "no conversation {} in this project",
            request.parent
        )));
    };
    let refs = resolve_refs(layout, &parent)?;
    let after = request
        .after
        .position(&request.parent, refs.iter().map(|r| r.id.as_str()))?;
    let (title, project_id, created, tags) = match &parent {
        StoredConversation::Inline(c) => (&c.title, &c.project_id, c.created_at, c.metadata.tags.clone()),
        StoredConversation::Manifest(m) => (&m.title, &m.project_id, m.created_at, m.metadata.tags.clone()),
    };
    let conversation_id = zblade_core::ids::new_id(zblade_core::ids::CONVERSATION);
    let mut metadata = zblade_core::ConversationMetadata {
        total_messages: after as u64 + 1,
        tags,
        ..Default::default()
    };
    metadata.extra.clear();
    let manifest = Manifest {
        version: zblade_core::graph::MANIFEST_VERSION.to_string(),
        conversation_id: conversation_id.clone(),
        project_id: project_id.clone(),
        created_at: Some(request.now.max(created.unwrap_or(request.now))),
        updated_at: Some(request.now),
        title: request.title.clone().unwrap_or_else(|| format!("{title} (fork)")),
        shared_prefix: Some(SharedPrefix {
            conversation_id: request.parent.clone(),
            messages: after + 1,
        }),
        messages: Vec::new(),
        moments: Vec::new(),
        metadata,
        forked_from: Some(zblade_core::ForkPoint {
            conversation_id: request.parent.clone(),
            after_message_id: refs[after].id.clone(),
            after_index: after,
            forked_at: request.now,
        }),
        merged_from: Vec::new(),
        compaction: None,
        token_usage: Default::default(),
        extra: serde_json::Map::new(),
    };
    Ok(Fork {
        conversation_id,
        manifest,
    })
}

/// Conversation `id` with every message listed in its own manifest (its shared prefix
/// dropped), ready to be written before the conversation it shared with changes or goes.
pub(crate) fn detached(layout: &Layout, id: &str) -> Result<Conversation> {
    let mut conv = load_conversation(layout, &layout.conversation_path(id))?.artifact;
    conv.shared_prefix = None;
    Ok(conv)
}

/// The forks that share messages of `convs` which the new versions no longer start with,
/// detached (see [`detached`]).
pub(crate) fn detach_dependents(
    index: &zblade_index::Index,
    layout: &Layout,
    convs: &[Conversation],
) -> Result<Vec<Conversation>> {
    let mut out = Vec::new();
    for conv in convs {
        let sharing = index.sharing_from(&conv.conversation_id)?;
        if sharing.is_empty() {
            continue;
        }
        let old = match read_stored(layout, &conv.conversation_id)? {
            Some((stored, _)) => resolve_refs(layout, &stored)?,
            None => Vec::new(),
        };
        let new = refs_of(&conv.messages);
        let same = |a: &[MessageRef], b: &[MessageRef]| {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.sha256 == y.sha256 && x.id == y.id)
        };
        for (dependent, n) in sharing {
            if old.len() < n || new.len() < n || !same(&old[..n], &new[..n]) {
                out.push(detached(layout, &dependent)?);
            }
        }
    }
    Ok(out)
}

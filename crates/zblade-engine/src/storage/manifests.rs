//! Conversation artifacts on disk in local mode: format 1 (messages inline) is read as ever;
//! everything written is format 2, a manifest of references into the message store
//! (`artifacts/messages/`: each write's new messages in one pack, `packs/<name>.jsonl`;
//! earlier versions' messages one file each, `ab/<sha256>.json`).
//!
//! Reading resolves a manifest: its shared prefix (a fork's inherited messages) through the
//! manifests it names, then each message, whose content must still hash to its name — a
//! corrupt message is named and fails only the conversations that use it (a pack's other
//! entries are checked on their own).
//!
//! Writing stores the packs first and the manifests after, each batch atomic and durable,
//! so a crash can leave unreferenced packs (which `zblade gc` removes) but never a manifest
//! pointing at a message that is not there.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use zblade_core::graph::{canonical_message, is_sha256};
use zblade_core::{
    Conversation, Error, Layout, Manifest, Message, MessageOrigin, MessageRef, PackPlace, Result, SharedPrefix,
    StoredConversation, fsio, parse_stored_conversation, sha256_hex,
};

use super::ForkRequest;
use crate::loaded::Loaded;

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

/// References naming `messages` as they would be stored (where is not known here).
pub(crate) fn refs_of(messages: &[Message]) -> Vec<MessageRef> {
    messages.iter().map(|m| stored_form(m).0).collect()
}

/// A message's reference (without a place) and the canonical bytes it is stored as.
fn stored_form(message: &Message) -> (MessageRef, Vec<u8>) {
    let bytes = canonical_message(message);
    let r = MessageRef {
        id: message.id.clone(),
        sha256: sha256_hex(&bytes),
        origin: message.origin.clone().unwrap_or_default(),
        pack: None,
    };
    (r, bytes)
}

/// Reads stored messages, checking that each one's content still hashes to its name; keeps
/// the packs it opened open for the next messages (a conversation's are mostly in one).
pub(crate) struct MessageReader<'a> {
    layout: &'a Layout,
    packs: HashMap<String, (std::fs::File, u64)>,
}

impl<'a> MessageReader<'a> {
    pub(crate) fn new(layout: &'a Layout) -> MessageReader<'a> {
        MessageReader {
            layout,
            packs: HashMap::new(),
        }
    }

    /// The stored message `r` names (its id and origin are the caller's to set).
    pub(crate) fn read(&mut self, r: &MessageRef) -> Result<Message> {
        let (bytes, rel) = match &r.pack {
            None => {
                let path = self.layout.message_path(&r.sha256);
                let rel = self.layout.relative(&path);
                let bytes = std::fs::read(&path).map_err(|e| match e.kind() {
                    std::io::ErrorKind::NotFound => Error::NotFound(format!("message {rel} is missing from the store")),
                    _ => Error::io(&path, e),
                })?;
                (bytes, rel)
            }
            Some(place) => self.read_packed(place)?,
        };
        if sha256_hex(&bytes) != r.sha256 {
            return Err(Error::field(
                &rel,
                "content",
                format!(
                    "stored message {} does not match its name: the message is corrupted",
                    r.sha256
                ),
            ));
        }
        zblade_core::artifact::parse_message(&bytes, &rel)
    }

    /// The bytes of one pack entry, and its name for errors (`…/packs/<pack>.jsonl@offset`).
    fn read_packed(&mut self, place: &PackPlace) -> Result<(Vec<u8>, String)> {
        use std::io::{Read, Seek, SeekFrom};
        let path = self.layout.pack_path(&place.name);
        let rel = format!("{}@{}", self.layout.relative(&path), place.offset);
        if !self.packs.contains_key(&place.name) {
            let file = std::fs::File::open(&path).map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => {
                    Error::NotFound(format!("message pack {rel} is missing from the store"))
                }
                _ => Error::io(&path, e),
            })?;
            let size = file.metadata().map_err(|e| Error::io(&path, e))?.len();
            self.packs.insert(place.name.clone(), (file, size));
        }
        let (file, size) = self.packs.get_mut(&place.name).expect("opened above");
        // Checked before allocating: a manifest is outside input and may claim anything.
        if place.offset.checked_add(place.len).is_none_or(|end| end > *size) {
            return Err(Error::field(
                &rel,
                "pack",
                format!("the pack holds {size} bytes, not a message of {} bytes here", place.len),
            ));
        }
        let mut bytes = vec![0; place.len as usize];
        file.seek(SeekFrom::Start(place.offset))
            .and_then(|_| file.read_exact(&mut bytes))
            .map_err(|e| Error::io(&path, e))?;
        Ok((bytes, rel))
    }
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
            let mut reader = MessageReader::new(layout);
            for r in refs {
                let mut message = reader
                    .read(&r)
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

/// What storing some conversations takes: the packs of messages not yet in the store, then
/// the manifests; and the shared prefix each conversation ended up with (for the index).
pub(crate) struct Writes {
    /// New packs (written first): the new messages of the whole write, in one pack.
    pub packs: Vec<(PathBuf, Vec<u8>)>,
    /// Manifests, one per conversation, in input order.
    pub manifests: Vec<(PathBuf, Vec<u8>)>,
    /// Each manifest's own references (after its shared prefix), in input order.
    pub refs: Vec<Vec<MessageRef>>,
    /// The shared prefix of each conversation, in input order.
    pub prefixes: Vec<Option<SharedPrefix>>,
}

/// Where messages already in the store are, learnt from the manifests that a write touches:
/// the conversation's own (its earlier messages) and those its messages came from (a fork's
/// parent, a merge's source). A message found nowhere is written again, into a new pack.
struct Known {
    /// SHA-256 → its pack place; `None`: a file of its own, if that file exists.
    places: HashMap<String, Option<PackPlace>>,
    /// Conversations whose manifests were read.
    read: HashSet<String>,
    /// Whether the store holds files of their own (written before packs): looked at once per
    /// write, so a project without any pays no lookup per message.
    has_loose: bool,
}

impl Known {
    fn new(layout: &Layout) -> Known {
        let packs = layout.packs_dir();
        let has_loose = std::fs::read_dir(layout.messages_dir())
            .map(|entries| entries.flatten().any(|e| e.path() != packs))
            .unwrap_or(false);
        Known {
            places: HashMap::new(),
            read: HashSet::new(),
            has_loose,
        }
    }

    /// Learns the places of `id`'s messages. A manifest that cannot be read teaches nothing
    /// (its messages, if needed, are written again); format-1 conversations hold their
    /// messages inline, not in the store.
    fn learn(&mut self, layout: &Layout, id: &str) {
        if !self.read.insert(id.to_string()) {
            return;
        }
        if let Ok(Some((stored @ StoredConversation::Manifest(_), _))) = read_stored(layout, id)
            && let Ok(refs) = resolve_refs(layout, &stored)
        {
            for r in refs {
                self.places.entry(r.sha256).or_insert(r.pack);
            }
        }
    }

    /// Where message `sha256` is stored: `Some(None)` for its own file, `None` when nowhere.
    fn place(&self, layout: &Layout, sha256: &str) -> Option<Option<PackPlace>> {
        match self.places.get(sha256) {
            Some(Some(place)) => Some(Some(place.clone())),
            _ => (self.has_loose && layout.message_path(sha256).exists()).then_some(None),
        }
    }
}

/// The conversation a message came from, when it came from another.
fn origin_conversation(origin: &MessageOrigin) -> Option<&str> {
    match origin {
        MessageOrigin::Native => None,
        MessageOrigin::Inherited { conversation_id } | MessageOrigin::Merged { conversation_id, .. } => {
            Some(conversation_id)
        }
    }
}

/// Plans the files that store `convs`. A conversation keeps its `shared_prefix` only while its
/// first messages are still exactly the shared ones; otherwise all its messages are listed in
/// its own manifest. Messages already stored are referred to where they are; the others of
/// each conversation go into one new pack.
pub(crate) fn plan_writes(layout: &Layout, convs: &[Conversation]) -> Result<Writes> {
    let mut writes = Writes {
        packs: Vec::new(),
        manifests: Vec::with_capacity(convs.len()),
        refs: Vec::with_capacity(convs.len()),
        prefixes: Vec::with_capacity(convs.len()),
    };
    let mut known = Known::new(layout);
    let mut base_refs: HashMap<String, Vec<MessageRef>> = HashMap::new();
    // The new messages of the whole write go into one pack: one file to create instead of
    // one per conversation (creating files was a seventh of an import), and a message two
    // conversations of the write share is stored once.
    let mut pack: Vec<u8> = Vec::new();
    let mut in_pack: HashMap<String, (u64, u64)> = HashMap::new();
    // (conversation, reference) of each reference into the new pack, named once it is whole.
    let mut packed: Vec<(usize, usize)> = Vec::new();
    let mut planned: Vec<(Vec<MessageRef>, Option<SharedPrefix>)> = Vec::with_capacity(convs.len());
    for (c, conv) in convs.iter().enumerate() {
        let stored: Vec<(MessageRef, Vec<u8>)> = conv.messages.iter().map(stored_form).collect();
        // A conversation read from a manifest carries its shared prefix; one built afresh
        // (an import, `zblade add`) lists all its messages.
        let prefix = match conv.shared_prefix.clone() {
            Some(prefix) if prefix.messages <= stored.len() => {
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
                        .zip(&stored)
                        .all(|(a, (b, _))| a.sha256 == b.sha256 && a.id == b.id);
                same.then_some(prefix)
            }
            _ => None,
        };
        let shared = prefix.as_ref().map_or(0, |p| p.messages);
        known.learn(layout, &conv.conversation_id);
        let mut own: Vec<MessageRef> = Vec::with_capacity(stored.len() - shared);
        for (mut r, bytes) in stored.into_iter().skip(shared) {
            if !known.places.contains_key(&r.sha256)
                && let Some(from) = origin_conversation(&r.origin)
            {
                known.learn(layout, from);
            }
            match known.place(layout, &r.sha256) {
                Some(place) => r.pack = place,
                None => {
                    let (offset, len) = *in_pack.entry(r.sha256.clone()).or_insert_with(|| {
                        let offset = pack.len() as u64;
                        pack.extend_from_slice(&bytes);
                        (offset, bytes.len() as u64)
                    });
                    r.pack = Some(PackPlace {
                        name: String::new(),
                        offset,
                        len,
                    });
                    packed.push((c, own.len()));
                }
            }
            own.push(r);
        }
        planned.push((own, prefix));
    }
    if !pack.is_empty() {
        let name = zblade_core::pack_name(&pack);
        for &(c, i) in &packed {
            let place = planned[c].0[i].pack.as_mut().expect("packed above");
            place.name = name.clone();
        }
        let path = layout.pack_path(&name);
        if !path.exists() {
            writes.packs.push((path, pack));
        }
    }
    for (conv, (own, prefix)) in convs.iter().zip(planned) {
        let manifest = Manifest::of(conv, prefix.clone(), own.clone());
        writes.manifests.push((
            layout.conversation_path(&conv.conversation_id),
            manifest.to_artifact_json(),
        ));
        writes.refs.push(own);
        writes.prefixes.push(prefix);
    }
    Ok(writes)
}

/// Writes planned files: packs first, then the manifests; returns each manifest's SHA-256
/// for the index.
pub(crate) fn write(writes: &Writes) -> Result<Vec<String>> {
    write_messages(writes)?;
    write_manifests(writes)
}

/// The first half of [`write`]: the new packs, durable before any manifest names them.
pub(crate) fn write_messages(writes: &Writes) -> Result<()> {
    if writes.packs.is_empty() {
        return Ok(());
    }
    let dir = writes.packs[0].0.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    // Each pack atomic (staged, synced, renamed), the batch synced together.
    fsio::write_atomic_batch(&writes.packs)
}

/// The second half of [`write`]: the manifests; returns each one's SHA-256 for the index.
pub(crate) fn write_manifests(writes: &Writes) -> Result<Vec<String>> {
    fsio::write_atomic_batch(&writes.manifests)?;
    Ok(writes.manifests.iter().map(|(_, bytes)| sha256_hex(bytes)).collect())
}

/// One message in the store, as `stats` and `gc` see it.
pub(crate) struct StoredMessage {
    /// Its name.
    pub sha256: String,
    /// Its size in bytes.
    pub size: u64,
    /// The file holding it: its own, or its pack.
    pub file: PathBuf,
    /// Its pack's name, when in a pack.
    pub pack: Option<String>,
    /// Where its line starts in the pack (0 for a file of its own).
    pub offset: u64,
}

/// Every message in the store: the files of their own (files whose name is not a digest are
/// skipped) and the entries of every pack (each line hashed).
pub(crate) fn stored_messages(layout: &Layout) -> Result<Vec<StoredMessage>> {
    let mut out = Vec::new();
    let dir = layout.messages_dir();
    let shards = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(Error::io(&dir, e)),
    };
    let packs = layout.packs_dir();
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
            if shard == packs {
                if let Some(pack) = name.strip_suffix(".jsonl").filter(|s| zblade_core::is_pack_name(s)) {
                    let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
                    let mut offset = 0;
                    for line in bytes.split_inclusive(|b| *b == b'\n') {
                        out.push(StoredMessage {
                            sha256: sha256_hex(line),
                            size: line.len() as u64,
                            file: path.clone(),
                            pack: Some(pack.to_string()),
                            offset,
                        });
                        offset += line.len() as u64;
                    }
                }
            } else if let Some(sha) = name.strip_suffix(".json").filter(|s| is_sha256(s)) {
                out.push(StoredMessage {
                    sha256: sha.to_string(),
                    size: std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0),
                    file: path.clone(),
                    pack: None,
                    offset: 0,
                });
            }
        }
    }
    out.sort_by(|a, b| a.sha256.cmp(&b.sha256));
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
    // A fork of a private conversation stays private.
    let private = match &parent {
        StoredConversation::Inline(c) => c.metadata.private,
        StoredConversation::Manifest(m) => m.metadata.private,
    };
    let mut metadata = zblade_core::ConversationMetadata {
        total_messages: after as u64 + 1,
        tags,
        private,
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

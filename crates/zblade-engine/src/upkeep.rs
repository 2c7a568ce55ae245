//! Upkeep of the local message store (`.zblade/messages/`): how large it is, removing
//! message files no conversation points to any more, and converting conversations written
//! whole into manifests over shared message files. Local mode only.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use zblade_core::{Error, PackPlace, Result, StoredConversation, sha256_hex};

use crate::project::Project;
use crate::storage::manifests;

use crate::graph::StoreStats;

impl Project {
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

    pub(crate) fn local_only(&self, what: &str) -> Result<()> {
        if self.storage.on_this_machine() {
            return Ok(());
        }
        Err(Error::Usage(format!(
            "`zblade {what}` reads this machine's store; this project keeps its memory on a sync server"
        )))
    }
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

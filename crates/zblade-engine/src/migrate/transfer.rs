//! A migration's two long steps: copying each planned item to the other side (with its
//! vectors, to a server), and reading every copy back to check it arrived whole.

use std::collections::{HashMap, HashSet};

use zblade_core::{Error, Result, fsio, parse_conversation, sha256_hex};
use zblade_sync::{Client, Kind, VectorsUpload};

use crate::lock::WriteLock;
use crate::project::Project;
use crate::storage::manifests;

use super::{
    ArtifactFolders, Direction, PendingMigration, Phase, Plan, PlannedItem, Progress, VECTOR_CHUNK, adopted,
    append_copied, artifact_bytes, copied_log, open_copied_log, read_copied,
};

impl Project {
    /// Copies the planned items the log does not list yet; returns (copied, code blocks
    /// turned into references).
    pub(super) fn copy_items(
        &mut self,
        plan: &Plan,
        client: &Client,
        progress: Progress<'_>,
    ) -> Result<(usize, usize)> {
        let done = read_copied(self)?;
        let log_path = copied_log(self);
        let mut log = open_copied_log(&log_path)?;
        if plan.direction == Direction::ToServer {
            client.put_project(&plan.project, &self.parts.folder_name())?;
        }
        let _lock = WriteLock::acquire(self.layout())?;
        let folders = ArtifactFolders::proven(self)?;
        let mut tree = None;
        let (mut copied, mut converted) = (0, 0);
        // To the server, each item's vectors go after it; they are made for a chunk of items at
        // once (one lookup in the local vector table, batched embedding of what it lacks).
        let mut vectors: HashMap<(Kind, String), VectorsUpload> = HashMap::new();
        for (n, item) in plan.items.iter().enumerate() {
            progress(Phase::Copy, n, plan.items.len());
            if done.contains_key(&(item.kind, item.id.clone())) {
                continue;
            }
            if plan.direction == Direction::ToServer && n % VECTOR_CHUNK == 0 {
                let chunk = &plan.items[n..(n + VECTOR_CHUNK).min(plan.items.len())];
                vectors = self.chunk_vectors(&plan.project, chunk, &folders)?;
            }
            let written_hash = match plan.direction {
                Direction::ToServer => {
                    let path = folders.path(item.kind, &item.id)?;
                    let bytes = artifact_bytes(self.layout(), item.kind, &path)?;
                    if sha256_hex(&bytes) != item.hash {
                        return Err(Error::Usage(format!(
                            "{} changed since the migration was planned; finish editing, delete .zblade/migration/ and run it again",
                            self.layout().relative(&path)
                        )));
                    }
                    let bytes = match item.kind {
                        Kind::Conversation => adopted(&bytes, &plan.project, &self.layout().relative(&path))?,
                        Kind::Moment => bytes,
                    };
                    let hash = client.put_record(&plan.project, item.kind, &item.id, &bytes)?.hash;
                    // Its vectors, so the server searches it as this folder did.
                    if let Some(upload) = vectors.remove(&(item.kind, item.id.clone())) {
                        client.put_vectors(&plan.project, item.kind, &item.id, &upload)?;
                    }
                    hash
                }
                Direction::ToLocal => {
                    // Checked before anything is written: the id, the bytes against the hash
                    // the listing gave (the plan's), and that they are the artifact asked for.
                    let bytes = client
                        .get_listed_record(&plan.project, item.kind, &item.id, &item.hash)?
                        .ok_or_else(|| {
                            Error::NotFound(format!("{} vanished from the server during the migration", item.id))
                        })?;
                    let bytes = match item.kind {
                        Kind::Conversation => {
                            let tree = tree.get_or_insert_with(|| crate::codeblocks::TreeLines::load(&self.parts));
                            let (bytes, n) = self.parts.references_for_code_blocks(&bytes, &item.id, tree)?;
                            converted += n;
                            bytes
                        }
                        Kind::Moment => bytes,
                    };
                    let path = folders.path(item.kind, &item.id)?;
                    match item.kind {
                        // Its messages into the message store, then its manifest: the log
                        // records the conversation as it reads back (every message inline).
                        Kind::Conversation => {
                            let name = self.layout().relative(&path);
                            let conv = parse_conversation(&bytes, &name)?;
                            conv.validate(&name)?;
                            if conv.conversation_id != item.id {
                                return Err(Error::Untrusted(format!(
                                    "the server's record {} holds conversation {}",
                                    item.id, conv.conversation_id
                                )));
                            }
                            let writes = manifests::plan_writes(self.layout(), std::slice::from_ref(&conv))?;
                            manifests::write(&writes)?;
                            sha256_hex(&conv.to_artifact_json())
                        }
                        Kind::Moment => {
                            fsio::write_atomic(&path, &bytes)?;
                            sha256_hex(&bytes)
                        }
                    }
                }
            };
            append_copied(&mut log, &log_path, item.kind, &item.id, &written_hash)?;
            copied += 1;
        }
        progress(Phase::Copy, plan.items.len(), plan.items.len());
        Ok((copied, converted))
    }

    /// The vectors of `items` (see `storage::pieces`), keyed by kind and id; none when this
    /// machine cannot embed.
    pub(super) fn chunk_vectors(
        &self,
        project: &str,
        items: &[PlannedItem],
        folders: &ArtifactFolders,
    ) -> Result<HashMap<(Kind, String), VectorsUpload>> {
        let records = items
            .iter()
            .map(|item| {
                let path = folders.path(item.kind, &item.id)?;
                let bytes = artifact_bytes(self.layout(), item.kind, &path)?;
                // The bytes the server gets (their hash names the version the vectors are of).
                let bytes = match item.kind {
                    Kind::Conversation => adopted(&bytes, project, &self.layout().relative(&path))?,
                    Kind::Moment => bytes,
                };
                Ok((item.kind, bytes))
            })
            .collect::<Result<Vec<_>>>()?;
        let borrowed: Vec<(Kind, &[u8])> = records.iter().map(|(kind, bytes)| (*kind, bytes.as_slice())).collect();
        let uploads = crate::storage::pieces::record_vectors(&self.parts, &borrowed)?;
        Ok(items
            .iter()
            .zip(uploads)
            .filter_map(|(item, upload)| Some(((item.kind, item.id.clone()), upload?)))
            .collect())
    }

    /// Reads every planned item back from the destination and compares hashes with what the
    /// copy wrote; returns how many matched, or an error naming those that did not.
    pub(super) fn verify_items(&self, plan: &Plan, client: &Client, progress: Progress<'_>) -> Result<usize> {
        let written = read_copied(self)?;
        let mut at_destination: HashMap<(Kind, String), String> = HashMap::new();
        match plan.direction {
            Direction::ToServer => {
                for kind in [Kind::Conversation, Kind::Moment] {
                    for record in client.list_records(&plan.project, kind)? {
                        at_destination.insert((kind, record.id), record.hash);
                    }
                }
            }
            Direction::ToLocal => {
                let folders = ArtifactFolders::proven(self)?;
                for item in &plan.items {
                    let path = folders.path(item.kind, &item.id)?;
                    if let Ok(bytes) = artifact_bytes(self.layout(), item.kind, &path) {
                        at_destination.insert((item.kind, item.id.clone()), sha256_hex(&bytes));
                    }
                }
            }
        }
        let mut bad = Vec::new();
        let mut bad_ids = HashSet::new();
        let mut seen = HashSet::new();
        for (n, item) in plan.items.iter().enumerate() {
            progress(Phase::Verify, n, plan.items.len());
            let key = (item.kind, item.id.clone());
            if !seen.insert(key.clone()) {
                bad.push(format!("{} is planned twice", item.id));
                continue;
            }
            let expected = written.get(&key).cloned().unwrap_or_else(|| item.hash.clone());
            match at_destination.get(&key) {
                Some(hash) if *hash == expected => continue,
                Some(_) => bad.push(format!("{} differs at the destination", item.id)),
                None => bad.push(format!("{} is missing at the destination", item.id)),
            }
            bad_ids.insert(item.id.clone());
        }
        progress(Phase::Verify, plan.items.len(), plan.items.len());
        if !bad.is_empty() {
            // Back to copying those: the log no longer counts them as done.
            let keep: Vec<String> = std::fs::read_to_string(copied_log(self))
                .unwrap_or_default()
                .lines()
                .filter(|l| l.split(' ').nth(1).is_some_and(|id| !bad_ids.contains(id)))
                .map(str::to_string)
                .collect();
            fsio::write_atomic(&copied_log(self), (keep.join("\n") + "\n").as_bytes())?;
            self.write_journal(&PendingMigration {
                plan: plan.clone(),
                phase: Phase::Copy,
                started_at: String::new(),
            })?;
            return Err(Error::Usage(format!(
                "verification failed, storage.mode unchanged ({} of {}): {}; run the migration again to copy them once more",
                bad.len(),
                plan.items.len(),
                bad.iter().take(5).cloned().collect::<Vec<_>>().join("; ")
            )));
        }
        Ok(plan.items.len())
    }
}

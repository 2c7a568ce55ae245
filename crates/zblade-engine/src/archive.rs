//! The permanent archive (zblade-archive) seen from a project: which files a conversation
//! or moment is, removing them before their archived copies are forgotten, the items a share exports,
//! taking in what others shared. The archive itself only knows files; these are the parts
//! that know conversations.

use std::path::Path;

use zblade_archive::{Archive, ForgetReport, PushOptions, PushReport, SharedItem};
use zblade_core::{Error, Result};

use crate::graph::ExportFormat;
use crate::project::Project;
use crate::storage::AddOutcome;

/// Pushes what changed in the project at `root` to `archive`, after finishing any forget a kill
/// interrupted (its conversations go, then its keys): the one push every face runs —
/// `zblade archive push`, the app's button and its background push. The project is opened only
/// when a forget is pending: a push alone needs only the archive, and the background push runs
/// every minute.
pub fn push_archive(
    root: &Path,
    archive: &mut Archive,
    options: &PushOptions,
    progress: zblade_archive::Progress,
) -> Result<(ForgetReport, PushReport)> {
    let finished = if archive.unfinished_forgets()?.is_empty() {
        ForgetReport::default()
    } else {
        Project::open(root)?.finish_archive_forgets(archive, &mut *progress)?
    };
    let pushed = archive.push(options, progress)?;
    Ok((finished, pushed))
}

impl Project {
    /// Forgets conversations (documents included) and moments for good: each is removed here
    /// (a conversation with the messages no other conversation uses; their packs rewritten),
    /// then the archive destroys the keys of every batch that held them, after archiving the
    /// rest of those batches again. Messages a fork or merge still uses stay: they belong to
    /// that conversation too. A moment recorded inside a conversation goes with it.
    pub fn forget_archived(
        &mut self,
        archive: &mut Archive,
        ids: &[String],
        progress: zblade_archive::Progress,
    ) -> Result<ForgetReport> {
        if !self.storage.on_this_machine() {
            return Err(Error::Usage(
                "the archive keeps local projects; this one is in server mode".into(),
            ));
        }
        // Which files each conversation is, recorded in the archive's journal before
        // anything is removed: a forget killed half-way is finished by the next push.
        let mut paths = Vec::new();
        for id in ids {
            if id.starts_with(zblade_core::ids::MOMENT) {
                zblade_core::ids::check_id(id, Some(zblade_core::ids::MOMENT))
                    .map_err(|reason| Error::Usage(format!("{id}: not a moment id: {reason}")))?;
                let path = self.layout.moment_path(id);
                if !path.exists()
                    && let Some(owner) = self.index()?.moment_artifact(id)?
                    && owner.contains("conversations/")
                {
                    return Err(Error::Usage(format!(
                        "{id} was recorded inside a conversation ({owner}) and goes with it: forget that conversation"
                    )));
                }
                paths.push(self.layout_relative(&path));
                continue;
            }
            if !id.starts_with(zblade_core::ids::CONVERSATION) {
                return Err(Error::Usage(format!(
                    "{id}: `archive forget` takes conversation ids (conv_…; documents are conversations too) and moment ids (moment_…)"
                )));
            }
            zblade_core::ids::check_id(id, Some(zblade_core::ids::CONVERSATION))
                .map_err(|reason| Error::Usage(format!("{id}: not a conversation id: {reason}")))?;
            let manifest = self.layout.conversation_path(id);
            paths.push(self.layout_relative(&manifest));
            match std::fs::read(&manifest) {
                Ok(bytes) => paths.extend(message_files(&bytes)),
                // Gone already (an interrupted forget): its archived copies are still found
                // by the manifest's path.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(&manifest, e)),
            }
        }
        paths.sort();
        paths.dedup();
        archive.begin_forget(&paths)?;
        self.finish_archive_forgets(archive, progress)
    }

    /// Finishes the forgets recorded in the archive's journal: their conversations are
    /// removed here (with the messages nothing else uses; packs rewritten), then the archive
    /// destroys the keys. [`push_archive`] runs it before every push.
    pub fn finish_archive_forgets(
        &mut self,
        archive: &mut Archive,
        progress: zblade_archive::Progress,
    ) -> Result<ForgetReport> {
        let pending = archive.unfinished_forgets()?;
        if pending.is_empty() {
            return Ok(ForgetReport::default());
        }
        for row in &pending {
            for path in &row.paths {
                if !self.layout.dir().join(path).exists() {
                    continue;
                }
                let id_in = |dir: &str| path.strip_prefix(dir).and_then(|f| f.strip_suffix(".json"));
                if let Some(id) = id_in("artifacts/conversations/") {
                    self.delete_conversation(id)?;
                } else if let Some(id) = id_in("artifacts/moments/") {
                    self.delete_moment(id)?;
                }
            }
        }
        self.gc_messages()?;
        archive.finish_forgets(progress)
    }

    /// Removes a moment of its own (not one inside a conversation): its file, then its rows.
    fn delete_moment(&mut self, id: &str) -> Result<()> {
        zblade_core::ids::check_id(id, Some(zblade_core::ids::MOMENT))
            .map_err(|reason| Error::Usage(format!("{id}: not a moment id: {reason}")))?;
        let layout = self.layout.clone();
        let _lock = crate::lock::WriteLock::acquire(&layout)?;
        let path = layout.moment_path(id);
        match std::fs::remove_file(&path) {
            Ok(()) => zblade_core::fsio::sync_dir(&layout.moments_dir())?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(&path, e)),
        }
        self.index_mut()?.remove_moment(id)?;
        Ok(())
    }

    fn layout_relative(&self, path: &std::path::Path) -> String {
        path.strip_prefix(self.layout.dir())
            .unwrap_or(path)
            .to_string_lossy()
            .replace('\\', "/")
    }

    /// The items `archive share` sends: each conversation in format 1 (every message inline).
    pub fn share_items(&self, ids: &[String]) -> Result<Vec<SharedItem>> {
        ids.iter()
            .map(|id| {
                Ok(SharedItem {
                    name: format!("conversations/{id}.json"),
                    bytes: self.export_conversation(id, ExportFormat::Json)?.into_bytes(),
                })
            })
            .collect()
    }

    /// Adds what another user shared. Each item is validated like any conversation added
    /// from a file; one that is not is reported and the others are still added.
    pub fn accept_shared(&mut self, items: &[SharedItem]) -> Vec<(String, Result<AddOutcome>)> {
        items
            .iter()
            .map(|item| {
                let outcome = if item.name.starts_with("conversations/") {
                    self.add_conversation(&item.bytes, &item.name)
                } else {
                    Err(Error::Untrusted(format!(
                        "{}: only conversations are taken from shares",
                        item.name
                    )))
                };
                (item.name.clone(), outcome)
            })
            .collect()
    }
}

/// The message files a conversation manifest names: its packs and older per-message files.
fn message_files(manifest: &[u8]) -> Vec<String> {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(manifest) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for message in value["messages"].as_array().into_iter().flatten() {
        if let Some(pack) = message["pack"].as_str() {
            let name = pack.split(':').next().unwrap_or("");
            if !name.is_empty() && name.bytes().all(|b| b.is_ascii_hexdigit()) {
                out.push(format!("artifacts/messages/packs/{name}.jsonl"));
            }
        } else if let Some(sha) = message["sha256"]
            .as_str()
            .filter(|s| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()))
        {
            out.push(format!("artifacts/messages/{}/{sha}.json", &sha[..2]));
        }
    }
    out
}

//! The files a conversation or moment is, and removing them: what forgetting for good needs
//! (the permanent archive records the files before anything is removed, so a forget killed
//! half-way is finished later from the same list). Only local storage has files.

use zblade_core::{Error, Result};

use crate::project::Project;

impl Project {
    /// The files under `.zblade/` (relative, `/`-separated, sorted, each once) that make up the
    /// conversations (documents included) and standalone moments `ids`: a conversation's
    /// manifest with the message packs it names, a moment's file. A moment recorded inside a
    /// conversation is refused: it goes with that conversation.
    pub fn artifact_files(&self, ids: &[String]) -> Result<Vec<String>> {
        if !self.storage.on_this_machine() {
            return Err(Error::Usage(
                "the archive keeps local projects; this one is in server mode".into(),
            ));
        }
        let mut paths = Vec::new();
        for id in ids {
            if id.starts_with(zblade_core::ids::MOMENT) {
                zblade_core::ids::check_id(id, Some(zblade_core::ids::MOMENT))
                    .map_err(|reason| Error::Usage(format!("{id}: not a moment id: {reason}")))?;
                let path = self.layout().moment_path(id);
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
            let manifest = self.layout().conversation_path(id);
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
        Ok(paths)
    }

    /// Removes the conversations and moments that `paths` (as [`Project::artifact_files`] gave
    /// them) are, those already gone skipped, then the messages nothing uses any more (packs
    /// rewritten). Messages a fork or merge still uses stay.
    pub fn remove_artifact_files(&mut self, paths: &[String]) -> Result<()> {
        for path in paths {
            if !self.layout().dir().join(path).exists() {
                continue;
            }
            let id_in = |dir: &str| path.strip_prefix(dir).and_then(|f| f.strip_suffix(".json"));
            if let Some(id) = id_in("artifacts/conversations/") {
                self.delete_conversation(id)?;
            } else if let Some(id) = id_in("artifacts/moments/") {
                self.delete_moment(id)?;
            }
        }
        self.gc_messages()?;
        Ok(())
    }

    /// Removes a moment of its own (not one inside a conversation): its file, then its rows.
    pub fn delete_moment(&mut self, id: &str) -> Result<()> {
        zblade_core::ids::check_id(id, Some(zblade_core::ids::MOMENT))
            .map_err(|reason| Error::Usage(format!("{id}: not a moment id: {reason}")))?;
        let layout = self.layout().clone();
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
        path.strip_prefix(self.layout().dir())
            .unwrap_or(path)
            .to_string_lossy()
            .replace('\\', "/")
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

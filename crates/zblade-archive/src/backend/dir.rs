//! A directory as an archive backend: an external disk, a synced folder, a mounted share.
//!
//! ```text
//! DIR/vault.json                                 the keys (see vault.rs)
//! DIR/objects/<archive>/<seq>.<kind>.<id>.zba    sealed objects, seq zero-padded
//! DIR/grants/<fingerprint>/<archive>.<id>.zba    grants for a recipient's key
//! ```
//!
//! Files are written atomically and never changed; names carry only opaque ids.

use std::path::{Path, PathBuf};

use zblade_core::{Error, Result};

use super::{Backend, Listed, Prepared, envelope_from, is_object_id};
use crate::format::{Envelope, Kind};

/// Objects in a directory.
pub struct DirBackend {
    root: PathBuf,
}

impl DirBackend {
    /// A backend over `root` (created when missing).
    pub fn new(root: &Path) -> Result<DirBackend> {
        std::fs::create_dir_all(root).map_err(|e| Error::io(root, e))?;
        Ok(DirBackend {
            root: root.to_path_buf(),
        })
    }

    fn path_of(&self, locator: &str) -> Result<PathBuf> {
        // Locators come from our own listings, but a journal is a file too: check the shape.
        let parts: Vec<&str> = locator.split('/').collect();
        let ok = matches!(parts.as_slice(), ["objects" | "grants", dir, file]
            if is_object_id(dir) && file.ends_with(".zba") && !file.contains(".."));
        if !ok {
            return Err(Error::Untrusted(format!("{locator:?} is not an archive object name")));
        }
        Ok(self.root.join(locator))
    }
}

impl Backend for DirBackend {
    fn prepare(&self, envelope: &Envelope, sealed: &[u8], grant_to: Option<&str>) -> Result<Prepared> {
        let locator = match (envelope.kind, grant_to) {
            (Kind::Grant, Some(fp)) => format!("grants/{fp}/{}.{}.zba", envelope.archive, envelope.object),
            _ => format!(
                "objects/{}/{:010}.{}.{}.zba",
                envelope.archive,
                envelope.seq,
                envelope.kind.as_str(),
                envelope.object
            ),
        };
        Ok(Prepared {
            locator,
            payload: sealed.to_vec(),
        })
    }

    fn submit(&self, prepared: &Prepared) -> Result<()> {
        let path = self.path_of(&prepared.locator)?;
        match std::fs::read(&path) {
            Ok(existing) if existing == prepared.payload => return Ok(()),
            Ok(_) => {
                return Err(Error::Usage(format!(
                    "{} already holds different bytes; archive objects never change",
                    path.display()
                )));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(&path, e)),
        }
        let parent = path.parent().expect("objects/<archive>/<file>");
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        zblade_core::fsio::write_atomic(&path, &prepared.payload)
    }

    fn list(&self, archive: &str) -> Result<Vec<Listed>> {
        let dir = self.root.join("objects").join(archive);
        let mut out = Vec::new();
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(Error::io(&dir, e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(&dir, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            // Anything else in the folder (a sync tool's temp file, a leftover of a crash) is
            // not ours to read.
            let Some(stem) = name.strip_suffix(".zba") else {
                continue;
            };
            let parts: Vec<&str> = stem.split('.').collect();
            let [seq, kind, object] = parts.as_slice() else {
                continue;
            };
            if let Some(envelope) = envelope_from(archive, object, kind, seq) {
                out.push(Listed {
                    envelope,
                    locator: format!("objects/{archive}/{name}"),
                    confirmations: Some(1),
                });
            }
        }
        out.sort_by_key(|l| l.envelope.seq);
        Ok(out)
    }

    fn list_grants(&self, fingerprint: &str) -> Result<Vec<Listed>> {
        let dir = self.root.join("grants").join(fingerprint);
        let mut out = Vec::new();
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return Ok(out);
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(stem) = name.strip_suffix(".zba") else {
                continue;
            };
            let Some((archive, object)) = stem.split_once('.') else {
                continue;
            };
            if let Some(envelope) = envelope_from(archive, object, "grant", "0") {
                out.push(Listed {
                    envelope,
                    locator: format!("grants/{fingerprint}/{name}"),
                    confirmations: Some(1),
                });
            }
        }
        Ok(out)
    }

    fn fetch(&self, locator: &str) -> Result<Vec<u8>> {
        let path = self.path_of(locator)?;
        std::fs::read(&path).map_err(|e| Error::io(&path, e))
    }

    fn confirmations(&self, locator: &str) -> Result<Option<u64>> {
        Ok(self.path_of(locator)?.exists().then_some(1))
    }

    fn price(&self, _bytes: u64) -> Result<Option<String>> {
        Ok(None)
    }

    fn describe(&self) -> String {
        format!("directory {}", self.root.display())
    }
}

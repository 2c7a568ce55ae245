//! Reading every artifact from disk, for reindex and fsck. A file that cannot be read or
//! parsed is reported and skipped; it never stops the others.

use std::path::{Path, PathBuf};

use zblade_core::{Conversation, Error, Layout, Moment, Result, fsio, parse_moment, sha256_hex};

use crate::loaded::Loaded;

/// Everything found under `artifacts/`.
#[derive(Default)]
pub struct Scan {
    /// Readable conversations, in file-name order.
    pub conversations: Vec<Loaded<Conversation>>,
    /// Readable standalone moments, in file-name order.
    pub moments: Vec<Loaded<Moment>>,
    /// Files that could not be used, with the reason.
    pub unreadable: Vec<(String, Error)>,
    /// Temporary files left behind by an interrupted write.
    pub leftovers: Vec<PathBuf>,
}

/// Reads, resolves and validates one conversation artifact (either format); the file name
/// must match its id.
pub fn load_conversation(layout: &Layout, path: &Path) -> Result<Loaded<Conversation>> {
    crate::storage::manifests::load_conversation(layout, path)
}

/// Reads and validates one moment artifact; the file name must match its id.
pub fn load_moment(layout: &Layout, path: &Path) -> Result<Loaded<Moment>> {
    let (bytes, rel) = read(layout, path)?;
    let moment = parse_moment(&bytes, &rel)?;
    moment.validate(&rel)?;
    check_name(path, &moment.id, &rel, "id")?;
    Ok(Loaded {
        artifact: moment,
        sha256: sha256_hex(&bytes),
        path: rel,
    })
}

fn read(layout: &Layout, path: &Path) -> Result<(Vec<u8>, String)> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    Ok((bytes, layout.relative(path)))
}

fn check_name(path: &Path, id: &str, rel: &str, field: &str) -> Result<()> {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if stem == id {
        Ok(())
    } else {
        Err(Error::field(
            rel,
            field,
            format!("{id:?} does not match the file name {stem:?}.json"),
        ))
    }
}

/// Reads every artifact of the project.
pub fn scan(layout: &Layout) -> Result<Scan> {
    let mut out = Scan::default();
    for path in json_files(&layout.conversations_dir(), &mut out.leftovers)? {
        match load_conversation(layout, &path) {
            Ok(loaded) => out.conversations.push(loaded),
            Err(err) => out.unreadable.push((layout.relative(&path), err)),
        }
    }
    for path in json_files(&layout.moments_dir(), &mut out.leftovers)? {
        match load_moment(layout, &path) {
            Ok(loaded) => out.moments.push(loaded),
            Err(err) => out.unreadable.push((layout.relative(&path), err)),
        }
    }
    Ok(out)
}

/// The `*.json` files of `dir`, sorted; temp files of interrupted writes go to `leftovers`.
fn json_files(dir: &Path, leftovers: &mut Vec<PathBuf>) -> Result<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(dir, e)),
    };
    let mut files = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| Error::io(dir, e))?.path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.contains(fsio::TEMP_MARKER) {
            leftovers.push(path);
        } else if name.ends_with(".json") && !name.starts_with('.') && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

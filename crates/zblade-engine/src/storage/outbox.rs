//! Server mode's outbox: every conversation or moment written in server mode is first put in
//! `.zblade/outbox/` (atomically, one file per write) and leaves it only when the server has
//! stored exactly those bytes. A server that cannot be reached leaves the writes waiting; the
//! next write sends them first, oldest first, so nothing is lost or reordered — not by a
//! server restart, a network cut, nor a client killed mid-send (its file is still there, and a
//! second PUT of the same bytes changes nothing on the server).
//!
//! File names are `SEQ.KIND.ID.json`: SEQ orders them (nanoseconds since 1970, then a counter
//! for writes in the same nanosecond); KIND and ID say where the bytes go. The vectors of a
//! record (see [`super::pieces`]) follow it as `SEQ.KIND.ID.vectors.json`; vectors the server
//! calls obsolete (the record changed again, or is gone) are dropped. A write the server
//! refuses for good (a reader's write, a body it finds invalid) is moved to `rejected/` beside
//! them, where the user can see it, instead of blocking the ones after it forever.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use zblade_core::{Error, Result, fsio};
use zblade_sync::{Client, Kind, PutResult};

/// One waiting write.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// Its file.
    pub path: PathBuf,
    /// Conversation or moment.
    pub kind: Kind,
    /// Its id.
    pub id: String,
    /// The record's vectors rather than the record.
    pub vectors: bool,
}

/// What a flush did.
#[derive(Debug, Default)]
pub(crate) struct Flushed {
    /// Writes the server acknowledged, in the order sent.
    pub sent: Vec<(Entry, PutResult)>,
    /// Vector uploads the server stored.
    pub vectors_sent: usize,
    /// Writes still waiting (the server could not be reached).
    pub waiting: Vec<Entry>,
    /// Why the server could not be reached, when it could not.
    pub unreachable: Option<String>,
    /// Writes the server refused for good (moved to `rejected/`), with its reason.
    pub rejected: Vec<(Entry, String)>,
}

/// The outbox of one project.
pub(crate) struct Outbox {
    dir: PathBuf,
}

/// Tie-breaker for writes queued in the same nanosecond.
static COUNTER: AtomicU64 = AtomicU64::new(0);

impl Outbox {
    pub(crate) fn new(dir: PathBuf) -> Outbox {
        Outbox { dir }
    }

    /// Puts a write in the outbox (durably: the file is complete or absent).
    pub(crate) fn enqueue(&self, kind: Kind, id: &str, bytes: &[u8]) -> Result<Entry> {
        self.put(kind, id, bytes, false)
    }

    /// Puts a record's vectors (a `VectorsUpload` as JSON) in the outbox, after the record.
    pub(crate) fn enqueue_vectors(&self, kind: Kind, id: &str, upload: &zblade_sync::VectorsUpload) -> Result<Entry> {
        let bytes = serde_json::to_vec(upload).map_err(|e| Error::Usage(format!("vectors of {id}: {e}")))?;
        self.put(kind, id, &bytes, true)
    }

    fn put(&self, kind: Kind, id: &str, bytes: &[u8], vectors: bool) -> Result<Entry> {
        zblade_core::ids::check_id(id, None).map_err(|why| Error::Usage(format!("{} id {why}", kind.as_str())))?;
        std::fs::create_dir_all(&self.dir).map_err(|e| Error::io(&self.dir, e))?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let counter = COUNTER.fetch_add(1, Ordering::Relaxed) % 1_000_000;
        let suffix = if vectors { ".vectors" } else { "" };
        let name = format!("{nanos:020}{counter:06}.{}.{id}{suffix}.json", kind.as_str());
        let path = self.dir.join(name);
        fsio::write_atomic(&path, bytes)?;
        Ok(Entry {
            path,
            kind,
            id: id.to_string(),
            vectors,
        })
    }

    /// The waiting writes, oldest first. Files that are not outbox entries (a temporary file
    /// of an interrupted atomic write, anything else) are left alone.
    pub(crate) fn pending(&self) -> Result<Vec<Entry>> {
        let read = match std::fs::read_dir(&self.dir) {
            Ok(read) => read,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(&self.dir, e)),
        };
        let mut entries: Vec<Entry> = read
            .flatten()
            .filter_map(|e| {
                let path = e.path();
                let name = path.file_name()?.to_str()?.to_string();
                let name = name.strip_suffix(".json")?;
                let (name, vectors) = match name.strip_suffix(".vectors") {
                    Some(record) => (record, true),
                    None => (name, false),
                };
                let mut parts = name.splitn(3, '.');
                let (seq, kind, id) = (parts.next()?, parts.next()?, parts.next()?);
                (seq.len() == 26 && seq.bytes().all(|b| b.is_ascii_digit())).then_some(())?;
                let kind = Kind::parse(kind)?;
                zblade_core::ids::check_id(id, None).ok()?;
                Some(Entry {
                    path,
                    kind,
                    id: id.to_string(),
                    vectors,
                })
            })
            .collect();
        entries.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(entries)
    }

    /// Sends every waiting write in order. Stops at the first that cannot reach the server
    /// (the rest wait); a write refused for good is moved to `rejected/` and the others go on.
    pub(crate) fn flush(&self, client: &Client, project: &str) -> Result<Flushed> {
        let mut flushed = Flushed::default();
        let mut pending = self.pending()?.into_iter();
        for entry in pending.by_ref() {
            // The vectors of a record the server refused have nothing to belong to.
            if entry.vectors
                && flushed
                    .rejected
                    .iter()
                    .any(|(r, _)| !r.vectors && r.kind == entry.kind && r.id == entry.id)
            {
                remove(&entry.path)?;
                continue;
            }
            let bytes = std::fs::read(&entry.path).map_err(|e| Error::io(&entry.path, e))?;
            let sent = if entry.vectors {
                serde_json::from_slice::<zblade_sync::VectorsUpload>(&bytes)
                    .map_err(|e| Error::Usage(format!("{}: {e}", entry.path.display())))
                    .and_then(|upload| client.put_vectors(project, entry.kind, &entry.id, &upload))
                    .map(|stored| {
                        flushed.vectors_sent += usize::from(stored.is_some());
                        None
                    })
            } else {
                client.put_record(project, entry.kind, &entry.id, &bytes).map(Some)
            };
            match sent {
                Ok(put) => {
                    remove(&entry.path)?;
                    if let Some(put) = put {
                        flushed.sent.push((entry, put));
                    }
                }
                Err(Error::Network(why)) => {
                    flushed.unreachable = Some(why);
                    flushed.waiting.push(entry);
                    break;
                }
                Err(refused) => {
                    let rejected = self.dir.join("rejected");
                    std::fs::create_dir_all(&rejected).map_err(|e| Error::io(&rejected, e))?;
                    let to = rejected.join(entry.path.file_name().unwrap_or_default());
                    std::fs::rename(&entry.path, &to).map_err(|e| Error::io(&entry.path, e))?;
                    flushed.rejected.push((entry, refused.to_string()));
                }
            }
        }
        flushed.waiting.extend(pending);
        Ok(flushed)
    }
}

fn remove(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_come_back_in_the_order_they_were_queued_and_strangers_are_ignored() {
        let tmp = tempfile::tempdir().unwrap();
        let outbox = Outbox::new(tmp.path().join("outbox"));
        let first = outbox.enqueue(Kind::Conversation, "conv_a", b"1").unwrap();
        let second = outbox.enqueue(Kind::Moment, "moment_b", b"2").unwrap();
        let third = outbox.enqueue(Kind::Conversation, "conv_a", b"3").unwrap();
        std::fs::write(tmp.path().join("outbox/.tmp-half-written"), b"x").unwrap();
        std::fs::write(tmp.path().join("outbox/notes.json"), b"x").unwrap();
        let pending = outbox.pending().unwrap();
        let paths: Vec<_> = pending.iter().map(|e| e.path.clone()).collect();
        assert_eq!(paths, vec![first.path, second.path, third.path]);
        assert_eq!(pending[1].kind, Kind::Moment);
        assert_eq!(pending[2].id, "conv_a");
        assert!(outbox.enqueue(Kind::Conversation, "../escape", b"x").is_err());
    }

    #[test]
    fn an_unreachable_server_leaves_every_write_waiting() {
        let tmp = tempfile::tempdir().unwrap();
        let outbox = Outbox::new(tmp.path().join("outbox"));
        outbox.enqueue(Kind::Conversation, "conv_a", b"{}").unwrap();
        outbox.enqueue(Kind::Conversation, "conv_b", b"{}").unwrap();
        // Nothing listens on port 9 of this machine.
        let client = Client::new("http://127.0.0.1:9", "t")
            .unwrap()
            .with_retry(zblade_sync::Retry {
                attempts: 1,
                ..Default::default()
            });
        let flushed = outbox.flush(&client, "proj_x").unwrap();
        assert!(flushed.sent.is_empty());
        assert_eq!(flushed.waiting.len(), 2);
        assert!(flushed.unreachable.is_some());
        assert_eq!(outbox.pending().unwrap().len(), 2);
    }
}

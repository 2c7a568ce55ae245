//! Where sealed objects are kept, behind one trait: a plain directory ([`dir::DirBackend`])
//! or Arweave through a gateway ([`arweave::ArweaveBackend`]).
//!
//! Writing is two steps so a push can be resumed without making a second copy: `prepare`
//! fixes the object's name (a file name, or a signed transaction whose id is known before it
//! is sent) and `submit` sends it, and sending the same prepared object again is harmless.

pub mod arweave;
pub mod arweave_tx;
pub mod dir;

use zblade_core::Result;

use crate::format::{Envelope, Kind};

/// An object made ready to send: its name and the bytes `submit` sends.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// Where the object will be found (a transaction id, a file name).
    pub locator: String,
    /// What `submit` sends (the signed transaction, the sealed bytes).
    pub payload: Vec<u8>,
}

/// An object a backend lists.
#[derive(Debug, Clone)]
pub struct Listed {
    /// Its envelope, read from tags or the file name.
    pub envelope: Envelope,
    /// Where it is.
    pub locator: String,
    /// Confirmations so far (`None`: pending; a directory's objects count as confirmed).
    pub confirmations: Option<u64>,
}

/// A place objects are kept.
pub trait Backend: Send + Sync {
    /// Names the object and builds what will be sent. `grant_to` is a recipient's key
    /// fingerprint, for grants.
    fn prepare(&self, envelope: &Envelope, sealed: &[u8], grant_to: Option<&str>) -> Result<Prepared>;
    /// Sends a prepared object; sending one that is already there succeeds.
    fn submit(&self, prepared: &Prepared) -> Result<()>;
    /// Sends a journaled object. `Ok(None)`: sent as prepared. `Ok(Some(fresh))`: the backend
    /// refused it as expired (an Arweave transaction names a recent block, its anchor, and is
    /// refused once that block is 50 blocks old: a push resumed hours later) and `fresh` is
    /// the same object prepared again, not sent: the caller journals it, then submits it.
    fn resend(&self, prepared: &Prepared) -> Result<Option<Prepared>> {
        self.submit(prepared).map(|()| None)
    }
    /// The archive's objects (grants excluded).
    fn list(&self, archive: &str) -> Result<Vec<Listed>>;
    /// Grants addressed to a key fingerprint, from any archive.
    fn list_grants(&self, fingerprint: &str) -> Result<Vec<Listed>>;
    /// An object's sealed bytes.
    fn fetch(&self, locator: &str) -> Result<Vec<u8>>;
    /// Confirmations of a submitted object: `None` when the backend does not know it (yet).
    fn confirmations(&self, locator: &str) -> Result<Option<u64>>;
    /// What storing `bytes` more would cost, in the backend's words (`None`: nothing).
    fn price(&self, bytes: u64) -> Result<Option<String>>;
    /// One line for messages: "directory /mnt/backup", "Arweave via http://127.0.0.1:1984".
    fn describe(&self) -> String;
}

/// Checks ids read from outside (tags, file names): lowercase hex of 16 bytes.
pub fn is_object_id(text: &str) -> bool {
    text.len() == 32 && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Builds an envelope from untrusted strings; `None` when any part is malformed.
pub fn envelope_from(archive: &str, object: &str, kind: &str, seq: &str) -> Option<Envelope> {
    if !is_object_id(archive) || !is_object_id(object) {
        return None;
    }
    Some(Envelope {
        archive: archive.to_string(),
        object: object.to_string(),
        kind: Kind::parse(kind)?,
        seq: seq.parse().ok().filter(|s: &u64| *s < 1 << 53)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelopes_from_hostile_tags_or_file_names_are_refused() {
        let id = "0123456789abcdef0123456789abcdef";
        assert!(envelope_from(id, id, "batch", "7").is_some());
        assert!(envelope_from("../x", id, "batch", "7").is_none());
        assert!(envelope_from(id, "ABCDEF0123456789abcdef0123456789", "batch", "7").is_none());
        assert!(envelope_from(id, id, "script", "7").is_none());
        assert!(envelope_from(id, id, "batch", "-1").is_none());
        assert!(envelope_from(id, id, "batch", "99999999999999999999").is_none());
    }
}

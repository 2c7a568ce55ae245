//! What an archived object holds once decrypted, and how it is laid out in bytes.
//!
//! An object's plaintext is one line of JSON (the [`Header`]: what kind of object, its
//! sequence number, and the items with their paths, sizes and SHA-256) followed by the items'
//! bytes, one after another. Paths, titles and everything else about the content live only
//! here, inside the ciphertext; outside there is the opaque [`Envelope`].
//!
//! Nothing read back is trusted: the header must parse, sizes must add up to the bytes that
//! follow, every item's SHA-256 is checked, and paths must be plain relative paths under the
//! parts of `.zblade/` the archive keeps ([`check_path`]).

use serde::{Deserialize, Serialize};
use zblade_core::{Error, Result};

use crate::crypto::Key;

/// The first bytes of every plaintext.
const PLAIN_MAGIC: &[u8] = b"ZBAP1\n";
/// The first bytes of every ciphertext object.
pub const SEALED_MAGIC: &[u8] = b"ZBA1";

/// The kinds of archived objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Changed files of a project, in push order.
    Batch,
    /// Every file of a project (and its vector files) as of a batch: restores skip the
    /// batches before it.
    Snapshot,
    /// Names batches whose keys were destroyed on purpose (`archive forget`).
    Tombstone,
    /// Items exported for another user.
    Share,
    /// A share's key sealed to its recipient.
    Grant,
}

impl Kind {
    /// The name used in tags and file names.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Batch => "batch",
            Kind::Snapshot => "snapshot",
            Kind::Tombstone => "tombstone",
            Kind::Share => "share",
            Kind::Grant => "grant",
        }
    }

    /// Reads a tag or file-name kind.
    pub fn parse(text: &str) -> Option<Kind> {
        Some(match text {
            "batch" => Kind::Batch,
            "snapshot" => Kind::Snapshot,
            "tombstone" => Kind::Tombstone,
            "share" => Kind::Share,
            "grant" => Kind::Grant,
            _ => return None,
        })
    }
}

/// What is outside the ciphertext: all a backend or an observer learns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// The archive (random id).
    pub archive: String,
    /// The object's own random id; its key is found in the vault under it.
    pub object: String,
    /// Its kind.
    pub kind: Kind,
    /// Its place in push order.
    pub seq: u64,
}

impl Envelope {
    /// The associated data every ciphertext is bound to: moving bytes under another
    /// archive, id or kind makes them fail to open.
    pub fn aad(&self) -> Vec<u8> {
        format!(
            "zblade-archive/1|{}|{}|{}|{}",
            self.archive,
            self.kind.as_str(),
            self.object,
            self.seq
        )
        .into_bytes()
    }
}

/// One item in a header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Item {
    /// The path under `.zblade/` (or, in a share, a name like `conversations/<id>.json`).
    pub path: String,
    /// SHA-256 of the bytes, hex; empty for a deletion.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sha256: String,
    /// Bytes; 0 for a deletion.
    #[serde(default)]
    pub len: u64,
    /// The file was removed locally (a later restore removes it too).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deleted: bool,
}

/// The first line of a plaintext.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Header {
    /// Items in the order their bytes follow.
    pub items: Vec<Item>,
    /// Unix milliseconds when the object was made.
    pub created_ms: i64,
    /// For a snapshot: the last batch it includes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_of_seq: Option<u64>,
    /// For a tombstone: the objects whose keys were destroyed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub destroyed: Vec<String>,
    /// For a grant: what it unlocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<GrantBody>,
}

/// What a grant gives its recipient.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GrantBody {
    /// The sender's archive.
    pub archive: String,
    /// The shared batch's parts.
    pub parts: Vec<GrantPart>,
    /// The sender's share key, so the recipient can tell who it came from.
    pub from: String,
}

/// One part of a shared batch.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GrantPart {
    /// Its object id.
    pub object: String,
    /// Its sequence number.
    pub seq: u64,
    /// Where the backend keeps it (a transaction id or a file name).
    pub locator: String,
    /// Its key, hex.
    pub key: String,
}

/// A decoded plaintext: its header and each item's bytes.
pub struct Contents {
    /// The header.
    pub header: Header,
    /// Bytes per item (empty for deletions), in header order.
    pub bodies: Vec<Vec<u8>>,
}

/// Lays out a plaintext.
pub fn encode(header: &Header, bodies: &[&[u8]]) -> Vec<u8> {
    let line = serde_json::to_vec(header).expect("a header serialises");
    let mut out =
        Vec::with_capacity(PLAIN_MAGIC.len() + line.len() + 1 + bodies.iter().map(|b| b.len()).sum::<usize>());
    out.extend_from_slice(PLAIN_MAGIC);
    out.extend_from_slice(&line);
    out.push(b'\n');
    for body in bodies {
        out.extend_from_slice(body);
    }
    out
}

/// Reads a plaintext, checking every size and hash; `what` names the object in errors.
pub fn decode(plain: &[u8], what: &str) -> Result<Contents> {
    let bad = |message: String| Error::Untrusted(format!("{what}: {message}"));
    let rest = plain
        .strip_prefix(PLAIN_MAGIC)
        .ok_or_else(|| bad("not a zblade archive payload".into()))?;
    let newline = rest
        .iter()
        .position(|&b| b == b'\n')
        .ok_or_else(|| bad("the header line never ends".into()))?;
    let header: Header = serde_json::from_slice(&rest[..newline]).map_err(|e| bad(format!("header: {e}")))?;
    let mut bodies = Vec::with_capacity(header.items.len());
    let mut at = newline + 1;
    for (i, item) in header.items.iter().enumerate() {
        let len = usize::try_from(item.len).map_err(|_| bad(format!("item {i}: size {}", item.len)))?;
        let end = at
            .checked_add(len)
            .filter(|&end| end <= rest.len())
            .ok_or_else(|| bad(format!("item {i} ({}) runs past the end", item.path)))?;
        let body = &rest[at..end];
        if !item.deleted && sha256_hex(body) != item.sha256 {
            return Err(bad(format!(
                "item {i} ({}): SHA-256 does not match its bytes",
                item.path
            )));
        }
        bodies.push(body.to_vec());
        at = end;
    }
    if at != rest.len() {
        return Err(bad(format!("{} bytes after the last item", rest.len() - at)));
    }
    Ok(Contents { header, bodies })
}

/// The first bytes of a part's plaintext.
const PART_MAGIC: &[u8] = b"ZBAS1\n";

/// Which batch a part belongs to: the first line of a part's plaintext.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartHeader {
    /// The batch's id.
    pub batch: String,
    /// This part's place, from 0.
    pub part: u32,
    /// How many parts the batch has.
    pub parts: u32,
}

/// A part's plaintext: its header line, then its slice of the batch's plaintext. A batch
/// bigger than one object is cut into parts, each sealed under its own key.
pub fn encode_part(header: &PartHeader, slice: &[u8]) -> Vec<u8> {
    let mut out = PART_MAGIC.to_vec();
    out.extend(serde_json::to_vec(header).expect("json"));
    out.push(b'\n');
    out.extend_from_slice(slice);
    out
}

/// Reads a part's plaintext.
pub fn decode_part(plain: &[u8], what: &str) -> Result<(PartHeader, Vec<u8>)> {
    let bad = |m: &str| Error::Untrusted(format!("{what}: {m}"));
    let rest = plain
        .strip_prefix(PART_MAGIC)
        .ok_or_else(|| bad("not a zblade archive part"))?;
    let newline = rest
        .iter()
        .position(|&b| b == b'\n')
        .ok_or_else(|| bad("the part header never ends"))?;
    let header: PartHeader = serde_json::from_slice(&rest[..newline]).map_err(|e| bad(&format!("part header: {e}")))?;
    if header.parts == 0 || header.part >= header.parts || header.parts > 100_000 {
        return Err(bad(&format!("part {} of {}", header.part, header.parts)));
    }
    Ok((header, rest[newline + 1..].to_vec()))
}

/// Encrypts a plaintext under `key` for `envelope`: `ZBA1 ‖ nonce ‖ ciphertext ‖ tag`.
pub fn seal(key: &Key, envelope: &Envelope, plain: &[u8]) -> Vec<u8> {
    let mut out = SEALED_MAGIC.to_vec();
    out.extend(key.seal(&envelope.aad(), plain));
    out
}

/// Decrypts what [`seal`] made; `None` when the key, the envelope or the bytes are wrong.
pub fn open(key: &Key, envelope: &Envelope, sealed: &[u8]) -> Option<Vec<u8>> {
    key.open(&envelope.aad(), sealed.strip_prefix(SEALED_MAGIC)?)
}

/// Hex SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(ring::digest::digest(&ring::digest::SHA256, bytes))
}

/// Checks an item path read from an archive before anything is written with it: relative,
/// `/`-separated, no `.`/`..`/empty parts, no backslashes or control characters, and under
/// what the archive keeps (`instructions.md`, `config/settings.json`, `artifacts/…`, and in
/// snapshots `index/vectors/…`).
pub fn check_path(path: &str, allow_index: bool) -> Result<()> {
    let bad = |why: &str| Err(Error::Untrusted(format!("archived path {path:?} refused: {why}")));
    if path.is_empty() || path.len() > 512 {
        return bad("empty or longer than 512 bytes");
    }
    if path.starts_with('/') || path.contains('\\') || path.chars().any(|c| c.is_control()) {
        return bad("absolute, or holds a backslash or a control character");
    }
    if path
        .split('/')
        .any(|part| part.is_empty() || part == "." || part == "..")
    {
        return bad("empty, `.` or `..` parts");
    }
    let kept = path == "instructions.md"
        || path == "config/settings.json"
        || path.starts_with("artifacts/")
        || (allow_index && path.starts_with("index/vectors/"));
    if !kept {
        return bad("outside what the archive keeps");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(path: &str, body: &[u8]) -> Item {
        Item {
            path: path.into(),
            sha256: sha256_hex(body),
            len: body.len() as u64,
            deleted: false,
        }
    }

    #[test]
    fn a_plaintext_round_trips_and_every_change_is_caught() {
        let header = Header {
            items: vec![item("artifacts/a.json", b"{}"), item("instructions.md", b"hi\n")],
            ..Header::default()
        };
        let plain = encode(&header, &[b"{}", b"hi\n"]);
        let contents = decode(&plain, "t").unwrap();
        assert_eq!(contents.bodies, vec![b"{}".to_vec(), b"hi\n".to_vec()]);
        let mut changed = plain.clone();
        *changed.last_mut().unwrap() = b'X';
        assert!(
            decode(&changed, "t")
                .err()
                .unwrap()
                .to_string()
                .contains("instructions.md")
        );
        assert!(decode(&plain[..plain.len() - 1], "t").is_err(), "truncated");
        let mut longer = plain.clone();
        longer.push(b'!');
        assert!(decode(&longer, "t").is_err(), "trailing bytes");
        assert!(decode(b"garbage", "t").is_err());
    }

    #[test]
    fn hostile_paths_are_refused() {
        for path in [
            "../etc/passwd",
            "/etc/passwd",
            "artifacts/../../x",
            "artifacts//x",
            "artifacts\\x",
            "index/conversations.db",
            "cache/chat-consent.json",
            "artifacts/a\nb",
            "",
        ] {
            assert!(check_path(path, false).is_err(), "{path:?}");
        }
        check_path("artifacts/conversations/conv_1.json", false).unwrap();
        check_path("instructions.md", false).unwrap();
        check_path("index/vectors/chunks.lance/data/0.lance", true).unwrap();
        assert!(
            check_path("index/conversations.db", true).is_err(),
            "the catalog is rebuilt, never restored"
        );
    }

    #[test]
    fn a_ciphertext_opens_only_under_its_own_envelope() {
        let key = Key::generate();
        let envelope = Envelope {
            archive: "a".into(),
            object: "o".into(),
            kind: Kind::Batch,
            seq: 3,
        };
        let sealed = seal(&key, &envelope, b"plain");
        assert_eq!(open(&key, &envelope, &sealed).as_deref(), Some(&b"plain"[..]));
        let moved = Envelope {
            seq: 4,
            ..envelope.clone()
        };
        assert!(open(&key, &moved, &sealed).is_none());
        let as_snapshot = Envelope {
            kind: Kind::Snapshot,
            ..envelope
        };
        assert!(open(&key, &as_snapshot, &sealed).is_none());
    }
}

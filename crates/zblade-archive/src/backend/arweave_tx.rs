//! Arweave format-2 transactions: the data root (a Merkle tree over 256 KiB chunks), the deep
//! hash that is signed, RSA-PSS signatures with a JWK wallet, and the JSON a gateway takes.
//!
//! Written from the Arweave specification and checked against the reference client: a test
//! in `tests/archive_arlocal.rs` has arweave-js verify transactions made here.

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::digest::{SHA256, SHA384, digest};
use ring::rand::SystemRandom;
use ring::rsa::{KeyPairComponents, PublicKeyComponents};
use ring::signature::{RSA_PSS_SHA256, RsaKeyPair};
use serde::{Deserialize, Serialize};
use zblade_core::{Error, Result};

/// Largest chunk of a transaction's data.
const MAX_CHUNK: usize = 256 * 1024;
/// Smallest chunk but the last: a short tail is balanced with the chunk before it.
const MIN_CHUNK: usize = 32 * 1024;

/// Base64url without padding, Arweave's encoding of every binary field.
pub fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Decodes base64url; `field` names it in the error.
pub fn unb64(text: &str, field: &str) -> Result<Vec<u8>> {
    URL_SAFE_NO_PAD
        .decode(text.trim_end_matches('='))
        .map_err(|_| Error::Untrusted(format!("`{field}` is not base64url")))
}

/// An Arweave wallet: an RSA key in JWK form.
pub struct Wallet {
    key: RsaKeyPair,
    modulus: Vec<u8>,
}

#[derive(Deserialize)]
struct Jwk {
    kty: String,
    n: String,
    e: String,
    d: String,
    p: String,
    q: String,
    dp: String,
    dq: String,
    qi: String,
}

impl Wallet {
    /// Reads a JWK wallet file (the kind arweave.app and ArConnect export).
    pub fn load(path: &Path) -> Result<Wallet> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        Wallet::from_jwk(&bytes).map_err(|e| Error::Usage(format!("{}: {e}", path.display())))
    }

    /// Reads a JWK.
    pub fn from_jwk(bytes: &[u8]) -> Result<Wallet> {
        let jwk: Jwk = serde_json::from_slice(bytes).map_err(|e| {
            Error::Usage(format!(
                "not an Arweave wallet (JWK with n, e, d, p, q, dp, dq, qi): {e}"
            ))
        })?;
        if jwk.kty != "RSA" {
            return Err(Error::Usage(format!(
                "wallet key type is {:?}; Arweave wallets are RSA",
                jwk.kty
            )));
        }
        let field = |text: &str, name: &str| unb64(text, name);
        let modulus = field(&jwk.n, "n")?;
        let components = KeyPairComponents {
            public_key: PublicKeyComponents {
                n: modulus.clone(),
                e: field(&jwk.e, "e")?,
            },
            d: field(&jwk.d, "d")?,
            p: field(&jwk.p, "p")?,
            q: field(&jwk.q, "q")?,
            dP: field(&jwk.dp, "dp")?,
            dQ: field(&jwk.dq, "dq")?,
            qInv: field(&jwk.qi, "qi")?,
        };
        let key = RsaKeyPair::from_components(&components)
            .map_err(|e| Error::Usage(format!("the wallet's RSA key is not valid: {e}")))?;
        Ok(Wallet { key, modulus })
    }

    /// The wallet's address: base64url SHA-256 of the modulus.
    pub fn address(&self) -> String {
        b64(digest(&SHA256, &self.modulus).as_ref())
    }

    fn sign(&self, message: &[u8]) -> Result<Vec<u8>> {
        let mut signature = vec![0u8; self.key.public().modulus_len()];
        self.key
            .sign(&RSA_PSS_SHA256, &SystemRandom::new(), message, &mut signature)
            .map_err(|_| Error::Environment("signing the transaction failed".into()))?;
        Ok(signature)
    }
}

/// A signed transaction, in the JSON a gateway's `POST /tx` takes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Transaction {
    /// 2.
    pub format: u8,
    /// base64url SHA-256 of the signature.
    pub id: String,
    /// The anchor (`GET /tx_anchor`).
    pub last_tx: String,
    /// The wallet's modulus.
    pub owner: String,
    /// Name/value pairs, base64url.
    pub tags: Vec<Tag>,
    /// Empty: no transfer.
    pub target: String,
    /// "0".
    pub quantity: String,
    /// The data, base64url.
    pub data: String,
    /// Bytes of data, decimal.
    pub data_size: String,
    /// The Merkle root of the data's chunks.
    pub data_root: String,
    /// Fee in winston, decimal.
    pub reward: String,
    /// RSA-PSS over the deep hash.
    pub signature: String,
}

/// One tag, base64url-encoded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Tag {
    /// Name.
    pub name: String,
    /// Value.
    pub value: String,
}

/// Builds and signs a format-2 transaction carrying `data` inline.
pub fn sign(wallet: &Wallet, data: &[u8], tags: &[(&str, &str)], anchor: &str, reward: &str) -> Result<Transaction> {
    let owner = wallet.modulus.clone();
    let anchor_bytes = unb64(anchor, "anchor")?;
    let root = data_root(data);
    let data_size = data.len().to_string();
    let tag_items: Vec<DeepHash> = tags
        .iter()
        .map(|(n, v)| {
            DeepHash::List(vec![
                DeepHash::Blob(n.as_bytes().to_vec()),
                DeepHash::Blob(v.as_bytes().to_vec()),
            ])
        })
        .collect();
    let signed = DeepHash::List(vec![
        DeepHash::Blob(b"2".to_vec()),
        DeepHash::Blob(owner.clone()),
        DeepHash::Blob(Vec::new()),
        DeepHash::Blob(b"0".to_vec()),
        DeepHash::Blob(reward.as_bytes().to_vec()),
        DeepHash::Blob(anchor_bytes),
        DeepHash::List(tag_items),
        DeepHash::Blob(data_size.as_bytes().to_vec()),
        DeepHash::Blob(root.to_vec()),
    ]);
    let signature = wallet.sign(&signed.hash())?;
    Ok(Transaction {
        format: 2,
        id: b64(digest(&SHA256, &signature).as_ref()),
        last_tx: anchor.to_string(),
        owner: b64(&owner),
        tags: tags
            .iter()
            .map(|(n, v)| Tag {
                name: b64(n.as_bytes()),
                value: b64(v.as_bytes()),
            })
            .collect(),
        target: String::new(),
        quantity: "0".into(),
        data: b64(data),
        data_size,
        data_root: b64(&root),
        reward: reward.to_string(),
        signature: b64(&signature),
    })
}

/// Arweave's deep hash: SHA-384 over a tree of byte strings, each level tagged with its kind
/// and length.
enum DeepHash {
    Blob(Vec<u8>),
    List(Vec<DeepHash>),
}

impl DeepHash {
    fn hash(&self) -> [u8; 48] {
        match self {
            DeepHash::Blob(bytes) => {
                let tag = sha384(format!("blob{}", bytes.len()).as_bytes());
                sha384(&[tag.as_slice(), &sha384(bytes)].concat())
            }
            DeepHash::List(items) => {
                let mut acc = sha384(format!("list{}", items.len()).as_bytes());
                for item in items {
                    acc = sha384(&[acc.as_slice(), &item.hash()].concat());
                }
                acc
            }
        }
    }
}

fn sha384(bytes: &[u8]) -> [u8; 48] {
    digest(&SHA384, bytes).as_ref().try_into().expect("48 bytes")
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    digest(&SHA256, bytes).as_ref().try_into().expect("32 bytes")
}

/// A 32-byte big-endian "note" (a byte offset in the tree).
fn note(value: usize) -> [u8; 32] {
    let mut out = [0u8; 32];
    out[24..].copy_from_slice(&(value as u64).to_be_bytes());
    out
}

/// The data root: the Merkle root over the data's chunks, as arweave-js computes it.
pub fn data_root(data: &[u8]) -> [u8; 32] {
    struct Node {
        id: [u8; 32],
        max: usize,
    }
    // Chunks of 256 KiB; when the remainder after a full chunk would be under 32 KiB, the
    // last two are split evenly instead.
    let mut nodes = Vec::new();
    let mut cursor = 0;
    let mut rest = data;
    while rest.len() >= MAX_CHUNK {
        let mut size = MAX_CHUNK;
        let next = rest.len() - MAX_CHUNK;
        if next > 0 && next < MIN_CHUNK {
            size = rest.len().div_ceil(2);
        }
        let (chunk, tail) = rest.split_at(size);
        cursor += chunk.len();
        nodes.push(Node {
            id: sha256(&[sha256(&sha256(chunk)).as_slice(), &sha256(&note(cursor))].concat()),
            max: cursor,
        });
        rest = tail;
    }
    cursor += rest.len();
    nodes.push(Node {
        id: sha256(&[sha256(&sha256(rest)).as_slice(), &sha256(&note(cursor))].concat()),
        max: cursor,
    });
    while nodes.len() > 1 {
        let mut next = Vec::with_capacity(nodes.len().div_ceil(2));
        let mut pairs = nodes.into_iter();
        while let Some(left) = pairs.next() {
            match pairs.next() {
                Some(right) => next.push(Node {
                    id: sha256(&[sha256(&left.id), sha256(&right.id), sha256(&note(left.max))].concat()),
                    max: right.max,
                }),
                None => next.push(left),
            }
        }
        nodes = next;
    }
    nodes[0].id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deep_hash_of_an_empty_list_is_the_hash_of_its_tag() {
        assert_eq!(DeepHash::List(vec![]).hash(), sha384(b"list0"));
    }

    #[test]
    fn a_short_tail_is_balanced_with_the_chunk_before_it() {
        // 256 KiB + 1 byte: two chunks of 128 KiB + 1 and 128 KiB, not 256 KiB and 1 byte.
        let data = vec![7u8; MAX_CHUNK + 1];
        let half = MAX_CHUNK.div_ceil(2) + 1;
        let left = sha256(&[sha256(&sha256(&data[..half])).as_slice(), &sha256(&note(half))].concat());
        let right = sha256(&[sha256(&sha256(&data[half..])).as_slice(), &sha256(&note(data.len()))].concat());
        let root = sha256(&[sha256(&left), sha256(&right), sha256(&note(half))].concat());
        assert_eq!(data_root(&data), root);
    }
}

//! The vault: the one small, changeable file that holds an archive's keys.
//!
//! Arweave never forgets, so a key that must be destroyable cannot be stored there: every
//! object's key is wrapped (AES-256-GCM) under the master key and kept in the vault, and
//! `archive forget` deletes it from the vault. The vault also holds what the master key is
//! derived with (Argon2id parameters and salt), a check value that tells a wrong passphrase
//! from a damaged file, the wrapped share secret, and where the archive's objects are.
//!
//! A directory archive keeps its vault inside the directory; an Arweave archive keeps it in a
//! folder of the user's choosing (by default `~/.local/share/zblade/archive/<id>/`), which is
//! what must be kept safe alongside the wallet. The vault is written atomically (temp file,
//! fsync, rename); an earlier version is never kept.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use zblade_core::{Error, Result};

use crate::crypto::{KdfParams, Key, ShareIdentity};

/// The vault's file name.
pub const VAULT_FILE: &str = "vault.json";
const CHECK_TEXT: &[u8] = b"zblade-archive master key check";

/// Where an archive's objects live.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum BackendSpec {
    /// A plain directory (an external disk, a synced folder).
    Dir {
        /// The directory.
        path: PathBuf,
    },
    /// Arweave through a gateway.
    Arweave {
        /// The gateway's base URL (`https://arweave.net`, arlocal's `http://127.0.0.1:1984`).
        gateway: String,
        /// The wallet's address (base64url SHA-256 of the RSA modulus): whose transactions
        /// to look for.
        owner: String,
    },
}

/// The vault file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Vault {
    /// Always 1.
    pub version: u32,
    /// The archive's random id.
    pub archive: String,
    /// Where its objects are.
    pub backend: BackendSpec,
    /// How the master key is derived.
    pub kdf: KdfParams,
    /// A fixed text sealed under the master key: opens only with the right passphrase.
    pub check: String,
    /// The share secret (X25519), sealed under the master key.
    pub share_secret: String,
    /// Its public key (`zbpk1…`), which others share to.
    pub share_public: String,
    /// Object id → its key sealed under the master key (hex). Destroying an entry makes the
    /// object unreadable for good.
    pub keys: BTreeMap<String, String>,
}

impl Vault {
    /// A new vault for a new archive, with its master key.
    pub fn create(backend: BackendSpec, passphrase: &str) -> Result<(Vault, Key)> {
        check_passphrase(passphrase)?;
        let kdf = KdfParams::generate();
        let master = kdf.derive(passphrase)?;
        let archive = crate::crypto::random_id();
        let identity = ShareIdentity::generate();
        let vault = Vault {
            version: 1,
            check: hex::encode(master.seal(&check_aad(&archive), CHECK_TEXT)),
            share_secret: hex::encode(master.seal(&share_aad(&archive), &identity.secret_bytes())),
            share_public: identity.public_text(),
            archive,
            backend,
            kdf,
            keys: BTreeMap::new(),
        };
        Ok((vault, master))
    }

    /// Reads a vault file; a damaged one is named with what is wrong.
    pub fn load(path: &Path) -> Result<Vault> {
        let bytes = std::fs::read(path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::NotFound(format!(
                    "no archive vault at {}; `zblade archive setup` makes one (or pass --vault with the vault you kept)",
                    path.display()
                ))
            } else {
                Error::io(path, e)
            }
        })?;
        let vault: Vault = serde_json::from_slice(&bytes)
            .map_err(|e| Error::Untrusted(format!("{}: not a readable archive vault: {e}", path.display())))?;
        if vault.version != 1 {
            return Err(Error::Untrusted(format!(
                "{}: vault version {} (this zblade reads 1)",
                path.display(),
                vault.version
            )));
        }
        Ok(vault)
    }

    /// Writes the vault atomically, readable by its owner only.
    pub fn save(&self, path: &Path) -> Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        let bytes = serde_json::to_vec_pretty(self).expect("a vault serialises");
        zblade_core::fsio::write_atomic_private(path, &bytes)
    }

    /// Derives the master key and proves it right; a wrong passphrase is a clear error.
    pub fn unlock(&self, passphrase: &str) -> Result<Key> {
        let master = self.kdf.derive(passphrase)?;
        self.check_master(&master)?;
        Ok(master)
    }

    /// Checks a master key (from the passphrase or the OS keyring) against the vault.
    pub fn check_master(&self, master: &Key) -> Result<()> {
        let sealed =
            hex::decode(&self.check).map_err(|_| Error::Untrusted("the vault's check value is not hex".into()))?;
        match master.open(&check_aad(&self.archive), &sealed) {
            Some(text) if text == CHECK_TEXT => Ok(()),
            _ => Err(Error::Usage(format!(
                "wrong passphrase for archive {} (nothing was changed or written)",
                self.archive
            ))),
        }
    }

    /// The share identity, unwrapped.
    pub fn share_identity(&self, master: &Key) -> Result<ShareIdentity> {
        let sealed = hex::decode(&self.share_secret).unwrap_or_default();
        let secret = master
            .open(&share_aad(&self.archive), &sealed)
            .and_then(|s| <[u8; 32]>::try_from(s.as_slice()).ok())
            .ok_or_else(|| Error::Untrusted("the vault's share secret does not open".into()))?;
        Ok(ShareIdentity::from_secret(secret))
    }

    /// Keeps an object's key (sealed under the master key).
    pub fn add_key(&mut self, master: &Key, object: &str, key: &Key) {
        let sealed = master.seal(&key_aad(&self.archive, object), key.bytes());
        self.keys.insert(object.to_string(), hex::encode(sealed));
    }

    /// An object's key; `None` when the vault has none (never made here, or destroyed).
    pub fn key(&self, master: &Key, object: &str) -> Result<Option<Key>> {
        let Some(sealed) = self.keys.get(object) else {
            return Ok(None);
        };
        let opened = hex::decode(sealed)
            .ok()
            .and_then(|sealed| master.open(&key_aad(&self.archive, object), &sealed))
            .ok_or_else(|| Error::Untrusted(format!("the vault's key for object {object} does not open")))?;
        Key::from_bytes(&opened).map(Some)
    }
}

/// Refuses passphrases too short to resist guessing: the vault (salt + check value) is all an
/// attacker needs to try passphrases offline.
pub fn check_passphrase(passphrase: &str) -> Result<()> {
    if passphrase.chars().count() < 12 {
        return Err(Error::Usage(
            "the archive passphrase must be at least 12 characters: anyone who gets the vault file can try passphrases offline".into(),
        ));
    }
    Ok(())
}

fn check_aad(archive: &str) -> Vec<u8> {
    format!("zblade-archive/check|{archive}").into_bytes()
}

fn share_aad(archive: &str) -> Vec<u8> {
    format!("zblade-archive/share-secret|{archive}").into_bytes()
}

fn key_aad(archive: &str, object: &str) -> Vec<u8> {
    format!("zblade-archive/key|{archive}|{object}").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vault_round_trips_and_tells_a_wrong_passphrase() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(VAULT_FILE);
        let spec = BackendSpec::Dir {
            path: dir.path().into(),
        };
        let (mut vault, master) = Vault::create(spec, "a long enough passphrase").unwrap();
        let key = Key::generate();
        vault.add_key(&master, "obj1", &key);
        vault.save(&path).unwrap();
        let loaded = Vault::load(&path).unwrap();
        let again = loaded.unlock("a long enough passphrase").unwrap();
        assert_eq!(loaded.key(&again, "obj1").unwrap().unwrap().bytes(), key.bytes());
        assert!(loaded.key(&again, "obj2").unwrap().is_none());
        let wrong = loaded.unlock("a long enough passphrasf").err().unwrap().to_string();
        assert!(wrong.contains("wrong passphrase"), "{wrong}");
        assert!(Vault::create(BackendSpec::Dir { path: "/x".into() }, "short").is_err());
        // A key copied under another object's name does not open.
        let mut moved = loaded.clone();
        let sealed = moved.keys["obj1"].clone();
        moved.keys.insert("obj2".into(), sealed);
        assert!(moved.key(&again, "obj2").is_err());
    }
}

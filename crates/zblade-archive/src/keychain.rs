//! The master key remembered in the operating system's keyring (the Secret Service on Linux:
//! GNOME Keyring, KWallet, KeePassXC; macOS Keychain; Windows Credential Manager), for pushes
//! nobody types a passphrase for: the app's background push, scripts.
//!
//! The passphrase stays what restores from nothing: the keyring only remembers, on this
//! machine, the key the passphrase derives. What it hands back is checked against the vault
//! before use ([`crate::Archive::open_with_master`]), so a stale or planted entry is refused,
//! not trusted.

use zblade_core::{Error, Result};

use crate::crypto::Key;

/// The keyring service of every entry; the account is the archive's id.
const SERVICE: &str = "zblade-archive";

fn entry(archive: &str) -> Result<keyring::Entry> {
    keyring::Entry::new(SERVICE, archive).map_err(|e| unavailable(&e))
}

fn unavailable(e: &keyring::Error) -> Error {
    let why = match e {
        keyring::Error::PlatformFailure(inner) | keyring::Error::NoStorageAccess(inner) => inner.to_string(),
        other => other.to_string(),
    };
    Error::Environment(format!(
        "the system keyring could not be used ({why}); on Linux it is a Secret Service such as GNOME Keyring \
         or KWallet. Without one, type the passphrase for each push (or set ZBLADE_ARCHIVE_PASSPHRASE)"
    ))
}

/// Keeps `master` for the archive `archive` in the keyring (replacing what was there).
pub fn remember(archive: &str, master: &Key) -> Result<()> {
    entry(archive)?
        .set_password(&hex::encode(master.bytes()))
        .map_err(|e| unavailable(&e))
}

/// The remembered master key of `archive`: `None` when none is kept; an error when the
/// keyring cannot be reached or holds something that is not a key.
pub fn recall(archive: &str) -> Result<Option<Key>> {
    match entry(archive)?.get_password() {
        Ok(text) => {
            let bytes = hex::decode(text.trim())
                .map_err(|_| Error::Untrusted(format!("the keyring's entry for archive {archive} is not a key")))?;
            Key::from_bytes(&bytes).map(Some)
        }
        Err(keyring::Error::NoEntry) => Ok(None),
        Err(e) => Err(unavailable(&e)),
    }
}

/// Removes the remembered key of `archive` (nothing to remove is fine).
pub fn forget(archive: &str) -> Result<()> {
    match entry(archive)?.delete_credential() {
        Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
        Err(e) => Err(unavailable(&e)),
    }
}

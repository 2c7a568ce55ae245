//! Chat models' API keys: kept in the operating system's keyring (the Secret Service on Linux:
//! GNOME Keyring, KWallet, KeePassXC), never in `app.json`, logs or artifacts.
//!
//! Where no keyring runs (a bare server, a container), saving a key is refused with a clear
//! error; the user may then keep it for this session only, explicitly, in the app's memory.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::error::{AppError, AppResult, ErrorCode};

/// The keyring service name of every entry (the account is the model's registry id).
const SERVICE: &str = "zblade-chat";

/// The keys of this session and the door to the keyring.
#[derive(Default)]
pub struct Keys {
    /// Keys the user chose to keep for this session only (no keyring ran).
    session: Mutex<HashMap<String, String>>,
}

impl Keys {
    /// Stores `key` for the model `id`: in the keyring, or — with `session_only` — in memory
    /// until the app quits.
    pub fn store(&self, id: &str, key: &str, session_only: bool) -> AppResult<()> {
        if session_only {
            self.session
                .lock()
                .map_err(AppError::internal)?
                .insert(id.into(), key.into());
            return Ok(());
        }
        entry(id)?.set_password(key).map_err(|e| keyring_error(&e))?;
        // A key now in the keyring replaces one kept for the session.
        self.session.lock().map_err(AppError::internal)?.remove(id);
        Ok(())
    }

    /// The key of the model `id`, if one is stored. A keyring that cannot be reached is an
    /// error (the chat says so) unless the session holds the key.
    pub fn read(&self, id: &str) -> AppResult<Option<String>> {
        if let Some(key) = self.session.lock().map_err(AppError::internal)?.get(id) {
            return Ok(Some(key.clone()));
        }
        match entry(id)?.get_password() {
            Ok(key) => Ok(Some(key)),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(keyring_error(&e)),
        }
    }

    /// Whether a key is stored for `id` (false where the keyring cannot be reached).
    pub fn has(&self, id: &str) -> bool {
        self.read(id).is_ok_and(|key| key.is_some())
    }

    /// Removes the key of `id` from the session and the keyring.
    pub fn forget(&self, id: &str) -> AppResult<()> {
        self.session.lock().map_err(AppError::internal)?.remove(id);
        match entry(id)?.delete_credential() {
            Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
            Err(e) => Err(keyring_error(&e)),
        }
    }
}

fn entry(id: &str) -> AppResult<keyring::Entry> {
    keyring::Entry::new(SERVICE, id).map_err(|e| keyring_error(&e))
}

fn keyring_error(e: &keyring::Error) -> AppError {
    let why = match e {
        keyring::Error::PlatformFailure(inner) | keyring::Error::NoStorageAccess(inner) => inner.to_string(),
        other => other.to_string(),
    };
    AppError::new(
        ErrorCode::KeyringUnavailable,
        format!(
            "The system keyring could not be used ({why}). API keys are kept only in a keyring (on Linux a Secret \
             Service such as GNOME Keyring or KWallet). Start one, or tick \"keep for this session only\"."
        ),
    )
}

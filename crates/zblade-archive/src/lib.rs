//! zblade-archive: the permanent archive of a project's memory (docs/ARCHIVE.md).
//!
//! The files that are a project's truth (`.zblade/instructions.md`, `config/settings.json`
//! and everything under `artifacts/`) are packed into batches as they change, each batch
//! encrypted under a fresh AES-256-GCM key and kept on a [`backend`]: Arweave (signed
//! transactions through a gateway) or a plain directory. The keys are wrapped by a master key
//! derived from the user's passphrase (Argon2id) and kept in the [`vault`], the one small file
//! that can change: destroying a key there makes its batch unreadable for good, which is how
//! `forget` deletes from permanent storage. A [`journal`] makes pushes incremental and
//! resumable. Restore needs only the vault, the backend and the passphrase.
//!
//! This crate knows files, not conversations: the engine decides which files a conversation
//! is (and removes them locally) and rebuilds the index after a restore.

pub mod backend;
pub mod crypto;
pub mod format;
pub mod journal;
pub mod keychain;
pub mod vault;
mod work;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use zblade_core::{Error, Result};

pub use backend::arweave::{ArweaveBackend, Retry};
pub use backend::arweave_tx::Wallet;
pub use backend::dir::DirBackend;
pub use backend::{Backend, Listed};
pub use vault::{BackendSpec, Vault};
pub use work::{
    Archive, ArchiveStatus, ForgetReport, Problem, Progress, PushOptions, PushReport, RestoreOptions, RestoreReport,
    SharedItem, restore, truth_files,
};

/// The folder under `.zblade/` that holds the archive's settings and journal (never
/// committed: it names this machine's vault and wallet).
pub const STATE_DIR: &str = "archive";
/// Items at most this big share a batch; bigger ones go alone (seed 5.2).
pub const ALONE_OVER: u64 = 100 * 1024;
/// Items per batch (seed 5.2).
pub const ITEMS_PER_BATCH: usize = 50;
/// Plaintext bytes per batch before it is closed early.
pub const BATCH_BYTES: usize = 4 * 1024 * 1024;
/// Plaintext bytes per part: objects are cut below what Arweave takes inline.
pub const PART_BYTES: usize = 8 * 1024 * 1024;

/// `.zblade/archive/config.json`: how this project reaches its archive.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Config {
    /// The archive's id.
    pub archive: String,
    /// The vault file.
    pub vault: PathBuf,
    /// The Arweave wallet (JWK) used to sign, when the backend is Arweave.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wallet: Option<PathBuf>,
    /// Whether this machine keeps the master key in the OS keyring ([`keychain`]).
    #[serde(default)]
    pub remembered: bool,
    /// Whether the app pushes in the background (needs the remembered key).
    #[serde(default)]
    pub auto_push: bool,
}

impl Config {
    /// Where the config lives in a project's `.zblade/`.
    pub fn path(zblade_dir: &Path) -> PathBuf {
        zblade_dir.join(STATE_DIR).join("config.json")
    }

    /// Reads the config; `None` when the archive is not set up.
    pub fn load(zblade_dir: &Path) -> Result<Option<Config>> {
        let path = Config::path(zblade_dir);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| Error::Usage(format!("{}: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(&path, e)),
        }
    }

    /// Writes the config (and a `.gitignore` keeping the archive folder out of git).
    pub fn save(&self, zblade_dir: &Path) -> Result<()> {
        let dir = zblade_dir.join(STATE_DIR);
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        zblade_core::fsio::write_atomic(
            &dir.join(".gitignore"),
            b"# this machine's archive state: never committed\n*\n",
        )?;
        zblade_core::fsio::write_atomic(
            &Config::path(zblade_dir),
            &serde_json::to_vec_pretty(self).expect("config serialises"),
        )
    }
}

/// Where a vault goes by default: inside a directory backend, or for Arweave under the user's
/// data folder (`$XDG_DATA_HOME` or `~/.local/share`) `/zblade/archive/<id>/`.
pub fn default_vault_path(spec: &BackendSpec, archive: &str) -> PathBuf {
    match spec {
        BackendSpec::Dir { path } => path.join(vault::VAULT_FILE),
        BackendSpec::Arweave { .. } => user_data_dir()
            .join("zblade")
            .join("archive")
            .join(archive)
            .join(vault::VAULT_FILE),
    }
}

/// The folder Arweave vaults go in by default.
pub fn user_data_dir() -> PathBuf {
    std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local").join("share")))
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Refuses an Arweave gateway on another machine unless the network may be used
/// (`privacy.allow_network`, or `--allow-network` for one command). A directory, or a gateway
/// on this machine (arlocal), needs nothing. `gateway` overrides the vault's.
pub fn check_network(spec: &BackendSpec, gateway: Option<&str>, allowed: bool) -> Result<()> {
    let BackendSpec::Arweave { gateway: own, .. } = spec else {
        return Ok(());
    };
    let url = gateway.unwrap_or(own);
    let local = reqwest::Url::parse(url).is_ok_and(|u| zblade_sync::check::is_loopback(&u));
    if local || allowed {
        return Ok(());
    }
    Err(Error::ConsentRequired(format!(
        "the archive sends encrypted batches to {url}: pass --allow-network for this command, or set privacy.allow_network to true in .zblade/config/settings.json"
    )))
}

/// Opens the backend a vault names; `wallet` is needed to write to Arweave; `gateway`
/// overrides the vault's (a restore through another gateway).
pub fn open_backend(
    spec: &BackendSpec,
    wallet: Option<&Path>,
    gateway: Option<&str>,
    retry: Retry,
) -> Result<Box<dyn Backend>> {
    Ok(match spec {
        BackendSpec::Dir { path } => Box::new(DirBackend::new(path)?),
        BackendSpec::Arweave { gateway: own, owner } => {
            let wallet = wallet.map(Wallet::load).transpose()?;
            Box::new(ArweaveBackend::new(gateway.unwrap_or(own), owner, wallet, retry)?)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_gateways_on_this_machine_go_without_consent() {
        let spec = |g: &str| BackendSpec::Arweave {
            gateway: g.into(),
            owner: "o".into(),
        };
        assert!(check_network(&spec("http://127.0.0.1:1984"), None, false).is_ok());
        assert!(check_network(&spec("http://localhost:1984/"), None, false).is_ok());
        assert!(check_network(&spec("http://[::1]:1984"), None, false).is_ok());
        assert!(check_network(&spec("https://arweave.net"), None, false).is_err());
        assert!(check_network(&spec("http://127.0.0.1.evil.com"), None, false).is_err());
        assert!(check_network(&spec("http://127.0.0.1@evil.com"), None, false).is_err());
        assert!(check_network(&spec("https://arweave.net"), None, true).is_ok());
        assert!(check_network(&spec("http://127.0.0.1:1984"), Some("https://arweave.net"), false).is_err());
        assert!(check_network(&BackendSpec::Dir { path: "/x".into() }, None, false).is_ok());
    }
}

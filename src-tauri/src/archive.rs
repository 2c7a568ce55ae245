//! Settings → Archive: the permanent archive (zblade-archive, docs/ARCHIVE.md) from the app —
//! set up (a directory or Arweave), status, push with progress, restore into a folder. The
//! passphrase is typed in the card for each step and never stored. An Arweave gateway on
//! another machine needs the app's network consent, like the CLI's `--allow-network`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use specta::Type;
use tauri::AppHandle;
use tauri_specta::Event;
use zblade_archive::{Archive, ArchiveStatus, BackendSpec, Config, PushOptions, RestoreOptions, Retry, Vault};

use crate::commands::blocking;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::state::AppState;

/// Where a new archive goes.
#[derive(Debug, Clone, Serialize, Deserialize, Type)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum ArchiveTarget {
    /// A directory: an external disk, a synced folder.
    Dir {
        /// The folder.
        path: String,
    },
    /// Arweave through a gateway, signed and paid by a JWK wallet.
    Arweave {
        /// The gateway's URL.
        gateway: String,
        /// The wallet file.
        wallet: String,
    },
}

/// The archive as the card shows it; `archive` is null when none is set up.
#[derive(Debug, Clone, Serialize, Deserialize, Type)]
pub struct ArchiveView {
    /// The archive's id.
    pub archive: Option<String>,
    /// Where its objects are, in words.
    pub backend: String,
    /// The vault file (keep a copy).
    pub vault: String,
    /// The key others share to.
    pub share_key: String,
    /// Files changed since the last push.
    pub pending_files: u32,
    /// Objects made but not yet sent.
    pub unsent: u32,
    /// Objects sent, awaiting confirmation.
    pub submitted: u32,
    /// Objects confirmed.
    pub confirmed: u32,
    /// Sealed bytes stored.
    pub stored_bytes: f64,
    /// What the pending bytes would cost (Arweave).
    pub pending_cost: Option<String>,
    /// What the stored bytes cost at today's price (Arweave).
    pub stored_cost: Option<String>,
    /// Why the backend could not be asked, when it could not.
    pub offline: Option<String>,
}

impl ArchiveView {
    fn none() -> ArchiveView {
        ArchiveView {
            archive: None,
            backend: String::new(),
            vault: String::new(),
            share_key: String::new(),
            pending_files: 0,
            unsent: 0,
            submitted: 0,
            confirmed: 0,
            stored_bytes: 0.0,
            pending_cost: None,
            stored_cost: None,
            offline: None,
        }
    }

    fn of(status: ArchiveStatus) -> ArchiveView {
        ArchiveView {
            archive: Some(status.archive),
            backend: status.backend,
            vault: status.vault.display().to_string(),
            share_key: status.share_key,
            pending_files: status.pending_files as u32,
            unsent: status.unsent as u32,
            submitted: status.submitted as u32,
            confirmed: status.confirmed as u32,
            stored_bytes: status.stored_bytes as f64,
            pending_cost: status.pending_cost,
            stored_cost: status.stored_cost,
            offline: status.offline,
        }
    }
}

/// What a push did.
#[derive(Debug, Clone, Serialize, Deserialize, Type)]
pub struct ArchivePushView {
    /// Files archived.
    pub files: u32,
    /// Deletions archived.
    pub deleted: u32,
    /// Batches made.
    pub batches: u32,
    /// Sealed bytes sent.
    pub bytes: f64,
    /// Seconds.
    pub seconds: f64,
}

/// What a restore did.
#[derive(Debug, Clone, Serialize, Deserialize, Type)]
pub struct ArchiveRestoreView {
    /// Files written.
    pub files: u32,
    /// Batches replayed.
    pub batches: u32,
    /// Batches forgotten on purpose.
    pub forgotten: u32,
    /// What could not be restored (the rest was).
    pub problems: Vec<String>,
    /// Seconds.
    pub seconds: f64,
}

/// Progress of a push or restore: `stage` (push, snapshot, restore), `done` of `total`.
#[derive(Debug, Clone, Serialize, Deserialize, Type, Event)]
pub struct ArchiveProgress {
    /// The stage.
    pub stage: String,
    /// Items done.
    pub done: u32,
    /// Items in all.
    pub total: u32,
}

/// The open project's `.zblade/` folder.
fn zblade_dir(state: &AppState) -> AppResult<PathBuf> {
    let guard = state.project.lock().map_err(AppError::internal)?;
    let project = guard.as_ref().ok_or_else(AppError::no_project)?;
    Ok(project.layout().dir().to_path_buf())
}

/// Network consent for an archive's backend, from the app's privacy setting.
fn consent(state: &AppState, spec: &BackendSpec) -> AppResult<()> {
    Ok(zblade_archive::check_network(spec, None, state.config().allow_network)?)
}

/// Asks the backend (confirmations, prices) only when that needs no consent or has it.
fn status_of(state: &AppState, dir: &Path) -> AppResult<ArchiveView> {
    let Some(config) = Config::load(dir)? else {
        return Ok(ArchiveView::none());
    };
    let refresh = consent(state, &Vault::load(&config.vault)?.backend).is_ok();
    Ok(ArchiveView::of(Archive::status(dir, refresh, Retry::default())?))
}

fn progress(app: &AppHandle) -> impl FnMut(&str, usize, usize) + use<> {
    let emitter = app.clone();
    move |stage, done, total| {
        let _ = ArchiveProgress {
            stage: stage.to_string(),
            done: done as u32,
            total: total as u32,
        }
        .emit(&emitter);
    }
}

/// The open project's archive; `archive` is null when none is set up.
#[tauri::command]
#[specta::specta]
pub async fn archive_status(app: AppHandle) -> AppResult<ArchiveView> {
    blocking(app, |_, state| status_of(state, &zblade_dir(state)?)).await
}

/// Sets up the open project's archive (a new vault; refused if the project has one).
#[tauri::command]
#[specta::specta]
pub async fn archive_setup(app: AppHandle, target: ArchiveTarget, passphrase: String) -> AppResult<ArchiveView> {
    blocking(app, move |_, state| {
        let dir = zblade_dir(state)?;
        let (spec, wallet) = match target {
            ArchiveTarget::Dir { path } if !path.trim().is_empty() => (
                BackendSpec::Dir {
                    path: PathBuf::from(path.trim()),
                },
                None,
            ),
            ArchiveTarget::Arweave { gateway, wallet } if !gateway.trim().is_empty() && !wallet.trim().is_empty() => (
                BackendSpec::Arweave {
                    gateway: gateway.trim().to_string(),
                    owner: String::new(),
                },
                Some(PathBuf::from(wallet.trim())),
            ),
            _ => {
                return Err(AppError::new(
                    ErrorCode::InvalidInput,
                    "choose a folder, or an Arweave gateway and a wallet file",
                ));
            }
        };
        consent(state, &spec)?;
        Archive::setup(&dir, spec, None, wallet, &passphrase, Retry::default())?;
        status_of(state, &dir)
    })
    .await
}

/// Archives what changed (finishing an interrupted forget first), with `ArchiveProgress`.
#[tauri::command]
#[specta::specta]
pub async fn archive_push(app: AppHandle, passphrase: String, snapshot: bool) -> AppResult<ArchivePushView> {
    blocking(app, move |app, state| {
        let dir = zblade_dir(state)?;
        let config = Config::load(&dir)?
            .ok_or_else(|| AppError::new(ErrorCode::NotInitialized, "this project has no archive yet"))?;
        consent(state, &Vault::load(&config.vault)?.backend)?;
        let mut archive = Archive::open(&dir, &passphrase, Retry::default())?;
        let mut report = progress(app);
        {
            let mut guard = state.project.lock().map_err(AppError::internal)?;
            let project = guard.as_mut().ok_or_else(AppError::no_project)?;
            project.finish_archive_forgets(&mut archive, &mut report)?;
        }
        let pushed = archive.push(&PushOptions { snapshot }, &mut report)?;
        Ok(ArchivePushView {
            files: pushed.files as u32,
            deleted: pushed.deleted as u32,
            batches: pushed.batches as u32,
            bytes: pushed.bytes as f64,
            seconds: pushed.elapsed_ms as f64 / 1000.0,
        })
    })
    .await
}

/// Restores an archive into a folder from its vault and passphrase (files, then the index),
/// with `ArchiveProgress`. The folder's `.zblade/` must not exist.
#[tauri::command]
#[specta::specta]
pub async fn archive_restore(
    app: AppHandle,
    vault: String,
    into: String,
    passphrase: String,
    snapshot: bool,
) -> AppResult<ArchiveRestoreView> {
    blocking(app, move |app, state| {
        let vault = PathBuf::from(vault.trim());
        let into = PathBuf::from(into.trim());
        consent(state, &Vault::load(&vault)?.backend)?;
        std::fs::create_dir_all(&into).map_err(|e| zblade_engine::Error::io(&into, e))?;
        let options = RestoreOptions {
            vault,
            into: into.clone(),
            passphrase,
            gateway: None,
            wallet: None,
            use_snapshot: snapshot,
            retry: Retry::default(),
        };
        let restored = zblade_archive::restore(&options, &mut progress(app))?;
        // The index of the restored project: the catalog now, the vectors by its indexer when
        // it is opened.
        zblade_engine::Project::open(&into)?.reindex()?;
        Ok(ArchiveRestoreView {
            files: restored.files as u32,
            batches: restored.batches as u32,
            forgotten: restored.forgotten as u32,
            problems: restored
                .problems
                .iter()
                .map(|p| format!("batch {} object {}: {}", p.seq, p.object, p.message))
                .collect(),
            seconds: restored.elapsed_ms as f64 / 1000.0,
        })
    })
    .await
}

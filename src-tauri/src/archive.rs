//! Settings → Archive: the permanent archive (zblade-archive, docs/ARCHIVE.md) from the app —
//! set up (a directory or Arweave), status, push with progress, restore into a folder, push in
//! the background, forget, share and accept. The passphrase is typed in the card for each step
//! and never stored by the app; "Push in the background" keeps the master key in the OS
//! keyring (zblade-archive's `keychain`), and then steps need no passphrase. An Arweave
//! gateway on another machine needs the app's network consent, like the CLI's
//! `--allow-network`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use specta::Type;
use tauri::{AppHandle, Manager};
use tauri_specta::Event;
use zblade_archiving::{
    Archive, ArchiveStatus, PushOptions, Reindex, RestoreOptions, Retry, ShareSource, Target, Unlock,
};

use crate::error::{AppError, AppResult, ErrorCode};
use crate::state::AppState;
use crate::state::blocking;
use crate::updates::ArchiveRound;

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
    /// Whether this machine keeps the master key in the OS keyring.
    pub remembered: bool,
    /// Whether the app pushes in the background.
    pub auto_push: bool,
    /// The last background push, in words.
    pub background: Option<String>,
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
            remembered: false,
            auto_push: false,
            background: None,
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
            remembered: status.remembered,
            auto_push: status.auto_push,
            background: None,
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

/// A round of the background push, in words; `ok` is false when it failed.
#[derive(Debug, Clone, Serialize, Deserialize, Type, Event)]
pub struct ArchiveBackground {
    /// What happened, with the time.
    pub message: String,
    /// Whether it pushed (or had nothing to push).
    pub ok: bool,
}

/// What a forget did.
#[derive(Debug, Clone, Serialize, Deserialize, Type)]
pub struct ArchiveForgetView {
    /// Batches whose keys were destroyed.
    pub destroyed_batches: u32,
    /// Files of those batches archived again under new keys.
    pub rearchived: u32,
}

/// What an accept did.
#[derive(Debug, Clone, Serialize, Deserialize, Type)]
pub struct ArchiveAcceptView {
    /// Grants opened.
    pub grants: u32,
    /// Conversations added.
    pub added: Vec<String>,
    /// What was refused, and why.
    pub refused: Vec<String>,
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

/// The open project's root.
fn project_root(state: &AppState) -> AppResult<PathBuf> {
    state.project_root().ok_or_else(AppError::no_project)
}

/// The archive card's state; the backend is asked (confirmations, prices) only with the
/// app's network consent where it needs one.
fn status_of(state: &AppState, root: &Path) -> AppResult<ArchiveView> {
    let Some(status) = zblade_archiving::status(root, true, state.config().allow_network)? else {
        return Ok(ArchiveView::none());
    };
    let mut view = ArchiveView::of(status);
    view.background = state.archive_background.lock().map_err(AppError::internal)?.clone();
    Ok(view)
}

/// A round of the background push, said in the card: kept for the next status and sent as
/// [`ArchiveBackground`].
pub fn publish_round(app: &AppHandle, round: ArchiveRound) {
    let at = chrono::Local::now().format("%H:%M");
    let (message, ok) = match round {
        ArchiveRound::Off => return,
        ArchiveRound::Pushed { files: 0, deleted: 0 } => (format!("{at}: up to date"), true),
        ArchiveRound::Pushed { files, deleted } => {
            (format!("{at}: pushed {files} file(s), {deleted} deletion(s)"), true)
        }
        ArchiveRound::Failed(why) => (format!("{at}: not pushed: {why}"), false),
    };
    if let Some(state) = app.try_state::<AppState>() {
        *state.archive_background.lock().expect("archive background lock") = Some(message.clone());
    }
    let _ = ArchiveBackground { message, ok }.emit(app);
}

/// Opens the project's archive: with `passphrase`, or when it is empty with the key this
/// machine keeps in the keyring.
fn open_archive(state: &AppState, root: &Path, passphrase: &str) -> AppResult<Archive> {
    if !passphrase.is_empty() {
        let unlock = Unlock::Passphrase(passphrase.to_string());
        return Ok(zblade_archiving::open(root, unlock, state.config().allow_network)?);
    }
    // No passphrase typed: the kept key, else say why it was not there (or could not be used).
    let why = std::cell::RefCell::new(None);
    let unlock = Unlock::RememberedElse {
        ask: &mut || {
            Err(zblade_engine::Error::Usage(match why.borrow_mut().take() {
                Some(why) => format!("type the archive's passphrase: {why}"),
                None => "type the archive's passphrase (this machine does not keep its key)".into(),
            }))
        },
        said: &mut |reason| *why.borrow_mut() = Some(reason),
    };
    Ok(zblade_archiving::open(root, unlock, state.config().allow_network)?)
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
    blocking(app, |_, state| status_of(state, &project_root(state)?)).await
}

/// Sets up the open project's archive (a new vault; refused if the project has one).
#[tauri::command]
#[specta::specta]
pub async fn archive_setup(app: AppHandle, target: ArchiveTarget, passphrase: String) -> AppResult<ArchiveView> {
    blocking(app, move |_, state| {
        let root = project_root(state)?;
        let target = match target {
            ArchiveTarget::Dir { path } => Target::from_choice(Some(PathBuf::from(path.trim())), None),
            ArchiveTarget::Arweave { gateway, wallet } => {
                let wallet = Some(PathBuf::from(wallet.trim())).filter(|w| !w.as_os_str().is_empty());
                Target::from_choice(None, Some((gateway, wallet)))
            }
        }?;
        zblade_archiving::setup(&root, target, None, &passphrase, state.config().allow_network)?;
        status_of(state, &root)
    })
    .await
}

/// Archives what changed (finishing an interrupted forget first), with `ArchiveProgress`.
#[tauri::command]
#[specta::specta]
pub async fn archive_push(app: AppHandle, passphrase: String, snapshot: bool) -> AppResult<ArchivePushView> {
    blocking(app, move |app, state| {
        let root = project_root(state)?;
        let mut archive = open_archive(state, &root, &passphrase)?;
        let mut report = progress(app);
        let (_, pushed) = zblade_archiving::push(&root, &mut archive, &PushOptions { snapshot }, &mut report)?;
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
        let options = RestoreOptions {
            vault: PathBuf::from(vault.trim()),
            into: PathBuf::from(into.trim()),
            passphrase,
            gateway: None,
            wallet: None,
            use_snapshot: snapshot,
            retry: Retry::default(),
        };
        // The catalog now; the vectors by the indexer when the restored project is opened.
        let allowed = state.config().allow_network;
        let (restored, _) = zblade_archiving::restore(&options, Reindex::Catalog, allowed, &mut progress(app))?;
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

/// Turns the background push on (the passphrase proves the key, which then goes into the OS
/// keyring) or off (the key leaves the keyring).
#[tauri::command]
#[specta::specta]
pub async fn archive_background(app: AppHandle, enable: bool, passphrase: String) -> AppResult<ArchiveView> {
    blocking(app, move |_, state| {
        let root = project_root(state)?;
        if enable {
            if passphrase.is_empty() {
                return Err(AppError::new(
                    ErrorCode::InvalidInput,
                    "type the archive's passphrase: it unlocks the key the keyring will keep",
                ));
            }
            open_archive(state, &root, &passphrase)?.remember(true)?;
        } else {
            zblade_archiving::unremember(&root)?;
        }
        status_of(state, &root)
    })
    .await
}

/// Forgets conversations and moments for good (here, and every archived copy made unreadable), with
/// `ArchiveProgress`.
#[tauri::command]
#[specta::specta]
pub async fn archive_forget(app: AppHandle, ids: Vec<String>, passphrase: String) -> AppResult<ArchiveForgetView> {
    blocking(app, move |app, state| {
        let ids = conversation_ids(&ids)?;
        let root = project_root(state)?;
        let mut archive = open_archive(state, &root, &passphrase)?;
        let mut guard = state.project.lock().map_err(AppError::internal)?;
        let project = guard.as_mut().ok_or_else(AppError::no_project)?;
        let report = zblade_archiving::forget(project, &mut archive, &ids, &mut progress(app))?;
        Ok(ArchiveForgetView {
            destroyed_batches: report.destroyed_batches as u32,
            rearchived: report.rearchived as u32,
        })
    })
    .await
}

/// Shares conversations with another zblade user's share key; returns the grant's id.
#[tauri::command]
#[specta::specta]
pub async fn archive_share(app: AppHandle, ids: Vec<String>, to: String, passphrase: String) -> AppResult<String> {
    blocking(app, move |_, state| {
        let ids = conversation_ids(&ids)?;
        let root = project_root(state)?;
        let mut archive = open_archive(state, &root, &passphrase)?;
        let guard = state.project.lock().map_err(AppError::internal)?;
        let project = guard.as_ref().ok_or_else(AppError::no_project)?;
        Ok(zblade_archiving::share(project, &mut archive, &ids, &to)?.0)
    })
    .await
}

/// Adds the conversations others shared with this archive's share key (each grant once).
#[tauri::command]
#[specta::specta]
pub async fn archive_accept(app: AppHandle, passphrase: String) -> AppResult<ArchiveAcceptView> {
    blocking(app, move |_, state| {
        let root = project_root(state)?;
        let mut archive = open_archive(state, &root, &passphrase)?;
        let mut guard = state.project.lock().map_err(AppError::internal)?;
        let project = guard.as_mut().ok_or_else(AppError::no_project)?;
        let accepted =
            zblade_archiving::accept(project, &mut archive, &ShareSource::Own, state.config().allow_network)?;
        let view = ArchiveAcceptView {
            grants: accepted.grants as u32,
            added: accepted.added.into_iter().map(|(_, id, _)| id).collect(),
            refused: accepted
                .refused
                .into_iter()
                .map(|(sender, name, why)| format!("{name} from {sender}: {why}"))
                .collect(),
        };
        Ok(view)
    })
    .await
}

/// The ids typed in the card (spaces or commas between them); at least one.
fn conversation_ids(ids: &[String]) -> AppResult<Vec<String>> {
    let ids: Vec<String> = ids
        .iter()
        .flat_map(|s| s.split([',', ' ', '\n']))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    if ids.is_empty() {
        return Err(AppError::new(
            ErrorCode::InvalidInput,
            "name at least one conversation or moment (conv_…, moment_…)",
        ));
    }
    Ok(ids)
}

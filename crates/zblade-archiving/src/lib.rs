//! A project's permanent archive: the flows the CLI (`zblade archive …`), the desktop app's
//! Archive card and its background push all run, written once over the engine and the archive.
//!
//! zblade-archive knows batches, keys and backends, not conversations; the engine knows
//! conversations, not archives. Here the two meet: which files a forget removes (the engine's
//! [`Project::artifact_files`]), what a share exports and an accept adds, the consent a backend
//! needs before the network is touched, the key kept in the keyring or the passphrase, and the
//! index a restore rebuilds. A face decides only how to ask (a prompt, a field) and how to show
//! the outcome; neither the engine nor the faces that never archive link this crate.

use std::path::{Path, PathBuf};
use std::time::Instant;

pub use zblade_archive::{
    Archive, ArchiveStatus, Backend, BackendSpec, ForgetReport, Progress, PushOptions, PushReport, RestoreOptions,
    RestoreReport, Retry,
};
use zblade_archive::{Config, DirBackend, SharedItem, Vault};
use zblade_engine::{AddOutcome, EmbedReport, Error, ExportFormat, Project, Result};

/// Where a new archive keeps its batches.
#[derive(Debug, Clone)]
pub enum Target {
    /// A directory: a second disk, a synced folder.
    Dir(PathBuf),
    /// Arweave through `gateway`, paid for with the wallet file.
    Arweave {
        /// The gateway's URL.
        gateway: String,
        /// The wallet (JWK) that pays.
        wallet: PathBuf,
    },
}

impl Target {
    /// The target a face was given: a directory, or a gateway with its wallet; anything else is
    /// refused with what to give.
    pub fn from_choice(dir: Option<PathBuf>, arweave: Option<(String, Option<PathBuf>)>) -> Result<Target> {
        match (dir, arweave) {
            (Some(path), None) if !path.as_os_str().is_empty() => Ok(Target::Dir(path)),
            (None, Some((gateway, wallet))) if !gateway.trim().is_empty() => match wallet {
                Some(wallet) if !wallet.as_os_str().is_empty() => Ok(Target::Arweave {
                    gateway: gateway.trim().to_string(),
                    wallet,
                }),
                _ => Err(Error::Usage(
                    "an Arweave archive needs a wallet file (a JWK wallet; `--wallet FILE` on the command line)".into(),
                )),
            },
            _ => Err(Error::Usage(
                "say where the archive goes: a folder (a disk or synced folder; `--dir DIR`), or an Arweave gateway \
                 and a wallet file (`--arweave GATEWAY --wallet FILE`)"
                    .into(),
            )),
        }
    }
}

/// How to unlock the archive's master key.
pub enum Unlock<'a> {
    /// With this passphrase.
    Passphrase(String),
    /// With the key this machine keeps in the keyring, else with the passphrase `ask` gets (a
    /// prompt); `said` hears why a kept key was not used.
    RememberedElse {
        /// Asks for the passphrase when no kept key opens the archive.
        ask: &'a mut dyn FnMut() -> Result<String>,
        /// Told why a kept key could not be used (the keyring is down, the key is wrong).
        said: &'a mut dyn FnMut(String),
    },
}

/// The project's `.zblade/` folder; an error that says how to make one when there is none.
pub fn zblade_dir(root: &Path) -> Result<PathBuf> {
    let dir = root.join(".zblade");
    if !dir.is_dir() {
        return Err(Error::NotInitialized(format!(
            "{} has no .zblade/ (run `zblade init`, or pass --project)",
            root.display()
        )));
    }
    Ok(dir)
}

/// The error for a project without an archive, saying how to set one up.
pub fn no_archive() -> Error {
    Error::NotInitialized("this project has no archive; `zblade archive setup` makes one".into())
}

/// The project's archive settings; [`no_archive`] when there are none.
fn config(dir: &Path) -> Result<Config> {
    Config::load(dir)?.ok_or_else(no_archive)
}

/// Sets up the archive of the project at `root` (a new vault; refused if it has one), after
/// checking the backend may use the network (`network_allowed`: the face's flag or setting).
pub fn setup(
    root: &Path,
    target: Target,
    vault: Option<PathBuf>,
    passphrase: &str,
    network_allowed: bool,
) -> Result<Archive> {
    let dir = zblade_dir(root)?;
    let (spec, wallet) = match target {
        Target::Dir(path) => (
            BackendSpec::Dir {
                path: std::path::absolute(&path).map_err(|e| Error::io(&path, e))?,
            },
            None,
        ),
        Target::Arweave { gateway, wallet } => (
            BackendSpec::Arweave {
                gateway,
                owner: String::new(),
            },
            Some(wallet),
        ),
    };
    zblade_archive::check_network(&spec, None, network_allowed)?;
    Archive::setup(&dir, spec, vault, wallet, passphrase, Retry::default())
}

/// The archive's state; `None` when the project has none. The backend is asked (confirmations,
/// prices) only when `refresh` and the backend may use the network.
pub fn status(root: &Path, refresh: bool, network_allowed: bool) -> Result<Option<ArchiveStatus>> {
    let dir = zblade_dir(root)?;
    let Some(config) = Config::load(&dir)? else {
        return Ok(None);
    };
    let refresh =
        refresh && zblade_archive::check_network(&Vault::load(&config.vault)?.backend, None, network_allowed).is_ok();
    Archive::status(&dir, refresh, Retry::default()).map(Some)
}

/// Opens the archive of the project at `root`, once its backend may use the network.
pub fn open(root: &Path, unlock: Unlock<'_>, network_allowed: bool) -> Result<Archive> {
    let dir = zblade_dir(root)?;
    let config = config(&dir)?;
    zblade_archive::check_network(&Vault::load(&config.vault)?.backend, None, network_allowed)?;
    match unlock {
        Unlock::Passphrase(passphrase) => Archive::open(&dir, &passphrase, Retry::default()),
        Unlock::RememberedElse { ask, said } => {
            if config.remembered {
                match Archive::open_remembered(&dir, Retry::default()) {
                    Ok(Some(archive)) => return Ok(archive),
                    Ok(None) => {}
                    Err(e) => said(format!("the remembered key was not used: {e}")),
                }
            }
            Archive::open(&dir, &ask()?, Retry::default())
        }
    }
}

/// Keeps the master key in the OS keyring (the passphrase proves it right first); with
/// `background`, the desktop app pushes while the project is open.
pub fn remember(root: &Path, passphrase: String, background: bool, network_allowed: bool) -> Result<()> {
    open(root, Unlock::Passphrase(passphrase), network_allowed)?.remember(background)
}

/// Takes the master key out of the keyring: commands ask for the passphrase again.
pub fn unremember(root: &Path) -> Result<()> {
    Archive::unremember(&zblade_dir(root)?)
}

/// Pushes what changed in the project at `root`, after finishing any forget a kill
/// interrupted (its conversations go, then its keys): the one push every face runs —
/// `zblade archive push`, the app's button and its background push. The project is opened only
/// when a forget is pending: a push alone needs only the archive, and the background push runs
/// every minute.
pub fn push(
    root: &Path,
    archive: &mut Archive,
    options: &PushOptions,
    progress: Progress,
) -> Result<(ForgetReport, PushReport)> {
    let finished = if archive.unfinished_forgets()?.is_empty() {
        ForgetReport::default()
    } else {
        finish_forgets(&mut Project::open(root)?, archive, &mut *progress)?
    };
    let pushed = archive.push(options, progress)?;
    Ok((finished, pushed))
}

/// Forgets conversations (documents included) and moments for good: the files each is are
/// recorded in the archive's journal first (a forget killed half-way is finished by the next
/// push), removed here, then the archive destroys the keys of every batch that held them,
/// after archiving the rest of those batches again.
pub fn forget(
    project: &mut Project,
    archive: &mut Archive,
    ids: &[String],
    progress: Progress,
) -> Result<ForgetReport> {
    let paths = project.artifact_files(ids)?;
    archive.begin_forget(&paths)?;
    finish_forgets(project, archive, progress)
}

/// Finishes the forgets recorded in the archive's journal: their files go here, then the
/// archive destroys the keys.
fn finish_forgets(project: &mut Project, archive: &mut Archive, progress: Progress) -> Result<ForgetReport> {
    let pending = archive.unfinished_forgets()?;
    if pending.is_empty() {
        return Ok(ForgetReport::default());
    }
    for row in &pending {
        project.remove_artifact_files(&row.paths)?;
    }
    archive.finish_forgets(progress)
}

/// Shares conversations with the holder of share key `to`: each in format 1 (every message
/// inline). Returns the grant's id and how many items it holds.
pub fn share(project: &Project, archive: &mut Archive, ids: &[String], to: &str) -> Result<(String, usize)> {
    let items = ids
        .iter()
        .map(|id| {
            Ok(SharedItem {
                name: format!("conversations/{id}.json"),
                bytes: project.export_conversation(id, ExportFormat::Json)?.into_bytes(),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    archive.share(items, to.trim())
}

/// Where shares are looked for besides the archive's own backend.
#[derive(Debug, Clone, Default)]
pub enum ShareSource {
    /// Only the archive's own backend.
    #[default]
    Own,
    /// A directory archive.
    Dir(PathBuf),
    /// An Arweave gateway.
    Arweave(String),
}

/// What an accept took in.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Accepted {
    /// Grants read.
    pub grants: usize,
    /// Conversations added: (sender, id, name in the grant).
    pub added: Vec<(String, String, String)>,
    /// Items refused, with the reason: (sender, name, why). The others are added anyway.
    pub refused: Vec<(String, String, String)>,
}

/// Adds the conversations others shared with this archive's share key (each grant once).
/// Every item is validated like a conversation added from a file; one that is not is refused
/// and reported, and the rest are still added.
pub fn accept(
    project: &mut Project,
    archive: &mut Archive,
    from: &ShareSource,
    network_allowed: bool,
) -> Result<Accepted> {
    let other: Option<Box<dyn Backend>> = match from {
        ShareSource::Own => None,
        ShareSource::Dir(dir) => Some(Box::new(DirBackend::new(dir)?)),
        ShareSource::Arweave(gateway) => {
            let spec = BackendSpec::Arweave {
                gateway: gateway.clone(),
                owner: String::new(),
            };
            zblade_archive::check_network(&spec, None, network_allowed)?;
            Some(Box::new(zblade_archive::ArweaveBackend::new(
                gateway,
                "",
                None,
                Retry::default(),
            )?))
        }
    };
    let received = archive.accept(other.as_deref())?;
    let mut accepted = Accepted {
        grants: received.len(),
        ..Accepted::default()
    };
    for (sender, items) in &received {
        for item in items {
            let outcome: Result<AddOutcome> = if item.name.starts_with("conversations/") {
                project.accept_conversation(&item.bytes, &item.name)
            } else {
                Err(Error::Untrusted(format!(
                    "{}: only conversations are taken from shares",
                    item.name
                )))
            };
            match outcome {
                Ok(added) => accepted.added.push((sender.clone(), added.id, item.name.clone())),
                Err(e) => accepted
                    .refused
                    .push((sender.clone(), item.name.clone(), e.to_string())),
            }
        }
    }
    Ok(accepted)
}

/// What a restore rebuilds of the index once the files are back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reindex {
    /// Nothing: the files only (`zblade archive restore --no-index`).
    Nothing,
    /// The catalog from the artifacts; vectors later (the app's indexer embeds them once the
    /// restored project is opened).
    Catalog,
    /// The catalog, then vectors for what is not embedded (all of it, or after a snapshot only
    /// what the newer batches brought).
    CatalogAndVectors,
}

/// The index a restore rebuilt.
#[derive(Debug, Clone)]
pub struct Reindexed {
    /// Conversations in the catalog.
    pub conversations: usize,
    /// Messages in the catalog.
    pub messages: usize,
    /// Time to rebuild the catalog.
    pub catalog_ms: u64,
    /// The embeddings computed, or why there are none (`zblade index` embeds later); `None`
    /// when only the catalog was asked for.
    pub vectors: Option<std::result::Result<EmbedReport, String>>,
    /// Time spent embedding.
    pub embedding_ms: u64,
}

/// Restores an archive into `options.into` from its vault and passphrase (the files, then
/// what `reindex` asks of the index), once its backend may use the network. The folder is made
/// when missing; its `.zblade/` must not exist.
pub fn restore(
    options: &RestoreOptions,
    reindex: Reindex,
    network_allowed: bool,
    progress: Progress,
) -> Result<(RestoreReport, Option<Reindexed>)> {
    let spec = Vault::load(&options.vault)?.backend;
    zblade_archive::check_network(&spec, options.gateway.as_deref(), network_allowed)?;
    std::fs::create_dir_all(&options.into).map_err(|e| Error::io(&options.into, e))?;
    let report = zblade_archive::restore(options, progress)?;
    if reindex == Reindex::Nothing {
        return Ok((report, None));
    }
    let started = Instant::now();
    let mut project = Project::open(&options.into)?;
    let reindexed = project.reindex()?;
    let catalog_ms = started.elapsed().as_millis() as u64;
    let started = Instant::now();
    let vectors = (reindex == Reindex::CatalogAndVectors)
        .then(|| project.index_semantic(&mut |_, _| {}).map_err(|e| e.to_string()));
    Ok((
        report,
        Some(Reindexed {
            conversations: reindexed.conversations,
            messages: reindexed.messages,
            catalog_ms,
            vectors,
            embedding_ms: started.elapsed().as_millis() as u64,
        }),
    ))
}

/// The vault to restore with: given, in the directory archive `from`, or the only one under
/// the user's data folder.
pub fn find_vault(vault: Option<PathBuf>, from: Option<&Path>) -> Result<PathBuf> {
    if let Some(vault) = vault {
        return Ok(vault);
    }
    if let Some(dir) = from {
        return Ok(dir.join(zblade_archive::vault::VAULT_FILE));
    }
    let root = zblade_archive::user_data_dir().join("zblade").join("archive");
    let found: Vec<PathBuf> = std::fs::read_dir(&root)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path().join(zblade_archive::vault::VAULT_FILE))
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    match found.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(Error::Usage(format!(
            "no vault under {}; pass --vault FILE (the vault you kept) or --from DIR (a directory archive)",
            root.display()
        ))),
        many => Err(Error::Usage(format!(
            "several vaults under {}: pass --vault with one of {}",
            root.display(),
            many.iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

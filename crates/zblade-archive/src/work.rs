//! The archive's operations: setup, push, status, restore, forget, share and accept.
//!
//! Order is what makes each one safe to interrupt:
//! - push: a batch's keys go into the vault before its parts are named, its parts are
//!   journaled (with the exact bytes to send) before they are sent, and a part is marked sent
//!   only after the backend took it; a killed push resumes by sending the journaled parts.
//! - forget: recorded first; then the surviving files of the affected batches are archived
//!   again under new keys, a tombstone is archived, and only then are the old keys removed
//!   from the vault. A killed forget is finished by the next archive command.
//! - restore: the passphrase is checked before anything is written; files go to a staging
//!   folder that becomes `.zblade/` only at the end.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;
use zblade_core::{Error, Result};

use crate::backend::{Backend, Listed};
use crate::crypto::{self, Key};
use crate::format::{self, Envelope, GrantBody, GrantPart, Header, Item, Kind, PartHeader};
use crate::journal::{BatchRow, ForgetRow, Journal};
use crate::vault::{BackendSpec, Vault};
use crate::{ALONE_OVER, BATCH_BYTES, Config, ITEMS_PER_BATCH, PART_BYTES, Retry, STATE_DIR};

/// Reports progress: a stage name, items done, items in all.
pub type Progress<'a> = &'a mut dyn FnMut(&str, usize, usize);

/// An open archive, unlocked with its master key.
pub struct Archive {
    zblade_dir: PathBuf,
    config: Config,
    vault: Vault,
    master: Key,
    backend: Box<dyn Backend>,
    journal: Journal,
    /// `.zblade/archive/lock`, held while the archive is open: two pushes (the app's
    /// background one and a CLI command) would otherwise send the same batch twice.
    _lock: std::fs::File,
}

/// What `push` may do besides sending changes.
#[derive(Debug, Clone, Default)]
pub struct PushOptions {
    /// Also archive a snapshot (every file, the index included) after the batches.
    pub snapshot: bool,
}

/// What a push did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PushReport {
    /// Batches made.
    pub batches: usize,
    /// Objects sent (a batch over 8 MiB is several).
    pub objects: usize,
    /// Files archived.
    pub files: usize,
    /// Deletions archived.
    pub deleted: usize,
    /// Sealed bytes sent.
    pub bytes: u64,
    /// Objects of an interrupted push sent now.
    pub resumed: usize,
    /// The snapshot's sequence number, when one was made.
    pub snapshot: Option<u64>,
    /// Milliseconds.
    pub elapsed_ms: u64,
}

/// `archive status`.
#[derive(Debug, Clone, Serialize)]
pub struct ArchiveStatus {
    /// The archive's id.
    pub archive: String,
    /// Where its objects are.
    pub backend: String,
    /// The vault file.
    pub vault: PathBuf,
    /// The key others share to.
    pub share_key: String,
    /// Files changed since the last push (to be archived).
    pub pending_files: usize,
    /// Objects made but not yet taken by the backend.
    pub unsent: u64,
    /// Objects taken, awaiting confirmation.
    pub submitted: u64,
    /// Objects confirmed (mined at least once; a directory's at once).
    pub confirmed: u64,
    /// Sealed bytes on the backend.
    pub stored_bytes: u64,
    /// Bytes of the pending files.
    pub pending_bytes: u64,
    /// What storing the pending bytes would cost, when the backend charges.
    pub pending_cost: Option<String>,
    /// What the stored bytes cost at today's price.
    pub stored_cost: Option<String>,
    /// Forgets interrupted and not yet finished.
    pub unfinished_forgets: usize,
    /// Whether this machine keeps the master key in the OS keyring.
    pub remembered: bool,
    /// Whether the app pushes in the background.
    pub auto_push: bool,
    /// Set when the backend could not be asked (offline).
    pub offline: Option<String>,
}

/// Something a restore could not do; the rest went on.
#[derive(Debug, Clone, Serialize)]
pub struct Problem {
    /// The object (or batch) concerned.
    pub object: String,
    /// Its sequence number.
    pub seq: u64,
    /// What went wrong.
    pub message: String,
}

/// How to restore.
pub struct RestoreOptions {
    /// The vault file.
    pub vault: PathBuf,
    /// The folder to restore into (its `.zblade/` must not exist).
    pub into: PathBuf,
    /// The passphrase.
    pub passphrase: String,
    /// Another gateway than the vault's.
    pub gateway: Option<String>,
    /// The wallet, to keep pushing from the restored project.
    pub wallet: Option<PathBuf>,
    /// Start from the newest snapshot and replay only newer batches.
    pub use_snapshot: bool,
    /// How hard to try the backend.
    pub retry: Retry,
}

/// What a restore did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RestoreReport {
    /// Files written.
    pub files: usize,
    /// Batches replayed.
    pub batches: usize,
    /// The snapshot started from.
    pub snapshot: Option<u64>,
    /// Objects whose keys were destroyed on purpose (forgotten).
    pub forgotten: usize,
    /// What could not be restored.
    pub problems: Vec<Problem>,
    /// Sealed bytes fetched.
    pub bytes: u64,
    /// Milliseconds spent fetching and decrypting.
    pub fetch_ms: u64,
    /// Milliseconds in all.
    pub elapsed_ms: u64,
}

/// What a forget did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ForgetReport {
    /// Batches whose keys were destroyed.
    pub destroyed_batches: usize,
    /// Files of those batches archived again under new keys.
    pub rearchived: usize,
    /// The tombstone's sequence number.
    pub tombstone: Option<u64>,
}

/// An item given to or received from another user.
#[derive(Debug, Clone)]
pub struct SharedItem {
    /// `conversations/<id>.json` or `moments/<id>.json`.
    pub name: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// A sealed part ready for the backend.
struct SealedPart {
    object: String,
    envelope: Envelope,
    sealed: Vec<u8>,
    key: Key,
}

impl Archive {
    /// Sets up a project's archive: a new vault (refused if one is already where it would
    /// go) and `.zblade/archive/config.json`. For Arweave the wallet gives the owner address.
    pub fn setup(
        zblade_dir: &Path,
        mut spec: BackendSpec,
        vault_path: Option<PathBuf>,
        wallet: Option<PathBuf>,
        passphrase: &str,
        retry: Retry,
    ) -> Result<Archive> {
        if let Some(existing) = Config::load(zblade_dir)? {
            return Err(Error::Usage(format!(
                "this project already has archive {} (vault {}); `zblade archive status` shows it",
                existing.archive,
                existing.vault.display()
            )));
        }
        if let BackendSpec::Arweave { owner, .. } = &mut spec {
            let path = wallet
                .as_ref()
                .ok_or_else(|| Error::Usage("an Arweave archive needs --wallet FILE (a JWK wallet)".into()))?;
            *owner = crate::Wallet::load(path)?.address();
        }
        let (vault, master) = Vault::create(spec.clone(), passphrase)?;
        let vault_path = vault_path.unwrap_or_else(|| crate::default_vault_path(&spec, &vault.archive));
        if vault_path.exists() {
            return Err(Error::Usage(format!(
                "{} already holds an archive vault; choose another --vault (or restore from it with `zblade archive restore`)",
                vault_path.display()
            )));
        }
        let backend = crate::open_backend(&spec, wallet.as_deref(), None, retry)?;
        vault.save(&vault_path)?;
        let config = Config {
            archive: vault.archive.clone(),
            vault: absolute(&vault_path),
            wallet: wallet.map(|w| absolute(&w)),
            remembered: false,
            auto_push: false,
        };
        let lock = lock(zblade_dir)?;
        config.save(zblade_dir)?;
        let journal = Journal::open(&zblade_dir.join(STATE_DIR).join("journal.db"))?;
        Ok(Archive {
            zblade_dir: zblade_dir.to_path_buf(),
            config,
            vault,
            master,
            backend,
            journal,
            _lock: lock,
        })
    }

    /// Opens a project's archive with the passphrase; a wrong one is a clear error.
    pub fn open(zblade_dir: &Path, passphrase: &str, retry: Retry) -> Result<Archive> {
        let (config, vault) = load_config_and_vault(zblade_dir)?;
        let master = vault.unlock(passphrase)?;
        Archive::open_parts(zblade_dir, config, vault, master, retry)
    }

    /// Opens a project's archive with the master key this machine remembers in the OS
    /// keyring ([`crate::keychain`]); `Ok(None)` when it remembers none.
    pub fn open_remembered(zblade_dir: &Path, retry: Retry) -> Result<Option<Archive>> {
        let (config, vault) = load_config_and_vault(zblade_dir)?;
        if !config.remembered {
            return Ok(None);
        }
        let Some(master) = crate::keychain::recall(&config.archive)? else {
            return Ok(None);
        };
        Archive::open_checked(zblade_dir, config, vault, master, retry).map(Some)
    }

    /// Opens a project's archive with a master key kept elsewhere than in the passphrase (the
    /// OS keyring). A key that does not open the vault (stale, or planted by another program)
    /// is refused.
    pub fn open_with_master(zblade_dir: &Path, master: Key, retry: Retry) -> Result<Archive> {
        let (config, vault) = load_config_and_vault(zblade_dir)?;
        Archive::open_checked(zblade_dir, config, vault, master, retry)
    }

    fn open_checked(zblade_dir: &Path, config: Config, vault: Vault, master: Key, retry: Retry) -> Result<Archive> {
        vault.check_master(&master).map_err(|_| {
            Error::Untrusted(format!(
                "the keyring's key for archive {} does not open its vault; `zblade archive remember` stores the right one",
                config.archive
            ))
        })?;
        Archive::open_parts(zblade_dir, config, vault, master, retry)
    }

    fn open_parts(zblade_dir: &Path, config: Config, vault: Vault, master: Key, retry: Retry) -> Result<Archive> {
        let lock = lock(zblade_dir)?;
        let backend = crate::open_backend(&vault.backend, config.wallet.as_deref(), None, retry)?;
        let journal = Journal::open(&zblade_dir.join(STATE_DIR).join("journal.db"))?;
        Ok(Archive {
            zblade_dir: zblade_dir.to_path_buf(),
            config,
            vault,
            master,
            backend,
            journal,
            _lock: lock,
        })
    }

    /// Keeps the master key in the OS keyring, so that pushes need no passphrase on this
    /// machine; `push_in_background` lets the app push on its own.
    pub fn remember(&mut self, push_in_background: bool) -> Result<()> {
        crate::keychain::remember(&self.vault.archive, &self.master)?;
        self.config.remembered = true;
        self.config.auto_push = push_in_background;
        self.config.save(&self.zblade_dir)
    }

    /// Removes the master key from the OS keyring and stops background pushes; the
    /// passphrase is needed again. Needs no passphrase itself.
    pub fn unremember(zblade_dir: &Path) -> Result<()> {
        let (mut config, _) = load_config_and_vault(zblade_dir)?;
        crate::keychain::forget(&config.archive)?;
        config.remembered = false;
        config.auto_push = false;
        config.save(zblade_dir)
    }

    /// The archive's settings.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The archive's id.
    pub fn id(&self) -> &str {
        &self.vault.archive
    }

    /// Archives what changed since the last push; first sends what an interrupted push left.
    /// (Interrupted forgets are finished by [`Archive::finish_forgets`], after the engine has
    /// removed what they forget.)
    pub fn push(&mut self, options: &PushOptions, progress: Progress) -> Result<PushReport> {
        let started = Instant::now();
        let mut report = PushReport {
            resumed: self.resume_parts()?,
            ..PushReport::default()
        };
        self.push_changes(&mut report, progress)?;
        if options.snapshot {
            report.snapshot = Some(self.snapshot(&mut report, progress)?);
        }
        report.elapsed_ms = started.elapsed().as_millis() as u64;
        Ok(report)
    }

    /// Sends parts journaled but not known to be sent. The same prepared bytes go again, so
    /// a transaction that did reach the gateway is not made twice.
    fn resume_parts(&mut self) -> Result<usize> {
        let pending = self.journal.pending_parts()?;
        for part in &pending {
            // Killed between the journal and the vault: the key was never kept, so the part
            // was never sent; its batch is forgotten and its files count as changed again.
            if !self.vault.keys.contains_key(&part.object) {
                self.journal.drop_unsent_batch_of(&part.object)?;
                continue;
            }
            // Already there (the kill came after the backend took it, before the journal
            // knew): nothing to send.
            if self.backend.confirmations(&part.locator)?.is_some() {
                self.journal.mark_submitted(&part.object)?;
                continue;
            }
            self.send_part(
                &part.object,
                &crate::backend::Prepared {
                    locator: part.locator.clone(),
                    payload: part.payload.clone(),
                },
            )?;
        }
        Ok(pending.len())
    }

    /// Sends a journaled part and marks it sent. One the backend calls expired (a push
    /// resumed long after it was prepared) is prepared again and journaled in its place
    /// before it is sent; the expired one can no longer land, so nothing is stored twice.
    fn send_part(&mut self, object: &str, prepared: &crate::backend::Prepared) -> Result<()> {
        if let Some(fresh) = self.backend.resend(prepared)? {
            self.journal.replace_part(object, &fresh)?;
            self.backend.submit(&fresh)?;
        }
        self.journal.mark_submitted(object)
    }

    fn changes(&self) -> Result<Vec<(String, Option<Vec<u8>>)>> {
        changes(&self.zblade_dir, &self.journal)
    }

    fn push_changes(&mut self, report: &mut PushReport, progress: Progress) -> Result<()> {
        let changes = self.changes()?;
        let total = changes.len();
        let mut batch: Vec<(Item, Vec<u8>)> = Vec::new();
        let mut batch_bytes = 0usize;
        let mut done = 0;
        progress("push", 0, total);
        for (path, bytes) in changes {
            let (item, body) = match bytes {
                Some(bytes) => (
                    Item {
                        path,
                        sha256: format::sha256_hex(&bytes),
                        len: bytes.len() as u64,
                        deleted: false,
                    },
                    bytes,
                ),
                None => (
                    Item {
                        path,
                        sha256: String::new(),
                        len: 0,
                        deleted: true,
                    },
                    Vec::new(),
                ),
            };
            // Big files travel alone (seed 5.2); a batch closes at 50 items or 4 MiB.
            let alone = item.len > ALONE_OVER;
            if !batch.is_empty() && (alone || batch.len() >= ITEMS_PER_BATCH || batch_bytes + body.len() > BATCH_BYTES)
            {
                done += batch.len();
                self.flush(std::mem::take(&mut batch), report)?;
                batch_bytes = 0;
                progress("push", done, total);
            }
            batch_bytes += body.len();
            batch.push((item, body));
            if alone {
                done += 1;
                self.flush(std::mem::take(&mut batch), report)?;
                batch_bytes = 0;
                progress("push", done, total);
            }
        }
        if !batch.is_empty() {
            done += batch.len();
            self.flush(batch, report)?;
            progress("push", done, total);
        }
        Ok(())
    }

    fn flush(&mut self, batch: Vec<(Item, Vec<u8>)>, report: &mut PushReport) -> Result<()> {
        let (items, bodies): (Vec<Item>, Vec<Vec<u8>>) = batch.into_iter().unzip();
        report.files += items.iter().filter(|i| !i.deleted).count();
        report.deleted += items.iter().filter(|i| i.deleted).count();
        let header = Header {
            items,
            created_ms: now_ms(),
            ..Header::default()
        };
        let (_, parts, bytes) = self.write_batch(Kind::Batch, header, &bodies)?;
        report.batches += 1;
        report.objects += parts;
        report.bytes += bytes;
        Ok(())
    }

    /// Seals and sends one batch: keys into the vault first, then the journal, then the
    /// backend. Returns the batch row, its part count and the sealed bytes.
    fn write_batch(&mut self, kind: Kind, header: Header, bodies: &[Vec<u8>]) -> Result<(BatchRow, usize, u64)> {
        let seq = self.journal.next_seq()?;
        let batch_id = crypto::random_id();
        let refs: Vec<&[u8]> = bodies.iter().map(Vec::as_slice).collect();
        let plain = format::encode(&header, &refs);
        let slices: Vec<&[u8]> = plain.chunks(PART_BYTES).collect();
        let mut sealed_parts = Vec::with_capacity(slices.len());
        for (i, slice) in slices.iter().enumerate() {
            let object = crypto::random_id();
            let key = Key::generate();
            let envelope = Envelope {
                archive: self.vault.archive.clone(),
                object: object.clone(),
                kind,
                seq,
            };
            let part = format::encode_part(
                &PartHeader {
                    batch: batch_id.clone(),
                    part: i as u32,
                    parts: slices.len() as u32,
                },
                slice,
            );
            let sealed = format::seal(&key, &envelope, &part);
            sealed_parts.push(SealedPart {
                object,
                envelope,
                sealed,
                key,
            });
        }
        let mut prepared = Vec::with_capacity(sealed_parts.len());
        for part in &sealed_parts {
            prepared.push((
                part.object.clone(),
                self.backend.prepare(&part.envelope, &part.sealed, None)?,
            ));
        }
        let row = BatchRow {
            id: batch_id,
            seq,
            kind,
            parts: sealed_parts.iter().map(|p| p.object.clone()).collect(),
        };
        let bytes: u64 = sealed_parts.iter().map(|p| p.sealed.len() as u64).sum();
        // Journal first, then the keys, then the backend: the vault never holds a key the
        // journal does not know (no orphan a restore would call missing), and nothing is sent
        // before its key is safe (a resume drops a journaled part whose key never was).
        self.journal
            .record_batch(&row, &header.items, &prepared, bytes, header.created_ms, false)?;
        for part in &sealed_parts {
            self.vault.add_key(&self.master, &part.object, &part.key);
        }
        self.vault.save(&self.config.vault)?;
        for (object, p) in &prepared {
            self.send_part(object, p)?;
        }
        Ok((row, prepared.len(), bytes))
    }

    /// Archives every file, and the vector files, as of the last batch.
    fn snapshot(&mut self, report: &mut PushReport, progress: Progress) -> Result<u64> {
        let as_of = self.journal.next_seq()?.saturating_sub(1);
        let mut files: Vec<(String, Vec<u8>)> = Vec::new();
        for (path, full) in truth_files(&self.zblade_dir)? {
            files.push((path, std::fs::read(&full).map_err(|e| Error::io(&full, e))?));
        }
        files.extend(index_files(&self.zblade_dir)?);
        progress("snapshot", 0, files.len());
        let items = files
            .iter()
            .map(|(path, bytes)| Item {
                path: path.clone(),
                sha256: format::sha256_hex(bytes),
                len: bytes.len() as u64,
                deleted: false,
            })
            .collect();
        let header = Header {
            items,
            created_ms: now_ms(),
            as_of_seq: Some(as_of),
            ..Header::default()
        };
        let bodies: Vec<Vec<u8>> = files.into_iter().map(|(_, b)| b).collect();
        let count = bodies.len();
        let (row, parts, bytes) = self.write_batch(Kind::Snapshot, header, &bodies)?;
        report.objects += parts;
        report.bytes += bytes;
        progress("snapshot", count, count);
        Ok(row.seq)
    }

    /// Where the archive stands, without the passphrase; `refresh` asks the backend about
    /// unconfirmed objects and prices (the network).
    pub fn status(zblade_dir: &Path, refresh: bool, retry: Retry) -> Result<ArchiveStatus> {
        let (config, vault) = load_config_and_vault(zblade_dir)?;
        let journal = Journal::open(&zblade_dir.join(STATE_DIR).join("journal.db"))?;
        let backend = crate::open_backend(&vault.backend, None, None, retry)?;
        let mut offline = None;
        if refresh {
            for (object, locator) in journal.unconfirmed()? {
                match backend.confirmations(&locator) {
                    Ok(Some(n)) if n > 0 => journal.mark_confirmed(&object)?,
                    Ok(_) => {}
                    Err(e) => {
                        offline = Some(e.to_string());
                        break;
                    }
                }
            }
        }
        let pending = changes(zblade_dir, &journal)?;
        let pending_files = pending.len();
        let pending_bytes = pending
            .iter()
            .filter_map(|(_, b)| b.as_ref())
            .map(|b| b.len() as u64)
            .sum();
        let counts = journal.part_counts()?;
        let count = |state: &str| counts.iter().find(|c| c.0 == state).map_or((0, 0), |c| (c.1, c.2));
        let stored_bytes = count("submitted").1 + count("confirmed").1;
        let (mut pending_cost, mut stored_cost) = (None, None);
        if refresh && offline.is_none() {
            match (backend.price(pending_bytes), backend.price(stored_bytes)) {
                (Ok(p), Ok(s)) => (pending_cost, stored_cost) = (p, s),
                (Err(e), _) | (_, Err(e)) => offline = Some(e.to_string()),
            }
        }
        Ok(ArchiveStatus {
            archive: vault.archive.clone(),
            backend: backend.describe(),
            vault: config.vault.clone(),
            share_key: vault.share_public.clone(),
            pending_files,
            unsent: count("prepared").0,
            submitted: count("submitted").0,
            confirmed: count("confirmed").0,
            stored_bytes,
            pending_bytes,
            pending_cost,
            stored_cost,
            unfinished_forgets: journal.unfinished_forgets()?.len(),
            remembered: config.remembered,
            auto_push: config.auto_push,
            offline,
        })
    }

    /// Forgets files for good: [`Archive::begin_forget`] then [`Archive::finish_forgets`].
    /// The files must already be gone from `.zblade/`.
    pub fn forget(&mut self, paths: &[String], progress: Progress) -> Result<ForgetReport> {
        let local = truth_files(&self.zblade_dir)?;
        if let Some(path) = paths.iter().find(|p| local.contains_key(*p)) {
            return Err(Error::Usage(format!(
                ".zblade/{path} still exists; it must be removed before its archived copies are forgotten"
            )));
        }
        self.begin_forget(paths)?;
        self.finish_forgets(progress)
    }

    /// Records that `paths` are to be forgotten, before anything is removed: an interrupted
    /// forget is found again and finished.
    pub fn begin_forget(&mut self, paths: &[String]) -> Result<()> {
        self.journal.begin_forget(&ForgetRow {
            id: crypto::random_id(),
            paths: paths.to_vec(),
            batches: Vec::new(),
            tombstone: None,
        })
    }

    /// Forgets recorded and not finished (the engine removes their conversations before
    /// [`Archive::finish_forgets`]).
    pub fn unfinished_forgets(&self) -> Result<Vec<ForgetRow>> {
        self.journal.unfinished_forgets()
    }

    /// Finishes every recorded forget: the other files of every batch holding a forgotten
    /// one are archived again under new keys, a tombstone is archived, then the batches'
    /// keys are destroyed (every snapshot's too: they held the files). A recorded path still
    /// present in `.zblade/` (a message pack another conversation still uses) is kept.
    pub fn finish_forgets(&mut self, progress: Progress) -> Result<ForgetReport> {
        self.resume_parts()?;
        let mut total = ForgetReport::default();
        for row in self.journal.unfinished_forgets()? {
            let report = self.finish_forget(&row, progress)?;
            total.destroyed_batches += report.destroyed_batches;
            total.rearchived += report.rearchived;
            total.tombstone = report.tombstone.or(total.tombstone);
        }
        Ok(total)
    }

    fn finish_forget(&mut self, row: &ForgetRow, progress: Progress) -> Result<ForgetReport> {
        // Which batches: decided once (the first try), kept in the journal for a resume.
        let batch_ids = if row.batches.is_empty() {
            let local = truth_files(&self.zblade_dir)?;
            let gone: Vec<String> = row.paths.iter().filter(|p| !local.contains_key(*p)).cloned().collect();
            let ids: Vec<String> = if gone.is_empty() {
                Vec::new()
            } else {
                self.journal
                    .batches_touching(&gone)?
                    .into_iter()
                    .map(|b| b.id)
                    .collect()
            };
            self.journal.set_forget_batches(&row.id, &ids)?;
            ids
        } else {
            row.batches.clone()
        };
        let batches: Vec<BatchRow> = batch_ids
            .iter()
            .filter_map(|id| self.journal.batch(id).transpose())
            .collect::<Result<_>>()?;
        // 1. What else those batches held is archived again, under new keys.
        self.journal.drop_items_of(&batch_ids)?;
        let mut pushed = PushReport::default();
        self.push_changes(&mut pushed, progress)?;
        // 2. A tombstone says which objects are gone on purpose (a restore then says
        //    "forgotten", not "missing key").
        let mut tombstone = None;
        if row.tombstone.is_none() && !batches.is_empty() {
            let header = Header {
                created_ms: now_ms(),
                destroyed: batches.iter().flat_map(|b| b.parts.clone()).collect(),
                ..Header::default()
            };
            let (written, _, _) = self.write_batch(Kind::Tombstone, header, &[])?;
            self.journal.set_forget_tombstone(&row.id, &written.id)?;
            tombstone = Some(written.seq);
        }
        // 3. The keys go.
        for batch in &batches {
            for part in &batch.parts {
                self.vault.keys.remove(part);
            }
        }
        self.vault.save(&self.config.vault)?;
        self.journal.finish_forget(&row.id, &batch_ids)?;
        Ok(ForgetReport {
            destroyed_batches: batches.len(),
            rearchived: pushed.files,
            tombstone,
        })
    }

    /// Shares items with another user: they are archived as a batch of their own under a
    /// fresh key, and a grant holding that key, sealed to the recipient's share key, is
    /// published where the recipient's `archive accept` finds it.
    pub fn share(&mut self, items: Vec<SharedItem>, to: &str) -> Result<(String, usize)> {
        let recipient = crypto::parse_public(to)?;
        for item in &items {
            check_share_name(&item.name)?;
        }
        let count = items.len();
        let header = Header {
            items: items
                .iter()
                .map(|i| Item {
                    path: i.name.clone(),
                    sha256: format::sha256_hex(&i.bytes),
                    len: i.bytes.len() as u64,
                    deleted: false,
                })
                .collect(),
            created_ms: now_ms(),
            ..Header::default()
        };
        let bodies: Vec<Vec<u8>> = items.into_iter().map(|i| i.bytes).collect();
        let (row, _, _) = self.write_batch(Kind::Share, header, &bodies)?;
        let mut parts = Vec::new();
        for object in &row.parts {
            let key = self
                .vault
                .key(&self.master, object)?
                .ok_or_else(|| Error::Usage(format!("the key of shared object {object} is missing")))?;
            let locator = self.locator_of(object)?;
            parts.push(GrantPart {
                object: object.clone(),
                seq: row.seq,
                locator,
                key: hex::encode(key.bytes()),
            });
        }
        let body = GrantBody {
            archive: self.vault.archive.clone(),
            parts,
            from: self.vault.share_public.clone(),
        };
        let sealed = crypto::seal_grant(&recipient, &serde_json::to_vec(&body).expect("json"))?;
        let envelope = Envelope {
            archive: self.vault.archive.clone(),
            object: crypto::random_id(),
            kind: Kind::Grant,
            seq: 0,
        };
        let prepared = self
            .backend
            .prepare(&envelope, &sealed, Some(&crypto::fingerprint(&recipient)))?;
        self.backend.submit(&prepared)?;
        Ok((prepared.locator, count))
    }

    fn locator_of(&self, object: &str) -> Result<String> {
        self.journal
            .locator(object)?
            .ok_or_else(|| Error::Usage(format!("object {object} is not in the journal")))
    }

    /// Receives what others shared with this archive's share key, from `from` (another
    /// backend) or this archive's own. Grants already accepted are skipped.
    pub fn accept(&mut self, from: Option<&dyn Backend>) -> Result<Vec<(String, Vec<SharedItem>)>> {
        let backend = from.unwrap_or(self.backend.as_ref());
        let identity = self.vault.share_identity(&self.master)?;
        let public = crypto::parse_public(&identity.public_text())?;
        let mut out = Vec::new();
        for grant in backend.list_grants(&crypto::fingerprint(&public))? {
            if self.journal.accepted(&grant.envelope.object)? {
                continue;
            }
            let sealed = backend.fetch(&grant.locator)?;
            // Grants to this fingerprint may be anyone's, and anyone can publish: one that
            // does not open for this key is not for us.
            let Some(plain) = identity.open_grant(&sealed) else {
                continue;
            };
            let body: GrantBody = serde_json::from_slice(&plain)
                .map_err(|e| Error::Untrusted(format!("grant {}: {e}", grant.locator)))?;
            let mut slices = Vec::new();
            for part in &body.parts {
                let key = Key::from_bytes(&hex::decode(&part.key).unwrap_or_default())?;
                let envelope = Envelope {
                    archive: body.archive.clone(),
                    object: part.object.clone(),
                    kind: Kind::Share,
                    seq: part.seq,
                };
                let bytes = backend.fetch(&part.locator)?;
                let plain = format::open(&key, &envelope, &bytes)
                    .ok_or_else(|| Error::Untrusted(format!("shared object {} does not open", part.object)))?;
                slices.push(format::decode_part(&plain, &part.object)?);
            }
            let plain = join_parts(slices, &grant.locator)?;
            let contents = format::decode(&plain, &grant.locator)?;
            let mut items = Vec::new();
            for (item, bytes) in contents.header.items.iter().zip(contents.bodies) {
                check_share_name(&item.path)?;
                items.push(SharedItem {
                    name: item.path.clone(),
                    bytes,
                });
            }
            self.journal.mark_accepted(&grant.envelope.object)?;
            out.push((body.from, items));
        }
        Ok(out)
    }
}

/// Takes `.zblade/archive/lock` for as long as the returned file lives (the OS releases it
/// when the process dies, so a killed push never leaves it held).
fn lock(zblade_dir: &Path) -> Result<std::fs::File> {
    let dir = zblade_dir.join(STATE_DIR);
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let path = dir.join("lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| Error::io(&path, e))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(Error::Usage(
            "another archive command is running on this project (a push, forget or share, maybe the app's background push); try again when it ends".into(),
        )),
        Err(std::fs::TryLockError::Error(e)) => Err(Error::io(&path, e)),
    }
}

fn load_config_and_vault(zblade_dir: &Path) -> Result<(Config, Vault)> {
    let config = Config::load(zblade_dir)?
        .ok_or_else(|| Error::NotInitialized("this project has no archive; `zblade archive setup` makes one".into()))?;
    let vault = Vault::load(&config.vault)?;
    if vault.archive != config.archive {
        return Err(Error::Usage(format!(
            "{} is the vault of archive {}, not of this project's archive {}",
            config.vault.display(),
            vault.archive,
            config.archive
        )));
    }
    Ok((config, vault))
}

/// Files whose archived version differs from the one on disk: (path, Some(bytes)) to
/// archive, (path, None) for deletions; sorted by path.
fn changes(zblade_dir: &Path, journal: &Journal) -> Result<Vec<(String, Option<Vec<u8>>)>> {
    let archived = journal.current()?;
    let mut out = Vec::new();
    let local = truth_files(zblade_dir)?;
    for (path, full) in &local {
        let bytes = std::fs::read(full).map_err(|e| Error::io(full, e))?;
        if archived.get(path).and_then(|s| s.as_deref()) != Some(format::sha256_hex(&bytes).as_str()) {
            out.push((path.clone(), Some(bytes)));
        }
    }
    for (path, state) in archived {
        if state.is_some() && !local.contains_key(&path) {
            out.push((path, None));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Restores a project's `.zblade/` from its archive: from nothing but the vault, the backend
/// and the passphrase. Files only; the caller rebuilds the index.
pub fn restore(options: &RestoreOptions, progress: Progress) -> Result<RestoreReport> {
    let started = Instant::now();
    let target = options.into.join(".zblade");
    if target.exists() {
        return Err(Error::Usage(format!(
            "{} already exists; restore into an empty folder",
            target.display()
        )));
    }
    let vault = Vault::load(&options.vault)?;
    let master = vault.unlock(&options.passphrase)?;
    let backend = crate::open_backend(
        &vault.backend,
        options.wallet.as_deref(),
        options.gateway.as_deref(),
        options.retry.clone(),
    )?;
    let listed = backend.list(&vault.archive)?;
    let mut report = RestoreReport::default();

    // Objects grouped by batch (one sequence number each).
    let mut by_seq: BTreeMap<u64, Vec<&Listed>> = BTreeMap::new();
    for object in &listed {
        by_seq.entry(object.envelope.seq).or_default().push(object);
    }
    let listed_ids: HashSet<&str> = listed.iter().map(|l| l.envelope.object.as_str()).collect();

    // Tombstones first: which keys were destroyed on purpose.
    let mut destroyed: HashSet<String> = HashSet::new();
    for objects in by_seq.values() {
        if objects[0].envelope.kind != Kind::Tombstone {
            continue;
        }
        if let Ok(Some((contents, _))) = read_batch(backend.as_ref(), &vault, &master, objects, &mut report) {
            destroyed.extend(contents.header.destroyed);
        }
    }

    let staging = options.into.join(".zblade.restoring");
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(|e| Error::io(&staging, e))?;
    }
    std::fs::create_dir_all(&staging).map_err(|e| Error::io(&staging, e))?;
    let mut applied: Vec<Applied> = Vec::new();

    // The newest snapshot that opens whole, when asked.
    let mut start_after = 0;
    if options.use_snapshot {
        let snapshots: Vec<&Vec<&Listed>> = by_seq
            .values()
            .filter(|o| o[0].envelope.kind == Kind::Snapshot)
            .collect();
        for objects in snapshots.into_iter().rev() {
            if objects.iter().any(|o| !vault.keys.contains_key(&o.envelope.object)) {
                continue;
            }
            if let Ok(Some((contents, _))) = read_batch(backend.as_ref(), &vault, &master, objects, &mut report) {
                for (item, bytes) in contents.header.items.iter().zip(&contents.bodies) {
                    format::check_path(&item.path, true)?;
                    write_file(&staging, &item.path, bytes)?;
                }
                start_after = contents.header.as_of_seq.unwrap_or(0);
                report.snapshot = Some(objects[0].envelope.seq);
                break;
            }
        }
    }

    let batches: Vec<(&u64, &Vec<&Listed>)> = by_seq
        .iter()
        .filter(|(seq, o)| o[0].envelope.kind == Kind::Batch && **seq > start_after)
        .collect();
    let total = batches.len();
    for (done, (seq, objects)) in batches.into_iter().enumerate() {
        progress("restore", done, total);
        let keyless: Vec<&&Listed> = objects
            .iter()
            .filter(|o| !vault.keys.contains_key(&o.envelope.object))
            .collect();
        if !keyless.is_empty() {
            if keyless.iter().all(|o| destroyed.contains(&o.envelope.object)) {
                report.forgotten += 1;
            } else {
                report.problems.push(Problem {
                    object: keyless[0].envelope.object.clone(),
                    seq: *seq,
                    message: "no key in the vault for this batch (not a forgotten one): it cannot be read".into(),
                });
            }
            continue;
        }
        let Some((contents, batch_id)) = read_batch(backend.as_ref(), &vault, &master, objects, &mut report)? else {
            continue;
        };
        let mut ok = true;
        for item in &contents.header.items {
            if let Err(e) = format::check_path(&item.path, false) {
                report.problems.push(Problem {
                    object: objects[0].envelope.object.clone(),
                    seq: *seq,
                    message: e.to_string(),
                });
                ok = false;
            }
        }
        if !ok {
            continue;
        }
        for (item, bytes) in contents.header.items.iter().zip(&contents.bodies) {
            if item.deleted {
                let path = staging.join(&item.path);
                if path.exists() {
                    std::fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
                }
            } else {
                write_file(&staging, &item.path, bytes)?;
            }
        }
        report.batches += 1;
        let prepared = sent_parts(objects);
        applied.push((
            BatchRow {
                id: batch_id,
                seq: *seq,
                kind: Kind::Batch,
                parts: objects.iter().map(|o| o.envelope.object.clone()).collect(),
            },
            contents.header.items,
            prepared,
        ));
    }
    progress("restore", total, total);
    report.fetch_ms = started.elapsed().as_millis() as u64;

    // Keys the vault holds whose objects the backend does not list: missing.
    for object in vault.keys.keys() {
        if !listed_ids.contains(object.as_str()) {
            report.problems.push(Problem {
                object: object.clone(),
                seq: 0,
                message: format!(
                    "in the vault but not on {} (missing, or not yet visible)",
                    backend.describe()
                ),
            });
        }
    }

    report.files = count_files(&staging)?;
    std::fs::rename(&staging, &target).map_err(|e| Error::io(&target, e))?;
    // The restored project keeps pushing to the same archive, incrementally.
    let config = Config {
        archive: vault.archive.clone(),
        vault: absolute(&options.vault),
        wallet: options.wallet.as_ref().map(|w| absolute(w)),
        remembered: false,
        auto_push: false,
    };
    config.save(&target)?;
    let mut journal = Journal::open(&target.join(STATE_DIR).join("journal.db"))?;
    for (row, items, prepared) in &applied {
        journal.record_batch(row, items, prepared, 0, 0, true)?;
    }
    // Snapshots hold every file: a later forget must destroy their keys too, so the
    // restored journal knows them (as batches without items).
    for objects in by_seq.values() {
        let first = &objects[0].envelope;
        if first.kind != Kind::Snapshot || objects.iter().any(|o| !vault.keys.contains_key(&o.envelope.object)) {
            continue;
        }
        let row = BatchRow {
            id: format!("snapshot-{}", first.object),
            seq: first.seq,
            kind: Kind::Snapshot,
            parts: objects.iter().map(|o| o.envelope.object.clone()).collect(),
        };
        let prepared = sent_parts(objects);
        journal.record_batch(&row, &[], &prepared, 0, 0, true)?;
    }
    if let Some(max) = by_seq.keys().next_back() {
        journal.reserve_seq_above(*max)?;
    }
    report.elapsed_ms = started.elapsed().as_millis() as u64;
    Ok(report)
}

/// A batch a restore replayed, for the restored journal: its row, items and parts.
type Applied = (BatchRow, Vec<Item>, Vec<(String, crate::backend::Prepared)>);

/// Listed objects as the journal records sent parts: id and locator, no payload.
fn sent_parts(objects: &[&Listed]) -> Vec<(String, crate::backend::Prepared)> {
    objects
        .iter()
        .map(|o| {
            (
                o.envelope.object.clone(),
                crate::backend::Prepared {
                    locator: o.locator.clone(),
                    payload: Vec::new(),
                },
            )
        })
        .collect()
}

/// Fetches, decrypts and joins a batch's parts. A part that cannot be fetched or opened is a
/// problem named in the report (and `Ok(None)`), not an error: the rest restores.
fn read_batch(
    backend: &dyn Backend,
    vault: &Vault,
    master: &Key,
    objects: &[&Listed],
    report: &mut RestoreReport,
) -> Result<Option<(format::Contents, String)>> {
    match open_batch(backend, vault, master, objects, &mut report.bytes)? {
        Ok(opened) => Ok(Some(opened)),
        Err((object, message)) => {
            report.problems.push(Problem {
                object,
                seq: objects[0].envelope.seq,
                message,
            });
            Ok(None)
        }
    }
}

/// [`read_batch`]'s work: the batch, or the object at fault and why. Only a vault that
/// cannot be read is an error.
#[allow(clippy::type_complexity)]
fn open_batch(
    backend: &dyn Backend,
    vault: &Vault,
    master: &Key,
    objects: &[&Listed],
    fetched: &mut u64,
) -> Result<std::result::Result<(format::Contents, String), (String, String)>> {
    let mut slices = Vec::new();
    for object in objects {
        let id = &object.envelope.object;
        let fault = |message: String| Ok(Err((id.clone(), message)));
        let Some(key) = vault.key(master, id)? else {
            return fault("no key in the vault".into());
        };
        let sealed = match backend.fetch(&object.locator) {
            Ok(sealed) => sealed,
            Err(e) => return fault(format!("could not be fetched from {}: {e}", object.locator)),
        };
        *fetched += sealed.len() as u64;
        let Some(plain) = format::open(&key, &object.envelope, &sealed) else {
            return fault(format!(
                "{} ({}) does not decrypt: damaged or changed",
                object.locator,
                object.envelope.kind.as_str()
            ));
        };
        match format::decode_part(&plain, id) {
            Ok(slice) => slices.push(slice),
            Err(e) => return fault(e.to_string()),
        }
    }
    let first = &objects[0].envelope;
    let batch_id = slices[0].0.batch.clone();
    let decoded =
        join_parts(slices, &first.object).and_then(|plain| format::decode(&plain, &format!("batch {}", first.seq)));
    Ok(decoded
        .map(|contents| (contents, batch_id))
        .map_err(|e| (first.object.clone(), e.to_string())))
}

/// Puts a batch's parts back together: one batch, every part once, in order.
fn join_parts(mut slices: Vec<(PartHeader, Vec<u8>)>, what: &str) -> Result<Vec<u8>> {
    slices.sort_by_key(|(h, _)| h.part);
    let parts = slices.first().map_or(0, |(h, _)| h.parts);
    let whole = slices.len() as u32 == parts
        && slices
            .iter()
            .enumerate()
            .all(|(i, (h, _))| h.part == i as u32 && h.parts == parts && h.batch == slices[0].0.batch);
    if !whole {
        return Err(Error::Untrusted(format!(
            "{what}: {} of {parts} parts, or parts of different batches",
            slices.len()
        )));
    }
    Ok(slices.into_iter().flat_map(|(_, s)| s).collect())
}

fn write_file(root: &Path, relative: &str, bytes: &[u8]) -> Result<()> {
    let path = root.join(relative);
    let dir = path.parent().expect("a relative path under root");
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    std::fs::write(&path, bytes).map_err(|e| Error::io(&path, e))
}

fn count_files(dir: &Path) -> Result<usize> {
    let mut n = 0;
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        if entry.file_type().map_err(|e| Error::io(dir, e))?.is_dir() {
            n += count_files(&entry.path())?;
        } else {
            n += 1;
        }
    }
    Ok(n)
}

/// Share item names: `conversations/<id>.json` or `moments/<id>.json`, ids by the local rules.
fn check_share_name(name: &str) -> Result<()> {
    let ok = name
        .split_once('/')
        .filter(|(dir, _)| matches!(*dir, "conversations" | "moments"))
        .and_then(|(_, file)| file.strip_suffix(".json"))
        .is_some_and(|id| {
            !id.is_empty() && id.len() <= 128 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        });
    if ok {
        Ok(())
    } else {
        Err(Error::Untrusted(format!("shared item name {name:?} refused")))
    }
}

/// The files that are a project's truth: `instructions.md`, `config/settings.json` and
/// everything under `artifacts/` (temporary files of interrupted writes left out), by
/// path relative to `.zblade/`.
pub fn truth_files(zblade_dir: &Path) -> Result<BTreeMap<String, PathBuf>> {
    let mut out = BTreeMap::new();
    for single in ["instructions.md", "config/settings.json"] {
        let path = zblade_dir.join(single);
        if path.is_file() {
            out.insert(single.to_string(), path);
        }
    }
    walk(&zblade_dir.join("artifacts"), "artifacts", &mut out)?;
    Ok(out)
}

fn walk(dir: &Path, relative: &str, out: &mut BTreeMap<String, PathBuf>) -> Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(dir, e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.contains(zblade_core::fsio::TEMP_MARKER) {
            continue;
        }
        let kind = entry.file_type().map_err(|e| Error::io(dir, e))?;
        let path = format!("{relative}/{name}");
        if kind.is_dir() {
            walk(&entry.path(), &path, out)?;
        } else if kind.is_file() {
            out.insert(path, entry.path());
        }
    }
    Ok(())
}

/// The index for a snapshot: the vector table's files, what is slow to make again (every
/// chunk embedded). The SQLite catalog is left out: it is rebuilt from the artifacts in
/// seconds, and a copy taken beside a live writer could be torn.
fn index_files(zblade_dir: &Path) -> Result<Vec<(String, Vec<u8>)>> {
    let mut vectors = BTreeMap::new();
    walk(&zblade_dir.join("index").join("vectors"), "index/vectors", &mut vectors)?;
    vectors
        .into_iter()
        .map(|(path, full)| Ok((path, std::fs::read(&full).map_err(|e| Error::io(&full, e))?)))
        .collect()
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_in_a_received_share_are_checked() {
        check_share_name("conversations/conv_01ABC.json").unwrap();
        check_share_name("moments/moment_1.json").unwrap();
        for hostile in [
            "../../.bashrc",
            "conversations/../../x.json",
            "conversations/a/b.json",
            "artifacts/conversations/conv_1.json",
            "conversations/.json",
            "conversations/conv 1.json",
        ] {
            assert!(check_share_name(hostile).is_err(), "{hostile}");
        }
    }

    #[test]
    fn parts_of_different_batches_or_missing_parts_do_not_join() {
        let part = |batch: &str, part: u32, parts: u32| {
            (
                PartHeader {
                    batch: batch.into(),
                    part,
                    parts,
                },
                vec![part as u8],
            )
        };
        assert_eq!(
            join_parts(vec![part("a", 1, 2), part("a", 0, 2)], "t").unwrap(),
            vec![0, 1]
        );
        assert!(join_parts(vec![part("a", 0, 2)], "t").is_err(), "a part missing");
        assert!(
            join_parts(vec![part("a", 0, 2), part("b", 1, 2)], "t").is_err(),
            "two batches"
        );
        assert!(
            join_parts(vec![part("a", 0, 2), part("a", 0, 2)], "t").is_err(),
            "a part twice"
        );
    }
}

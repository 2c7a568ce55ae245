//! Moving a project's memory between local storage and a sync server without losing any of
//! it (RFC-002, "Switching Between Modes"): plan → copy → verify → flip `storage.mode` →
//! (separately, on request) clean up the source.
//!
//! Every step is recorded in a journal under `.zblade/migration/`: the plan (every item with
//! its hash) is written before anything is copied, each copied item is appended to a log and
//! synced, and `storage.mode` changes only after every planned item was read back from the
//! destination with the expected hash. Killed at any moment, the next run reads the journal
//! and goes on; copies are idempotent (a PUT of the same bytes changes nothing, a local file
//! is replaced atomically), so an item copied twice is still there once.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;

use chrono::Utc;
use serde::{Deserialize, Serialize};
use zblade_core::{Error, Result, StorageMode, fsio, parse_conversation, parse_moment, sha256_hex};

use zblade_sync::{Client, Kind};

use crate::lock::WriteLock;
use crate::project::Project;

mod transfer;

/// Which way memory moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    /// Local artifacts up to the server.
    ToServer,
    /// Server records down into local artifacts.
    ToLocal,
}

impl std::fmt::Display for Direction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Direction::ToServer => "to-server",
            Direction::ToLocal => "to-local",
        })
    }
}

/// Where a migration stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// Copying planned items.
    Copy,
    /// Reading them back from the destination.
    Verify,
    /// Switching `storage.mode`.
    Flip,
    /// Finished.
    Done,
}

/// One item to move.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct PlannedItem {
    /// Conversation or moment.
    pub kind: Kind,
    /// Its id.
    pub id: String,
    /// sha256 of its bytes at the source.
    pub hash: String,
    /// Size at the source.
    pub size: u64,
}

/// What a migration will do (or did).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Plan {
    /// Which way.
    pub direction: Direction,
    /// The server.
    pub server: String,
    /// The project id on the server (the local `project.id`).
    pub project: String,
    /// The items, in copy order.
    pub items: Vec<PlannedItem>,
    /// Source files that cannot be moved (unreadable or invalid), with why; they stay where
    /// they are and are never cleaned up.
    pub skipped: Vec<(String, String)>,
}

impl Plan {
    /// (conversations, moments).
    pub fn counts(&self) -> (usize, usize) {
        let conversations = self.items.iter().filter(|i| i.kind == Kind::Conversation).count();
        (conversations, self.items.len() - conversations)
    }

    /// Bytes to move.
    pub fn bytes(&self) -> u64 {
        self.items.iter().map(|i| i.size).sum()
    }
}

/// A migration's journal — the plan and the phase, rewritten atomically at each phase change —
/// and, while it is not done, the migration an earlier run (or a crash) left unfinished.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct PendingMigration {
    /// What it moves.
    pub plan: Plan,
    /// Where it is.
    pub phase: Phase,
    /// When it started (RFC 3339).
    pub started_at: String,
}

/// What a finished (or resumed and finished) migration did.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct MigrationReport {
    /// The plan carried out.
    pub plan: Plan,
    /// Whether this run picked up a migration an earlier run had started.
    pub resumed: bool,
    /// Items copied by this run (the rest were copied before it was interrupted).
    pub copied: usize,
    /// Items read back from the destination with the expected hash.
    pub verified: usize,
    /// Code blocks turned into references to the working tree (to-local).
    pub code_blocks_to_references: usize,
    /// `storage.mode` now.
    pub mode: StorageMode,
}

/// What a cleanup did.
#[derive(Debug, Clone, Default, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct CleanupReport {
    /// Copies removed at the source.
    pub removed: usize,
    /// Items kept because they changed after they were verified (written since by another
    /// device or edited): their newer version is not at the destination.
    pub kept_changed: Vec<String>,
}

/// Progress callbacks: (phase, done, total).
pub type Progress<'a> = &'a mut dyn FnMut(Phase, usize, usize);

/// Items whose vectors are made together when migrating to a server.
const VECTOR_CHUNK: usize = 200;

fn journal_dir(project: &Project) -> PathBuf {
    project.layout().dir().join("migration")
}

fn journal_path(project: &Project) -> PathBuf {
    journal_dir(project).join("journal.json")
}

fn copied_log(project: &Project) -> PathBuf {
    journal_dir(project).join("copied.log")
}

/// Items the log says were copied: `kind id hash` per line, where `hash` is what the
/// destination holds. Only whole lines count: a torn last line (killed mid-write, no `\n`) is
/// ignored, and that item is copied again.
fn read_copied(project: &Project) -> Result<HashMap<(Kind, String), String>> {
    read_copied_at(&copied_log(project))
}

fn read_copied_at(path: &std::path::Path) -> Result<HashMap<(Kind, String), String>> {
    let text = match std::fs::read(path) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(HashMap::new()),
        Err(e) => return Err(Error::io(path, e)),
    };
    let whole = text.rfind('\n').map_or("", |end| &text[..end]);
    let mut copied = HashMap::new();
    for line in whole.lines() {
        let parts: Vec<&str> = line.split(' ').collect();
        let [kind, id, hash] = parts[..] else { continue };
        let kind = match kind {
            "conversation" => Kind::Conversation,
            "moment" => Kind::Moment,
            _ => continue,
        };
        if hash.len() == 64 && zblade_core::ids::check_id(id, None).is_ok() {
            copied.insert((kind, id.to_string()), hash.to_string());
        }
    }
    Ok(copied)
}

/// Opens the log for appending, first cutting off a torn last line (a run killed mid-write),
/// so the next line never glues onto it.
fn open_copied_log(path: &std::path::Path) -> Result<std::fs::File> {
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    let mut text = Vec::new();
    std::io::Read::read_to_end(&mut log, &mut text).map_err(|e| Error::io(path, e))?;
    if !text.is_empty() && !text.ends_with(b"\n") {
        let whole = text.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        log.set_len(whole as u64)
            .and_then(|_| log.sync_data())
            .map_err(|e| Error::io(path, e))?;
    }
    Ok(log)
}

fn append_copied(log: &mut std::fs::File, path: &std::path::Path, kind: Kind, id: &str, hash: &str) -> Result<()> {
    let kind = match kind {
        Kind::Conversation => "conversation",
        Kind::Moment => "moment",
    };
    log.write_all(format!("{kind} {id} {hash}\n").as_bytes())
        .and_then(|_| log.sync_data())
        .map_err(|e| Error::io(path, e))
}

impl Project {
    /// The migration an earlier run started and did not finish, if any.
    pub fn pending_migration(&self) -> Result<Option<PendingMigration>> {
        let path = journal_path(self);
        match std::fs::read(&path) {
            Ok(bytes) => {
                let journal: PendingMigration = serde_json::from_slice(&bytes).map_err(|e| {
                    Error::Usage(format!(
                        "{}: damaged migration journal ({e}); nothing was flipped — delete .zblade/migration/ and run the migration again",
                        self.layout().relative(&path)
                    ))
                })?;
                Ok(Some(journal))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(&path, e)),
        }
    }

    /// What a migration `direction` would move, without moving anything.
    pub fn plan_migration(&self, direction: Direction, client: &Client) -> Result<Plan> {
        let project = self.settings().project.id.clone();
        let mut plan = Plan {
            direction,
            server: client.url().to_string(),
            project: project.clone(),
            items: Vec::new(),
            skipped: Vec::new(),
        };
        match direction {
            Direction::ToServer => {
                for (kind, dir) in [
                    (Kind::Conversation, self.layout().conversations_dir()),
                    (Kind::Moment, self.layout().moments_dir()),
                ] {
                    let Ok(entries) = std::fs::read_dir(&dir) else { continue };
                    let mut files: Vec<PathBuf> = entries
                        .flatten()
                        .map(|e| e.path())
                        .filter(|p| p.extension().is_some_and(|x| x == "json"))
                        .collect();
                    files.sort();
                    for path in files {
                        let name = self.layout().relative(&path);
                        match read_artifact(self.layout(), kind, &path, &name) {
                            Ok((id, bytes)) => plan.items.push(PlannedItem {
                                kind,
                                id,
                                hash: sha256_hex(&bytes),
                                size: bytes.len() as u64,
                            }),
                            Err(why) => plan.skipped.push((name, why.to_string())),
                        }
                    }
                }
            }
            Direction::ToLocal => {
                for kind in [Kind::Conversation, Kind::Moment] {
                    for record in client.list_records(&project, kind)? {
                        plan.items.push(PlannedItem {
                            kind,
                            id: record.id,
                            hash: record.hash,
                            size: record.size.max(0) as u64,
                        });
                    }
                }
            }
        }
        Ok(plan)
    }

    /// Runs (or resumes) a migration `direction` with `client`: copy, verify, flip. A pending
    /// migration the other way, or to another server, must be finished first.
    pub fn migrate(
        &mut self,
        direction: Direction,
        client: &Client,
        progress: Progress<'_>,
    ) -> Result<MigrationReport> {
        let (journal, resumed) = match self.pending_migration()? {
            Some(pending) => {
                let plan = &pending.plan;
                if plan.direction != direction || plan.server != client.url() {
                    return Err(Error::Usage(format!(
                        "a migration {} to {} is not finished; run `zblade migrate {}` with that server first",
                        plan.direction, plan.server, plan.direction
                    )));
                }
                (pending, true)
            }
            None => {
                let wanted = match direction {
                    Direction::ToServer => StorageMode::Server,
                    Direction::ToLocal => StorageMode::Local,
                };
                // Run again after it finished (say the process was killed just before it could
                // report): the same migration is done; say so instead of failing.
                if self.settings().storage.mode == wanted
                    && let Some(last) = self.last_migration()
                    && last.phase == Phase::Done
                    && last.plan.direction == direction
                    && last.plan.server == client.url()
                {
                    let verified = last.plan.items.len();
                    return Ok(MigrationReport {
                        plan: last.plan,
                        resumed: true,
                        copied: 0,
                        verified,
                        code_blocks_to_references: 0,
                        mode: wanted,
                    });
                }
                if self.settings().storage.mode == wanted && direction == Direction::ToServer {
                    return Err(Error::Usage(format!("storage.mode is already {wanted}")));
                }
                if direction == Direction::ToLocal && self.settings().storage.mode == StorageMode::Local {
                    return Err(Error::Usage(
                        "storage.mode is already local; `zblade migrate to-local` brings a server-mode project home"
                            .into(),
                    ));
                }
                // The server must answer before a plan is written.
                client.whoami()?;
                let plan = self.plan_migration(direction, client)?;
                let journal = PendingMigration {
                    plan,
                    phase: Phase::Copy,
                    started_at: Utc::now().to_rfc3339(),
                };
                std::fs::create_dir_all(journal_dir(self)).map_err(|e| Error::io(journal_dir(self), e))?;
                // A log from an abandoned earlier journal must not count for this plan.
                let _ = std::fs::remove_file(copied_log(self));
                self.write_journal(&journal)?;
                (journal, false)
            }
        };
        let mut journal = journal;
        let mut copied = 0;
        let mut converted = 0;
        if journal.phase == Phase::Copy {
            let (n, c) = self.copy_items(&journal.plan, client, progress)?;
            copied = n;
            converted = c;
            journal.phase = Phase::Verify;
            self.write_journal(&journal)?;
        }
        let mut verified = 0;
        if journal.phase == Phase::Verify {
            verified = self.verify_items(&journal.plan, client, progress)?;
            if direction == Direction::ToLocal {
                // The index is rebuilt from the artifacts now on disk.
                self.reindex()?;
            }
            journal.phase = Phase::Flip;
            self.write_journal(&journal)?;
        }
        if journal.phase == Phase::Flip {
            self.parts.settings.storage.mode = match direction {
                Direction::ToServer => StorageMode::Server,
                Direction::ToLocal => StorageMode::Local,
            };
            self.parts.settings.storage.server_url = client.url().to_string();
            // The user's explicit choice of plain http to another machine is kept for the reads
            // and writes of server mode; otherwise it stays off.
            self.parts.settings.storage.allow_insecure_http = client.is_plain_http_to_another_machine();
            self.settings().save(&self.layout().settings())?;
            if direction == Direction::ToServer && !client.token().trim().is_empty() {
                // Server mode reads and writes with this token from now on.
                zblade_sync::credentials::save(client.url(), client.token().trim())?;
            }
            journal.phase = Phase::Done;
            self.write_journal(&journal)?;
        }
        if verified == 0 {
            verified = journal.plan.items.len();
        }
        // Kept as the record of the last migration (cleanup reads it); the log goes.
        let last = journal_dir(self).join("last.json");
        fsio::write_atomic(&last, &serde_json::to_vec_pretty(&journal).expect("journal serializes"))?;
        std::fs::remove_file(journal_path(self)).map_err(|e| Error::io(journal_path(self), e))?;
        let _ = std::fs::remove_file(copied_log(self));
        Ok(MigrationReport {
            plan: journal.plan,
            resumed,
            copied,
            verified,
            code_blocks_to_references: converted,
            mode: self.settings().storage.mode,
        })
    }

    /// The record of the last finished migration, if it can be read.
    fn last_migration(&self) -> Option<PendingMigration> {
        let bytes = std::fs::read(journal_dir(self).join("last.json")).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    fn write_journal(&self, journal: &PendingMigration) -> Result<()> {
        let bytes = serde_json::to_vec_pretty(journal).expect("journal serializes");
        fsio::write_atomic(&journal_path(self), &bytes)
    }

    /// After a finished migration, removes the copies left at the source: local artifacts
    /// after to-server, server records after to-local. Only items of the last migration's
    /// verified plan are touched, and only while they still have the hash that was verified:
    /// a version written since (by another device, or an edit) is kept and reported.
    pub fn cleanup_migration_source(&mut self, client: &Client) -> Result<CleanupReport> {
        let last = journal_dir(self).join("last.json");
        let bytes = std::fs::read(&last)
            .map_err(|_| Error::Usage("no finished migration to clean up after (run `zblade migrate` first)".into()))?;
        let journal: PendingMigration = serde_json::from_slice(&bytes)
            .map_err(|e| Error::Usage(format!("{}: {e}", self.layout().relative(&last))))?;
        if journal.phase != Phase::Done {
            return Err(Error::Usage(
                "the last migration did not finish; nothing is cleaned up".into(),
            ));
        }
        let plan = journal.plan;
        let mut report = CleanupReport::default();
        match plan.direction {
            Direction::ToServer => {
                if self.settings().storage.mode != StorageMode::Server {
                    return Err(Error::Usage("storage.mode is not server; local memory is kept".into()));
                }
                let _lock = WriteLock::acquire(self.layout())?;
                let folders = ArtifactFolders::proven(self)?;
                for item in &plan.items {
                    let path = folders.path(item.kind, &item.id)?;
                    // Only the bytes that were verified on the server: a file changed since stays.
                    match artifact_bytes(self.layout(), item.kind, &path) {
                        Ok(bytes) if sha256_hex(&bytes) == item.hash => {
                            std::fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
                            report.removed += 1;
                        }
                        Ok(_) => report.kept_changed.push(item.id.clone()),
                        Err(_) => {}
                    }
                }
            }
            Direction::ToLocal => {
                if self.settings().storage.mode != StorageMode::Local {
                    return Err(Error::Usage("storage.mode is not local; server memory is kept".into()));
                }
                for item in &plan.items {
                    // The server deletes only while the record has the verified hash.
                    match client.delete_record_if(&plan.project, item.kind, &item.id, &item.hash)? {
                        zblade_sync::Deleted::Yes => report.removed += 1,
                        zblade_sync::Deleted::Changed => report.kept_changed.push(item.id.clone()),
                        zblade_sync::Deleted::NotFound => {}
                    }
                }
            }
        }
        Ok(report)
    }
}

/// The two artifact folders, proven once per run to resolve inside `.zblade/` (created if need
/// be; no symlink out of it). Item paths are built from them and checked ids only, so a planned
/// id (from a server, or a journal on disk) can never name a file elsewhere.
struct ArtifactFolders {
    conversations: PathBuf,
    moments: PathBuf,
}

impl ArtifactFolders {
    fn proven(project: &Project) -> Result<ArtifactFolders> {
        let layout = project.layout();
        let real_zblade = layout.dir().canonicalize().map_err(|e| Error::io(layout.dir(), e))?;
        let prove = |dir: PathBuf| -> Result<PathBuf> {
            std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
            let real = dir.canonicalize().map_err(|e| Error::io(&dir, e))?;
            if !real.starts_with(&real_zblade) {
                return Err(Error::Untrusted(format!(
                    "{} leads outside .zblade/ (to {}); nothing is written there",
                    layout.relative(&dir),
                    real.display()
                )));
            }
            Ok(dir)
        };
        Ok(ArtifactFolders {
            conversations: prove(layout.conversations_dir())?,
            moments: prove(layout.moments_dir())?,
        })
    }

    /// The artifact file of a planned item: its id must follow the id rules of its kind.
    fn path(&self, kind: Kind, id: &str) -> Result<PathBuf> {
        let (dir, prefix) = match kind {
            Kind::Conversation => (&self.conversations, zblade_core::ids::CONVERSATION),
            Kind::Moment => (&self.moments, zblade_core::ids::MOMENT),
        };
        zblade_core::ids::check_id(id, Some(prefix))
            .map_err(|why| Error::Untrusted(format!("migration item id {why}")))?;
        Ok(dir.join(format!("{id}.json")))
    }
}

/// What an artifact says, as bytes a server stores: a moment's file, a conversation with every
/// message inline (a manifest is resolved through the message store; a format-1 file is
/// taken as it is).
fn artifact_bytes(layout: &zblade_core::Layout, kind: Kind, path: &std::path::Path) -> Result<Vec<u8>> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    if kind == Kind::Conversation && is_manifest(&bytes) {
        return Ok(crate::scan::load_conversation(layout, path)?
            .artifact
            .to_artifact_json());
    }
    Ok(bytes)
}

/// True for a conversation artifact of format 2.
fn is_manifest(bytes: &[u8]) -> bool {
    matches!(
        zblade_core::parse_stored_conversation(bytes, ""),
        Ok(zblade_core::StoredConversation::Manifest(_))
    )
}

/// An artifact's id (checked against its file name) and its bytes as a server stores them
/// (see [`artifact_bytes`]); invalid files are refused.
fn read_artifact(
    layout: &zblade_core::Layout,
    kind: Kind,
    path: &std::path::Path,
    name: &str,
) -> Result<(String, Vec<u8>)> {
    let bytes = artifact_bytes(layout, kind, path)?;
    let id = match kind {
        Kind::Conversation => {
            let conv = parse_conversation(&bytes, name)?;
            conv.validate(name)?;
            conv.conversation_id
        }
        Kind::Moment => {
            let moment = parse_moment(&bytes, name)?;
            moment.validate(name)?;
            moment.id
        }
    };
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if stem != id {
        return Err(Error::Usage(format!(
            "{name}: its id is {id}, its file name says {stem}"
        )));
    }
    Ok((id, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_log_line_never_glues_onto_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("copied.log");
        let hash = "a".repeat(64);
        // Killed in the middle of the second line: its hash is cut short, no newline.
        std::fs::write(
            &path,
            format!("conversation conv_A {hash}\nmoment moment_B {}", &hash[..20]),
        )
        .unwrap();
        assert_eq!(read_copied_at(&path).unwrap().len(), 1, "a torn line does not count");
        let mut log = open_copied_log(&path).unwrap();
        append_copied(&mut log, &path, Kind::Moment, "moment_C", &hash).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, format!("conversation conv_A {hash}\nmoment moment_C {hash}\n"));
        let copied = read_copied_at(&path).unwrap();
        assert_eq!(copied.len(), 2);
        assert!(copied.contains_key(&(Kind::Moment, "moment_C".to_string())));
        assert!(
            !copied.contains_key(&(Kind::Moment, "moment_B".to_string())),
            "B is copied again"
        );
    }

    #[test]
    fn a_complete_last_line_without_its_newline_is_copied_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("copied.log");
        let hash = "b".repeat(64);
        std::fs::write(&path, format!("conversation conv_A {hash}")).unwrap();
        assert!(read_copied_at(&path).unwrap().is_empty());
        drop(open_copied_log(&path).unwrap());
        assert_eq!(std::fs::read(&path).unwrap(), b"");
    }
}

/// A conversation as uploaded to `project`: one copied from another project (its `project_id`
/// is another's) is adopted — the server files conversations by project and refuses a foreign
/// id — and what its id was is kept in `metadata.original_project_id`, so nothing is lost and
/// migrating back brings it home with both. Others go as they are, byte for byte.
fn adopted(bytes: &[u8], project: &str, name: &str) -> Result<Vec<u8>> {
    let mut value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| Error::Usage(format!("{name}: {e}")))?;
    let Some(object) = value.as_object_mut() else {
        return Err(Error::Usage(format!("{name}: not a JSON object")));
    };
    let theirs = object
        .get("project_id")
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_string();
    if theirs.is_empty() || theirs == project {
        return Ok(bytes.to_vec());
    }
    object.insert("project_id".into(), serde_json::Value::String(project.to_string()));
    let metadata = object
        .entry("metadata")
        .or_insert_with(|| serde_json::Value::Object(Default::default()));
    if let Some(metadata) = metadata.as_object_mut() {
        metadata
            .entry("original_project_id")
            .or_insert(serde_json::Value::String(theirs));
    }
    serde_json::to_vec_pretty(&value).map_err(|e| Error::Usage(format!("{name}: {e}")))
}

#[cfg(test)]
mod adopt_tests {
    use super::adopted;

    #[test]
    fn a_foreign_conversation_is_adopted_and_keeps_where_it_came_from() {
        let foreign =
            br#"{"conversation_id":"conv_a","project_id":"proj_other","messages":[],"metadata":{"tags":["x"]}}"#;
        let value: serde_json::Value =
            serde_json::from_slice(&adopted(foreign, "proj_ours", "a.json").unwrap()).unwrap();
        assert_eq!(value["project_id"], "proj_ours");
        assert_eq!(value["metadata"]["original_project_id"], "proj_other");
        assert_eq!(value["metadata"]["tags"][0], "x");
        let ours = br#"{"conversation_id":"conv_b","project_id":"proj_ours"}"#;
        assert_eq!(
            adopted(ours, "proj_ours", "b.json").unwrap(),
            ours.to_vec(),
            "our own go byte for byte"
        );
    }
}

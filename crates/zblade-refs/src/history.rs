//! A repository's commits as memory: each commit's message, author, date, parents and the
//! hunks it changed, read with git2 along HEAD's first-parent history, oldest first.
//!
//! Reading is incremental: given the HEAD indexed last time, only the commits since are read;
//! when that commit is no longer in HEAD's history (a rebase, a reset) the whole history is read
//! again and the caller is told to start over. Shallow clones and non-git folders are notes,
//! not errors. Huge commits are bounded: a commit lists at most [`HistoryLimits::max_files`]
//! files with hunks, and a file whose diff would be huge (a lockfile, a vendored drop) is taken
//! as rewritten whole, without running a diff over it.

use std::path::Path;

use git2::{Delta, DiffFindOptions, DiffOptions, Oid, Patch, Repository, Sort};
use serde::Serialize;

use crate::drift::GitRepo;

/// One changed range, in the parent's lines (`old_*`) and the commit's (`new_*`), 1-based;
/// a range of 0 lines sits after line `start` (git's unified-diff convention).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Hunk {
    /// First line in the parent.
    pub old_start: u32,
    /// Lines removed.
    pub old_lines: u32,
    /// First line in the commit.
    pub new_start: u32,
    /// Lines written.
    pub new_lines: u32,
}

/// How a commit changed a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    /// The file is new.
    Added,
    /// Lines changed.
    Modified,
    /// The file is gone.
    Deleted,
    /// The file moved (and may have changed).
    Renamed,
}

/// One file a commit changed, relative to the project root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileChange {
    /// Its path after the commit (before it, for a deleted file).
    pub path: String,
    /// Its path before, for a renamed file.
    pub old_path: Option<String>,
    /// What happened to it.
    pub kind: ChangeKind,
    /// The changed ranges, in order (empty for a binary file or one taken as rewritten whole).
    pub hunks: Vec<Hunk>,
    /// Set when the diff was not run (too large): the file is taken as rewritten whole, and
    /// this is its line count after the commit.
    pub rewritten_lines: Option<u32>,
    /// A binary file: no lines to attribute.
    pub binary: bool,
}

/// One commit, as memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommitRecord {
    /// Full hex id.
    pub sha: String,
    /// Parent ids, first parent first.
    pub parents: Vec<String>,
    /// `Name <email>`.
    pub author: String,
    /// Author time, seconds since the epoch.
    pub time: i64,
    /// The message's first line.
    pub subject: String,
    /// The rest of the message, trimmed (bounded by [`HistoryLimits::max_message_bytes`]).
    pub body: String,
    /// The files it changed (at most [`HistoryLimits::max_files`]).
    pub files: Vec<FileChange>,
    /// How many files it changed in all (more than `files.len()` for a huge commit).
    pub files_changed: usize,
    /// Lines added and removed over the files listed.
    pub lines_added: u64,
    /// Lines removed over the files listed.
    pub lines_removed: u64,
}

/// Bounds on what one commit may cost.
#[derive(Debug, Clone, Copy)]
pub struct HistoryLimits {
    /// Files with hunks per commit; the rest are counted, not listed.
    pub max_files: usize,
    /// A file whose parent or new version is larger than this is not diffed: it is taken as
    /// rewritten whole (lockfiles, generated code, vendored drops).
    pub max_diff_bytes: u64,
    /// Longest message kept; longer ones are cut at a character boundary.
    pub max_message_bytes: usize,
    /// Most commits read in one run (the newest ones); `zblade index` reads the rest next time.
    pub max_commits: usize,
}

impl Default for HistoryLimits {
    fn default() -> Self {
        HistoryLimits {
            max_files: 300,
            max_diff_bytes: 512 * 1024,
            max_message_bytes: 16 * 1024,
            max_commits: 200_000,
        }
    }
}

/// What one read of the history found.
#[derive(Debug, Default)]
pub struct HistoryRead {
    /// HEAD's commit, when there is one.
    pub head: Option<String>,
    /// The new commits, oldest first.
    pub commits: Vec<CommitRecord>,
    /// The history indexed before is not HEAD's any more: forget it, these are all commits.
    pub from_scratch: bool,
    /// Things the user should know (a shallow clone, a rewritten history, a bound hit).
    pub notes: Vec<String>,
}

impl GitRepo {
    /// The commits on HEAD's first-parent history that `indexed_head` (the HEAD read last
    /// time) does not have, oldest first, read on up to `threads` threads.
    pub fn read_history(&self, indexed_head: Option<&str>, limits: &HistoryLimits, threads: usize) -> HistoryRead {
        let mut read = HistoryRead::default();
        let Some(head) = self.head_commit() else {
            read.notes.push("the repository has no commits yet".into());
            return read;
        };
        read.head = Some(head.clone());
        if indexed_head == Some(head.as_str()) {
            return read;
        }
        let known = indexed_head.and_then(|h| Oid::from_str(h).ok());
        let head_oid = Oid::from_str(&head).expect("HEAD's id is hex");
        let on_history = known.is_some_and(|old| {
            self.repo.find_commit(old).is_ok() && self.repo.graph_descendant_of(head_oid, old).unwrap_or(false)
        });
        if let (Some(old), false) = (indexed_head, on_history) {
            read.from_scratch = true;
            read.notes.push(format!(
                "history was rewritten: {} is no longer on HEAD's history; reading it again",
                &old[..old.len().min(7)]
            ));
        }
        if known.is_none() {
            read.from_scratch = true;
        }
        if self.repo.is_shallow() {
            read.notes.push(
                "shallow clone: only the fetched history is memory (`git fetch --unshallow` brings the rest)".into(),
            );
        }
        let mut oids = match self.first_parent_oids(head_oid, on_history.then_some(known).flatten()) {
            Ok(oids) => oids,
            Err(e) => {
                read.notes.push(format!("could not walk the history: {}", e.message()));
                return read;
            }
        };
        if oids.len() > limits.max_commits {
            read.notes.push(format!(
                "{} commits to read; read the newest {} (the next `zblade index` reads no older ones)",
                oids.len(),
                limits.max_commits
            ));
            oids.drain(..oids.len() - limits.max_commits);
        }
        read.commits = self.read_commits(&oids, limits, threads.max(1));
        read
    }

    /// HEAD's first-parent ancestors not reachable from `hide`, oldest first.
    fn first_parent_oids(&self, head: Oid, hide: Option<Oid>) -> Result<Vec<Oid>, git2::Error> {
        let mut walk = self.repo.revwalk()?;
        walk.set_sorting(Sort::TOPOLOGICAL)?;
        walk.simplify_first_parent()?;
        walk.push(head)?;
        if let Some(hide) = hide {
            walk.hide(hide)?;
        }
        let mut oids = walk.collect::<Result<Vec<_>, _>>()?;
        oids.reverse();
        Ok(oids)
    }

    /// Reads `oids` in order, split into contiguous slices over `threads` threads (each opens
    /// the repository itself: a `git2::Repository` is not shared between threads).
    fn read_commits(&self, oids: &[Oid], limits: &HistoryLimits, threads: usize) -> Vec<CommitRecord> {
        let path = self.repo.path().to_path_buf();
        let prefix = self.prefix.clone();
        let threads = threads.min(oids.len().div_ceil(64)).max(1);
        if threads == 1 {
            return read_slice(&self.repo, &prefix, oids, limits);
        }
        let slice = oids.len().div_ceil(threads);
        std::thread::scope(|scope| {
            let workers: Vec<_> = oids
                .chunks(slice)
                .map(|part| {
                    let (path, prefix) = (&path, &prefix);
                    scope.spawn(move || match Repository::open(path) {
                        Ok(repo) => read_slice(&repo, prefix, part, limits),
                        Err(_) => Vec::new(),
                    })
                })
                .collect();
            workers.into_iter().flat_map(|w| w.join().unwrap_or_default()).collect()
        })
    }
}

fn read_slice(repo: &Repository, prefix: &str, oids: &[Oid], limits: &HistoryLimits) -> Vec<CommitRecord> {
    let mut blobs = BlobCache::default();
    oids.iter()
        .filter_map(|&oid| read_commit(repo, prefix, oid, limits, &mut blobs).ok())
        .collect()
}

/// The file versions the commits read so far wrote, by blob id: the next commit that changes
/// a file diffs against the version kept here instead of inflating it from the pack again.
/// Reading blobs is most of what history costs (zlib), and this halves it.
#[derive(Default)]
struct BlobCache {
    blobs: std::collections::HashMap<Oid, Vec<u8>>,
    bytes: usize,
}

/// What the cache may hold before it starts over (about one checkout of a large project).
const BLOB_CACHE_BYTES: usize = 256 * 1024 * 1024;

impl BlobCache {
    /// The blob's bytes: from the cache (which lets them go) or the repository.
    fn take(&mut self, repo: &Repository, id: Oid) -> Result<Vec<u8>, git2::Error> {
        if let Some(bytes) = self.blobs.remove(&id) {
            self.bytes -= bytes.len();
            return Ok(bytes);
        }
        Ok(repo.find_blob(id)?.content().to_vec())
    }

    fn keep(&mut self, id: Oid, bytes: Vec<u8>) {
        if self.bytes + bytes.len() > BLOB_CACHE_BYTES {
            self.blobs.clear();
            self.bytes = 0;
        }
        self.bytes += bytes.len();
        if let Some(old) = self.blobs.insert(id, bytes) {
            self.bytes -= old.len();
        }
    }
}

/// Git's rule: a NUL byte in the first 8,000 bytes makes a file binary.
fn is_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(8000)].contains(&0)
}

/// One commit and its changes against its first parent (the empty tree for a root commit).
fn read_commit(
    repo: &Repository,
    prefix: &str,
    oid: Oid,
    limits: &HistoryLimits,
    blobs: &mut BlobCache,
) -> Result<CommitRecord, git2::Error> {
    let commit = repo.find_commit(oid)?;
    let tree = commit.tree()?;
    // A shallow clone's oldest commit names a parent it does not have: diff it with nothing.
    let parent_tree = commit.parent(0).ok().map(|p| p.tree()).transpose()?;
    let mut options = DiffOptions::new();
    options.context_lines(0).interhunk_lines(0).ignore_submodules(true);
    if !prefix.is_empty() {
        options.pathspec(format!("{prefix}/"));
    }
    let mut diff = repo.diff_tree_to_tree(parent_tree.as_ref(), Some(&tree), Some(&mut options))?;
    // Exact renames only: similarity detection reads every added and deleted blob.
    diff.find_similar(Some(DiffFindOptions::new().renames(true).exact_match_only(true)))?;

    let message = String::from_utf8_lossy(commit.message_bytes());
    let message = cut_at_char(message.trim(), limits.max_message_bytes);
    let (subject, body) = match message.split_once('\n') {
        Some((subject, body)) => (subject.trim().to_string(), body.trim().to_string()),
        None => (message.trim().to_string(), String::new()),
    };
    let author = commit.author();
    let mut record = CommitRecord {
        sha: oid.to_string(),
        parents: commit.parent_ids().map(|p| p.to_string()).collect(),
        author: format!(
            "{} <{}>",
            String::from_utf8_lossy(author.name_bytes()),
            String::from_utf8_lossy(author.email_bytes())
        ),
        time: author.when().seconds(),
        subject,
        body,
        files: Vec::new(),
        files_changed: diff.deltas().len(),
        lines_added: 0,
        lines_removed: 0,
    };
    let strip = |p: Option<&Path>| -> Option<String> {
        let p = p?.to_str()?;
        let p = if prefix.is_empty() {
            p
        } else {
            p.strip_prefix(prefix)?.strip_prefix('/')?
        };
        Some(p.to_string())
    };
    for delta in diff.deltas() {
        if record.files.len() >= limits.max_files {
            break;
        }
        let kind = match delta.status() {
            Delta::Added | Delta::Copied => ChangeKind::Added,
            Delta::Deleted => ChangeKind::Deleted,
            Delta::Renamed => ChangeKind::Renamed,
            Delta::Modified | Delta::Typechange => ChangeKind::Modified,
            _ => continue,
        };
        let new_path = strip(delta.new_file().path());
        let old_path = strip(delta.old_file().path());
        let Some(path) = (if kind == ChangeKind::Deleted {
            old_path.clone()
        } else {
            new_path
        }) else {
            continue;
        };
        let mut change = FileChange {
            path,
            old_path: (kind == ChangeKind::Renamed).then_some(old_path).flatten(),
            kind,
            hunks: Vec::new(),
            rewritten_lines: None,
            binary: false,
        };
        // A deleted file needs no blob: its lines are simply gone.
        if kind != ChangeKind::Deleted {
            let new = blobs.take(repo, delta.new_file().id())?;
            if new.len() as u64 > limits.max_diff_bytes {
                // Counting its lines is cheap beside a diff.
                change.rewritten_lines = Some(count_lines(&new));
            } else if is_binary(&new) {
                change.binary = true;
            } else if kind == ChangeKind::Added {
                // Nothing to compare with: every line is new.
                let lines = count_lines(&new);
                if lines > 0 {
                    change.hunks.push(Hunk {
                        old_start: 0,
                        old_lines: 0,
                        new_start: 1,
                        new_lines: lines,
                    });
                }
            } else {
                let old = blobs.take(repo, delta.old_file().id())?;
                let mut options = DiffOptions::new();
                options.context_lines(0).interhunk_lines(0);
                let patch = Patch::from_buffers(&old, None, &new, None, Some(&mut options))?;
                for h in 0..patch.num_hunks() {
                    let (hunk, _) = patch.hunk(h)?;
                    change.hunks.push(Hunk {
                        old_start: hunk.old_start(),
                        old_lines: hunk.old_lines(),
                        new_start: hunk.new_start(),
                        new_lines: hunk.new_lines(),
                    });
                }
            }
            for hunk in &change.hunks {
                record.lines_added += u64::from(hunk.new_lines);
                record.lines_removed += u64::from(hunk.old_lines);
            }
            blobs.keep(delta.new_file().id(), new);
        }
        record.files.push(change);
    }
    Ok(record)
}

/// Lines in a file's bytes (a last line without a newline counts).
fn count_lines(bytes: &[u8]) -> u32 {
    let newlines = bytes.iter().filter(|&&b| b == b'\n').count();
    let tail = usize::from(!bytes.is_empty() && !bytes.ends_with(b"\n"));
    (newlines + tail) as u32
}

/// `text` cut to at most `max` bytes at a character boundary.
fn cut_at_char(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_counted_like_an_editor() {
        assert_eq!(count_lines(b""), 0);
        assert_eq!(count_lines(b"a\nb\n"), 2);
        assert_eq!(count_lines(b"a\nb"), 2);
        assert_eq!(cut_at_char("héllo", 2), "h");
    }
}

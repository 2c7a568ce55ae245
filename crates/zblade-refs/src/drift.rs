//! Git facts about a referenced file: its blob hash, HEAD, and how many commits changed it
//! since a reference was captured.

use std::path::Path;

use git2::{ObjectType, Oid, Repository};
use serde::Serialize;

/// The git blob hash of `bytes` (what `git hash-object` prints). Works without a repository,
/// so it doubles as the content hash of files in projects that do not use git.
pub fn blob_hash(bytes: &[u8]) -> String {
    Oid::hash_object(ObjectType::Blob, bytes)
        .map(|oid| oid.to_string())
        .unwrap_or_default()
}

/// A file changed since a reference was captured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Drift {
    /// Blob hash at capture.
    pub captured_blob: String,
    /// Blob hash now.
    pub current_blob: String,
    /// Commits between the captured commit and HEAD that changed the file, when git knows.
    pub commits_since: Option<u32>,
}

/// Most commits walked when counting; a reference older than this says "at least" that many.
const MAX_WALK: usize = 5000;

/// A git repository holding the project.
pub struct GitRepo {
    pub(crate) repo: Repository,
    /// The project root relative to the repository's work tree ("" when they are the same).
    pub(crate) prefix: String,
}

impl std::fmt::Debug for GitRepo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitRepo").field("path", &self.repo.path()).finish()
    }
}

impl GitRepo {
    /// The repository containing `root`, if any.
    pub fn discover(root: &Path) -> Option<GitRepo> {
        let repo = Repository::discover(root).ok()?;
        let workdir = repo.workdir()?.canonicalize().ok()?;
        let root = root.canonicalize().ok()?;
        let prefix = root.strip_prefix(&workdir).ok()?.to_string_lossy().replace('\\', "/");
        Some(GitRepo { repo, prefix })
    }

    /// The `.git` directory (watched for HEAD and ref changes).
    pub fn git_dir(&self) -> &Path {
        self.repo.path()
    }

    /// The commit HEAD points at, if there is one.
    pub fn head_commit(&self) -> Option<String> {
        self.repo.head().ok()?.peel_to_commit().ok().map(|c| c.id().to_string())
    }

    /// A string that changes whenever HEAD moves or switches branch.
    pub fn head_state(&self) -> String {
        match self.repo.head() {
            Ok(head) => format!(
                "{}@{}",
                head.name().unwrap_or("?"),
                head.target().map(|o| o.to_string()).unwrap_or_default()
            ),
            Err(_) => "unborn".into(),
        }
    }

    pub(crate) fn repo_path(&self, relative: &str) -> String {
        if self.prefix.is_empty() {
            relative.to_string()
        } else {
            format!("{}/{relative}", self.prefix)
        }
    }

    /// Commits reachable from HEAD but not from `since` that changed `relative` (compared with
    /// their first parent). `None` when `since` is unknown to the repository.
    pub fn commits_touching_since(&self, relative: &str, since: &str) -> Option<u32> {
        let since = Oid::from_str(since).ok()?;
        self.repo.find_commit(since).ok()?;
        let path = self.repo_path(relative);
        let mut walk = self.repo.revwalk().ok()?;
        walk.push_head().ok()?;
        walk.hide(since).ok()?;
        let blob_at = |commit: &git2::Commit| commit.tree().ok()?.get_path(Path::new(&path)).ok().map(|e| e.id());
        let mut count = 0;
        for oid in walk.take(MAX_WALK) {
            let Ok(commit) = oid.and_then(|o| self.repo.find_commit(o)) else {
                continue;
            };
            let parent_blob = commit.parent(0).ok().and_then(|p| blob_at(&p));
            if blob_at(&commit) != parent_blob {
                count += 1;
            }
        }
        Some(count)
    }
}

impl GitRepo {
    /// HEAD's first-parent history as (commit time in seconds since the epoch, commit id),
    /// newest first, at most `limit` commits: what the branch looked like at a past moment.
    pub fn first_parent_history(&self, limit: usize) -> Vec<(i64, String)> {
        let Ok(mut walk) = self.repo.revwalk() else {
            return Vec::new();
        };
        if walk.push_head().is_err() || walk.simplify_first_parent().is_err() {
            return Vec::new();
        }
        walk.take(limit)
            .filter_map(|oid| {
                let commit = self.repo.find_commit(oid.ok()?).ok()?;
                Some((commit.time().seconds(), commit.id().to_string()))
            })
            .collect()
    }

    /// The file `relative` (to the project root) as `commit` has it: its blob id and bytes.
    /// `None` when the commit or the file is unknown.
    pub fn file_at(&self, commit: &str, relative: &str) -> Option<(String, Vec<u8>)> {
        let commit = self.repo.find_commit(Oid::from_str(commit).ok()?).ok()?;
        let entry = commit
            .tree()
            .ok()?
            .get_path(Path::new(&self.repo_path(relative)))
            .ok()?;
        let blob = self.repo.find_blob(entry.id()).ok()?;
        Some((entry.id().to_string(), blob.content().to_vec()))
    }
}

/// Drift without git: only the blob hashes.
pub fn drift_without_git(captured: &str, current: &str) -> Option<Drift> {
    (captured != current).then(|| Drift {
        captured_blob: captured.into(),
        current_blob: current.into(),
        commits_since: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_hash_matches_git() {
        // `printf 'hello\n' | git hash-object --stdin`
        assert_eq!(blob_hash(b"hello\n"), "ce013625030ba8dba906f756967f9e9ca394464a");
    }
}

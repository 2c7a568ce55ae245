//! Turning what an agent did to a file (a [`Touch`]) into a code reference anchored against the
//! file *as it was then*: the commit HEAD's branch had at the message's time when git has it,
//! so `zblade refs check` reports honestly how that code fared since (shifted, modified,
//! moved, missing) instead of pretending old code is current.
//!
//! Where the lines are found: an edit's text is looked for in the first commit after the edit
//! (when it was committed), then in the working tree, then in the commit of its time; a read's
//! or citation's lines in the commit of its time, then the working tree. Text is matched line
//! by line, ignoring indentation and trailing blanks; a text found in several places is only
//! taken where the touch's line numbers point.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use chrono::{DateTime, Utc};
use zblade_core::artifact::Anchor;
use zblade_core::{CodeReference, PathGuard, paths};
use zblade_import::{Touch, TouchKind};
use zblade_refs::{GitRepo, SourceFile, anchor, blob_hash};

/// Commits of history looked at; older sessions anchor against the oldest of them.
const HISTORY_LIMIT: usize = 20_000;
/// Files larger than this are not anchored.
const MAX_FILE_BYTES: usize = 4 * 1024 * 1024;

/// One version of a file: where it came from and its lines.
struct Version {
    commit: Option<String>,
    blob: String,
    file: SourceFile,
    lines: Vec<String>,
    /// Anchors already captured in this version, by line range: agents read the same file
    /// (often whole) again and again, and capturing one costs a pass over its lines.
    anchors: HashMap<[u32; 2], Option<Anchor>>,
}

/// Which version of a file to look in.
#[derive(Clone, PartialEq, Eq, Hash)]
enum At {
    Commit(String),
    WorkingTree,
}

/// Anchors touches of one import run; caches git history and file versions.
pub(crate) struct Anchorer {
    root: PathBuf,
    real_root: PathBuf,
    guard: PathGuard,
    git: Option<GitRepo>,
    /// (commit time, commit), newest first; walked on first need (live imports of turns that
    /// touch no file never walk it).
    history: Option<Vec<(i64, String)>>,
    head: Option<String>,
    versions: HashMap<(At, String), Option<Version>>,
}

/// Why a touch did not become a reference, for the import summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Skip {
    /// The file is outside the project, or a secret.
    Outside,
    /// The file, or those lines, could not be found.
    NotFound,
}

impl Anchorer {
    pub(crate) fn new(root: &Path, guard: PathGuard) -> Anchorer {
        let git = GitRepo::discover(root);
        let head = git.as_ref().and_then(GitRepo::head_commit);
        Anchorer {
            root: root.to_path_buf(),
            real_root: root.canonicalize().unwrap_or_else(|_| root.to_path_buf()),
            guard,
            git,
            history: None,
            head,
            versions: HashMap::new(),
        }
    }

    /// A reference for `touch`, made in a session whose working directory was `cwd`, at `at`.
    pub(crate) fn reference(
        &mut self,
        touch: &Touch,
        cwd: Option<&Path>,
        at: Option<DateTime<Utc>>,
    ) -> Result<CodeReference, Skip> {
        let relative = self.project_relative(&touch.path, cwd).ok_or(Skip::Outside)?;
        let block: Vec<&str> = touch.text.as_deref().map(block_lines).unwrap_or_default();
        if block.is_empty() && touch.lines.is_none() {
            return Err(Skip::NotFound);
        }
        for place in self.places(touch.kind, at) {
            let Some(version) = self.version(&place, &relative) else {
                continue;
            };
            let found = if block.is_empty() {
                touch.lines.and_then(|[start, end]| {
                    let count = version.lines.len() as u32;
                    (start <= count).then(|| [start, end.min(count)])
                })
            } else {
                find_block(&version.lines, &block, touch.lines)
            };
            let Some(lines) = found else { continue };
            let commit = match &place {
                At::Commit(c) => Some(c.clone()),
                At::WorkingTree => self.head.clone(),
            };
            let version = self.version_mut(&place, &relative).expect("cached above");
            let file = &version.file;
            let captured = version
                .anchors
                .entry(lines)
                .or_insert_with(|| anchor::capture(file, lines[0], lines[1]))
                .clone();
            return Ok(CodeReference {
                file: relative,
                lines,
                git_hash: Some(version.blob.clone()),
                commit: commit.or_else(|| version.commit.clone()),
                context: Some(touch.kind.describe().to_string()),
                purpose: None,
                diff: None,
                anchor: captured,
                extra: Default::default(),
            });
        }
        Err(Skip::NotFound)
    }

    /// The versions to look in, most likely first.
    fn places(&mut self, kind: TouchKind, at: Option<DateTime<Utc>>) -> Vec<At> {
        let Some(at) = at else {
            return vec![At::WorkingTree];
        };
        let git = &self.git;
        let history: &[(i64, String)] = self.history.get_or_insert_with(|| {
            git.as_ref()
                .map(|g| g.first_parent_history(HISTORY_LIMIT))
                .unwrap_or_default()
        });
        if history.is_empty() {
            return vec![At::WorkingTree];
        }
        let seconds = at.timestamp();
        // history is newest first: the first commit not after `at` is the one of its time.
        // Older than the whole history: the first commit is the nearest there is.
        let oldest = history.last().map(|(_, c)| At::Commit(c.clone()));
        let then = history.iter().position(|(t, _)| *t <= seconds);
        let of_time = then
            .map(|i| At::Commit(history[i].1.clone()))
            .or_else(|| oldest.clone());
        let after = match then {
            Some(0) => None,
            Some(i) => Some(At::Commit(history[i - 1].1.clone())),
            None => oldest,
        };
        let order = match kind {
            TouchKind::Edit => [after, Some(At::WorkingTree), of_time],
            TouchKind::Read | TouchKind::Cite => [of_time, Some(At::WorkingTree), None],
        };
        let mut places: Vec<At> = Vec::new();
        for place in order.into_iter().flatten() {
            if !places.contains(&place) {
                places.push(place);
            }
        }
        places
    }

    fn version(&mut self, place: &At, relative: &str) -> Option<&Version> {
        self.version_mut(place, relative).map(|v| &*v)
    }

    fn version_mut(&mut self, place: &At, relative: &str) -> Option<&mut Version> {
        let key = (place.clone(), relative.to_string());
        if !self.versions.contains_key(&key) {
            let loaded = match place {
                At::Commit(commit) => self
                    .git
                    .as_ref()
                    .and_then(|g| g.file_at(commit, relative))
                    .map(|(blob, bytes)| (Some(commit.clone()), blob, bytes)),
                At::WorkingTree => zblade_refs::read_project_file_guarded(&self.root, relative, &self.guard)
                    .ok()
                    .map(|file| (None, blob_hash(&file.bytes), file.bytes)),
            };
            let version = loaded
                .filter(|(_, _, bytes)| bytes.len() <= MAX_FILE_BYTES && !bytes.contains(&0))
                .map(|(commit, blob, bytes)| Version {
                    commit,
                    blob,
                    lines: String::from_utf8_lossy(&bytes).lines().map(str::to_string).collect(),
                    file: SourceFile::from_bytes(bytes),
                    anchors: HashMap::new(),
                });
            self.versions.insert(key.clone(), version);
        }
        self.versions.get_mut(&key).and_then(Option::as_mut)
    }

    /// `path` (absolute, or relative to the session's `cwd`) relative to the project root, when
    /// it is inside the project and not a secret.
    pub(crate) fn project_relative(&self, path: &str, cwd: Option<&Path>) -> Option<String> {
        let given = Path::new(path);
        let absolute = if given.is_absolute() {
            given.to_path_buf()
        } else {
            cwd.unwrap_or(&self.root).join(given)
        };
        let absolute = lexical_normal(&absolute);
        let inside = absolute
            .strip_prefix(&self.root)
            .or_else(|_| absolute.strip_prefix(&self.real_root))
            .ok()?;
        let relative = paths::normalize_relative(&inside.to_string_lossy()).ok()?;
        self.guard.check(&relative).ok()?;
        Some(relative)
    }
}

/// `a/./b/../c` → `a/c` without touching the file system (the folder may be gone).
fn lexical_normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The lines of a touch's text, without blank lines at either end.
fn block_lines(text: &str) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    let first = lines.iter().position(|l| !l.trim().is_empty());
    let last = lines.iter().rposition(|l| !l.trim().is_empty());
    match (first, last) {
        (Some(a), Some(b)) => lines[a..=b].to_vec(),
        _ => Vec::new(),
    }
}

/// Where `block` occurs in `lines` (compared trimmed). Several places: the one nearest the
/// `hint`'s first line, if there is a hint; otherwise none, since a guess would be a lie.
fn find_block(lines: &[String], block: &[&str], hint: Option<[u32; 2]>) -> Option<[u32; 2]> {
    let first = block[0].trim();
    let len = block.len();
    let starts: Vec<usize> = (0..lines.len().saturating_sub(len - 1))
        .filter(|&i| lines[i].trim() == first)
        .filter(|&i| block.iter().zip(&lines[i..]).all(|(b, l)| b.trim() == l.trim()))
        .collect();
    let start = match (starts.as_slice(), hint) {
        ([], _) => return None,
        ([only], _) => *only,
        (many, Some([h, _])) => *many.iter().min_by_key(|&&s| (s as i64 + 1 - h as i64).abs())?,
        (_, None) => return None,
    };
    Some([start as u32 + 1, (start + len) as u32])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
    }

    #[test]
    fn blocks_are_found_by_trimmed_lines() {
        let file = lines("a\nfn x() {\n    y();\n}\nb\n");
        assert_eq!(find_block(&file, &["fn x() {", "  y();", "}"], None), Some([2, 4]));
        assert_eq!(find_block(&file, &["fn z() {"], None), None);
    }

    #[test]
    fn repeated_blocks_need_a_hint() {
        let file = lines("x\n}\nx\n}\n");
        assert_eq!(find_block(&file, &["x", "}"], None), None);
        assert_eq!(find_block(&file, &["x", "}"], Some([3, 4])), Some([3, 4]));
    }

    #[test]
    fn paths_outside_the_project_or_secret_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let a = Anchorer::new(dir.path(), PathGuard::for_project(dir.path()));
        let root = dir.path().display().to_string();
        assert_eq!(
            a.project_relative(&format!("{root}/src/a.rs"), None).as_deref(),
            Some("src/a.rs")
        );
        assert_eq!(
            a.project_relative("src/a.rs", Some(&dir.path().join("sub"))).as_deref(),
            Some("sub/src/a.rs")
        );
        assert_eq!(a.project_relative("../other/a.rs", Some(dir.path())), None);
        assert_eq!(a.project_relative("/etc/passwd", None), None);
        assert_eq!(a.project_relative(&format!("{root}/.env"), None), None);
        assert_eq!(a.project_relative(&format!("{root}/.git/config"), None), None);
    }

    #[test]
    fn repeated_touches_of_one_version_get_the_anchor_of_their_own_lines() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (1..=40)
            .map(|n| format!("let value_{n} = compute_{n}(input);\n"))
            .collect();
        std::fs::write(dir.path().join("a.rs"), &text).unwrap();
        let mut a = Anchorer::new(dir.path(), PathGuard::for_project(dir.path()));
        let touch = |lines: [u32; 2]| Touch {
            path: "a.rs".into(),
            lines: Some(lines),
            text: None,
            kind: TouchKind::Read,
        };
        let file = SourceFile::from_bytes(text.into_bytes());
        // Each range twice, interleaved: the second of each comes from the cache.
        for lines in [[1, 40], [5, 9], [1, 40], [5, 9], [30, 99]] {
            let reference = a.reference(&touch(lines), Some(dir.path()), None).unwrap();
            let end = lines[1].min(40);
            assert_eq!(reference.lines, [lines[0], end]);
            assert_eq!(reference.anchor, anchor::capture(&file, lines[0], end), "{lines:?}");
        }
    }
}

//! Checking references against the working tree: where each one is now, and how it fared.
//!
//! A [`Checker`] caches each file it reads, so checking 10,000 references in 2,000 files reads
//! every file once. A reference whose lines are gone from their file is searched for in other
//! files (renames reported by the watcher first, then the project's other text files), which
//! finds files moved by tools that delete and re-create rather than rename.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use zblade_core::Anchor;

use crate::drift::{Drift, GitRepo, blob_hash, drift_without_git};
use zblade_core::ReferenceStatus;

use crate::anchor::line_pairs;
use crate::idents::{IdentIndex, MIN_IDENTS, anchor_idents};
use crate::resolve::{Found, resolve};
use zblade_core::PathGuard;

use crate::source::{ReadError, SourceFile, read_project_file_guarded};

/// Below this similarity a hit in another file does not count as the reference having moved.
const MOVED_MIN_SIMILARITY: f32 = 0.6;
/// Share of an anchor's identifiers a window must hold to count as where the code went.
const IDENT_MIN_SHARE: f32 = 0.6;

/// A reference as captured.
#[derive(Debug, Clone, PartialEq)]
pub struct RefRecord {
    /// Stable key (`conv_…/msg_…/0`).
    pub key: String,
    /// Path at capture, relative to the project root.
    pub file: String,
    /// Lines at capture.
    pub lines: [u32; 2],
    /// Anchor at capture (absent when the file could not be read then).
    pub anchor: Option<Anchor>,
    /// Blob hash at capture.
    pub git_hash: Option<String>,
    /// HEAD at capture.
    pub commit: Option<String>,
}

/// Where a reference is now.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Checked {
    /// The reference's key.
    pub key: String,
    /// How it fared.
    pub status: ReferenceStatus,
    /// Its file now (None when missing or unreadable).
    pub file: Option<String>,
    /// Its lines now.
    pub lines: Option<[u32; 2]>,
    /// 1.0 unless modified.
    pub similarity: f32,
    /// The file changed since capture.
    pub drift: Option<Drift>,
    /// Blob hash of the file now.
    pub current_blob: Option<String>,
    /// Why it is missing or unreadable, in words.
    pub reason: Option<String>,
}

impl Checked {
    /// Not found (yet): the starting point of every check.
    fn missing(key: &str) -> Self {
        Checked {
            key: key.to_string(),
            status: ReferenceStatus::Missing,
            file: None,
            lines: None,
            similarity: 0.0,
            drift: None,
            current_blob: None,
            reason: None,
        }
    }
}

/// Checks references against the working tree, reading each file at most once.
pub struct Checker<'a> {
    root: PathBuf,
    /// Secrets and tool folders are never read ([`zblade_core::protected`]).
    guard: PathGuard,
    git: Option<&'a GitRepo>,
    files: HashMap<String, Result<SourceFile, ReadError>>,
    renames: HashMap<String, String>,
    candidates: Option<Vec<String>>,
    /// Commits since capture, per (file, captured commit): a revision walk is the costliest
    /// part of a check, and many references share a file.
    commits_since: HashMap<(String, String), Option<u32>>,
    /// Blob hash per file (SHA-1 of the whole file, shared by its references).
    blobs: HashMap<String, String>,
    /// The identifiers of every readable candidate file and the files' names, built the first
    /// time a reference is found by no line at all.
    ident_index: Option<(IdentIndex, Vec<String>)>,
}

impl<'a> Checker<'a> {
    /// A checker for the project at `root`.
    pub fn new(root: &Path, git: Option<&'a GitRepo>) -> Self {
        Checker {
            root: root.to_path_buf(),
            guard: PathGuard::for_project(root),
            git,
            files: HashMap::new(),
            renames: HashMap::new(),
            candidates: None,
            commits_since: HashMap::new(),
            blobs: HashMap::new(),
            ident_index: None,
        }
    }

    /// Tells the checker that `from` was renamed to `to` (from a watcher event).
    pub fn hint_rename(&mut self, from: &str, to: &str) {
        self.renames.insert(from.to_string(), to.to_string());
    }

    /// Forgets cached contents of `file` (it changed).
    pub fn forget(&mut self, file: &str) {
        self.files.remove(file);
        self.blobs.remove(file);
        self.ident_index = None;
    }

    /// The git blob hash of a file already read (computed once per file).
    fn blob_of(&mut self, relative: &str) -> String {
        if let Some(blob) = self.blobs.get(relative) {
            return blob.clone();
        }
        let blob = match self.files.get(relative) {
            Some(Ok(file)) => blob_hash(&file.bytes),
            _ => String::new(),
        };
        self.blobs.insert(relative.to_string(), blob.clone());
        blob
    }

    /// Reads (once) a project file.
    pub fn file(&mut self, relative: &str) -> Result<&SourceFile, ReadError> {
        let (root, guard) = (&self.root, &self.guard);
        self.files
            .entry(relative.to_string())
            .or_insert_with(|| read_project_file_guarded(root, relative, guard))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Captures anchor, blob hash and HEAD commit for lines of a file as they are now.
    /// `None` (with the reason) when the file cannot be read.
    pub fn capture(&mut self, relative: &str, lines: [u32; 2]) -> Result<(Option<Anchor>, String), ReadError> {
        let file = self.file(relative)?;
        Ok((crate::anchor::capture(file, lines[0], lines[1]), blob_hash(&file.bytes)))
    }

    /// HEAD now, if the project is in a git repository.
    pub fn head_commit(&self) -> Option<String> {
        self.git.and_then(GitRepo::head_commit)
    }

    /// Where `reference` is now.
    pub fn check(&mut self, reference: &RefRecord) -> Checked {
        let mut checked = Checked::missing(&reference.key);
        let Some(anchor) = &reference.anchor else {
            // Nothing to search for: judge by the file and the range alone.
            match self.file(&reference.file) {
                Ok(file) if (reference.lines[0] as usize) <= file.line_count() => {
                    checked.status = ReferenceStatus::Ok;
                    checked.file = Some(reference.file.clone());
                    checked.lines = Some([reference.lines[0], reference.lines[1].min(file.line_count() as u32)]);
                    checked.similarity = 1.0;
                    checked.current_blob = Some(blob_hash(&file.bytes)); // rare: no anchor
                    checked.reason = Some("captured without an anchor; the range is taken as is".into());
                }
                Ok(file) => {
                    checked.reason = Some(format!(
                        "lines {}-{} are past the end of the file ({} lines)",
                        reference.lines[0],
                        reference.lines[1],
                        file.line_count()
                    ));
                }
                Err(err) => self.explain(&mut checked, err),
            }
            return checked;
        };

        match self.file(&reference.file) {
            Ok(file) => {
                if let Some(found) = resolve(anchor, reference.lines[0], file) {
                    let blob = self.blob_of(&reference.file);
                    self.place(&mut checked, reference, &reference.file, found, blob);
                    return checked;
                }
            }
            Err(
                err @ (ReadError::Binary
                | ReadError::TooLarge(_)
                | ReadError::OutsideProject(_)
                | ReadError::Protected(_)),
            ) => {
                self.explain(&mut checked, err);
                return checked;
            }
            Err(_) => {}
        }
        // Not in its file: follow a known rename, then search the project by lines, then by
        // the identifiers the code kept.
        if let Some(found) = self.search_elsewhere(reference, anchor) {
            return found;
        }
        if let Some(found) = self.search_by_identifiers(reference, anchor) {
            return found;
        }
        checked.reason = Some(match self.file(&reference.file) {
            Ok(_) => "the referenced lines are no longer in the file".into(),
            Err(err) => format!("{err}; not found in any other file"),
        });
        checked
    }

    fn explain(&self, checked: &mut Checked, err: ReadError) {
        checked.status = match err {
            ReadError::NotFound | ReadError::Io(_) => ReferenceStatus::Missing,
            _ => ReferenceStatus::Unreadable,
        };
        checked.reason = Some(err.to_string());
    }

    fn place(&mut self, checked: &mut Checked, reference: &RefRecord, path: &str, found: Found, blob: String) {
        let moved = path != reference.file;
        checked.status = if moved { ReferenceStatus::Moved } else { found.status };
        checked.file = Some(path.to_string());
        checked.lines = Some(found.lines);
        checked.similarity = found.similarity;
        checked.drift = match reference.git_hash.as_deref() {
            Some(captured) if captured != blob => {
                let mut drift = drift_without_git(captured, &blob).expect("blobs differ");
                if let (Some(git), Some(commit), false) = (self.git, reference.commit.as_deref(), moved) {
                    drift.commits_since = *self
                        .commits_since
                        .entry((path.to_string(), commit.to_string()))
                        .or_insert_with(|| git.commits_touching_since(path, commit));
                }
                Some(drift)
            }
            _ => None,
        };
        checked.current_blob = Some(blob);
    }

    fn search_elsewhere(&mut self, reference: &RefRecord, anchor: &Anchor) -> Option<Checked> {
        let mut order: Vec<String> = Vec::new();
        let mut from = reference.file.clone();
        while let Some(to) = self.renames.get(&from) {
            if order.contains(to) {
                break;
            }
            order.push(to.clone());
            from = to.clone();
        }
        // Files with the same name or extension are the likeliest destinations.
        let name = Path::new(&reference.file).file_name().map(|n| n.to_owned());
        let ext = Path::new(&reference.file).extension().map(|e| e.to_owned());
        let mut rest: Vec<String> = self
            .candidates()
            .iter()
            .filter(|c| **c != reference.file && !order.contains(c))
            .cloned()
            .collect();
        rest.sort_by_key(|c| {
            let p = Path::new(c);
            (
                p.file_name().map(|n| n.to_owned()) != name,
                p.extension().map(|e| e.to_owned()) != ext,
            )
        });
        order.extend(rest);
        let mut best: Option<(String, Found, String)> = None;
        for candidate in order {
            let Ok(file) = self.file(&candidate) else { continue };
            let Some(found) = resolve(anchor, reference.lines[0], file) else {
                continue;
            };
            if found.similarity < MOVED_MIN_SIMILARITY {
                continue;
            }
            let exact = found.similarity >= 1.0;
            let blob = self.blob_of(&candidate);
            if best.as_ref().is_none_or(|(_, b, _)| found.similarity > b.similarity) {
                best = Some((candidate, found, blob));
            }
            if exact {
                break;
            }
        }
        let (path, found, blob) = best?;
        let mut checked = Checked::missing(&reference.key);
        self.place(&mut checked, reference, &path, found, blob);
        Some(checked)
    }

    /// Where the referenced code went when none of its lines is left as it was: the window of
    /// the project holding most of the anchor's identifiers, if it holds at least
    /// [`IDENT_MIN_SHARE`] of them. Reported `modified` (or `moved`) with that share as its
    /// similarity: found by names, never claimed unchanged.
    fn search_by_identifiers(&mut self, reference: &RefRecord, anchor: &Anchor) -> Option<Checked> {
        let idents = anchor_idents(&anchor.idents);
        if idents.len() < MIN_IDENTS {
            return None;
        }
        if self.ident_index.is_none() {
            let names = self.candidates().to_vec();
            for name in &names {
                let _ = self.file(name);
            }
            let files: Vec<&SourceFile> = names
                .iter()
                .filter_map(|name| self.files.get(name).and_then(|f| f.as_ref().ok()))
                .collect();
            let readable: Vec<String> = names
                .iter()
                .filter(|name| self.files.get(*name).is_some_and(Result::is_ok))
                .cloned()
                .collect();
            self.ident_index = Some((IdentIndex::build(files), readable));
        }
        let (index, names) = self.ident_index.as_ref().expect("built above");
        let len = anchor.len as usize;
        let span = len + len / 2 + 8;
        let prefer = names
            .iter()
            .position(|n| *n == reference.file)
            .map(|f| (f, reference.lines[0].saturating_sub(1) as usize));
        let hit = index.best_window(&idents, span, prefer)?;
        if hit.share < IDENT_MIN_SHARE {
            return None;
        }
        let path = names[hit.file].clone();
        let lines_now = self.file(&path).ok()?.line_count();
        let first = hit.lines[0];
        let last = hit.lines[1]
            .max(first + len.saturating_sub(1))
            .min(lines_now.saturating_sub(1));
        // The similarity says how much of the text is unchanged (as for any modified range),
        // not how many names were found: lines kept exactly, as a share of both ranges (Dice).
        // Found by names, the code changed or was re-indented, so it is never 1.0.
        let similarity = {
            let file = self.file(&path).ok()?;
            let pairs = line_pairs(anchor);
            let mut left: HashMap<u64, usize> = HashMap::new();
            for &(_, h) in &pairs {
                *left.entry(h).or_default() += 1;
            }
            let window = &file.hashes[first..=last];
            let kept = window
                .iter()
                .filter(|h| match left.get_mut(h) {
                    Some(n) if *n > 0 => {
                        *n -= 1;
                        true
                    }
                    _ => false,
                })
                .count();
            let dice = 2.0 * kept as f32 / (pairs.len() + window.len()) as f32;
            dice.min(0.99)
        };
        let found = Found {
            status: ReferenceStatus::Modified,
            lines: [first as u32 + 1, last as u32 + 1],
            similarity,
        };
        let blob = self.blob_of(&path);
        let mut checked = Checked::missing(&reference.key);
        self.place(&mut checked, reference, &path, found, blob);
        checked.reason = Some(format!(
            "found by {:.0}% of its identifiers; {:.0}% of its lines are unchanged",
            hit.share * 100.0,
            similarity * 100.0
        ));
        Some(checked)
    }

    /// The project's text files (honouring .gitignore), listed once per checker.
    fn candidates(&mut self) -> &[String] {
        let root = self.root.clone();
        let guard = &self.guard;
        self.candidates.get_or_insert_with(|| {
            let mut files = Vec::new();
            let walker = ignore::WalkBuilder::new(&root)
                .hidden(false)
                .filter_entry(|e| e.file_name() != ".git" && e.file_name() != ".zblade")
                .build();
            for entry in walker.flatten() {
                if entry.file_type().is_some_and(|t| t.is_file())
                    && entry.metadata().is_ok_and(|m| m.len() <= crate::MAX_FILE_BYTES)
                    && let Ok(rel) = entry.path().strip_prefix(&root)
                {
                    let rel = rel.to_string_lossy().replace('\\', "/");
                    // A reference never "moves" into a secret.
                    if guard.check(&rel).is_ok() {
                        files.push(rel);
                    }
                }
            }
            files.sort();
            files
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_moved_into_an_impl_and_edited_is_found_by_its_names_and_never_called_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/loader")).unwrap();
        std::fs::write(
            root.join("src/config.rs"),
            "use std::path::Path;\n\npub fn parse_config_file(path: &Path) -> Config {\n    let raw = read_settings(path);\n    let merged = merge_defaults(raw, DEFAULT_TIMEOUT);\n    validate_limits(&merged);\n    merged\n}\n",
        )
        .unwrap();
        let (anchor, _) = Checker::new(root, None).capture("src/config.rs", [3, 8]).unwrap();
        let reference = RefRecord {
            key: "conv/m1/0".into(),
            file: "src/config.rs".into(),
            lines: [3, 8],
            anchor,
            git_hash: None,
            commit: None,
        };
        std::fs::write(root.join("src/config.rs"), "pub fn unrelated() {}\n").unwrap();
        std::fs::write(
            root.join("src/loader/mod.rs"),
            "pub struct Loader;\n\nimpl Loader {\n    pub fn parse_config_file(&self, path: &Path, strict: bool) -> Result<Config> {\n        let raw = read_settings(path)?;\n        let merged = merge_defaults(raw, DEFAULT_TIMEOUT);\n        validate_limits(&merged, strict)?;\n        Ok(merged)\n    }\n}\n",
        )
        .unwrap();
        let checked = Checker::new(root, None).check(&reference);
        assert_eq!(checked.status, ReferenceStatus::Moved);
        assert_eq!(checked.file.as_deref(), Some("src/loader/mod.rs"));
        assert_eq!(checked.lines, Some([4, 9]));
        assert!(checked.similarity < 1.0, "{}", checked.similarity);
        assert!(checked.reason.unwrap().contains("identifiers"));

        // Without identifiers in the anchor (captured by an older zblade) it stays missing.
        let mut old = reference.clone();
        old.anchor.as_mut().unwrap().idents.clear();
        assert_eq!(Checker::new(root, None).check(&old).status, ReferenceStatus::Missing);
    }
}

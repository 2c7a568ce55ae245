//! `zblade fsck`: compare the artifacts (the truth) with the index (a cache) and, on request,
//! repair the index. Artifacts are never modified or deleted; only temp files left by an
//! interrupted write are removed.

use std::collections::HashMap;

use serde::Serialize;
use zblade_core::Result;
use zblade_index::{ArtifactKind, Index};

use crate::lock::WriteLock;
use crate::project::Project;
use crate::scan;

/// The kind of a disagreement between artifacts and index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// An artifact the index does not know.
    Missing,
    /// An index entry whose artifact is gone.
    Extra,
    /// An artifact whose content differs from what was indexed.
    Changed,
    /// An artifact that cannot be parsed or breaks the schema.
    Unreadable,
    /// A temp file left by an interrupted write.
    Leftover,
    /// The index database itself is damaged.
    IndexCorrupt,
}

/// One problem, naming the file it concerns.
#[derive(Debug, Clone, Serialize)]
pub struct Problem {
    /// What is wrong.
    pub kind: ProblemKind,
    /// The file, relative to the project root.
    pub path: String,
    /// Details: the parse error, the id, ...
    pub detail: String,
    /// Whether `--repair` fixed it.
    pub repaired: bool,
}

/// The outcome of `fsck`.
#[derive(Debug, Clone, Serialize)]
pub struct FsckReport {
    /// Artifacts examined.
    pub artifacts: usize,
    /// Everything found.
    pub problems: Vec<Problem>,
}

impl FsckReport {
    /// True when nothing is wrong, or every problem was repaired.
    pub fn is_clean(&self) -> bool {
        self.problems.iter().all(|p| p.repaired)
    }
}

impl Project {
    /// Compares artifacts and index; with `repair`, brings the index in line with the artifacts.
    pub fn fsck(&mut self, repair: bool) -> Result<FsckReport> {
        let lock = if repair {
            Some(WriteLock::acquire(self.layout())?)
        } else {
            None
        };
        if let Err(message) = &self.parts.index {
            let mut problem = Problem {
                kind: ProblemKind::IndexCorrupt,
                path: self.layout().relative(&self.layout().database()),
                detail: message.clone(),
                repaired: false,
            };
            let mut problems = Vec::new();
            if repair {
                drop(lock); // reindex takes the lock itself
                let report = self.reindex()?;
                problem.repaired = true;
                problems.push(problem);
                problems.extend(report.skipped.into_iter().map(|(path, detail)| Problem {
                    kind: ProblemKind::Unreadable,
                    path,
                    detail,
                    repaired: false,
                }));
                return Ok(FsckReport {
                    artifacts: report.conversations + report.moments,
                    problems,
                });
            }
            problems.push(problem);
            return Ok(FsckReport { artifacts: 0, problems });
        }

        let scan = scan::scan(self.layout())?;
        let indexed: HashMap<String, (ArtifactKind, String, String)> = self
            .index()?
            .indexed_artifacts()?
            .into_iter()
            .map(|a| (a.artifact_path, (a.kind, a.id, a.sha256)))
            .collect();
        let mut problems = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let index = self.parts.index.as_mut().expect("checked above");

        for loaded in &scan.conversations {
            seen.insert(loaded.path.clone());
            if let Some(kind) = compare(&indexed, &loaded.path, &loaded.sha256) {
                let repaired = repair
                    && index
                        .put_conversation(&loaded.artifact, &loaded.path, &loaded.sha256)
                        .is_ok();
                problems.push(Problem {
                    kind,
                    path: loaded.path.clone(),
                    detail: loaded.artifact.conversation_id.clone(),
                    repaired,
                });
            }
        }
        for loaded in &scan.moments {
            seen.insert(loaded.path.clone());
            if let Some(kind) = compare(&indexed, &loaded.path, &loaded.sha256) {
                let result = if repair {
                    Some(index.put_moment(&loaded.artifact, &loaded.path, &loaded.sha256))
                } else {
                    None
                };
                let detail = match &result {
                    Some(Err(err)) => err.to_string(),
                    _ => loaded.artifact.id.clone(),
                };
                problems.push(Problem {
                    kind,
                    path: loaded.path.clone(),
                    detail,
                    repaired: matches!(result, Some(Ok(()))),
                });
            }
        }
        for (path, err) in &scan.unreadable {
            seen.insert(path.clone());
            // The artifact stays untouched for the user to fix; the index forgets its old content
            // so that search never serves what the truth no longer says.
            // It stays a problem (repaired: false) until the user fixes the file.
            let mut detail = err.to_string();
            if repair && let Some((kind, id, _)) = indexed.get(path) {
                remove(index, *kind, id)?;
                detail.push_str(" (its old entry was removed from the index)");
            }
            problems.push(Problem {
                kind: ProblemKind::Unreadable,
                path: path.clone(),
                detail,
                repaired: false,
            });
        }
        let mut extra: Vec<_> = indexed.iter().filter(|(path, _)| !seen.contains(*path)).collect();
        extra.sort_by(|a, b| a.0.cmp(b.0));
        for (path, (kind, id, _)) in extra {
            let repaired = repair && remove(index, *kind, id).is_ok();
            problems.push(Problem {
                kind: ProblemKind::Extra,
                path: path.clone(),
                detail: id.clone(),
                repaired,
            });
        }
        for leftover in &scan.leftovers {
            let repaired = repair && std::fs::remove_file(leftover).is_ok();
            problems.push(Problem {
                kind: ProblemKind::Leftover,
                path: self.layout().relative(leftover),
                detail: "temporary file of an interrupted write; the artifact itself is intact".into(),
                repaired,
            });
        }
        Ok(FsckReport {
            artifacts: scan.conversations.len() + scan.moments.len() + scan.unreadable.len(),
            problems,
        })
    }
}

fn compare(indexed: &HashMap<String, (ArtifactKind, String, String)>, path: &str, sha: &str) -> Option<ProblemKind> {
    match indexed.get(path) {
        None => Some(ProblemKind::Missing),
        Some((_, _, indexed_sha)) if indexed_sha != sha => Some(ProblemKind::Changed),
        Some(_) => None,
    }
}

fn remove(index: &mut Index, kind: ArtifactKind, id: &str) -> Result<bool> {
    match kind {
        ArtifactKind::Conversation => index.remove_conversation(id),
        ArtifactKind::Moment => index.remove_moment(id),
    }
}

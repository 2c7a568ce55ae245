//! The repository's history as memory (docs/DECISIONS.md): `zblade index` and the watcher read
//! the commits HEAD gained since the last read, redact their messages, attribute every line
//! they wrote, and store it all in the index — so a commit is found by search like a turn, and
//! "are the lines it wrote still there?" is answered without running blame.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use serde::Serialize;
use zblade_core::{Error, Result};
use zblade_index::{CommitFate, HistoryUpdate, StoredCommit};
use zblade_refs::attribution::{self, Effects, LineOwners};
use zblade_refs::{GitRepo, HistoryLimits};

use zblade_context::{Candidate, Item, Source};
use zblade_search::chunk::cid;

use crate::parts::Parts;
use crate::project::Project;

/// The most commits one page of `list_commits` returns.
pub const MAX_COMMITS_PAGE: usize = 1000;

/// What reading the history did.
#[derive(Debug, Clone, Default, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct HistoryReport {
    /// Commits read this time.
    pub read: usize,
    /// Commits in the index now.
    pub commits: u64,
    /// The history was read from the start (first run, or history rewritten).
    pub from_scratch: bool,
    /// Secrets replaced in commit messages.
    pub redacted: usize,
    /// What the user should know: no repository, a shallow clone, a rewritten history.
    pub notes: Vec<String>,
    /// Wall time.
    #[serde(serialize_with = "crate::semantic::secs")]
    #[cfg_attr(feature = "specta", specta(type = f64))]
    pub elapsed: Duration,
}

/// A commit with what became of its lines: what `show`, `list commits`, `why` and the pack show.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct CommitView {
    /// The commit.
    #[serde(flatten)]
    pub commit: StoredCommit,
    /// Its lines at the indexed HEAD.
    pub fate: CommitFate,
    /// That, in words: "unchanged", "changed since by def4567 'refactor: tidy auth'", "gone".
    pub status: String,
}

/// The subject as quoted beside a commit id: at most 60 characters.
pub(crate) fn quoted_subject(subject: &str) -> String {
    let short: String = subject.chars().take(60).collect();
    if short.len() < subject.len() {
        format!("'{}…'", short.trim_end())
    } else {
        format!("'{short}'")
    }
}

/// Later commits named in a fate; the others are counted.
const NAMED_CHANGES: usize = 2;

/// A commit's fate in words.
pub(crate) fn describe_fate(fate: &CommitFate) -> String {
    if fate.written == 0 {
        return "wrote no lines that are followed (deletions, binary or huge files only)".into();
    }
    if fate.changed_by.is_empty() {
        return format!("its {} line(s) are unchanged", fate.written);
    }
    // The commits that changed most of its lines, named; the rest counted.
    let mut by_size: Vec<&zblade_index::LaterChange> = fate.changed_by.iter().collect();
    by_size.sort_by_key(|c| std::cmp::Reverse(c.rewritten + c.deleted));
    let mut changes: Vec<String> = by_size
        .iter()
        .take(NAMED_CHANGES)
        .map(|c| format!("{} {}", &c.sha[..c.sha.len().min(7)], quoted_subject(&c.subject)))
        .collect();
    if by_size.len() > NAMED_CHANGES {
        changes.push(format!("{} other commit(s)", by_size.len() - NAMED_CHANGES));
    }
    if fate.standing == 0 && fate.changed_by.iter().all(|c| c.rewritten == 0) {
        return format!("gone: its lines were deleted by {}", changes.join(", "));
    }
    format!(
        "changed since by {} ({} of its {} line(s) still as written)",
        changes.join(", "),
        fate.standing,
        fate.written
    )
}

impl Parts {
    /// A commit found by search, as a context candidate: its message and what became of the
    /// lines it wrote (never its old code).
    pub(crate) fn commit_candidate(&self, sha: &str, retrieval: f64) -> Result<Option<Candidate>> {
        let index = self.index()?;
        let Some(commit) = index.commit(sha)? else {
            return Ok(None);
        };
        let fate = index.commit_fate(commit.pk)?;
        let text = match commit.body.is_empty() {
            true => commit.subject.clone(),
            false => format!("{}\n\n{}", commit.subject, commit.body),
        };
        let author = commit.author.split(" <").next().unwrap_or_default().to_string();
        let time = chrono::DateTime::parse_from_rfc3339(&commit.committed_at)
            .ok()
            .map(|t| t.with_timezone(&chrono::Utc));
        Ok(Some(Candidate {
            key: format!("commit:{}", commit.sha),
            cid: cid(&text),
            source: Source::Retrieved,
            item: Item::Commit {
                date: commit.committed_at.get(..10).unwrap_or_default().to_string(),
                status: describe_fate(&fate),
                sha: commit.sha,
                author: author.clone(),
            },
            text,
            time,
            retrieval,
            author: None,
            standing: None,
        }))
    }
}

impl Project {
    /// Reads the commits HEAD gained since the last read into the index (all of them the first
    /// time, or when history was rewritten); a folder without git has no history, which is a
    /// note, not an error.
    pub fn index_history(&mut self) -> Result<HistoryReport> {
        let started = Instant::now();
        let mut report = HistoryReport::default();
        let Some(git) = GitRepo::discover(self.layout().root()) else {
            report
                .notes
                .push("not a git repository: there is no history to remember".into());
            return Ok(report);
        };
        let indexed = self.index()?.history_head()?;
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(4);
        let read = git.read_history(indexed.as_deref(), &HistoryLimits::default(), threads);
        report.notes = read.notes;
        report.from_scratch = read.from_scratch;
        report.read = read.commits.len();
        if read.head.is_some() && read.head != indexed {
            let first = match read.from_scratch {
                true => 1,
                false => self.index()?.next_commit_pk()?,
            };
            let touched: BTreeSet<&str> = read
                .commits
                .iter()
                .flat_map(|c| c.files.iter())
                .flat_map(|f| std::iter::once(f.path.as_str()).chain(f.old_path.as_deref()))
                .collect();
            let stored = match read.from_scratch {
                true => HashMap::new(),
                false => self.index()?.line_owners(&touched.into_iter().collect::<Vec<_>>())?,
            };
            let mut files = HashMap::new();
            for (path, runs) in stored {
                match attribution::decode(&runs) {
                    Some(lines) => {
                        files.insert(path, lines);
                    }
                    // Its lines count as unknown from here on; nothing else is lost.
                    None => report.notes.push(format!(
                        "{path}: stored line attribution is unreadable; starting it over"
                    )),
                }
            }
            let mut owners = LineOwners::from_files(files);
            let mut effects = Effects::default();
            for (i, commit) in read.commits.iter().enumerate() {
                let pk = (first + i as i64) as u32;
                for change in &commit.files {
                    owners.apply(pk, change, &mut effects);
                }
            }
            let mut update = HistoryUpdate {
                from_scratch: read.from_scratch,
                head: read.head,
                ..HistoryUpdate::default()
            };
            for (i, commit) in read.commits.into_iter().enumerate() {
                let pk = first + i as i64;
                let (mut subject, mut body) = (commit.subject, commit.body);
                report.redacted += zblade_import::redact::redact_in_place(&mut subject)
                    + zblade_import::redact::redact_in_place(&mut body);
                let time = chrono::DateTime::from_timestamp(commit.time, 0).unwrap_or_default();
                update.commits.push(StoredCommit {
                    pk,
                    sha: commit.sha,
                    parents: commit.parents,
                    author: commit.author,
                    committed_at: zblade_index::timestamp(time),
                    subject,
                    body,
                    paths: commit.files.iter().map(|f| f.path.clone()).collect(),
                    files_changed: commit.files_changed as u64,
                    lines_added: commit.lines_added,
                    lines_removed: commit.lines_removed,
                    written: effects.written.get(&(pk as u32)).copied().unwrap_or(0),
                });
            }
            update.overwrites = effects
                .overwrites
                .into_iter()
                .map(|((o, path), (rewritten, deleted))| {
                    (i64::from(o.commit), i64::from(o.by), path, rewritten, deleted)
                })
                .collect();
            update.owners = owners
                .take_changed()
                .into_iter()
                .map(|(path, lines)| (path, lines.map(attribution::encode)))
                .collect();
            self.index_mut()?.put_history(&update)?;
        }
        report.commits = self.index()?.commit_count()?;
        report.elapsed = started.elapsed();
        Ok(report)
    }

    /// The commit `sha` (or a prefix of it) with what became of its lines.
    pub fn commit(&self, sha: &str) -> Result<CommitView> {
        let index = self.index()?;
        let commit = index.commit(sha)?.ok_or_else(|| {
            Error::NotFound(format!(
                "no commit {sha} in the index ({} commits indexed; `zblade index` reads new ones)",
                index.commit_count().unwrap_or(0)
            ))
        })?;
        self.commit_view(commit)
    }

    /// Commits, newest first.
    pub fn list_commits(&self, limit: usize, offset: usize) -> Result<Vec<CommitView>> {
        let commits = self.index()?.list_commits(limit.min(MAX_COMMITS_PAGE), offset)?;
        commits.into_iter().map(|c| self.commit_view(c)).collect()
    }

    pub(crate) fn commit_view(&self, commit: StoredCommit) -> Result<CommitView> {
        let fate = self.index()?.commit_fate(commit.pk)?;
        let status = describe_fate(&fate);
        Ok(CommitView { commit, fate, status })
    }
}

#[cfg(test)]
mod tests {
    use zblade_index::LaterChange;

    use super::*;

    #[test]
    fn a_fate_reads_as_a_sentence() {
        let mut fate = CommitFate {
            written: 12,
            standing: 12,
            changed_by: Vec::new(),
        };
        assert_eq!(describe_fate(&fate), "its 12 line(s) are unchanged");
        fate.standing = 9;
        fate.changed_by.push(LaterChange {
            sha: "def4567890".into(),
            subject: "refactor: tidy auth".into(),
            committed_at: String::new(),
            rewritten: 3,
            deleted: 0,
            paths: vec!["src/auth.rs".into()],
        });
        assert_eq!(
            describe_fate(&fate),
            "changed since by def4567 'refactor: tidy auth' (9 of its 12 line(s) still as written)"
        );
        fate.standing = 0;
        fate.changed_by[0].rewritten = 0;
        fate.changed_by[0].deleted = 12;
        assert!(describe_fate(&fate).starts_with("gone"));
    }
}

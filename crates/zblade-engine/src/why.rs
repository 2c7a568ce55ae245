//! "Why is this code like this?" — `why(file, lines)`: the commits that wrote those lines and
//! the ones whose lines they replaced (from the line attribution `zblade index` keeps), and the
//! conversations and moments whose code references overlap them, each with its status; newest
//! standing decision first.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use zblade_core::{Error, Result};
use zblade_index::{HitKind, StoredCommit};
use zblade_refs::attribution;

use crate::history::{CommitView, quoted_subject};
use crate::parts::Parts;
use crate::project::Project;
use crate::refs::ReferenceReport;

/// Most commits and memories one answer lists.
const MAX_ANSWERS: usize = 20;

/// The answer to `why(file, lines)`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Why {
    /// The file, relative to the project root.
    pub file: String,
    /// The lines asked about (1-based, inclusive).
    pub lines: (u32, u32),
    /// Commits, newest first.
    pub commits: Vec<WhyCommit>,
    /// Conversations' turns and moments whose references overlap the lines, standing ones
    /// first, newest first.
    pub memory: Vec<WhyMemory>,
    /// What the answer cannot say (no history indexed, lines beyond the file).
    pub notes: Vec<String>,
}

/// A commit behind the lines.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct WhyCommit {
    /// The commit and what became of all the lines it wrote.
    #[serde(flatten)]
    pub view: CommitView,
    /// `wrote` (these lines are its lines now) or `replaced` (it wrote lines that these replaced).
    pub role: String,
    /// How many of the asked lines are its (for `wrote`) or replaced its (for `replaced`).
    pub lines: u32,
}

/// A remembered turn or moment about the lines.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct WhyMemory {
    /// `message` or `moment`.
    pub kind: HitKind,
    /// `conv_…/msg_…` or `moment_…`: what `zblade show` takes.
    pub id: String,
    /// The conversation's title, or the moment's type.
    pub title: String,
    /// The text's opening (300 characters).
    pub text: String,
    /// When it was written (RFC 3339).
    pub time: Option<String>,
    /// The reference that overlaps the lines, checked now.
    pub reference: ReferenceReport,
    /// Commits that changed the referenced lines after it was written: the regression, named.
    pub changed_since: Vec<String>,
    /// Set when it no longer stands: superseded or rejected (see `zblade moments supersede`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<zblade_index::DecisionState>,
}

/// `FILE`, `FILE:LINE` or `FILE:START-END` as (file, lines), the way every face names lines.
pub fn parse_line_target(target: &str) -> Result<(String, Option<(u32, u32)>)> {
    let target = target.trim();
    let Some((file, lines)) = target.rsplit_once(':') else {
        return Ok((target.to_string(), None));
    };
    let number = |s: &str| s.trim().parse::<u32>().ok().filter(|&n| n > 0);
    let range = match lines.split_once('-') {
        Some((a, b)) => number(a).zip(number(b)),
        None => number(lines).map(|n| (n, n)),
    };
    match range {
        Some((start, end)) if start <= end => Ok((file.to_string(), Some((start, end)))),
        _ => Err(Error::Usage(format!(
            "{target:?}: give FILE, FILE:LINE or FILE:START-END (lines from 1, START <= END)"
        ))),
    }
}

impl Parts {
    /// Commits after `since` (RFC 3339) that wrote any of `lines` of `file` as they are now,
    /// as `abc1234 'subject'`: what changed code a decision pointed at.
    pub(crate) fn changed_since(&self, file: &str, lines: (u32, u32), since: Option<&str>) -> Result<Vec<String>> {
        let Some(since) = since else {
            return Ok(Vec::new());
        };
        let owners = self.owners_of(file, lines)?;
        let commits = self
            .index()?
            .commits_by_pk(&owners.keys().map(|&o| i64::from(o)).collect::<Vec<_>>())?;
        let mut later: Vec<&StoredCommit> = commits.values().filter(|c| c.committed_at.as_str() > since).collect();
        later.sort_by_key(|c| std::cmp::Reverse(c.pk));
        Ok(later
            .into_iter()
            .map(|c| format!("{} {}", c.short(), quoted_subject(&c.subject)))
            .collect())
    }

    /// For the lines `start..=end` of `file`: owner → (lines it wrote, lines whose replaced
    /// owner it is) — wrote counts under `.0`, replaced under `.1`.
    fn owners_of(&self, file: &str, (start, end): (u32, u32)) -> Result<BTreeMap<u32, (u32, u32)>> {
        let stored = self.index()?.line_owners(&[file])?;
        let Some(lines) = stored.get(file).and_then(|runs| attribution::decode(runs)) else {
            return Ok(BTreeMap::new());
        };
        let mut out: BTreeMap<u32, (u32, u32)> = BTreeMap::new();
        let from = start.saturating_sub(1) as usize;
        for line in lines.iter().take(end as usize).skip(from) {
            if line.owner != 0 {
                out.entry(line.owner).or_default().0 += 1;
            }
            if line.replaced != 0 {
                out.entry(line.replaced).or_default().1 += 1;
            }
        }
        Ok(out)
    }
}

impl Project {
    /// Why lines `lines` (1-based, inclusive; `None`: the whole file) of `file` are as they are.
    pub fn why(&self, file: &str, lines: Option<(u32, u32)>) -> Result<Why> {
        let file =
            zblade_core::paths::normalize_relative(file.trim()).map_err(|why| Error::Usage(format!("path {why}")))?;
        let (start, end) = lines.unwrap_or((1, u32::MAX));
        if start == 0 || end < start {
            return Err(Error::Usage(format!(
                "lines {start}-{end}: give FILE:START-END with 1 <= START <= END"
            )));
        }
        let mut notes = Vec::new();
        let index = self.index()?;
        if index.history_head()?.is_none() {
            notes.push(match zblade_refs::GitRepo::discover(self.layout().root()) {
                Some(_) => "the repository's history is not indexed yet (run `zblade index`)".into(),
                None => "not a git repository: no commits to ask".into(),
            });
        }
        let owners = self.parts.owners_of(&file, (start, end))?;
        let commits = index.commits_by_pk(&owners.keys().map(|&o| i64::from(o)).collect::<Vec<_>>())?;
        let mut answers = Vec::new();
        for (owner, (wrote, replaced)) in owners {
            let Some(commit) = commits.get(&i64::from(owner)) else {
                continue;
            };
            let view = self.commit_view(commit.clone())?;
            for (role, count) in [("wrote", wrote), ("replaced", replaced)] {
                if count > 0 {
                    answers.push(WhyCommit {
                        view: view.clone(),
                        role: role.into(),
                        lines: count,
                    });
                }
            }
        }
        // Newest first, in history order (dates tie within a second and drift across rebases).
        answers.sort_by(|a, b| {
            b.view
                .commit
                .pk
                .cmp(&a.view.commit.pk)
                .then(a.role.cmp(&b.role).reverse())
        });
        answers.truncate(MAX_ANSWERS);

        let memory = self.memory_about(&file, (start, end))?;
        Ok(Why {
            file,
            lines: (start, end),
            commits: answers,
            memory,
            notes,
        })
    }

    /// Turns and moments whose references overlap the lines, checked now.
    fn memory_about(&self, file: &str, (start, end): (u32, u32)) -> Result<Vec<WhyMemory>> {
        let index = self.index()?;
        let stored = index.references_in_files(&[file.to_string()])?;
        let reports = self.parts.hydrate(&stored);
        let overlapping: Vec<ReferenceReport> = reports
            .into_iter()
            .filter(|r| {
                let at = r.live.as_ref().unwrap_or(&r.captured);
                at.file == file && at.lines[0] <= end && at.lines[1] >= start
            })
            .collect();
        let owners: BTreeSet<String> = overlapping
            .iter()
            .map(|r| match (&r.conversation_id, &r.message_id, &r.moment_id) {
                (_, _, Some(moment)) => moment.clone(),
                (Some(conv), Some(msg), None) => format!("{conv}/{msg}"),
                _ => String::new(),
            })
            .filter(|k| !k.is_empty())
            .collect();
        let texts = index.memory_texts(&owners.into_iter().collect::<Vec<_>>())?;
        let mut out = Vec::new();
        for text in texts {
            let Some(mut reference) = overlapping
                .iter()
                .find(|r| {
                    r.moment_id.as_deref() == Some(text.key.as_str())
                        || r.message_id
                            .as_ref()
                            .zip(r.conversation_id.as_ref())
                            .map(|(m, c)| format!("{c}/{m}"))
                            == Some(text.key.clone())
                })
                .cloned()
            else {
                continue;
            };
            reference.code = None;
            let time = text.time.map(zblade_index::timestamp);
            let at = reference.live.as_ref().unwrap_or(&reference.captured);
            let changed_since = self
                .parts
                .changed_since(&at.file, (at.lines[0], at.lines[1]), time.as_deref())?;
            let decision_id = text.conversation_id.clone().filter(|_| text.kind == HitKind::Message);
            let state = index.decision_state(decision_id.as_deref().unwrap_or(&text.id))?;
            out.push(WhyMemory {
                kind: text.kind,
                id: text.key.clone(),
                title: match text.kind {
                    HitKind::Moment => text.label.clone(),
                    _ => text.title.clone().unwrap_or_default(),
                },
                text: text.text.chars().take(300).collect(),
                time,
                reference,
                changed_since,
                state,
            });
        }
        // Standing first, then newest first.
        out.sort_by(|a, b| a.state.is_some().cmp(&b.state.is_some()).then(b.time.cmp(&a.time)));
        out.truncate(MAX_ANSWERS);
        Ok(out)
    }
}

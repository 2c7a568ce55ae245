//! Code references through the engine: capture when memory is added, check against the
//! working tree, store live locations, and hydrate references with the code as it is now.

use chrono::{SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use zblade_core::{CodeReference, Conversation, Error, Moment, Result};
use zblade_index::{LiveLocation, StoredReference};
use zblade_refs::{Checked, Checker, GitRepo, RefRecord};

use crate::parts::Parts;

/// A file and line range.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Location {
    /// Path relative to the project root.
    pub file: String,
    /// First and last line, 1-based, inclusive.
    pub lines: [u32; 2],
}

/// One code reference: what was captured, where it is now, and (when hydrated) the code there.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ReferenceReport {
    /// Stable key: `conv_…/msg_…/N` or `moment_…/N`.
    pub key: String,
    /// Its conversation.
    pub conversation_id: Option<String>,
    /// Its message.
    pub message_id: Option<String>,
    /// Its moment.
    pub moment_id: Option<String>,
    /// Why the code was referenced.
    pub context: Option<String>,
    /// Where it was at capture.
    pub captured: Location,
    /// Where it is now (None when missing or unreadable).
    pub live: Option<Location>,
    /// How it fared since capture.
    pub status: zblade_core::ReferenceStatus,
    /// 1.0 unless modified (a moved reference whose lines were also edited has less).
    pub similarity: f32,
    /// Set when the file changed since capture.
    pub drift: Option<zblade_refs::Drift>,
    /// Why it is missing or unreadable.
    pub reason: Option<String>,
    /// The code at the live location, read from the working tree now (when hydrated).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<Vec<String>>,
}

impl ReferenceReport {
    /// The status for people, saying everything that happened: `moved, modified (86% similar)`
    /// for code that went to another file and was edited there — `moved` alone would hide the
    /// edit.
    pub fn status_text(&self) -> String {
        status_text(self.status, self.similarity)
    }
}

/// See [`ReferenceReport::status_text`].
pub fn status_text(status: zblade_core::ReferenceStatus, similarity: f32) -> String {
    use zblade_core::ReferenceStatus::{Modified, Moved};
    let percent = (similarity * 100.0).round() as u32;
    match status {
        Modified => format!("modified ({percent}% similar)"),
        Moved if percent < 100 => format!("moved, modified ({percent}% similar)"),
        other => other.as_str().to_string(),
    }
}

/// The references an artifact carries, keyed as the index keys them (`conv_…/msg_…/N`,
/// `moment_…/N`): server mode has no index, and checks them straight from the artifact.
pub(crate) fn references_in_conversation(conv: &Conversation) -> Vec<StoredReference> {
    conv.messages
        .iter()
        .flat_map(|message| {
            message.code_references.iter().enumerate().map(|(i, reference)| {
                stored_reference(
                    format!("{}/{}/{i}", conv.conversation_id, message.id),
                    Some(&conv.conversation_id),
                    Some(&message.id),
                    None,
                    reference,
                )
            })
        })
        .collect()
}

/// See [`references_in_conversation`].
pub(crate) fn references_in_moment(moment: &Moment) -> Vec<StoredReference> {
    moment
        .code_references
        .iter()
        .enumerate()
        .map(|(i, reference)| {
            stored_reference(
                format!("{}/{i}", moment.id),
                moment.conversation_id.as_deref(),
                None,
                Some(&moment.id),
                reference,
            )
        })
        .collect()
}

/// A reference as captured in an artifact, under `key`.
pub(crate) fn stored_reference(
    key: String,
    conversation_id: Option<&str>,
    message_id: Option<&str>,
    moment_id: Option<&str>,
    reference: &CodeReference,
) -> StoredReference {
    StoredReference {
        key,
        conversation_id: conversation_id.map(str::to_string),
        message_id: message_id.map(str::to_string),
        moment_id: moment_id.map(str::to_string),
        file: reference.file.clone(),
        lines: reference.lines,
        context: reference.context.clone().or_else(|| reference.purpose.clone()),
        git_hash: reference.git_hash.clone(),
        commit: reference.commit.clone(),
        anchor: reference.anchor.clone(),
    }
}

fn record(stored: &StoredReference) -> RefRecord {
    RefRecord {
        key: stored.key.clone(),
        file: stored.file.clone(),
        lines: stored.lines,
        anchor: stored.anchor.clone(),
        git_hash: stored.git_hash.clone(),
        commit: stored.commit.clone(),
    }
}

fn report(stored: &StoredReference, checked: &Checked) -> ReferenceReport {
    ReferenceReport {
        key: stored.key.clone(),
        conversation_id: stored.conversation_id.clone(),
        message_id: stored.message_id.clone(),
        moment_id: stored.moment_id.clone(),
        context: stored.context.clone(),
        captured: Location {
            file: stored.file.clone(),
            lines: stored.lines,
        },
        live: checked
            .file
            .clone()
            .zip(checked.lines)
            .map(|(file, lines)| Location { file, lines }),
        status: checked.status,
        similarity: checked.similarity,
        drift: checked.drift.clone(),
        reason: checked.reason.clone(),
        code: None,
    }
}

fn live_row(checked: &Checked, now: &str) -> LiveLocation {
    LiveLocation {
        key: checked.key.clone(),
        status: checked.status,
        file: checked.file.clone(),
        lines: checked.lines,
        similarity: checked.similarity as f64,
        current_blob: checked.current_blob.clone(),
        drift: checked
            .drift
            .as_ref()
            .map(|d| serde_json::to_value(d).expect("drift serialises")),
        reason: checked.reason.clone(),
        checked_at: now.to_string(),
    }
}

impl Parts {
    /// Fills in anchor, blob hash and HEAD commit for references that lack them, from the
    /// working tree as it is now. A file that cannot be read is left as given: the reference
    /// is kept, and checks report it as missing or unreadable.
    pub(crate) fn capture_references<'r>(&self, references: impl Iterator<Item = &'r mut CodeReference>) {
        // Most artifacts carry none without an anchor (imports anchor their own): opening the
        // repository costs more than the rest of an add, so only then.
        let mut references = references.filter(|r| r.anchor.is_none()).peekable();
        if references.peek().is_none() {
            return;
        }
        let git = GitRepo::discover(self.layout().root());
        let mut checker = Checker::new(self.layout().root(), git.as_ref());
        let head = checker.head_commit();
        for reference in references {
            if reference.anchor.is_some() {
                continue;
            }
            if let Ok((anchor, blob)) = checker.capture(&reference.file, reference.lines) {
                reference.anchor = anchor;
                reference.git_hash.get_or_insert(blob);
                if reference.commit.is_none() {
                    reference.commit.clone_from(&head);
                }
            }
        }
    }

    /// Refuses references (each with its field name) that name a file this project does not
    /// have, or lines past its end; paths that are not clean relative paths and impossible
    /// ranges are left to the artifact's own validation, which names them.
    pub(crate) fn check_references_exist<'r>(
        &self,
        source: &str,
        references: impl Iterator<Item = (String, &'r CodeReference)>,
    ) -> Result<()> {
        let mut checker: Option<Checker<'_>> = None;
        for (field, reference) in references {
            let [start, end] = reference.lines;
            let Ok(file) = zblade_core::paths::normalize_relative(&reference.file) else {
                continue;
            };
            if start == 0 || start > end {
                continue;
            }
            let checker = checker.get_or_insert_with(|| Checker::new(self.layout().root(), None));
            let lines = match checker.file(&file) {
                Ok(found) => found.line_count(),
                Err(zblade_refs::ReadError::NotFound) => {
                    return Err(Error::field(
                        source,
                        format!("{field}.file"),
                        format!("{file}: no such file in this project"),
                    ));
                }
                // Secrets, paths leading out, binary or huge files: the artifact's validation
                // refuses them with its own reasons, or the reference is kept unanchored.
                Err(_) => continue,
            };
            if end as usize > lines {
                return Err(Error::field(
                    source,
                    format!("{field}.lines"),
                    format!("[{start}, {end}] is past the end of {file}, which has {lines} line(s)"),
                ));
            }
        }
        Ok(())
    }

    /// Checks the given references (following the renames given) and stores the results.
    pub(crate) fn check_and_store(
        &mut self,
        stored: &[StoredReference],
        renames: &[(String, String)],
    ) -> Result<Vec<ReferenceReport>> {
        let git = GitRepo::discover(self.layout().root());
        let mut checker = Checker::new(self.layout().root(), git.as_ref());
        for (from, to) in renames {
            checker.hint_rename(from, to);
        }
        let now = Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true);
        let mut rows = Vec::with_capacity(stored.len());
        let mut reports = Vec::with_capacity(stored.len());
        for reference in stored {
            let checked = checker.check(&record(reference));
            rows.push(live_row(&checked, &now));
            reports.push(report(reference, &checked));
        }
        self.index_mut()?.put_live_locations(&rows)?;
        Ok(reports)
    }

    /// The references of a message (`conv_…/msg_…`) or moment (`moment_…`), with current code.
    pub(crate) fn references_of(&self, owner: &str) -> Result<Vec<ReferenceReport>> {
        Ok(self.references_of_many(&[owner.to_string()])?.remove(0))
    }

    /// The references of several messages or moments, one list per owner, hydrated together:
    /// the repository is opened and each file read once for all of them.
    pub(crate) fn references_of_many(&self, owners: &[String]) -> Result<Vec<Vec<ReferenceReport>>> {
        let mut stored = Vec::with_capacity(owners.len());
        for owner in owners {
            stored.push(self.index()?.references_of(owner)?);
        }
        Ok(self.hydrate_many(&stored.iter().map(Vec::as_slice).collect::<Vec<_>>()))
    }

    /// [`Parts::hydrate`] for several owners' references at once (one check of the working
    /// tree and its history for all), each owner's in its own list.
    pub(crate) fn hydrate_many(&self, owners: &[&[StoredReference]]) -> Vec<Vec<ReferenceReport>> {
        let all: Vec<StoredReference> = owners.iter().flat_map(|refs| refs.iter().cloned()).collect();
        let mut hydrated = self.hydrate(&all).into_iter();
        owners
            .iter()
            .map(|refs| hydrated.by_ref().take(refs.len()).collect())
            .collect()
    }

    /// Checks references against the working tree now (read-only) and attaches their code,
    /// so nothing stale is ever presented as current.
    pub(crate) fn hydrate(&self, stored: &[StoredReference]) -> Vec<ReferenceReport> {
        if stored.is_empty() {
            return Vec::new();
        }
        let git = GitRepo::discover(self.layout().root());
        let mut checker = Checker::new(self.layout().root(), git.as_ref());
        stored
            .iter()
            .map(|reference| {
                let checked = checker.check(&record(reference));
                let mut out = report(reference, &checked);
                if let Some(live) = &out.live
                    && let Ok(file) = checker.file(&live.file)
                {
                    out.code = Some(file.lines(live.lines[0], live.lines[1]));
                }
                out
            })
            .collect()
    }
}

#[cfg(test)]
mod status_text_tests {
    use super::status_text;
    use zblade_core::ReferenceStatus;

    #[test]
    fn a_moved_and_edited_reference_says_both() {
        assert_eq!(
            status_text(ReferenceStatus::Moved, 0.86),
            "moved, modified (86% similar)"
        );
        assert_eq!(status_text(ReferenceStatus::Moved, 1.0), "moved");
        assert_eq!(status_text(ReferenceStatus::Modified, 0.7), "modified (70% similar)");
        assert_eq!(status_text(ReferenceStatus::Ok, 1.0), "ok");
    }
}

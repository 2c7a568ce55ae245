//! An import's writing half: which session files a request covers, each file's new records
//! stored as conversations (with their code references and extracted moments), and what waits
//! for a conversation's later records committed together.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use zblade_core::{CodeReference, Conversation, Error, Result, ToolResult};
use zblade_import::detect::{find_session_files, is_inside, session_cwd};
use zblade_import::{Cursor, FileRead, SessionFile, Source};

use crate::codeblocks::{TreeLines, convert};
use crate::extract::{ExtractReport, Extracted};
use crate::project::Project;

use super::anchor::{Anchorer, Skip};
use super::state::{FileState, ImportState};
use super::{
    ImportReport, ImportRequest, ImportedConversation, Pending, empty_conversation, merge, modified, since_ok,
};

impl Project {
    /// The session files an import reads, each with its working directory: this project's
    /// (unless `--all-projects`), active since `--since`, plus the files named explicitly.
    pub(super) fn session_files(
        &self,
        request: &ImportRequest,
        state: &mut ImportState,
        report: &mut ImportReport,
    ) -> Vec<(SessionFile, Option<PathBuf>)> {
        let root = self.layout().root();
        let source = request.source;
        let (explicit, stores): (Vec<&PathBuf>, Vec<PathBuf>) = if request.paths.is_empty() {
            (Vec::new(), self.parts.agents.stores(source, root))
        } else {
            let (files, dirs): (Vec<&PathBuf>, Vec<&PathBuf>) = request.paths.iter().partition(|p| p.is_file());
            (files, dirs.into_iter().cloned().collect())
        };
        let mut chosen = Vec::new();
        for path in explicit {
            report.files_found += 1;
            let file = SessionFile {
                source,
                modified: modified(path),
                path: path.clone(),
            };
            if since_ok(&file, request.since) {
                chosen.push((file, session_cwd(source, path)));
            }
        }
        for file in find_session_files(source, &stores) {
            report.files_found += 1;
            if !request.all_projects && state.other_projects.contains(&file.path) {
                report.other_projects += 1;
                continue;
            }
            let known = state.files.get(&file.path).filter(|f| f.source == source);
            let cwd = match known {
                Some(known) => known.cwd.clone(),
                None => session_cwd(source, &file.path),
            };
            let mine = cwd.as_deref().is_some_and(|cwd| is_inside(cwd, root));
            if !mine && !request.all_projects {
                report.other_projects += 1;
                // A file whose head names no directory yet (just created) is looked at again.
                if cwd.is_some() && !request.dry_run {
                    state.other_projects.insert(file.path.clone());
                }
                continue;
            }
            if since_ok(&file, request.since) {
                chosen.push((file, cwd));
            }
        }
        chosen
    }

    /// Turns the sessions of one read into conversations and stores them together (their
    /// turns are moved out of `read`, not copied). Returns the ids of the conversations that
    /// changed.
    #[allow(clippy::too_many_arguments)] // the import's working state, passed apart to keep borrows simple
    pub(super) fn store_file(
        &mut self,
        read: &mut FileRead,
        file: &SessionFile,
        file_cwd: Option<&Path>,
        anchorer: &mut Anchorer,
        tree: &mut Option<TreeLines>,
        report: &mut ImportReport,
        pending: &mut Vec<(Conversation, String)>,
    ) -> Result<Vec<String>> {
        let mut batch = Vec::new();
        let mut summaries = Vec::new();
        for session in &mut read.sessions {
            report.redacted += session.redacted;
            let id = session.conversation_id();
            // A session read earlier in this import and not written yet continues from there
            // (copied: if this file fails, the pending one stays as it was).
            let waiting = pending
                .iter()
                .find(|(c, _)| c.conversation_id == id)
                .map(|(c, _)| c.clone());
            let (mut conversation, created) = match waiting {
                Some(waiting) => (waiting, false),
                None => match self.storage.conversation(&self.parts, &id) {
                    Ok(existing) => (existing, false),
                    Err(Error::NotFound(_)) => (empty_conversation(&id), true),
                    Err(e) => return Err(e),
                },
            };
            let cwd = session.cwd.clone().or_else(|| file_cwd.map(Path::to_path_buf));
            let turns = std::mem::take(&mut session.turns)
                .into_iter()
                .map(|turn| {
                    let at = turn.message.timestamp.or(session.started);
                    let mut message = turn.message;
                    let mut references = self.references(&turn.touches, cwd.as_deref(), at, anchorer, report);
                    if message.content.contains("```") {
                        let tree = tree.get_or_insert_with(|| TreeLines::load(&self.parts));
                        let (content, found) = convert(&message.content, tree);
                        if !found.is_empty() {
                            message.content = content;
                            report.references += found.len();
                            merge::add_references(&mut references, found);
                        }
                    }
                    (message, references)
                })
                .collect();
            let late = std::mem::take(&mut session.late_results)
                .into_iter()
                .map(|l| {
                    let refs = self.references(&l.touches, cwd.as_deref(), session.started, anchorer, report);
                    (l.call_id, l.result, refs)
                })
                .collect::<Vec<(String, ToolResult, Vec<CodeReference>)>>();
            let added = merge::merge(&mut conversation, session, turns, late);
            report.messages += added;
            summaries.push(ImportedConversation {
                id: id.clone(),
                title: conversation.title.clone(),
                created,
                new_messages: added,
            });
            batch.push((conversation, format!("{} ({})", file.path.display(), session.source)));
        }
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<String> = summaries.iter().map(|s| s.id.clone()).collect();
        if !report.dry_run {
            // Written by the next commit ([`Project::commit_pending`]); a session already
            // waiting there is replaced by its merged version.
            for (conversation, name) in batch {
                pending.retain(|(c, _)| c.conversation_id != conversation.conversation_id);
                pending.push((conversation, name));
            }
        }
        report.conversations.extend(summaries);
        Ok(ids)
    }

    /// Writes the pending conversations in one commit and then advances the cursors of the
    /// files they came from. When the commit fails (one invalid conversation fails the whole
    /// batch), each is written on its own so one bad session never blocks the others; the files
    /// of those that still fail keep their old cursors and are reported. Returns whether the
    /// state changed.
    pub(super) fn commit_pending(
        &mut self,
        pending: &mut Pending,
        state: &mut ImportState,
        source: Source,
        report: &mut ImportReport,
        written: &mut Vec<Conversation>,
    ) -> bool {
        let batch = std::mem::take(&mut pending.conversations);
        let files = std::mem::take(&mut pending.files);
        if files.is_empty() && batch.is_empty() {
            return false;
        }
        let mut failed: Vec<String> = Vec::new();
        // Each conversation is validated on its own, so an invalid one is named and left out;
        // the rest are written together.
        let mut prepared: Vec<Conversation> = Vec::with_capacity(batch.len());
        let mut names: Vec<String> = Vec::with_capacity(batch.len());
        for (conversation, name) in batch {
            let id = conversation.conversation_id.clone();
            match self.prepare_conversations(vec![(conversation, name.clone())]) {
                Ok(one) => {
                    prepared.extend(one);
                    names.push(name);
                }
                Err(e) => {
                    report.warnings.push(format!("{name}: {e}"));
                    failed.push(id);
                }
            }
        }
        let storage = Arc::clone(&self.storage);
        if let Err(batch_error) = storage.put_conversations(&mut self.parts, &prepared) {
            // Written again one by one: one that fails alone is named, the others land.
            let mut stored = Vec::with_capacity(prepared.len());
            let mut alone_failed = false;
            for (conversation, name) in prepared.into_iter().zip(&names) {
                match storage.put_conversations(&mut self.parts, std::slice::from_ref(&conversation)) {
                    Ok(_) => stored.push(conversation),
                    Err(e) => {
                        report.warnings.push(format!("{name}: {e}"));
                        failed.push(conversation.conversation_id.clone());
                        alone_failed = true;
                    }
                }
            }
            if !alone_failed {
                // The batch failed for a reason none of its parts has on its own (a lock
                // taken away, a full disk that has room again): said once.
                report
                    .warnings
                    .push(format!("a batch was written again one by one after: {batch_error}"));
            }
            prepared = stored;
        }
        written.extend(prepared);
        for (path, cwd, cursor, ids) in files {
            if ids.iter().any(|id| failed.contains(id)) {
                report.files_failed += 1;
                continue; // read again next time, from its old cursor
            }
            let entry = state.files.entry(path).or_insert_with(|| FileState {
                source,
                cwd,
                cursor: Cursor::default(),
                conversations: Vec::new(),
                imported_at: Utc::now(),
            });
            entry.cursor = cursor;
            entry.imported_at = Utc::now();
            for id in ids {
                if !entry.conversations.contains(&id) {
                    entry.conversations.push(id);
                }
            }
        }
        true
    }

    pub(super) fn references(
        &self,
        touches: &[zblade_import::Touch],
        cwd: Option<&Path>,
        at: Option<DateTime<Utc>>,
        anchorer: &mut Anchorer,
        report: &mut ImportReport,
    ) -> Vec<CodeReference> {
        let mut references = Vec::new();
        for touch in touches {
            match anchorer.reference(touch, cwd, at) {
                Ok(reference) => merge::add_references(&mut references, vec![reference]),
                Err(Skip::Outside) => report.touches_outside += 1,
                Err(Skip::NotFound) => report.touches_not_found += 1,
            }
        }
        report.references += references.len();
        references
    }

    /// Writes the moments extracted during an import in one batch; when that fails, each
    /// conversation's alone, so one bad conversation costs only its own moments.
    pub(super) fn write_moments(&mut self, extracted: Vec<Extracted>, report: &mut ImportReport) {
        let mut written = ExtractReport::default();
        if self.write_extracted(&extracted, &mut written).is_err() {
            written = ExtractReport::default();
            for one in &extracted {
                if let Err(e) = self.write_extracted(std::slice::from_ref(one), &mut written) {
                    report.warnings.push(format!("moments of {}: {e}", one.id));
                }
            }
        }
        report.moments += written.written.len();
    }
}

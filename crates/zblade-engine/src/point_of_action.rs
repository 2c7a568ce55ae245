//! The decision at the point of action: before an agent reads or edits a file, what memory holds
//! about *those lines* — [`Project::why`]'s conversations, moments and commits — told in a few
//! hundred tokens, or nothing at all when nothing bears on them.
//!
//! The gate is the question itself: a remembered turn or moment whose reference overlaps the
//! lines always bears on them; a commit does only when its message explains (a body, not a
//! subject alone), since every line has some commit behind it. Standing decisions come first,
//! newest first; superseded or rejected ones say so. The text is cut to the budget in whole
//! entries. Hooks fire on every tool call, so the answer for the same file and lines is kept
//! until the session's next prompt ([`ActionCache`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use zblade_context::tokens::{Cl100k, TokenCounter};
use zblade_core::Result;

use crate::project::Project;
use crate::why::{Why, WhyCommit, WhyMemory};

/// Default budget of a point-of-action answer, in tokens.
pub const ACTION_BUDGET: usize = 400;
/// A commit explains when its message holds at least this much beyond its subject.
const EXPLAINING_BODY_CHARS: usize = 40;
/// Answers older than this are not reused, even within a session.
const CACHE_SECONDS: i64 = 600;

/// What a point-of-action hook says about some lines.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ActionAnswer {
    /// The text for the agent (empty when nothing bears on the lines).
    pub text: String,
    /// Memories and commits told.
    pub entries: usize,
    /// True when the answer came from the session's cache.
    #[serde(default)]
    pub cached: bool,
}

impl Project {
    /// What memory holds about `lines` of `file` (absolute, or relative to the root) before an
    /// agent acts on them, within `budget` tokens. A file outside the project gets nothing.
    pub fn point_of_action(&self, file: &str, lines: Option<(u32, u32)>, budget: usize) -> Result<ActionAnswer> {
        let Some(relative) = self.relative_to_root(file) else {
            return Ok(ActionAnswer::default());
        };
        if !self.layout().root().join(&relative).is_file() {
            return Ok(ActionAnswer::default());
        }
        let why = self.why(&relative, lines)?;
        Ok(render(&why, budget))
    }

    /// The file and lines an agent's tool call is about to read or edit, from its arguments:
    /// the file under any of the names agents give it (relative paths from the root), and the
    /// lines of a read's `offset`/`limit` or where an edit's old text is in the file now
    /// (`None`: the whole file).
    pub fn tool_target(&self, input: &Value) -> Option<(PathBuf, Option<(u32, u32)>)> {
        let file = Path::new(zblade_import::path_argument(input)?);
        let absolute = if file.is_absolute() {
            file.to_path_buf()
        } else {
            self.layout().root().join(file)
        };
        let lines = tool_lines(input, &absolute);
        Some((absolute, lines))
    }

    /// `file` as a path relative to the project's root, when it is inside it.
    fn relative_to_root(&self, file: &str) -> Option<String> {
        let root = self.layout().root();
        let path = Path::new(file);
        let relative: PathBuf = if path.is_absolute() {
            let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
            let real = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
            real.strip_prefix(&root).ok()?.to_path_buf()
        } else {
            path.to_path_buf()
        };
        let text = relative.to_str()?.to_string();
        zblade_core::paths::normalize_relative(&text).ok()
    }
}

/// The lines a call is about: a read's `offset`/`limit`, an edit's old text found in the file
/// now; `None` (the whole file) otherwise.
fn tool_lines(input: &Value, file: &Path) -> Option<(u32, u32)> {
    if let Some(offset) = input.get("offset").and_then(Value::as_u64) {
        // Saturating: the numbers come from the agent.
        let limit = input.get("limit").and_then(Value::as_u64).unwrap_or(2000).max(1);
        let start = u32::try_from(offset).unwrap_or(u32::MAX).max(1);
        let limit = u32::try_from(limit).unwrap_or(u32::MAX);
        return Some((start, start.saturating_add(limit - 1)));
    }
    let old = ["old_string", "oldString", "old_str"]
        .iter()
        .find_map(|k| input.get(*k)?.as_str())
        .or_else(|| input.pointer("/edits/0/old_string").and_then(Value::as_str))?;
    if old.trim().is_empty() {
        return None;
    }
    // Only a file of a sensible size is searched; the hook must stay quick.
    let meta = std::fs::metadata(file).ok()?;
    if meta.len() > 4 * 1024 * 1024 {
        return None;
    }
    let text = std::fs::read_to_string(file).ok()?;
    let at = text.find(old)?;
    let start = text[..at].matches('\n').count() as u32 + 1;
    let end = start + old.trim_end_matches('\n').matches('\n').count() as u32;
    Some((start, end))
}

/// True when a commit's message explains its change.
fn explains(commit: &WhyCommit) -> bool {
    commit.view.commit.body.trim().chars().count() >= EXPLAINING_BODY_CHARS
}

fn memory_entry(m: &WhyMemory) -> String {
    let state = match &m.state {
        Some(state) => {
            let d = &state.decision;
            let detail =
                d.by.as_deref()
                    .map(|by| format!(" by {by}"))
                    .or_else(|| d.reason.as_deref().map(|r| format!(": {r}")));
            format!(
                " state=\"{}{}\"",
                d.state.as_str(),
                detail.unwrap_or_default().replace('"', "'")
            )
        }
        None => String::new(),
    };
    let changed = if m.changed_since.is_empty() {
        String::new()
    } else {
        format!(" changed_since=\"{}\"", m.changed_since.join("; "))
    };
    let at = m.reference.live.as_ref().unwrap_or(&m.reference.captured);
    format!(
        "<memory id=\"{}\" title=\"{}\" time=\"{}\" lines=\"{}:{}-{}\"{state}{changed}>\n{}\n</memory>",
        m.id,
        m.title.replace('"', "'"),
        m.time.as_deref().unwrap_or(""),
        at.file,
        at.lines[0],
        at.lines[1],
        m.text.trim()
    )
}

fn commit_entry(c: &WhyCommit) -> String {
    let commit = &c.view.commit;
    let sha: String = commit.sha.chars().take(7).collect();
    format!(
        "<commit sha=\"{sha}\" author=\"{}\" {} lines=\"{}\" status=\"{}\">\n{}\n\n{}\n</commit>",
        commit.author.replace('"', "'"),
        c.role,
        c.lines,
        c.view.status.replace('"', "'"),
        commit.subject.trim(),
        commit.body.trim()
    )
}

/// The answer for `why`, within `budget` tokens, in whole entries.
pub(crate) fn render(why: &Why, budget: usize) -> ActionAnswer {
    let mut entries: Vec<String> = why.memory.iter().map(memory_entry).collect();
    entries.extend(why.commits.iter().filter(|c| explains(c)).map(commit_entry));
    if entries.is_empty() {
        return ActionAnswer::default();
    }
    let head = format!(
        "zblade remembers this about {} lines {}-{} (standing decisions first; check before changing them):",
        why.file, why.lines.0, why.lines.1
    );
    let counter = Cl100k::new();
    let mut used = counter.count(&head);
    let mut kept = Vec::new();
    for entry in entries {
        let cost = counter.count(&entry) + 1;
        if used + cost > budget {
            break;
        }
        used += cost;
        kept.push(entry);
    }
    if kept.is_empty() {
        return ActionAnswer::default();
    }
    ActionAnswer {
        entries: kept.len(),
        text: format!("{head}\n{}", kept.join("\n")),
        cached: false,
    }
}

/// Answers kept for one agent session, until its next prompt: `.zblade/cache/actions/<session>.json`.
pub struct ActionCache {
    path: PathBuf,
    answers: BTreeMap<String, (i64, ActionAnswer)>,
}

impl ActionCache {
    /// The cache of `session` (an agent's session id; anything but letters, digits, `-` and `_`
    /// is hashed, so the id cannot name another file).
    pub fn open(project: &Project, session: &str) -> ActionCache {
        let path = Self::file(project, session);
        let answers = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        ActionCache { path, answers }
    }

    /// The key of a question.
    pub fn key(file: &str, lines: Option<(u32, u32)>) -> String {
        match lines {
            Some((a, b)) => format!("{file}:{a}-{b}"),
            None => file.to_string(),
        }
    }

    /// The answer kept for `key`, when it is recent.
    pub fn get(&self, key: &str) -> Option<ActionAnswer> {
        let now = chrono::Utc::now().timestamp();
        self.answers
            .get(key)
            .filter(|(at, _)| now - at < CACHE_SECONDS)
            .map(|(_, answer)| ActionAnswer {
                cached: true,
                ..answer.clone()
            })
    }

    /// Keeps `answer` for `key` (written at once; a failed write only costs the next answer).
    pub fn put(&mut self, key: String, answer: &ActionAnswer) {
        self.answers
            .insert(key, (chrono::Utc::now().timestamp(), answer.clone()));
        if let Some(dir) = self.path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        if let Ok(bytes) = serde_json::to_vec(&self.answers) {
            let _ = zblade_core::fsio::write_atomic(&self.path, &bytes);
        }
    }

    /// Forgets the session's answers (a new prompt: memory may have changed).
    pub fn clear(project: &Project, session: &str) {
        let _ = std::fs::remove_file(Self::file(project, session));
    }

    /// `.zblade/cache/actions/<session>.json`.
    fn file(project: &Project, session: &str) -> PathBuf {
        project
            .layout()
            .cache_dir()
            .join("actions")
            .join(format!("{}.json", zblade_import::safe_id(session)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calls_lines_come_from_its_read_window_or_its_old_text_and_hostile_numbers_saturate() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.rs");
        std::fs::write(&file, "fn a() {}\nfn b() {\n    old();\n}\n").unwrap();
        let read = serde_json::json!({"offset": 3, "limit": 10});
        assert_eq!(tool_lines(&read, &file), Some((3, 12)));
        let edit = serde_json::json!({"old_string": "fn b() {\n    old();\n"});
        assert_eq!(tool_lines(&edit, &file), Some((2, 3)));
        let nowhere = serde_json::json!({"old_string": "not in the file"});
        assert_eq!(tool_lines(&nowhere, &file), None);
        let hostile = serde_json::json!({"offset": u64::MAX, "limit": u64::MAX});
        assert_eq!(tool_lines(&hostile, &file), Some((u32::MAX, u32::MAX)));
    }
}

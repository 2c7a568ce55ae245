//! The conversation graph in the app: fork from a message, bring messages in from another
//! conversation (merge, cherry-pick with context), the lineage strip, and prompt history.
//! Thin commands over the engine's graph API; see docs/CONVERSATIONS.md.

use serde::Serialize;
use specta::Type;
use tauri::AppHandle;
use zblade_engine::{GraphOutcome, LineageNode, MessageSelector, Prompt};

use crate::error::AppResult;
use crate::state::with_project;

/// A merge into or out of the conversation shown.
#[derive(Debug, Clone, Serialize, Type)]
pub struct MergeLink {
    /// The other conversation.
    pub id: String,
    /// Messages merged.
    pub messages: u32,
    /// When (RFC 3339).
    pub merged_at: String,
}

/// The lineage strip of a conversation.
#[derive(Debug, Clone, Serialize, Type)]
pub struct LineageView {
    /// Its parent, when it is a fork (and the parent still exists).
    pub parent: Option<LineageNode>,
    /// The parent's id even when it was deleted.
    pub forked_from: Option<String>,
    /// Where it was forked (index of the last kept message).
    pub forked_after: Option<u32>,
    /// Its direct forks, oldest first.
    pub forks: Vec<LineageNode>,
    /// Merges into it.
    pub merged_in: Vec<MergeLink>,
    /// Merges out of it (others that took its messages).
    pub merged_out: Vec<MergeLink>,
}

/// Forks conversation `id` after message `after` (0-based), optionally titled.
#[tauri::command]
#[specta::specta]
pub async fn fork_conversation(
    app: AppHandle,
    id: String,
    after: u32,
    title: Option<String>,
) -> AppResult<GraphOutcome> {
    with_project(app, move |project| {
        let title = title.filter(|t| !t.trim().is_empty());
        Ok(project.fork_conversation(&id, &MessageSelector::Index(after as usize), title.as_deref())?)
    })
    .await
}

/// Brings messages `indices` (0-based) of `source` into `target`, appended or inserted at `at`.
#[tauri::command]
#[specta::specta]
pub async fn merge_messages(
    app: AppHandle,
    target: String,
    source: String,
    indices: Vec<u32>,
    at: Option<u32>,
) -> AppResult<GraphOutcome> {
    with_project(app, move |project| {
        let indices: Vec<usize> = indices.into_iter().map(|i| i as usize).collect();
        Ok(project.merge_messages(&target, &source, &indices, at.map(|a| a as usize))?)
    })
    .await
}

/// The lineage strip of conversation `id`.
#[tauri::command]
#[specta::specta]
pub async fn conversation_lineage(app: AppHandle, id: String) -> AppResult<LineageView> {
    with_project(app, move |project| {
        let lineage = project.lineage(&id)?;
        let (merged_in, merged_out) = lineage.merges.into_iter().partition::<Vec<_>, _>(|m| m.into == id);
        let link = |m: zblade_engine::MergeEdge, other: String| MergeLink {
            id: other,
            messages: m.messages.max(0) as u32,
            merged_at: m.merged_at,
        };
        Ok(LineageView {
            parent: lineage.ancestors.into_iter().next(),
            forked_from: lineage.conversation.forked_from.clone(),
            forked_after: lineage.conversation.forked_after.map(|a| a.max(0) as u32),
            forks: lineage.forks.into_iter().map(|t| t.conversation).collect(),
            merged_in: merged_in
                .into_iter()
                .map(|m| {
                    let from = m.from.clone();
                    link(m, from)
                })
                .collect(),
            merged_out: merged_out
                .into_iter()
                .map(|m| {
                    let into = m.into.clone();
                    link(m, into)
                })
                .collect(),
        })
    })
    .await
}

/// Prompts the user typed in this project, newest first, each once; `search` keeps those
/// holding every word (the last as a prefix).
#[tauri::command]
#[specta::specta]
pub async fn prompt_history(app: AppHandle, search: Option<String>, limit: u32) -> AppResult<Vec<Prompt>> {
    with_project(app, move |project| {
        Ok(project.history(search.as_deref(), limit as usize)?)
    })
    .await
}

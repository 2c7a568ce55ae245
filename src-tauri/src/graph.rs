//! The conversation graph in the app: fork from a message, bring messages in from another
//! conversation (merge, cherry-pick with context), the lineage strip, and prompt history.
//! Thin commands over the engine's graph API; see docs/CONVERSATIONS.md.

use serde::Serialize;
use specta::Type;
use tauri::AppHandle;
use zblade_engine::{GraphOutcome, LineageNode, MessageSelector};

use crate::error::AppResult;
use crate::state::with_project;

/// What a fork or merge made.
#[derive(Debug, Clone, Serialize, Type)]
pub struct GraphOutcomeView {
    /// The conversation created or changed.
    pub conversation_id: String,
    /// Its title.
    pub title: String,
    /// Messages in it now.
    pub messages: u32,
    /// Messages kept (fork) or brought in (merge).
    pub affected: u32,
}

impl From<GraphOutcome> for GraphOutcomeView {
    fn from(o: GraphOutcome) -> Self {
        GraphOutcomeView {
            conversation_id: o.conversation_id,
            title: o.title,
            messages: o.messages as u32,
            affected: o.affected as u32,
        }
    }
}

/// A conversation the lineage strip links to.
#[derive(Debug, Clone, Serialize, Type)]
pub struct LineageLink {
    /// `conv_…`
    pub id: String,
    /// Its title.
    pub title: String,
    /// Messages in it.
    pub messages: u32,
    /// For a fork: the index of the last message it kept from its parent.
    pub forked_after: Option<u32>,
}

impl From<LineageNode> for LineageLink {
    fn from(n: LineageNode) -> Self {
        LineageLink {
            id: n.id,
            title: n.title,
            messages: n.messages.max(0) as u32,
            forked_after: n.forked_after.map(|a| a.max(0) as u32),
        }
    }
}

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
    pub parent: Option<LineageLink>,
    /// The parent's id even when it was deleted.
    pub forked_from: Option<String>,
    /// Where it was forked (index of the last kept message).
    pub forked_after: Option<u32>,
    /// Its direct forks, oldest first.
    pub forks: Vec<LineageLink>,
    /// Merges into it.
    pub merged_in: Vec<MergeLink>,
    /// Merges out of it (others that took its messages).
    pub merged_out: Vec<MergeLink>,
}

/// A prompt the user typed.
#[derive(Debug, Clone, Serialize, Type)]
pub struct PromptView {
    /// The text.
    pub text: String,
    /// The newest time it was typed (RFC 3339).
    pub time: String,
    /// The conversation of that time.
    pub conversation_id: String,
    /// Its title.
    pub title: String,
    /// How often it was typed among those listed.
    pub times: u32,
}

/// Forks conversation `id` after message `after` (0-based), optionally titled.
#[tauri::command]
#[specta::specta]
pub async fn fork_conversation(
    app: AppHandle,
    id: String,
    after: u32,
    title: Option<String>,
) -> AppResult<GraphOutcomeView> {
    with_project(app, move |project| {
        let title = title.filter(|t| !t.trim().is_empty());
        Ok(project
            .fork_conversation(&id, &MessageSelector::Index(after as usize), title.as_deref())?
            .into())
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
) -> AppResult<GraphOutcomeView> {
    with_project(app, move |project| {
        let indices: Vec<usize> = indices.into_iter().map(|i| i as usize).collect();
        Ok(project
            .merge_messages(&target, &source, &indices, at.map(|a| a as usize))?
            .into())
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
            parent: lineage.ancestors.into_iter().next().map(LineageLink::from),
            forked_from: lineage.conversation.forked_from.clone(),
            forked_after: lineage.conversation.forked_after.map(|a| a.max(0) as u32),
            forks: lineage.forks.into_iter().map(|t| t.conversation.into()).collect(),
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
pub async fn prompt_history(app: AppHandle, search: Option<String>, limit: u32) -> AppResult<Vec<PromptView>> {
    with_project(app, move |project| {
        let prompts = project.history(search.as_deref(), (limit as usize).clamp(1, 1000))?;
        Ok(prompts
            .into_iter()
            .map(|p| PromptView {
                text: p.text,
                time: p.time,
                conversation_id: p.conversation_id,
                title: p.title,
                times: p.times as u32,
            })
            .collect())
    })
    .await
}

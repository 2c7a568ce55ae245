//! The storage seam: where a project's conversations and moments live.
//!
//! A project keeps its memory either in `.zblade/` (artifacts, the SQLite index and the
//! vectors: [`local::LocalStorage`]) or on a sync server (RFC-002 "Server Storage Mode":
//! [`server::ServerStorage`]). Which one is chosen once, when the project opens
//! ([`for_settings`]); everything above this trait — add, list, show, search, context,
//! moments, summaries — is written once and calls it.
//!
//! The methods take the project's [`Parts`], never the project: local storage reads the
//! index and the working tree through them, and both check code references against the
//! working tree here. What the storage returns ([`AddOutcome`], [`MessageMatch`]) is defined
//! here too, so the storage needs nothing from the operations above it.
//! Things only local storage has (reindex, fsck, code indexing, embeddings) are not on the
//! trait; they belong to local mode and say so.

mod local;
pub(crate) mod manifests;
pub(crate) mod outbox;
pub(crate) mod pieces;
mod server;

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::Serialize;
use zblade_context::Candidate;
use zblade_core::{Conversation, InlineMoment, Message, MessageOrigin, Moment, Result, Settings, StorageMode};
use zblade_index::{ConversationSummary, MemoryText, MomentSummary, Page, SearchQuery};

use crate::parts::Parts;
use crate::refs::ReferenceReport;
use crate::search::SearchResults;
use crate::semantic::SearchMode;

/// What an `add` did.
#[derive(Debug, Clone, Serialize)]
pub struct AddOutcome {
    /// The id of the conversation or moment.
    pub id: String,
    /// False when an artifact with this id existed and was updated.
    pub created: bool,
    /// The artifact file, relative to the project root.
    pub artifact_path: String,
    /// Messages in the conversation (0 for moments).
    pub messages: usize,
    /// Secrets replaced by `[REDACTED:…]` before it was written.
    pub redacted: usize,
}

/// A message found by id.
#[derive(Debug, Clone, Serialize)]
pub struct MessageMatch {
    /// Its conversation.
    pub conversation_id: String,
    /// The conversation's title.
    pub title: String,
    /// The message.
    pub message: Message,
    /// Its code references, checked now, with current code.
    pub references: Vec<ReferenceReport>,
}

/// A moment found by id: a file of its own, or one stored inside a conversation.
pub(crate) enum FoundMoment {
    /// A standalone moment artifact.
    Standalone(Moment),
    /// A moment inside a conversation artifact.
    Inline {
        /// The conversation holding it.
        conversation_id: String,
        /// The moment.
        moment: InlineMoment,
    },
}

/// What a search for context found: candidates to rerank and pack, and how they were found.
pub(crate) struct Retrieved {
    /// The search mode that ran.
    pub mode: SearchMode,
    /// Things the user should know (a mode that could not run, files left out).
    pub notices: Vec<String>,
    /// Time spent in the search itself, in milliseconds.
    pub search_ms: f64,
    /// Remembered turns and moments, and the code they point to, scored for retrieval.
    pub candidates: Vec<Candidate>,
    /// What the relevance gate judges the candidates by (empty where the storage cannot
    /// tell: the gate then lets them through).
    pub evidence: zblade_context::Evidence,
}

/// The time range a query named ("last week"), as `[since, until)`.
pub(crate) type TimeRange = (DateTime<Utc>, DateTime<Utc>);

/// A fork to make: `parent`'s messages up to and including `after`, under a new id.
#[derive(Debug, Clone)]
pub(crate) struct ForkRequest {
    /// The conversation forked.
    pub parent: String,
    /// The last message the fork keeps.
    pub after: crate::selector::MessageSelector,
    /// The fork's title; `None`: the parent's with " (fork)".
    pub title: Option<String>,
    /// The time of the fork.
    pub now: DateTime<Utc>,
}

/// Where memory is kept. See the module documentation.
pub(crate) trait Storage: Send + Sync + std::fmt::Debug {
    /// Where memory is, as error messages say it: "in this project", "on the sync server".
    fn place(&self) -> &'static str;

    /// Whether memory is kept in `.zblade/` on this machine: only then do forks share their
    /// parent's messages, is there a message store to convert or collect, and can the
    /// permanent archive keep the project. Faces and operations ask this, never the mode.
    fn on_this_machine(&self) -> bool;

    /// Stores conversations that `Project::prepare_conversations` validated and completed.
    fn put_conversations(&self, parts: &mut Parts, prepared: &[Conversation]) -> Result<Vec<AddOutcome>>;

    /// Stores moments that `Project::prepare_moments` validated, each with its source name.
    fn put_moments(&self, parts: &mut Parts, prepared: Vec<(Moment, String)>) -> Result<Vec<AddOutcome>>;

    /// Makes a fork. The default copies the kept messages into a new conversation; local
    /// storage shares them instead (nothing but a small manifest is written).
    fn fork(&self, parts: &mut Parts, request: &ForkRequest) -> Result<Conversation> {
        let parent = self.conversation(parts, &request.parent)?;
        let after = request
            .after
            .position(&request.parent, parent.messages.iter().map(|m| m.id.as_str()))?;
        let fork = forked_copy(&parent, after, request);
        self.put_conversations(parts, std::slice::from_ref(&fork))?;
        Ok(fork)
    }

    /// Deletes a conversation. Its messages stay while another conversation uses them.
    fn delete_conversation(&self, parts: &mut Parts, id: &str) -> Result<()>;

    /// A page of conversations.
    fn list_conversations(&self, parts: &Parts, page: Page, source: Option<&str>) -> Result<Vec<ConversationSummary>>;

    /// A page of moments, newest first, optionally of one type.
    fn list_moments(&self, parts: &Parts, page: Page, kind: Option<&str>) -> Result<Vec<MomentSummary>>;

    /// Where conversation `id` sits: ancestors, forks (recursively) and merges.
    fn lineage(&self, parts: &Parts, id: &str) -> Result<crate::lineage::Lineage>;

    /// Prompts the user typed, newest first, each text once; only those holding every word
    /// of `search` (the last as a prefix) when given.
    fn prompts(&self, parts: &Parts, search: Option<&str>, limit: usize) -> Result<Vec<zblade_index::Prompt>>;

    /// The most recently updated conversation.
    fn newest_conversation(&self, parts: &Parts) -> Result<Option<String>>;

    /// One conversation artifact; `Error::NotFound` when there is none.
    fn conversation(&self, parts: &Parts, id: &str) -> Result<Conversation>;

    /// One moment by id, standalone or inside a conversation.
    fn moment(&self, parts: &Parts, id: &str) -> Result<Option<FoundMoment>>;

    /// Messages with this id, each with its conversation (ids are unique only within one).
    fn messages(&self, parts: &Parts, id: &str) -> Result<Vec<MessageMatch>>;

    /// The code references of a conversation's messages, checked against the working tree now.
    fn conversation_references(&self, parts: &Parts, conversation: &Conversation) -> Result<Vec<ReferenceReport>>;

    /// The code references of a standalone moment, checked now.
    fn moment_references(&self, parts: &Parts, moment: &Moment) -> Result<Vec<ReferenceReport>>;

    /// Search in `mode` (`None`: the best this storage has), with code references hydrated;
    /// without `snippets`, message hits may come without a highlighted snippet.
    fn search(
        &self,
        parts: &Parts,
        query: &SearchQuery,
        mode: Option<SearchMode>,
        snippets: bool,
    ) -> Result<SearchResults>;

    /// A conversation's title and its last `n` turns, newest first; `None` when there is no
    /// such conversation.
    fn recent_turns(&self, parts: &Parts, conversation: &str, n: usize) -> Result<Option<(String, Vec<MemoryText>)>>;

    /// A moment as memory text (its context after its content); `None` when there is none.
    fn moment_text(&self, parts: &Parts, id: &str) -> Result<Option<MemoryText>>;

    /// Memory for context assembly: the turns and moments that match `text` (within `time`
    /// when given), with the code they reference, scored for retrieval.
    fn retrieve(
        &self,
        parts: &Parts,
        text: &str,
        time: Option<TimeRange>,
        mode: Option<SearchMode>,
    ) -> Result<Retrieved>;
}

/// The storage `settings` name: chosen once, when a project opens.
pub(crate) fn for_settings(settings: &Settings) -> Arc<dyn Storage> {
    match settings.storage.mode {
        StorageMode::Server => Arc::new(server::ServerStorage),
        StorageMode::Local => Arc::new(local::LocalStorage),
    }
}

/// A fork as a copy (for storage that cannot share messages): the parent's first messages,
/// each marked as inherited.
fn forked_copy(parent: &Conversation, after: usize, request: &ForkRequest) -> Conversation {
    let messages: Vec<Message> = parent.messages[..=after]
        .iter()
        .cloned()
        .map(|mut m| {
            m.origin.get_or_insert(MessageOrigin::Inherited {
                conversation_id: parent.conversation_id.clone(),
            });
            m
        })
        .collect();
    Conversation {
        version: zblade_core::ARTIFACT_VERSION.to_string(),
        conversation_id: zblade_core::ids::new_id(zblade_core::ids::CONVERSATION),
        project_id: parent.project_id.clone(),
        created_at: Some(request.now),
        updated_at: Some(request.now),
        title: request
            .title
            .clone()
            .unwrap_or_else(|| format!("{} (fork)", parent.title)),
        metadata: zblade_core::ConversationMetadata {
            total_messages: messages.len() as u64,
            tags: parent.metadata.tags.clone(),
            private: parent.metadata.private,
            ..Default::default()
        },
        forked_from: Some(zblade_core::ForkPoint {
            conversation_id: parent.conversation_id.clone(),
            after_message_id: parent.messages[after].id.clone(),
            after_index: after,
            forked_at: request.now,
        }),
        messages,
        moments: Vec::new(),
        merged_from: Vec::new(),
        compaction: None,
        token_usage: Default::default(),
        shared_prefix: None,
        extra: serde_json::Map::new(),
    }
}

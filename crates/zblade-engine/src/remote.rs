//! Server mode (RFC-002, "Server Storage Mode"): with `storage.mode = "server"` conversations
//! and moments are written to and read from the sync server named by `storage.server_url`,
//! and `.zblade/` keeps only instructions, settings and cache. Local mode never comes here;
//! there, only titles and tags may leave the machine, and only with `sync_metadata` on
//! ([`Project::sync_metadata`]).

use zblade_core::{Conversation, Error, Moment, Result, StorageMode, artifact};
use zblade_index::{ConversationSummary, HitKind, MomentSummary, SearchHit};
use zblade_sync::{Client, Kind, Metadata};

use crate::{AddOutcome, Project};

/// Server mode reads moments one GET each (the list carries no content); a listing reads at
/// most this many, newest first.
pub const MAX_LISTED_MOMENTS: usize = 2_000;

impl Project {
    /// Whether memory lives on a sync server.
    pub fn is_server_mode(&self) -> bool {
        self.settings.storage.mode == StorageMode::Server
    }

    /// A client of the configured server with the token saved for it (or `ZBLADE_TOKEN`).
    pub fn server_client(&self) -> Result<Client> {
        let url = &self.settings.storage.server_url;
        if url.is_empty() {
            return Err(Error::Usage(
                "no sync server is set up (storage.server_url is empty); `zblade migrate to-server --server URL` sets one".into(),
            ));
        }
        let token = zblade_sync::credentials::token(url)?.ok_or_else(|| {
            Error::Usage(format!(
                "no token for {url}; set ZBLADE_TOKEN or run `zblade migrate to-server --server {url} --token TOKEN`"
            ))
        })?;
        Client::with_transport(url, &token, self.transport())
    }

    /// Whether plain http to another machine was allowed for this project's server.
    pub fn transport(&self) -> zblade_sync::Transport {
        zblade_sync::Transport::allowing_plain_http(self.settings.storage.allow_insecure_http)
    }

    /// Server mode's `add`: conversations prepared as in local mode
    /// ([`Project::prepare_conversations`]), then a PUT each; nothing is written under `.zblade/`.
    pub(crate) fn add_conversations_to_server(&mut self, prepared: Vec<Conversation>) -> Result<Vec<AddOutcome>> {
        let client = self.server_client()?;
        let project = &self.settings.project.id;
        let mut outcomes = Vec::with_capacity(prepared.len());
        for conv in &prepared {
            let put = client.put_record(
                project,
                Kind::Conversation,
                &conv.conversation_id,
                &conv.to_artifact_json(),
            )?;
            outcomes.push(AddOutcome {
                id: conv.conversation_id.clone(),
                created: put.status == "created",
                artifact_path: format!(
                    "{}/api/v0/projects/{project}/conversations/{}",
                    client.url(),
                    conv.conversation_id
                ),
                messages: conv.messages.len(),
            });
        }
        Ok(outcomes)
    }

    /// Server mode's `add` for moments prepared as in local mode ([`Project::prepare_moments`]).
    pub(crate) fn add_moments_to_server(&mut self, prepared: Vec<Moment>) -> Result<Vec<AddOutcome>> {
        let client = self.server_client()?;
        let project = &self.settings.project.id;
        let mut outcomes = Vec::with_capacity(prepared.len());
        for moment in &prepared {
            let put = client.put_record(project, Kind::Moment, &moment.id, &moment.to_artifact_json())?;
            outcomes.push(AddOutcome {
                id: moment.id.clone(),
                created: put.status == "created",
                artifact_path: format!("{}/api/v0/projects/{project}/moments/{}", client.url(), moment.id),
                messages: 0,
            });
        }
        Ok(outcomes)
    }

    /// Server mode's conversation list (id order, as the server pages it).
    pub(crate) fn list_conversations_on_server(&self, limit: usize, offset: usize) -> Result<Vec<ConversationSummary>> {
        let client = self.server_client()?;
        let records = client.list_records(&self.settings.project.id, Kind::Conversation)?;
        Ok(records
            .into_iter()
            .skip(offset)
            .take(limit)
            .map(|r| ConversationSummary {
                artifact_path: format!("server:{}", r.id),
                id: r.id,
                title: r.title,
                created_at: r.updated_at.clone(),
                updated_at: r.updated_at,
                message_count: 0,
                tags: r.tags,
            })
            .collect())
    }

    /// Server mode: one conversation artifact, read from the server.
    pub(crate) fn conversation_from_server(&self, id: &str) -> Result<Conversation> {
        let client = self.server_client()?;
        let bytes = client
            .get_record(&self.settings.project.id, Kind::Conversation, id)?
            .ok_or_else(|| Error::NotFound(format!("no conversation {id} on the sync server")))?;
        artifact::parse_conversation(&bytes, &format!("{}: conversation {id}", client.url()))
    }

    /// Server mode: one moment artifact, read from the server (`None` when it has none).
    pub(crate) fn moment_from_server(&self, id: &str) -> Result<Option<Moment>> {
        let client = self.server_client()?;
        let Some(bytes) = client.get_record(&self.settings.project.id, Kind::Moment, id)? else {
            return Ok(None);
        };
        artifact::parse_moment(&bytes, &format!("{}: moment {id}", client.url())).map(Some)
    }

    /// Server mode's moment list, newest first, optionally of one type. The server's list has
    /// no content, so each moment on the page is read (and, with a type filter, each moment
    /// until the page is full); a moment that no longer parses is skipped, not fatal.
    pub(crate) fn list_moments_on_server(
        &self,
        limit: usize,
        offset: usize,
        kind: Option<&str>,
    ) -> Result<Vec<MomentSummary>> {
        let client = self.server_client()?;
        let project = &self.settings.project.id;
        let mut records = client.list_records(project, Kind::Moment)?;
        // RFC 3339 in UTC sorts as text.
        records.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then_with(|| a.id.cmp(&b.id)));
        let mut matching = 0;
        let mut page = Vec::new();
        for record in records.iter().take(MAX_LISTED_MOMENTS) {
            if page.len() == limit {
                break;
            }
            // Without a filter, the moments before the page need not be read.
            if kind.is_none() && matching < offset {
                matching += 1;
                continue;
            }
            let Some(bytes) = client.get_record(project, Kind::Moment, &record.id)? else {
                continue; // deleted meanwhile
            };
            let Ok(moment) = artifact::parse_moment(&bytes, &record.id) else {
                continue;
            };
            if kind.is_some_and(|k| k != moment.kind.as_str()) {
                continue;
            }
            matching += 1;
            if matching <= offset {
                continue;
            }
            page.push(MomentSummary {
                artifact_path: format!("server:{}", moment.id),
                kind: moment.kind.as_str().to_string(),
                content: moment.content,
                tags: moment.tags,
                conversation_id: moment.conversation_id,
                created_at: record.updated_at.clone(),
                relevance_score: moment.relevance_score,
                inline: false,
                id: moment.id,
            });
        }
        Ok(page)
    }

    /// Server mode's search: the server's keyword search, as hits of conversations and moments.
    pub(crate) fn search_on_server(&self, text: &str, limit: usize) -> Result<Vec<SearchHit>> {
        let client = self.server_client()?;
        let hits = client.search(&self.settings.project.id, text, None, limit)?;
        Ok(hits
            .into_iter()
            .map(|h| SearchHit {
                kind: match h.kind {
                    Kind::Conversation => HitKind::Conversation,
                    Kind::Moment => HitKind::Moment,
                },
                conversation_id: (h.kind == Kind::Conversation).then(|| h.id.clone()),
                id: h.id,
                title: Some(h.title),
                label: None,
                timestamp: h.updated_at,
                // The server marks matches with [ ]; the CLI highlights « ».
                snippet: h.snippet.replace('[', "«").replace(']', "»"),
                score: h.score,
                path: None,
                lines: None,
                cid: None,
            })
            .collect())
    }

    /// Local mode with `storage.sync_metadata` on: sends the title, tags and message count of
    /// every conversation and moment (never their content) to the configured server. Returns
    /// how many records were sent. Refused in server mode (everything is there already) and
    /// when the setting is off.
    pub fn sync_metadata(&self) -> Result<usize> {
        if self.is_server_mode() {
            return Err(Error::Usage(
                "storage.mode is server: memory is on the server already".into(),
            ));
        }
        if !self.settings.storage.sync_metadata {
            return Err(Error::ConsentRequired(
                "storage.sync_metadata is off: nothing leaves this machine until you turn it on".into(),
            ));
        }
        let client = self.server_client()?;
        let project = &self.settings.project.id;
        let name = self
            .layout
            .root()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        client.put_project(project, &name)?;
        let index = self.index()?;
        let mut sent = 0;
        let mut offset = 0;
        loop {
            let page = index.list_conversations(500, offset)?;
            for c in &page {
                client.put_metadata(
                    project,
                    &Metadata {
                        kind: Kind::Conversation,
                        id: c.id.clone(),
                        title: c.title.clone(),
                        tags: c.tags.clone(),
                        message_count: c.message_count.max(0) as usize,
                        updated_at: c.updated_at.clone(),
                    },
                )?;
                sent += 1;
            }
            if page.len() < 500 {
                break;
            }
            offset += page.len();
        }
        let mut offset = 0;
        loop {
            let page = index.list_moments(500, offset, None)?;
            for m in &page {
                client.put_metadata(
                    project,
                    &Metadata {
                        kind: Kind::Moment,
                        id: m.id.clone(),
                        // The type, not the content: content never leaves in local mode.
                        title: m.kind.clone(),
                        tags: m.tags.clone(),
                        message_count: 0,
                        updated_at: m.created_at.clone(),
                    },
                )?;
                sent += 1;
            }
            if page.len() < 500 {
                break;
            }
            offset += page.len();
        }
        Ok(sent)
    }
}

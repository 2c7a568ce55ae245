//! Server storage (RFC-002, "Server Storage Mode"): with `storage.mode = "server"`
//! conversations and moments are written to and read from the sync server named by
//! `storage.server_url`, and `.zblade/` keeps only instructions, settings and cache. Every
//! answer goes through `zblade-sync`'s checks; code references are checked against the
//! working tree here, as in local mode.

use std::time::Instant;

use chrono::{DateTime, Utc};
use zblade_context::{Candidate, Source};
use zblade_core::{Conversation, Error, Message, Moment, Result, artifact};
use zblade_index::{ConversationSummary, HitKind, MemoryText, MomentSummary, Page, SearchHit, SearchKind, SearchQuery};
use zblade_sync::{Client, EmbeddingModel, Kind, PassageAnswer, PassageHit, PassageQuery, QueryVector, VectorsUpload};

use super::outbox::{Entry, Outbox};
use super::pieces;
use super::{AddOutcome, MessageMatch};
use super::{FoundMoment, Retrieved, Storage, TimeRange};
use crate::candidates::{memory_candidate, millis_since, reference_candidate, retrieval_scale};
use crate::parts::Parts;
use crate::refs::{self, ReferenceReport};
use crate::search::{Hit, SearchResults};
use crate::semantic::SearchMode;

/// Server mode reads moments one GET each (the list carries no content); a listing reads at
/// most this many, newest first.
const MAX_LISTED_MOMENTS: usize = 2_000;
/// Context assembly reads the code references of at most this many conversations and moments
/// among the server's best hits (one GET each).
const SERVER_RECORDS: usize = 10;
/// What search and context say when the server searched by keywords only.
const KEYWORD_ON_SERVER: &str = "server mode: keyword search on the sync server";
/// … and why, when hybrid search was possible in principle.
const NO_VECTORS_ON_SERVER: &str = "server mode: keyword search (the project has no vectors on the sync server yet, or this machine has no embedding model)";

/// One write for [`ServerStorage::send`].
struct Write {
    kind: Kind,
    id: String,
    bytes: Vec<u8>,
    /// Messages in it (0 for a moment).
    messages: usize,
    /// Its vectors, when this machine can embed.
    vectors: Option<VectorsUpload>,
}

/// Memory on the sync server.
#[derive(Debug)]
pub(crate) struct ServerStorage;

impl ServerStorage {
    /// Sends `writes` through the project's outbox (see [`super::outbox`]): each is queued
    /// durably first, then everything waiting is sent in order. A write the server could not
    /// be reached for stays queued and is reported as such; one the server refused for good is
    /// an error (it was moved aside to `.zblade/outbox/rejected/`).
    fn send(parts: &Parts, writes: Vec<Write>) -> Result<Vec<AddOutcome>> {
        let outbox = Outbox::new(parts.layout.outbox_dir());
        let mut queued: Vec<(Entry, usize)> = Vec::with_capacity(writes.len());
        for write in &writes {
            queued.push((outbox.enqueue(write.kind, &write.id, &write.bytes)?, write.messages));
            if let Some(vectors) = &write.vectors {
                outbox.enqueue_vectors(write.kind, &write.id, vectors)?;
            }
        }
        // Few retries: a write waits in the outbox rather than on an unreachable server.
        let client = parts.server_client()?.with_retry(zblade_sync::Retry {
            attempts: 2,
            ..Default::default()
        });
        let project_id = &parts.settings.project.id;
        let flushed = outbox.flush(&client, project_id)?;
        if let Some((entry, why)) = flushed.rejected.first() {
            return Err(Error::Usage(format!(
                "the sync server refused {} {} ({why}); the write was kept in {}",
                entry.kind.as_str(),
                entry.id,
                parts.layout.relative(&parts.layout.outbox_dir().join("rejected"))
            )));
        }
        Ok(queued
            .into_iter()
            .map(|(entry, messages)| {
                let sent = flushed.sent.iter().find(|(e, _)| e.path == entry.path);
                AddOutcome {
                    id: entry.id.clone(),
                    created: sent.is_some_and(|(_, put)| put.status == zblade_sync::PutStatus::Created),
                    artifact_path: match sent {
                        Some(_) => format!(
                            "{}/api/v0/projects/{project_id}/{}/{}",
                            client.url(),
                            entry.kind.collection(),
                            entry.id
                        ),
                        None => format!(
                            "{} (queued: {}; sent with the next write)",
                            parts.layout.relative(&entry.path),
                            flushed
                                .unreachable
                                .as_deref()
                                .unwrap_or("the sync server is unreachable")
                        ),
                    },
                    messages,
                    redacted: 0,
                }
            })
            .collect())
    }

    /// The server's keyword hits for `text`.
    fn hits(client: &Client, project_id: &str, text: &str, limit: usize) -> Result<Vec<SearchHit>> {
        let hits = client.search(project_id, text, None, limit)?;
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

    fn standalone_moment(client: &Client, project_id: &str, id: &str) -> Result<Option<Moment>> {
        Ok(Self::authored_moment(client, project_id, id)?.map(|(moment, _)| moment))
    }

    /// A standalone moment with its author (the server's name for who wrote it).
    fn authored_moment(client: &Client, project_id: &str, id: &str) -> Result<Option<(Moment, Option<String>)>> {
        let Some((bytes, author)) = client.get_record_authored(project_id, Kind::Moment, id)? else {
            return Ok(None);
        };
        let mut moment = artifact::parse_moment(&bytes, &format!("{}: moment {id}", client.url()))?;
        crate::redaction::redact_moment(&mut moment);
        Ok(Some((moment, author)))
    }

    /// One conversation artifact, parsed; `NotFound` when the server has none.
    fn get_conversation(client: &Client, project_id: &str, id: &str) -> Result<Conversation> {
        Ok(Self::authored_conversation(client, project_id, id)?.0)
    }

    /// [`ServerStorage::get_conversation`] with its author: in a shared project, the teammate
    /// whose agent recorded it.
    fn authored_conversation(client: &Client, project_id: &str, id: &str) -> Result<(Conversation, Option<String>)> {
        let (bytes, author) = client
            .get_record_authored(project_id, Kind::Conversation, id)?
            .ok_or_else(|| Error::NotFound(format!("no conversation {id} on the sync server")))?;
        let mut conversation = artifact::parse_conversation(&bytes, &format!("{}: conversation {id}", client.url()))?;
        // A teammate's client (or the server) may not have redacted what it sent.
        crate::redaction::redact_conversation(&mut conversation);
        Ok((conversation, author))
    }
}

impl ServerStorage {
    /// Conversations imported from `source`: the list is read in id order and each
    /// conversation fetched to see its provenance, until the page is full.
    fn list_conversations_from(&self, parts: &Parts, page: Page, source: &str) -> Result<Vec<ConversationSummary>> {
        let client = parts.server_client()?;
        let project_id = &parts.settings.project.id;
        let mut matching = Vec::new();
        for record in client.list_records(project_id, Kind::Conversation)? {
            if matching.len() >= page.offset + page.limit {
                break;
            }
            let Ok(conversation) = Self::get_conversation(&client, project_id, &record.id) else {
                continue; // a record that does not parse is skipped here, reported by `show`
            };
            if conversation.metadata.source.as_ref().is_some_and(|s| s.tool == source) {
                matching.push(ConversationSummary {
                    artifact_path: format!("server:{}", record.id),
                    id: record.id,
                    title: record.title,
                    created_at: record.updated_at.clone(),
                    updated_at: record.updated_at,
                    message_count: conversation.messages.len() as i64,
                    tags: record.tags,
                    source: Some(source.to_string()),
                });
            }
        }
        Ok(matching.into_iter().skip(page.offset).take(page.limit).collect())
    }
}

impl ServerStorage {
    /// Every conversation of the project, read one by one.
    fn all_conversations(&self, parts: &Parts) -> Result<Vec<Conversation>> {
        const PAGE: usize = 500;
        let mut out = Vec::new();
        loop {
            let page = self.list_conversations(parts, Page::new(PAGE, out.len()), None)?;
            let full = page.len() == PAGE;
            for summary in page {
                out.push(self.conversation(parts, &summary.id)?);
            }
            if !full {
                return Ok(out);
            }
        }
    }
}

impl Storage for ServerStorage {
    /// A sync server keeps no graph index: every conversation is read (one request each).
    fn lineage(&self, parts: &Parts, id: &str) -> Result<crate::lineage::Lineage> {
        crate::lineage::lineage_among(id, &self.all_conversations(parts)?)
    }

    /// Every conversation is read (one request each).
    fn prompts(&self, parts: &Parts, search: Option<&str>, limit: usize) -> Result<Vec<zblade_index::Prompt>> {
        Ok(crate::lineage::prompts_among(
            &self.all_conversations(parts)?,
            search,
            limit,
        ))
    }

    /// A sync server lists in id order, so its whole listing (metadata only) is read.
    fn newest_conversation(&self, parts: &Parts) -> Result<Option<String>> {
        const PAGE: usize = 1000;
        let mut newest: Option<ConversationSummary> = None;
        let mut offset = 0;
        loop {
            let page = self.list_conversations(parts, Page::new(PAGE, offset), None)?;
            offset += page.len();
            let full = page.len() == PAGE;
            for summary in page {
                if newest.as_ref().is_none_or(|n| summary.updated_at > n.updated_at) {
                    newest = Some(summary);
                }
            }
            if !full {
                return Ok(newest.map(|n| n.id));
            }
        }
    }

    fn place(&self) -> &'static str {
        "on the sync server"
    }

    fn on_this_machine(&self) -> bool {
        false
    }

    /// Through the outbox; a conversation marked private is kept in the local `.zblade/`
    /// instead and never sent.
    fn put_conversations(&self, parts: &mut Parts, prepared: &[Conversation]) -> Result<Vec<AddOutcome>> {
        let (private, shared): (Vec<&Conversation>, Vec<&Conversation>) =
            prepared.iter().partition(|c| c.metadata.private);
        let kept: Vec<Conversation> = private.into_iter().cloned().collect();
        let mut local = if kept.is_empty() {
            Vec::new()
        } else {
            super::local::LocalStorage.put_conversations(parts, &kept)?
        };
        let writes = with_vectors(
            parts,
            shared
                .iter()
                .map(|c| {
                    (
                        Kind::Conversation,
                        c.conversation_id.clone(),
                        c.to_artifact_json(),
                        c.messages.len(),
                    )
                })
                .collect(),
        );
        let mut sent = Self::send(parts, writes)?;
        // In the order given.
        let mut out = Vec::with_capacity(prepared.len());
        for conv in prepared {
            let from = if conv.metadata.private { &mut local } else { &mut sent };
            if let Some(i) = from.iter().position(|o| o.id == conv.conversation_id) {
                out.push(from.remove(i));
            }
        }
        Ok(out)
    }

    fn delete_conversation(&self, parts: &mut Parts, id: &str) -> Result<()> {
        let client = parts.server_client()?;
        let project_id = &parts.settings.project.id;
        let bytes = client
            .get_record(project_id, Kind::Conversation, id)?
            .ok_or_else(|| Error::NotFound(format!("no conversation {id} on the sync server")))?;
        // Only the version just read: a conversation another client changed meanwhile stays.
        match client.delete_record_if(project_id, Kind::Conversation, id, &zblade_core::sha256_hex(&bytes))? {
            zblade_sync::Deleted::Yes | zblade_sync::Deleted::NotFound => Ok(()),
            zblade_sync::Deleted::Changed => Err(Error::Usage(format!(
                "conversation {id} changed on the sync server while it was being deleted; nothing was deleted"
            ))),
        }
    }

    fn put_moments(&self, parts: &mut Parts, prepared: Vec<(Moment, String)>) -> Result<Vec<AddOutcome>> {
        let writes = with_vectors(
            parts,
            prepared
                .iter()
                .map(|(moment, _)| (Kind::Moment, moment.id.clone(), moment.to_artifact_json(), 0))
                .collect(),
        );
        Self::send(parts, writes)
    }

    /// Id order, as the server pages it. The server's list does not know where a conversation
    /// came from, so a source filter reads each conversation on the way.
    fn list_conversations(&self, parts: &Parts, page: Page, source: Option<&str>) -> Result<Vec<ConversationSummary>> {
        if let Some(source) = source {
            return self.list_conversations_from(parts, page, source);
        }
        let client = parts.server_client()?;
        let records = client.list_records(&parts.settings.project.id, Kind::Conversation)?;
        Ok(records
            .into_iter()
            .skip(page.offset)
            .take(page.limit)
            .map(|r| ConversationSummary {
                artifact_path: format!("server:{}", r.id),
                id: r.id,
                title: r.title,
                created_at: r.updated_at.clone(),
                updated_at: r.updated_at,
                message_count: 0,
                tags: r.tags,
                source: None,
            })
            .collect())
    }

    /// The server's list has no content, so each moment on the page is read (and, with a type
    /// filter, each moment until the page is full); a moment that no longer parses is
    /// skipped, not fatal.
    fn list_moments(&self, parts: &Parts, wanted: Page, kind: Option<&str>) -> Result<Vec<MomentSummary>> {
        let client = parts.server_client()?;
        let project_id = &parts.settings.project.id;
        let mut records = client.list_records(project_id, Kind::Moment)?;
        // RFC 3339 in UTC sorts as text.
        records.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then_with(|| a.id.cmp(&b.id)));
        let mut matching = 0;
        let mut page = Vec::new();
        for record in records.iter().take(MAX_LISTED_MOMENTS) {
            if page.len() == wanted.limit {
                break;
            }
            // Without a filter, the moments before the page need not be read.
            if kind.is_none() && matching < wanted.offset {
                matching += 1;
                continue;
            }
            let Some(bytes) = client.get_record(project_id, Kind::Moment, &record.id)? else {
                continue; // deleted meanwhile
            };
            let Ok(moment) = artifact::parse_moment(&bytes, &record.id) else {
                continue;
            };
            if kind.is_some_and(|k| k != moment.kind.as_str()) {
                continue;
            }
            matching += 1;
            if matching <= wanted.offset {
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

    fn conversation(&self, parts: &Parts, id: &str) -> Result<Conversation> {
        Self::get_conversation(&parts.server_client()?, &parts.settings.project.id, id)
    }

    /// The server stores standalone moments only.
    fn moment(&self, parts: &Parts, id: &str) -> Result<Option<FoundMoment>> {
        let moment = Self::standalone_moment(&parts.server_client()?, &parts.settings.project.id, id)?;
        Ok(moment.map(FoundMoment::Standalone))
    }

    /// The server keeps no per-message index: messages are found through search.
    fn messages(&self, _project: &Parts, id: &str) -> Result<Vec<MessageMatch>> {
        Err(Error::Usage(format!(
            "{id} is not a conversation or moment id; in server mode `zblade show` takes those \
             (find messages with `zblade search`)"
        )))
    }

    fn conversation_references(&self, parts: &Parts, conversation: &Conversation) -> Result<Vec<ReferenceReport>> {
        Ok(parts.hydrate(&refs::references_in_conversation(conversation)))
    }

    fn moment_references(&self, parts: &Parts, moment: &Moment) -> Result<Vec<ReferenceReport>> {
        Ok(parts.hydrate(&refs::references_in_moment(moment)))
    }

    /// The server's passage search: hybrid (its keywords and the vectors clients sent, fused
    /// as local search fuses them) when this machine embeds the query with the project's
    /// model, keyword otherwise. Whole conversations (`--kind conversations`) are ranked by
    /// the server's record search.
    fn search(
        &self,
        parts: &Parts,
        query: &SearchQuery,
        mode: Option<SearchMode>,
        _snippets: bool,
    ) -> Result<SearchResults> {
        let client = parts.server_client()?;
        let project_id = &parts.settings.project.id;
        let hits: Vec<SearchHit>;
        let notice;
        let ran;
        match query.kind {
            SearchKind::Conversations => {
                hits = Self::hits(&client, project_id, &query.text, query.limit)?;
                ran = SearchMode::Keyword;
                notice = None;
            }
            SearchKind::Code => {
                return Ok(SearchResults {
                    mode: SearchMode::Keyword,
                    notice: Some("server mode keeps conversations and moments on the sync server; code is searched in local mode".into()),
                    hits: Vec::new(),
                    stale_files: Vec::new(),
                    elapsed_ms: 0.0,
                });
            }
            _ => {
                let answer = Self::passages(parts, &client, &query.text, query.kind, query.limit, mode)?;
                let terms = query_terms(&query.text);
                ran = passage_mode(&answer);
                notice = match (mode, ran) {
                    (Some(SearchMode::Keyword), _) => None,
                    (_, SearchMode::Keyword) => Some(NO_VECTORS_ON_SERVER.to_string()),
                    _ => None,
                };
                hits = answer.hits.iter().map(|h| passage_search_hit(h, &terms)).collect();
            }
        }
        Ok(SearchResults {
            mode: ran,
            notice,
            hits: hits
                .into_iter()
                .map(|hit| Hit {
                    hit,
                    references: Vec::new(),
                    also_in: Vec::new(),
                })
                .collect(),
            stale_files: Vec::new(),
            elapsed_ms: 0.0,
        })
    }

    fn recent_turns(&self, parts: &Parts, conversation: &str, n: usize) -> Result<Option<(String, Vec<MemoryText>)>> {
        let found = Self::authored_conversation(&parts.server_client()?, &parts.settings.project.id, conversation);
        let (conv, author) = match found {
            Ok(found) => found,
            Err(Error::NotFound(_)) => return Ok(None),
            Err(error) => return Err(error),
        };
        let turns = conv
            .messages
            .iter()
            .rev()
            .take(n)
            .map(|m| message_text(&conv, m, author.as_deref()))
            .collect();
        Ok(Some((conv.title.clone(), turns)))
    }

    fn moment_text(&self, parts: &Parts, id: &str) -> Result<Option<MemoryText>> {
        let moment = Self::authored_moment(&parts.server_client()?, &parts.settings.project.id, id)?;
        Ok(moment.map(|(m, author)| moment_text(&m, author.as_deref())))
    }

    /// The server's passage search for `text` (hybrid when this machine can embed it), its
    /// hits as memory; code references of the best conversations and moments are read from
    /// their artifacts and checked against the working tree here, as in local mode.
    fn retrieve(
        &self,
        parts: &Parts,
        text: &str,
        time: Option<TimeRange>,
        mode: Option<SearchMode>,
    ) -> Result<Retrieved> {
        let searching = Instant::now();
        // One client for the search and every record it leads to.
        let client = parts.server_client()?;
        let project_id = &parts.settings.project.id;
        let answer = Self::passages(parts, &client, text, SearchKind::All, crate::semantic::CANDIDATES, mode)?;
        let search_ms = millis_since(searching);
        let in_time = |at: Option<DateTime<Utc>>| match (time, at) {
            (Some((since, until)), Some(t)) => t >= since && t < until,
            (Some(_), None) => false,
            (None, _) => true,
        };
        let hits: Vec<(&PassageHit, MemoryText)> = answer
            .hits
            .iter()
            .map(|hit| (hit, passage_text(hit)))
            .filter(|(_, memory)| in_time(memory.time))
            .collect();
        let scale = retrieval_scale(hits.iter().map(|(h, _)| h.score));
        let mut candidates = Vec::new();
        // Code references of the best records' passages, checked together at the end.
        let mut references = Vec::new();
        let mut owners: Vec<(f64, Option<DateTime<Utc>>)> = Vec::new();
        let mut read: Vec<&str> = Vec::new();
        let mut conversations: Vec<Conversation> = Vec::new();
        for (position, (hit, memory)) in hits.iter().enumerate() {
            let retrieval = scale(hit.score, position);
            candidates.push(memory_candidate(memory, Source::Retrieved, retrieval));
            if !read.contains(&hit.record.as_str()) && read.len() >= SERVER_RECORDS {
                continue;
            }
            match hit.kind {
                Kind::Conversation => {
                    if !read.contains(&hit.record.as_str()) {
                        read.push(&hit.record);
                        match Self::get_conversation(&client, project_id, &hit.record) {
                            Ok(conversation) => conversations.push(conversation),
                            Err(Error::NotFound(_)) => continue, // deleted since the search
                            Err(error) => return Err(error),
                        }
                    }
                    let Some(conv) = conversations.iter().find(|c| c.conversation_id == hit.record) else {
                        continue;
                    };
                    let Some(message) = conv.messages.iter().find(|m| m.id == hit.message) else {
                        continue;
                    };
                    for (i, reference) in message.code_references.iter().enumerate() {
                        references.push(refs::stored_reference(
                            format!("{}/{}/{i}", conv.conversation_id, message.id),
                            Some(&conv.conversation_id),
                            Some(&message.id),
                            None,
                            reference,
                        ));
                        owners.push((retrieval * 0.9, message.timestamp));
                    }
                }
                Kind::Moment => {
                    read.push(&hit.record);
                    let Some(moment) = Self::standalone_moment(&client, project_id, &hit.record)? else {
                        continue;
                    };
                    for reference in refs::references_in_moment(&moment) {
                        references.push(reference);
                        owners.push((retrieval * 0.9, moment.created_at));
                    }
                }
            }
        }
        for (reference, (retrieval, time)) in parts.hydrate(&references).iter().zip(owners) {
            candidates.push(reference_candidate(reference, retrieval, time));
        }
        // Commits are never uploaded (every teammate has the repository): this machine's
        // index finds them, on the same 0..1 scale as the server's hits, and the rerank merges.
        candidates.extend(local_commit_candidates(parts, text, time)?);
        let ran = passage_mode(&answer);
        Ok(Retrieved {
            mode: ran,
            notices: match ran {
                SearchMode::Keyword => vec![KEYWORD_ON_SERVER.into()],
                _ => Vec::new(),
            },
            search_ms,
            candidates,
            // The gate's semantic evidence needs this project's null scores, measured on local
            // vectors; the server keeps none this client can read, so the gate has no evidence
            // here and lets retrieval through.
            evidence: Default::default(),
        })
    }
}

/// The commits this machine's index finds for `text` (keyword search; none before `zblade
/// index` has read the history), as retrieved candidates.
fn local_commit_candidates(parts: &Parts, text: &str, time: Option<TimeRange>) -> Result<Vec<Candidate>> {
    let filter = zblade_index::SearchFilter {
        since: time.map(|(since, _)| zblade_index::timestamp(since)),
        until: time.map(|(_, until)| zblade_index::timestamp(until)),
        ..Default::default()
    };
    let query = SearchQuery::new(text, 10, SearchKind::Commits).with_filter(filter);
    let hits = parts.index()?.search_candidates(&query)?;
    let scale = retrieval_scale(hits.iter().map(|h| h.score));
    let mut out = Vec::new();
    for (position, hit) in hits.iter().enumerate() {
        out.extend(parts.commit_candidate(&hit.id, scale(hit.score, position))?);
    }
    Ok(out)
}

impl ServerStorage {
    /// The server's passage search, with the query embedded by this machine's model unless
    /// keyword search was asked for or no model is here.
    fn passages(
        parts: &Parts,
        client: &Client,
        text: &str,
        kind: SearchKind,
        limit: usize,
        mode: Option<SearchMode>,
    ) -> Result<PassageAnswer> {
        let vector = match mode {
            Some(SearchMode::Keyword) => None,
            _ => query_vector(parts, text),
        };
        let query = PassageQuery {
            q: text.to_string(),
            limit: limit.clamp(1, 100),
            kind: match kind {
                SearchKind::Messages => Some(Kind::Conversation),
                SearchKind::Moments => Some(Kind::Moment),
                _ => None,
            },
            vector,
        };
        client.search_passages(&parts.settings.project.id, &query)
    }
}

/// Writes of `records` (kind, id, bytes, messages), each with its vectors. A failed embedding
/// costs the server's vectors for these records (they are still found by keywords), never the
/// writes.
fn with_vectors(parts: &Parts, records: Vec<(Kind, String, Vec<u8>, usize)>) -> Vec<Write> {
    let artifacts: Vec<(Kind, &[u8])> = records
        .iter()
        .map(|(kind, _, bytes, _)| (*kind, bytes.as_slice()))
        .collect();
    let mut vectors = pieces::record_vectors(parts, &artifacts)
        .unwrap_or_default()
        .into_iter();
    records
        .into_iter()
        .map(|(kind, id, bytes, messages)| Write {
            kind,
            id,
            vectors: vectors.next().flatten(),
            bytes,
            messages,
        })
        .collect()
}

/// The query embedded by the project's model, when this machine has it.
fn query_vector(parts: &Parts, text: &str) -> Option<QueryVector> {
    let embedder = parts.semantic().embedder().ok()?;
    let dims = embedder.lock().ok()?.dim() as u32;
    let values = parts.semantic().query_vector(text).ok()?;
    Some(QueryVector {
        model: EmbeddingModel {
            id: parts.semantic().model_id(),
            dims,
        },
        values,
    })
}

/// The mode a passage search ran in.
fn passage_mode(answer: &PassageAnswer) -> SearchMode {
    if answer.mode == "hybrid" {
        SearchMode::Hybrid
    } else {
        SearchMode::Keyword
    }
}

/// A passage as memory text.
fn passage_text(hit: &PassageHit) -> MemoryText {
    let (kind, key, conversation_id, id, title) = match hit.kind {
        Kind::Conversation => (
            HitKind::Message,
            format!("{}/{}", hit.record, hit.message),
            Some(hit.record.clone()),
            hit.message.clone(),
            Some(hit.title.clone()),
        ),
        Kind::Moment => (HitKind::Moment, hit.record.clone(), None, hit.record.clone(), None),
    };
    MemoryText {
        key,
        kind,
        conversation_id,
        title,
        id,
        label: hit.label.clone(),
        text: hit.text.clone(),
        tags: Vec::new(),
        time: DateTime::parse_from_rfc3339(&hit.time)
            .ok()
            .map(|t| t.with_timezone(&Utc)),
        author: hit.author.clone(),
    }
}

/// A passage as a search hit, with a snippet around the first query word it holds (matches
/// marked « » as the local index marks them).
fn passage_search_hit(hit: &PassageHit, terms: &[String]) -> SearchHit {
    let memory = passage_text(hit);
    SearchHit {
        kind: memory.kind,
        id: memory.id,
        conversation_id: memory.conversation_id,
        title: memory.title,
        label: Some(memory.label),
        timestamp: hit.time.clone(),
        snippet: snippet(&hit.text, terms),
        score: hit.score,
        path: None,
        lines: None,
        cid: None,
    }
}

/// About 30 words of `text` around the first of `terms` it holds, each term marked « ».
fn snippet(text: &str, terms: &[String]) -> String {
    const WORDS: usize = 30;
    let words: Vec<&str> = text.split_whitespace().collect();
    let matches = |word: &str| {
        let word = word.to_lowercase();
        terms.iter().any(|t| word.contains(t.as_str()))
    };
    let first = words.iter().position(|w| matches(w)).unwrap_or(0);
    let start = first.saturating_sub(WORDS / 3);
    let end = (start + WORDS).min(words.len());
    // The words are the server's: no escape sequence or direction mark reaches a terminal.
    let mut out: Vec<String> = words[start..end]
        .iter()
        .map(|w| zblade_sync::check::clean(w, 200))
        .map(|w| if matches(&w) { format!("«{w}»") } else { w })
        .collect();
    if start > 0 {
        out.insert(0, "…".into());
    }
    if end < words.len() {
        out.push("…".into());
    }
    out.join(" ")
}

/// A message of a conversation artifact as memory text (the server has no index to read
/// texts from).
fn message_text(conv: &Conversation, message: &Message, author: Option<&str>) -> MemoryText {
    MemoryText {
        key: format!("{}/{}", conv.conversation_id, message.id),
        kind: HitKind::Message,
        conversation_id: Some(conv.conversation_id.clone()),
        title: Some(conv.title.clone()),
        id: message.id.clone(),
        label: message.role.as_str().to_string(),
        text: message.content.clone(),
        tags: Vec::new(),
        time: message.timestamp,
        author: author.map(str::to_string),
    }
}

/// A moment artifact as memory text, its context after its content (as the index has it).
fn moment_text(moment: &Moment, author: Option<&str>) -> MemoryText {
    MemoryText {
        key: moment.id.clone(),
        kind: HitKind::Moment,
        conversation_id: moment.conversation_id.clone(),
        title: None,
        id: moment.id.clone(),
        label: moment.kind.as_str().to_string(),
        text: match moment.context.as_deref().filter(|c| !c.trim().is_empty()) {
            Some(context) => format!("{}\n{context}", moment.content),
            None => moment.content.clone(),
        },
        tags: moment.tags.clone(),
        time: moment.created_at,
        author: author.map(str::to_string),
    }
}

/// Lowercase words of a query (two characters or more), for marking them in snippets.
fn query_terms(text: &str) -> Vec<String> {
    let mut terms: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| w.chars().count() >= 2)
        .map(str::to_lowercase)
        .collect();
    // As the local index matches: very common words only when nothing else is asked.
    if terms.iter().any(|t| !zblade_index::fts::is_stopword(t)) {
        terms.retain(|t| !zblade_index::fts::is_stopword(t));
    }
    terms.sort();
    terms.dedup();
    terms
}

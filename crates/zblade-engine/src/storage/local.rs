//! Local storage: artifacts under `.zblade/` are the truth, the SQLite index and the vectors
//! are caches over them. Writes take the project's write lock and put artifacts on disk
//! before the index, so `fsck --repair` can always find what an interrupted write left.

use std::borrow::Cow;
use std::path::PathBuf;
use std::time::Instant;

use zblade_context::{Candidate, Cl100k, Item, Source};
use zblade_core::{Conversation, Error, Moment, Result, fsio, sha256_hex};
use zblade_index::{
    ConversationSummary, HeldWords, HitKind, MemoryText, MomentSummary, Page, SearchFilter, SearchKind, SearchQuery,
};
use zblade_search::chunk::cid;

use super::{AddOutcome, MessageMatch};
use super::{ForkRequest, FoundMoment, Retrieved, Storage, TimeRange, manifests};
use crate::candidates::{memory_candidate, millis_since, reference_candidate, retrieval_scale};
use crate::hit_details::HitDetails;
use crate::lock::WriteLock;
use crate::parts::Parts;
use crate::refs::ReferenceReport;
use crate::scan;
use crate::search::SearchResults;
use crate::semantic::{CANDIDATES, SearchMode};

/// Memory in `.zblade/`.
#[derive(Debug)]
pub(crate) struct LocalStorage;

/// Stores conversations (messages, then manifests) and indexes them; the caller holds the
/// write lock.
fn store_and_index(parts: &mut Parts, convs: &[Conversation]) -> Result<()> {
    let layout = parts.layout.clone();
    let writes = manifests::plan_writes(&layout, convs)?;
    let hashes = manifests::write(&writes)?;
    // The index is told the prefix each manifest was written with; a conversation is copied
    // only when that differs from what it said (a copy of every imported conversation was a
    // tenth of an import).
    let stored: Vec<(Cow<'_, Conversation>, String)> = convs
        .iter()
        .zip(writes.prefixes)
        .map(|(conv, prefix)| {
            let path = layout.relative(&layout.conversation_path(&conv.conversation_id));
            let conv = if prefix == conv.shared_prefix {
                Cow::Borrowed(conv)
            } else {
                Cow::Owned(Conversation {
                    shared_prefix: prefix,
                    ..conv.clone()
                })
            };
            (conv, path)
        })
        .collect();
    let items: Vec<(&Conversation, &str, &str)> = stored
        .iter()
        .zip(&hashes)
        .map(|((conv, path), hash)| (conv.as_ref(), path.as_str(), hash.as_str()))
        .collect();
    parts.index_mut()?.put_conversations(&items)
}

/// Writes artifact files atomically as one batch; returns each file's SHA-256 for the index.
fn write_artifacts(files: &[(PathBuf, Vec<u8>)]) -> Result<Vec<String>> {
    fsio::write_atomic_batch(files)?;
    Ok(files.iter().map(|(_, bytes)| sha256_hex(bytes)).collect())
}

impl Storage for LocalStorage {
    fn lineage(&self, parts: &Parts, id: &str) -> Result<crate::lineage::Lineage> {
        crate::lineage::in_index(parts.index()?, id)
    }

    fn prompts(&self, parts: &Parts, search: Option<&str>, limit: usize) -> Result<Vec<zblade_index::Prompt>> {
        parts.index()?.prompts(search, limit)
    }

    /// The index lists newest first.
    fn newest_conversation(&self, parts: &Parts) -> Result<Option<String>> {
        Ok(self
            .list_conversations(parts, Page::first(1), None)?
            .into_iter()
            .next()
            .map(|c| c.id))
    }

    fn place(&self) -> &'static str {
        "in this project"
    }

    fn on_this_machine(&self) -> bool {
        true
    }

    fn put_conversations(&self, parts: &mut Parts, prepared: &[Conversation]) -> Result<Vec<AddOutcome>> {
        let layout = parts.layout.clone();
        let _lock = WriteLock::acquire(&layout)?;
        let mut outcomes = Vec::with_capacity(prepared.len());
        for conv in prepared {
            let path = layout.conversation_path(&conv.conversation_id);
            outcomes.push(AddOutcome {
                id: conv.conversation_id.clone(),
                created: !path.exists(),
                artifact_path: layout.relative(&path),
                messages: conv.messages.len(),
                redacted: 0,
            });
        }
        // Forks that share messages these conversations no longer start with get their own
        // copy of the references first, so no manifest ever names a prefix that changed.
        let detached = manifests::detach_dependents(parts.index()?, &layout, prepared)?;
        if !detached.is_empty() {
            store_and_index(parts, &detached)?;
        }
        // Artifacts first: they are the truth. If indexing fails, `fsck --repair` finds the
        // artifacts that the index lacks.
        store_and_index(parts, prepared)?;
        Ok(outcomes)
    }

    fn fork(&self, parts: &mut Parts, request: &ForkRequest) -> Result<Conversation> {
        let layout = parts.layout.clone();
        let _lock = WriteLock::acquire(&layout)?;
        let fork = manifests::fork(&layout, request)?;
        let hash = manifests::write(&manifests::Writes {
            packs: Vec::new(),
            refs: Vec::new(),
            manifests: vec![(
                layout.conversation_path(&fork.conversation_id),
                fork.manifest.to_artifact_json(),
            )],
            prefixes: Vec::new(),
        })?;
        let conv = fork.manifest.into_conversation(Vec::new());
        let path = layout.relative(&layout.conversation_path(&conv.conversation_id));
        parts.index_mut()?.put_conversations(&[(&conv, &path, &hash[0])])?;
        Ok(conv)
    }

    fn delete_conversation(&self, parts: &mut Parts, id: &str) -> Result<()> {
        let layout = parts.layout.clone();
        let _lock = WriteLock::acquire(&layout)?;
        let path = layout.conversation_path(id);
        if !path.exists() {
            return Err(Error::NotFound(format!("no conversation {id} in this project")));
        }
        // Forks keep the messages they share with it: their manifests list them first.
        let dependents: Vec<Conversation> = parts
            .index()?
            .sharing_from(id)?
            .into_iter()
            .map(|(dependent, _)| manifests::detached(&layout, &dependent))
            .collect::<Result<_>>()?;
        if !dependents.is_empty() {
            store_and_index(parts, &dependents)?;
        }
        std::fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
        fsio::sync_dir(&layout.conversations_dir())?;
        parts.index_mut()?.remove_conversation(id)?;
        Ok(())
    }

    fn put_moments(&self, parts: &mut Parts, prepared: Vec<(Moment, String)>) -> Result<Vec<AddOutcome>> {
        let layout = parts.layout.clone();
        let _lock = WriteLock::acquire(&layout)?;
        let mut outcomes = Vec::with_capacity(prepared.len());
        for (moment, source) in &prepared {
            let index = parts.index()?;
            if let Some(conv) = &moment.conversation_id
                && index.conversation_artifact(conv)?.is_none()
            {
                return Err(Error::field(
                    source,
                    "conversation_id",
                    format!("no conversation {conv} in this project; add the conversation first"),
                ));
            }
            let path = layout.moment_path(&moment.id);
            let artifact_path = layout.relative(&path);
            if let Some(owner) = index.moment_artifact(&moment.id)?
                && owner != artifact_path
            {
                return Err(Error::field(
                    source,
                    "id",
                    format!("moment id {:?} is already used by {owner}", moment.id),
                ));
            }
            outcomes.push(AddOutcome {
                id: moment.id.clone(),
                created: !path.exists(),
                artifact_path,
                messages: 0,
                redacted: 0,
            });
        }
        // As for conversations: all artifacts first (one directory fsync), then one index
        // transaction; an import extracts moments from hundreds of conversations at once.
        let files: Vec<(PathBuf, Vec<u8>)> = prepared
            .iter()
            .zip(&outcomes)
            .map(|((moment, _), outcome)| (layout.root().join(&outcome.artifact_path), moment.to_artifact_json()))
            .collect();
        let hashes = write_artifacts(&files)?;
        let items: Vec<(&Moment, &str, &str)> = prepared
            .iter()
            .zip(&outcomes)
            .zip(&hashes)
            .map(|(((moment, _), outcome), hash)| (moment, outcome.artifact_path.as_str(), hash.as_str()))
            .collect();
        parts.index_mut()?.put_moments(&items)?;
        Ok(outcomes)
    }

    fn list_conversations(&self, parts: &Parts, page: Page, source: Option<&str>) -> Result<Vec<ConversationSummary>> {
        parts.index()?.list_conversations(page, source)
    }

    fn list_moments(&self, parts: &Parts, page: Page, kind: Option<&str>) -> Result<Vec<MomentSummary>> {
        parts.index()?.list_moments(page, kind)
    }

    fn conversation(&self, parts: &Parts, id: &str) -> Result<Conversation> {
        let path = parts.layout.conversation_path(id);
        if !path.exists() {
            return Err(Error::NotFound(format!("no conversation {id} in this project")));
        }
        Ok(scan::load_conversation(&parts.layout, &path)?.artifact)
    }

    fn moment(&self, parts: &Parts, id: &str) -> Result<Option<FoundMoment>> {
        let path = parts.layout.moment_path(id);
        if path.exists() {
            let loaded = scan::load_moment(&parts.layout, &path)?;
            return Ok(Some(FoundMoment::Standalone(loaded.artifact)));
        }
        // Not a file of its own: the index knows which conversation holds it, if any.
        let Some(artifact) = parts.index()?.moment_artifact(id)? else {
            return Ok(None);
        };
        let conversation_id = artifact
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .trim_end_matches(".json");
        let conversation = self.conversation(parts, conversation_id)?;
        Ok(conversation
            .moments
            .into_iter()
            .find(|m| m.id == id)
            .map(|moment| FoundMoment::Inline {
                conversation_id: conversation.conversation_id,
                moment,
            }))
    }

    fn messages(&self, parts: &Parts, id: &str) -> Result<Vec<MessageMatch>> {
        let mut matches = Vec::new();
        for location in parts.index()?.locate_message(id)? {
            let conv = self.conversation(parts, &location.conversation_id)?;
            if let Some(message) = conv.messages.get(location.seq as usize).filter(|m| m.id == id) {
                matches.push(MessageMatch {
                    conversation_id: conv.conversation_id.clone(),
                    title: conv.title.clone(),
                    message: message.clone(),
                    references: parts.references_of(&format!("{}/{id}", conv.conversation_id))?,
                });
            }
        }
        Ok(matches)
    }

    fn conversation_references(&self, parts: &Parts, conversation: &Conversation) -> Result<Vec<ReferenceReport>> {
        // The index holds each reference's live location, kept current by the watch loop; a
        // fork's inherited messages have theirs under the conversation that wrote them.
        let indexed_under = parts
            .index()?
            .indexed_under(&conversation.conversation_id, conversation.messages.len())?;
        let owners: Vec<String> = conversation
            .messages
            .iter()
            .zip(indexed_under)
            .map(|(m, owner)| format!("{owner}/{}", m.id))
            .collect();
        Ok(parts.references_of_many(&owners)?.into_iter().flatten().collect())
    }

    fn moment_references(&self, parts: &Parts, moment: &Moment) -> Result<Vec<ReferenceReport>> {
        parts.references_of(&moment.id)
    }

    fn search(
        &self,
        parts: &Parts,
        query: &SearchQuery,
        mode: Option<SearchMode>,
        snippets: bool,
    ) -> Result<SearchResults> {
        Ok(search_with_nearest(parts, query, mode, snippets)?.0)
    }

    fn recent_turns(&self, parts: &Parts, conversation: &str, n: usize) -> Result<Option<(String, Vec<MemoryText>)>> {
        let index = parts.index()?;
        let Some(title) = index.conversation_title(conversation)? else {
            return Ok(None);
        };
        Ok(Some((title, index.recent_messages(conversation, n)?)))
    }

    fn moment_text(&self, parts: &Parts, id: &str) -> Result<Option<MemoryText>> {
        let texts = parts.index()?.memory_texts(&[id.to_string()])?;
        Ok(texts.into_iter().next().filter(|t| t.kind == HitKind::Moment))
    }

    /// Hybrid (or the requested mode's) search hits; turns and moments come as their whole
    /// texts from the index, each followed by the code it references, and code hits as read
    /// from the working tree.
    fn retrieve(
        &self,
        parts: &Parts,
        text: &str,
        time: Option<TimeRange>,
        mode: Option<SearchMode>,
    ) -> Result<Retrieved> {
        let filter = SearchFilter {
            since: time.map(|(since, _)| zblade_index::timestamp(since)),
            until: time.map(|(_, until)| zblade_index::timestamp(until)),
            ..SearchFilter::default()
        };
        let query = SearchQuery::new(text.to_string(), CANDIDATES, SearchKind::All).with_filter(filter);
        // No snippets: the candidates' whole texts are read below.
        let searching = Instant::now();
        let (results, found, details) = search_with_nearest(parts, &query, mode, false)?;
        let search_ms = millis_since(searching);
        let mut notices: Vec<String> = results.notice.into_iter().collect();
        if !results.stale_files.is_empty() {
            notices.push(format!(
                "{} indexed file(s) changed since `zblade index` ran and were left out: {}",
                results.stale_files.len(),
                results.stale_files.join(", ")
            ));
        }
        if parts.counts_in_cl100k() {
            // Packing counts every candidate's tokens, and most are these hits' texts. The
            // second core is idle now (the vector half is done): it counts them while this
            // thread builds, marks and reranks the candidates, and packing looks the counts up.
            let texts = results
                .hits
                .iter()
                .filter_map(|hit| details.text(&zblade_index::hit_key(&hit.hit)));
            Cl100k::count_ahead(texts.map(|text| text.text.clone()).collect());
        }
        let scale = retrieval_scale(results.hits.iter().map(|h| h.hit.score));
        // Hydrating the hits read their texts (`details`).
        let mut candidates = Vec::new();
        for (position, hit) in results.hits.iter().enumerate() {
            let retrieval = scale(hit.hit.score, position);
            match hit.hit.kind {
                HitKind::Message | HitKind::Moment => {
                    let text = details.text(&zblade_index::hit_key(&hit.hit));
                    if let Some(text) = text {
                        candidates.push(memory_candidate(text, Source::Retrieved, retrieval));
                    }
                    // The code a remembered turn is about, as it is now; it ranks just
                    // below the turn that points to it.
                    for reference in &hit.references {
                        let time = text.and_then(|t| t.time);
                        let mut candidate = reference_candidate(reference, retrieval * 0.9, time);
                        // The regression, named: commits that rewrote the referenced lines
                        // after the turn was written.
                        if let (Some(live), Item::Code { status, .. }) = (&reference.live, &mut candidate.item) {
                            let since = time.map(zblade_index::timestamp);
                            let changed =
                                parts.changed_since(&live.file, (live.lines[0], live.lines[1]), since.as_deref())?;
                            if !changed.is_empty() {
                                status.push_str(&format!(", changed since by {}", changed.join(", ")));
                            }
                        }
                        candidates.push(candidate);
                    }
                }
                HitKind::Code => {
                    let (Some(path), Some(lines)) = (&hit.hit.path, hit.hit.lines) else {
                        continue;
                    };
                    candidates.push(Candidate {
                        key: zblade_index::hit_key(&hit.hit),
                        cid: cid(&hit.hit.snippet),
                        source: Source::Retrieved,
                        item: Item::Code {
                            path: path.clone(),
                            lines,
                            status: "current".into(),
                        },
                        text: hit.hit.snippet.clone(),
                        time: None,
                        retrieval,
                        author: None,
                        standing: None,
                    });
                }
                HitKind::Commit => {
                    if let Some(candidate) = parts.commit_candidate(&hit.hit.id, retrieval)? {
                        candidates.push(candidate);
                    }
                }
                HitKind::Conversation => {}
            }
        }
        let top_agrees = results.hits.first().is_some_and(|h| {
            matches!(h.hit.kind, HitKind::Message | HitKind::Moment | HitKind::Commit)
                && found.semantic_top.as_deref() == Some(zblade_index::hit_key(&h.hit).as_str())
        });
        let evidence = parts.gate_evidence(
            text,
            found.nearest,
            top_agrees,
            found.held_words,
            candidates.iter().map(|c| c.text.as_str()),
        )?;
        Ok(Retrieved {
            mode: results.mode,
            notices,
            search_ms,
            candidates,
            evidence,
        })
    }
}

/// What a search learned on the way that the relevance gate reads (the search's `ModeSearch`
/// fields of the same names).
struct GateClues {
    nearest: Option<f64>,
    semantic_top: Option<String>,
    held_words: Option<Option<HeldWords>>,
}

/// A search in `mode` with each hit's references checked, what the relevance gate reads
/// from it (the similarity of the nearest embedded chunk when vectors took part, say), and
/// what hydrating the hits read (their texts among it).
fn search_with_nearest(
    parts: &Parts,
    query: &SearchQuery,
    mode: Option<SearchMode>,
    snippets: bool,
) -> Result<(SearchResults, GateClues, HitDetails)> {
    let mut found = parts.search_in_mode(query, mode, snippets)?;
    let (hits, stale_files) = parts.with_references(found.hits, &mut found.details)?;
    let results = SearchResults {
        mode: found.mode,
        notice: found.notice,
        hits,
        stale_files,
        elapsed_ms: 0.0,
    };
    let clues = GateClues {
        nearest: found.nearest,
        semantic_top: found.semantic_top,
        held_words: found.held_words,
    };
    Ok((results, clues, found.details))
}

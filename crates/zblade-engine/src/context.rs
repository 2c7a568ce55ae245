//! `zblade context`: what the user asks now, turned into the most useful memory that fits a
//! token budget. The engine gathers candidates — instructions, explicit references, the active
//! conversation's recent turns, hybrid search hits with their code read from the working tree
//! now — and `zblade-context` reranks and packs them, with a receipt.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde::Serialize;
use zblade_context::{Analysis, Candidate, Cl100k, Extractive, FileRef, Format, Item, Pack, PackOptions, Source, Tier};
use zblade_core::{Conversation, Error, Message, Moment, Result};
use zblade_index::{HitKind, MemoryText, SearchFilter, SearchKind, SearchQuery};
use zblade_search::chunk::cid;

use crate::compressor::{ModelShrinker, ModelTokens};
use crate::{CANDIDATES, Project, ReferenceReport, SearchMode};

/// Turns of the active conversation fetched as working context (the tier then keeps 20, 10
/// or 5 of them).
pub const RECENT_WINDOW: usize = 20;
/// Longer queries are searched with their first this many characters: a pasted 100 KB log
/// would make a keyword query of thousands of terms, and the embedding model reads only the
/// first 256 tokens anyway.
pub const MAX_QUERY_CHARS: usize = 2_000;
/// Files named with `@file:` are read up to this size.
pub const MAX_FILE_BYTES: u64 = 2 * 1024 * 1024;
/// Server mode reads at most this many of the server's best hits (one GET each).
pub const SERVER_RECORDS: usize = 10;
/// Default budget when none is given and settings name none.
pub const DEFAULT_BUDGET: usize = 8_000;

/// What to assemble.
#[derive(Debug, Clone)]
pub struct ContextRequest {
    /// What the user asks.
    pub query: String,
    /// Token budget.
    pub budget: usize,
    /// The conversation the user is in (its recent turns are working context).
    pub conversation: Option<String>,
    /// Output format.
    pub format: Format,
    /// Reading model tier.
    pub tier: Tier,
    /// Search mode (`None`: hybrid when available, else keyword).
    pub mode: Option<SearchMode>,
}

/// An assembled context.
#[derive(Debug, Clone, Serialize)]
pub struct ContextResult {
    /// The pack: text, tokens, entries and receipt.
    #[serde(flatten)]
    pub pack: Pack,
    /// How the query was read.
    pub analysis: Analysis,
    /// The search mode that ran (`None` when the query had nothing to search for).
    pub mode: Option<SearchMode>,
    /// Things the user should know: a mode that could not run, a reference that names
    /// nothing, a query that was cut.
    pub notices: Vec<String>,
    /// Time to assemble, in milliseconds.
    pub elapsed_ms: f64,
    /// Where that time went.
    pub timings: ContextTimings,
}

/// Where the time of one assembly went, in milliseconds.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct ContextTimings {
    /// The search for candidates (hybrid or keyword; the server's in server mode).
    pub search_ms: f64,
    /// Everything else before packing: instructions, explicit references, recent turns, the
    /// hits' full texts and their code read from the working tree.
    pub gather_ms: f64,
    /// Rerank, budget, compression, render and the final count.
    pub pack_ms: f64,
}

fn millis_since(started: Instant) -> f64 {
    started.elapsed().as_secs_f64() * 1000.0
}

fn memory_candidate(text: &MemoryText, source: Source, retrieval: f64) -> Candidate {
    let item = match text.kind {
        HitKind::Moment => Item::Moment {
            id: text.id.clone(),
            moment_type: text.label.clone(),
            tags: text.tags.clone(),
        },
        _ => Item::Message {
            conversation: text.conversation_id.clone().unwrap_or_default(),
            title: text.title.clone().unwrap_or_default(),
            message: text.id.clone(),
            role: text.label.clone(),
        },
    };
    Candidate {
        key: text.key.clone(),
        cid: cid(&text.text),
        source,
        item,
        text: text.text.clone(),
        time: text.time,
        retrieval,
    }
}

/// A code reference as a candidate: the code at its live location, with its status; a
/// reference whose code is gone says so instead of showing what used to be there.
fn reference_candidate(reference: &ReferenceReport, retrieval: f64, owner_time: Option<DateTime<Utc>>) -> Candidate {
    let location = reference.live.as_ref().unwrap_or(&reference.captured);
    let text = match (&reference.code, reference.status.as_str()) {
        (Some(lines), _) if !lines.is_empty() => lines.join("\n"),
        (_, status) => format!(
            "({} lines {}-{} are {status}: {})",
            location.file,
            location.lines[0],
            location.lines[1],
            reference.reason.as_deref().unwrap_or("not in the working tree")
        ),
    };
    let mut status = reference.status.clone();
    if reference.drift.is_some() {
        // The file changed since the reference was captured (git drift).
        status.push_str(", drift");
    }
    Candidate {
        key: format!("ref:{}", reference.key),
        cid: cid(&text),
        source: Source::Retrieved,
        item: Item::Code {
            path: location.file.clone(),
            lines: (location.lines[0], location.lines[1]),
            status,
        },
        text,
        // The turn's time, so recency treats the code like the turn that points to it.
        time: owner_time,
        retrieval,
    }
}

/// Scores of different modes live on different scales, and BM25 over a small project gives
/// common words near-zero weight: half the retrieval signal is the score relative to the best,
/// half the position in the results.
fn retrieval_scale(scores: impl Iterator<Item = f64>) -> impl Fn(f64, usize) -> f64 {
    let (top, count) = scores.fold((0.0f64, 0usize), |(top, n), s| (top.max(s), n + 1));
    let count = count.max(1) as f64;
    move |score, position| {
        let relative = if top > 0.0 { (score / top).clamp(0.0, 1.0) } else { 0.0 };
        0.5 * relative + 0.5 * (count - position as f64) / count
    }
}

/// What came before a conversation's recent turns, as `zblade summarize` wrote it.
fn summary_candidate(summary: crate::SessionSummary, title: String) -> Candidate {
    Candidate {
        key: format!("summary:{}", summary.conversation),
        cid: cid(&summary.summary),
        source: Source::Summary,
        item: Item::Summary {
            conversation: summary.conversation.clone(),
            title,
        },
        text: summary.summary,
        time: Some(summary.updated_at),
        retrieval: 0.0,
    }
}

/// A message of a conversation artifact as memory text (server mode reads artifacts, not the
/// index).
fn message_text(conv: &Conversation, message: &Message) -> MemoryText {
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
    }
}

/// A moment artifact as memory text, its context after its content (as the index has it).
fn moment_text(moment: &Moment) -> MemoryText {
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
    }
}

/// The last `n` turns of a conversation artifact, newest first.
fn recent_turns(conv: &Conversation, n: usize, source: Source) -> impl Iterator<Item = Candidate> + '_ {
    conv.messages
        .iter()
        .rev()
        .take(n)
        .map(move |m| memory_candidate(&message_text(conv, m), source, 0.0))
}

/// Lowercase words of a query (two characters or more), for matching turns of a conversation
/// the server found.
fn query_terms(text: &str) -> Vec<String> {
    let mut terms: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| w.chars().count() >= 2)
        .map(str::to_lowercase)
        .collect();
    terms.sort();
    terms.dedup();
    terms
}

/// The share of `terms` that occur in `text` (case-insensitive, as substrings).
fn term_share(terms: &[String], text: &str) -> f64 {
    if terms.is_empty() {
        return 0.0;
    }
    let text = text.to_lowercase();
    terms.iter().filter(|t| text.contains(t.as_str())).count() as f64 / terms.len() as f64
}

impl Project {
    /// Assembles context for `request` (seed 001, section 5.3): analyse, retrieve, rerank,
    /// hydrate code, pack into the budget.
    pub fn context(&self, request: &ContextRequest) -> Result<ContextResult> {
        let started = Instant::now();
        let now = Utc::now();
        let mut notices = Vec::new();
        let analysis = zblade_context::analyse(&request.query, now);
        let mut candidates = Vec::new();

        let instructions = std::fs::read_to_string(self.layout.instructions()).unwrap_or_default();
        if !instructions.trim().is_empty() {
            candidates.push(Candidate {
                key: "instructions".into(),
                cid: cid(&instructions),
                source: Source::Instructions,
                item: Item::Instructions,
                text: instructions.trim().to_string(),
                time: None,
                retrieval: 0.0,
            });
        }

        for file in &analysis.files {
            match self.file_candidate(file) {
                Ok(candidate) => candidates.push(candidate),
                Err(why) => notices.push(format!("@file:{}: {why}", file.path)),
            }
        }
        let mut search_text = analysis.text.trim().to_string();
        if search_text.chars().count() > MAX_QUERY_CHARS {
            notices.push(format!(
                "the query is {} characters long; searched with its first {MAX_QUERY_CHARS}",
                search_text.chars().count()
            ));
            search_text = search_text.chars().take(MAX_QUERY_CHARS).collect();
        }
        let mut timings = ContextTimings::default();
        let mode = if self.is_server_mode() {
            self.server_candidates(
                &analysis,
                request,
                &search_text,
                &mut candidates,
                &mut notices,
                &mut timings,
            )?
        } else {
            self.local_candidates(
                &analysis,
                request,
                &search_text,
                &mut candidates,
                &mut notices,
                &mut timings,
            )?
        };
        timings.gather_ms = millis_since(started) - timings.search_ms;
        let packing = Instant::now();

        let options = PackOptions {
            budget: request.budget,
            format: request.format,
            tier: request.tier,
            query: &search_text,
            now,
            active_conversation: request.conversation.as_deref(),
            weights: Default::default(),
        };
        // With a compressor model, budgets are counted in its tokens and it shrinks what does
        // not fit (within a time budget); otherwise cl100k_base and the extractive compressor.
        let model = self.local_compressor();
        notices.extend(self.compressor_notice());
        let pack = match model {
            Ok(compressor) => {
                let shrinker = ModelShrinker {
                    project: self,
                    compressor,
                    deadline: Instant::now()
                        + Duration::from_secs_f64(self.settings.context.compression.shrink_budget_secs.max(0.0)),
                    name: format!("llama:{}", compressor.info().name),
                    notices: Default::default(),
                };
                let pack = zblade_context::pack(candidates, &options, &ModelTokens(compressor), &shrinker);
                notices.extend(shrinker.notices.into_inner().unwrap_or_default());
                pack
            }
            Err(_) => zblade_context::pack(candidates, &options, &Cl100k::new(), &Extractive),
        }
        .map_err(|e| Error::Usage(e.to_string()))?;
        Ok(ContextResult {
            pack,
            analysis,
            mode,
            notices,
            elapsed_ms: millis_since(started),
            timings: ContextTimings {
                pack_ms: millis_since(packing),
                ..timings
            },
        })
    }

    /// Memory candidates from `.zblade/` through the index: explicit references, the active
    /// conversation's recent turns and summary, and hybrid search hits with their code.
    /// Returns the search mode that ran.
    fn local_candidates(
        &self,
        analysis: &Analysis,
        request: &ContextRequest,
        search_text: &str,
        candidates: &mut Vec<Candidate>,
        notices: &mut Vec<String>,
        timings: &mut ContextTimings,
    ) -> Result<Option<SearchMode>> {
        let index = self.index()?;
        for conversation in &analysis.conversations {
            if index.conversation_title(conversation)?.is_none() {
                notices.push(format!("@conv:{conversation}: no such conversation in this project"));
                continue;
            }
            for turn in index.recent_messages(conversation, RECENT_WINDOW)? {
                candidates.push(memory_candidate(&turn, Source::Explicit, 0.0));
            }
        }
        for moment in &analysis.moments {
            match index.memory_texts(std::slice::from_ref(moment))?.first() {
                Some(text) if text.kind == HitKind::Moment => {
                    candidates.push(memory_candidate(text, Source::Explicit, 0.0));
                }
                _ => notices.push(format!("@moment:{moment}: no such moment in this project")),
            }
        }

        if let Some(conversation) = &request.conversation {
            if index.conversation_title(conversation)?.is_none() {
                return Err(Error::NotFound(format!(
                    "no conversation {conversation} in this project"
                )));
            }
            for turn in index.recent_messages(conversation, RECENT_WINDOW)? {
                candidates.push(memory_candidate(&turn, Source::Recent, 0.0));
            }
            // What came before the recent turns, when `zblade summarize` wrote it — only when
            // there was something before them: a short conversation is all recent turns.
            if let Some(summary) = self
                .conversation_summary(conversation)
                .filter(|s| s.messages > request.tier.recent_turns())
            {
                let title = index.conversation_title(conversation)?.unwrap_or_default();
                candidates.push(summary_candidate(summary, title));
            }
        }

        let mut mode = None;
        if !search_text.is_empty() {
            let filter = SearchFilter {
                since: analysis.time.as_ref().map(|t| zblade_index::timestamp(t.since)),
                until: analysis.time.as_ref().map(|t| zblade_index::timestamp(t.until)),
                ..SearchFilter::default()
            };
            let query = SearchQuery::new(search_text.to_string(), CANDIDATES, SearchKind::All).with_filter(filter);
            // No snippets: the candidates' whole texts are read below.
            let searching = Instant::now();
            let results = self.search_with_snippets(&query, request.mode, false)?;
            timings.search_ms = millis_since(searching);
            mode = Some(results.mode);
            notices.extend(results.notice);
            if !results.stale_files.is_empty() {
                notices.push(format!(
                    "{} indexed file(s) changed since `zblade index` ran and were left out: {}",
                    results.stale_files.len(),
                    results.stale_files.join(", ")
                ));
            }
            let scale = retrieval_scale(results.hits.iter().map(|h| h.hit.score));
            let keys: Vec<String> = results
                .hits
                .iter()
                .filter(|h| matches!(h.hit.kind, HitKind::Message | HitKind::Moment))
                .map(|h| zblade_index::hit_key(&h.hit))
                .collect();
            let texts: HashMap<String, MemoryText> = index
                .memory_texts(&keys)?
                .into_iter()
                .map(|t| (t.key.clone(), t))
                .collect();
            for (position, hit) in results.hits.iter().enumerate() {
                let retrieval = scale(hit.hit.score, position);
                match hit.hit.kind {
                    HitKind::Message | HitKind::Moment => {
                        let text = texts.get(&zblade_index::hit_key(&hit.hit));
                        if let Some(text) = text {
                            candidates.push(memory_candidate(text, Source::Retrieved, retrieval));
                        }
                        // The code a remembered turn is about, as it is now; it ranks just
                        // below the turn that points to it.
                        for reference in &hit.references {
                            let time = text.and_then(|t| t.time);
                            candidates.push(reference_candidate(reference, retrieval * 0.9, time));
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
                        });
                    }
                    HitKind::Conversation => {}
                }
            }
        }

        Ok(mode)
    }

    /// Server mode's memory candidates: explicit references, the active conversation and the
    /// server's keyword hits, read as artifacts from the server. A conversation the server
    /// found contributes the turns that contain query words; code references are checked
    /// against the working tree here, as in local mode. Returns the search mode that ran.
    fn server_candidates(
        &self,
        analysis: &Analysis,
        request: &ContextRequest,
        search_text: &str,
        candidates: &mut Vec<Candidate>,
        notices: &mut Vec<String>,
        timings: &mut ContextTimings,
    ) -> Result<Option<SearchMode>> {
        for conversation in &analysis.conversations {
            match self.conversation_from_server(conversation) {
                Ok(conv) => candidates.extend(recent_turns(&conv, RECENT_WINDOW, Source::Explicit)),
                Err(Error::NotFound(_)) => {
                    notices.push(format!("@conv:{conversation}: no such conversation on the sync server"));
                }
                Err(error) => return Err(error),
            }
        }
        for moment in &analysis.moments {
            match self.moment_from_server(moment)? {
                Some(moment) => candidates.push(memory_candidate(&moment_text(&moment), Source::Explicit, 0.0)),
                None => notices.push(format!("@moment:{moment}: no such moment on the sync server")),
            }
        }
        if let Some(conversation) = &request.conversation {
            let conv = self.conversation_from_server(conversation)?;
            candidates.extend(recent_turns(&conv, RECENT_WINDOW, Source::Recent));
            if let Some(summary) = self
                .conversation_summary(conversation)
                .filter(|s| s.messages > request.tier.recent_turns())
            {
                candidates.push(summary_candidate(summary, conv.title.clone()));
            }
        }
        if search_text.is_empty() {
            return Ok(None);
        }
        notices.push("server mode: keyword search on the sync server".into());
        let searching = Instant::now();
        let hits = self.search_on_server(search_text, SERVER_RECORDS)?;
        timings.search_ms = millis_since(searching);
        let scale = retrieval_scale(hits.iter().map(|h| h.score));
        let terms = query_terms(search_text);
        let in_time = |time: Option<DateTime<Utc>>| match (&analysis.time, time) {
            (Some(range), Some(t)) => t >= range.since && t < range.until,
            (Some(_), None) => false,
            (None, _) => true,
        };
        // Code references of the chosen turns and moments, checked together at the end.
        let mut references = Vec::new();
        let mut owners: Vec<(f64, Option<DateTime<Utc>>)> = Vec::new();
        for (position, hit) in hits.iter().enumerate() {
            let retrieval = scale(hit.score, position);
            match hit.kind {
                HitKind::Conversation => {
                    let conv = match self.conversation_from_server(&hit.id) {
                        Ok(conv) => conv,
                        Err(Error::NotFound(_)) => continue, // deleted since the search
                        Err(error) => return Err(error),
                    };
                    for message in conv.messages.iter().filter(|m| in_time(m.timestamp)) {
                        let share = term_share(&terms, &message.content);
                        if share == 0.0 {
                            continue;
                        }
                        let score = retrieval * (0.5 + 0.5 * share);
                        candidates.push(memory_candidate(
                            &message_text(&conv, message),
                            Source::Retrieved,
                            score,
                        ));
                        for (i, reference) in message.code_references.iter().enumerate() {
                            references.push(crate::refs::stored_reference(
                                format!("{}/{}/{i}", conv.conversation_id, message.id),
                                Some(&conv.conversation_id),
                                Some(&message.id),
                                None,
                                reference,
                            ));
                            owners.push((score * 0.9, message.timestamp));
                        }
                    }
                }
                HitKind::Moment => {
                    let Some(moment) = self.moment_from_server(&hit.id)? else {
                        continue;
                    };
                    if !in_time(moment.created_at) {
                        continue;
                    }
                    candidates.push(memory_candidate(&moment_text(&moment), Source::Retrieved, retrieval));
                    for reference in crate::refs::references_in_moment(&moment) {
                        references.push(reference);
                        owners.push((retrieval * 0.9, moment.created_at));
                    }
                }
                HitKind::Message | HitKind::Code => {}
            }
        }
        for (reference, (retrieval, time)) in self.hydrate(&references).iter().zip(owners) {
            candidates.push(reference_candidate(reference, retrieval, time));
        }
        Ok(Some(SearchMode::Keyword))
    }

    /// A file (or lines of it) named with `@file:`, read from the working tree now through the
    /// one validated reader: paths must stay inside the project, out of `.git/` and `.zblade/`,
    /// and away from secrets; huge and binary files are refused.
    fn file_candidate(&self, file: &FileRef) -> std::result::Result<Candidate, String> {
        let read = zblade_refs::read_project_file_guarded(self.layout.root(), &file.path, &self.path_guard());
        let source = match read {
            Ok(source) => source,
            Err(zblade_refs::ReadError::TooLarge(size)) => {
                return Err(format!("it is {} MB; name a line range instead", size / (1024 * 1024)));
            }
            Err(e) => return Err(e.to_string()),
        };
        if source.bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(format!(
                "it is {} MB; name a line range instead",
                source.bytes.len() / (1024 * 1024)
            ));
        }
        let text = String::from_utf8_lossy(&source.bytes);
        let lines: Vec<&str> = text.lines().collect();
        let (start, end) = match file.lines {
            Some((start, _)) if start as usize > lines.len() => {
                return Err(format!("it has {} lines; line {start} does not exist", lines.len()));
            }
            Some((start, end)) => (start, end.min(lines.len() as u32)),
            None => (1, lines.len().max(1) as u32),
        };
        let body = lines
            .get(start as usize - 1..end as usize)
            .unwrap_or_default()
            .join("\n");
        Ok(Candidate {
            key: format!("file:{}:{start}-{end}", file.path),
            cid: cid(&body),
            source: Source::Explicit,
            item: Item::Code {
                path: file.path.clone(),
                lines: (start, end),
                status: "current".into(),
            },
            text: body,
            time: None,
            retrieval: 0.0,
        })
    }
}

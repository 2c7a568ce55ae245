//! `zblade context`: what the user asks now, turned into the most useful memory that fits a
//! token budget. The engine gathers candidates — instructions, explicit references, the active
//! conversation's recent turns, hybrid search hits with their code read from the working tree
//! now — and `zblade-context` reranks and packs them, with a receipt.

use std::collections::HashMap;
use std::path::Component;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde::Serialize;
use zblade_context::{Analysis, Candidate, Cl100k, Extractive, FileRef, Format, Item, Pack, PackOptions, Source, Tier};
use zblade_core::{Error, Result};
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

impl Project {
    /// Assembles context for `request` (seed 001, section 5.3): analyse, retrieve, rerank,
    /// hydrate code, pack into the budget.
    pub fn context(&self, request: &ContextRequest) -> Result<ContextResult> {
        let started = Instant::now();
        let now = Utc::now();
        let mut notices = Vec::new();
        let analysis = zblade_context::analyse(&request.query, now);
        let index = self.index()?;
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
                candidates.push(Candidate {
                    key: format!("summary:{conversation}"),
                    cid: cid(&summary.summary),
                    source: Source::Summary,
                    item: Item::Summary {
                        conversation: conversation.clone(),
                        title: index.conversation_title(conversation)?.unwrap_or_default(),
                    },
                    text: summary.summary,
                    time: Some(summary.updated_at),
                    retrieval: 0.0,
                });
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
        let mut mode = None;
        if !search_text.is_empty() {
            let filter = SearchFilter {
                since: analysis.time.as_ref().map(|t| zblade_index::timestamp(t.since)),
                until: analysis.time.as_ref().map(|t| zblade_index::timestamp(t.until)),
                ..SearchFilter::default()
            };
            let query = SearchQuery::new(search_text.clone(), CANDIDATES, SearchKind::All).with_filter(filter);
            // No snippets: the candidates' whole texts are read below.
            let results = self.search_with_snippets(&query, request.mode, false)?;
            mode = Some(results.mode);
            notices.extend(results.notice);
            if !results.stale_files.is_empty() {
                notices.push(format!(
                    "{} indexed file(s) changed since `zblade index` ran and were left out: {}",
                    results.stale_files.len(),
                    results.stale_files.join(", ")
                ));
            }
            // Scores of different modes live on different scales, and BM25 over a small
            // project gives common words near-zero weight: half the retrieval signal is the
            // score relative to the best, half the position in the results.
            let top = results.hits.iter().map(|h| h.hit.score).fold(0.0f64, f64::max);
            let count = results.hits.len() as f64;
            let scale = |score: f64, position: usize| {
                let relative = if top > 0.0 { (score / top).clamp(0.0, 1.0) } else { 0.0 };
                0.5 * relative + 0.5 * (count - position as f64) / count
            };
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
            elapsed_ms: started.elapsed().as_secs_f64() * 1000.0,
        })
    }

    /// A file (or lines of it) named with `@file:`, read from the working tree now. Paths
    /// must stay inside the project and out of `.zblade/`.
    fn file_candidate(&self, file: &FileRef) -> std::result::Result<Candidate, String> {
        let relative = std::path::Path::new(&file.path);
        let escapes = relative.is_absolute()
            || relative
                .components()
                .any(|c| matches!(c, Component::ParentDir | Component::RootDir | Component::Prefix(_)));
        if escapes {
            return Err("only paths inside the project can be named".into());
        }
        if relative.components().next() == Some(Component::Normal(".zblade".as_ref())) {
            return Err("zblade's own folder is not project code".into());
        }
        let root = self.layout.root();
        let path = root.join(relative);
        // Symbolic links may point anywhere: the real path must still be inside the project.
        let real = path.canonicalize().map_err(|e| format!("cannot read it: {e}"))?;
        let real_root = root.canonicalize().map_err(|e| e.to_string())?;
        if !real.starts_with(&real_root) {
            return Err("it leads outside the project".into());
        }
        let size = std::fs::metadata(&real).map_err(|e| e.to_string())?.len();
        if size > MAX_FILE_BYTES {
            return Err(format!("it is {} MB; name a line range instead", size / (1024 * 1024)));
        }
        let bytes = std::fs::read(&real).map_err(|e| format!("cannot read it: {e}"))?;
        if bytes.contains(&0) {
            return Err("it is a binary file".into());
        }
        let text = String::from_utf8_lossy(&bytes);
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

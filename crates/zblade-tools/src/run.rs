//! What each tool does: one engine call per tool, its arguments already parsed, its result
//! shaped for a model (provenance on every item, code as it is now, long texts cut and said so).

use serde_json::json;
use zblade_engine::{
    ContextRequest, Page, Project, ReferenceReport, SearchFilter, SearchKind, SearchQuery, Shown, parse_moment,
};

use crate::args::*;
use crate::out::*;

/// Most hits a search returns, whatever is asked.
/// Messages `get_conversation` returns when no end is given.
const DEFAULT_MESSAGES: u32 = 50;
/// A message's text is cut to this many characters in `get_conversation`.
const MAX_MESSAGE_CHARS: usize = 20_000;

/// The `context` tool; also what the `start_session` prompt packs.
pub fn context(project: &mut Project, args: ContextArgs) -> Result<ContextOut, String> {
    if args.query.trim().is_empty() {
        return Err("query is empty: say what you are working on".into());
    }
    let request = ContextRequest {
        query: args.query,
        budget: args.budget.map(|b| b as usize),
        conversation: args.conversation,
        format: Default::default(),
        tier: args.tier.unwrap_or_default(),
        mode: None,
        exclude_conversation: None,
        min_relevance: None,
    };
    let result = project.context(&request).map_err(|e| e.to_string())?;
    let pack = &result.pack;
    let gate = pack
        .gate
        .as_ref()
        .map(|g| format!("; gate {}", g.summary()))
        .unwrap_or_default();
    if pack.nothing_relevant() {
        return Ok(ContextOut {
            notice: DATA_NOTICE,
            text: format!(
                "Nothing relevant is remembered about this query{gate}. Go on without project memory, \
                 or search with other words."
            ),
            tokens: 0,
            budget: pack.budget,
            receipt: format!("nothing packed in {:.0} ms{gate}", result.elapsed_ms),
            relevant: false,
            items: Vec::new(),
            notices: result.notices.clone(),
        });
    }
    let receipt = format!(
        "{} of {} tokens, {} of {} candidates packed in {:.0} ms; search: {}{gate}",
        pack.tokens,
        pack.budget,
        pack.entries.len(),
        pack.receipt.len(),
        result.elapsed_ms,
        result.mode.map_or("none", |m| m.as_str()),
    );
    let relevant = !pack.gated();
    let items = pack
        .entries
        .iter()
        .map(|entry| PackedItem {
            id: entry.candidate.key.clone(),
            via: entry.candidate.source.as_str().to_string(),
            label: entry.candidate.label(),
            time: entry.candidate.time.map(|t| t.to_rfc3339()),
            tokens: pack
                .receipt
                .iter()
                .find(|line| line.key == entry.candidate.key)
                .map_or(0, |line| line.tokens),
        })
        .collect();
    Ok(ContextOut {
        notice: DATA_NOTICE,
        text: pack.text.clone(),
        tokens: pack.tokens,
        budget: pack.budget,
        receipt,
        relevant,
        items,
        notices: result.notices.clone(),
    })
}

/// `search`: conversations and moments by keyword, meaning or both, with the code they reference.
pub fn search(project: &mut Project, args: SearchArgs) -> Result<SearchOut, String> {
    let query = SearchQuery::new(args.query, limit(args.limit), args.kind.unwrap_or_default())
        .with_filter(under(args.path))
        .in_mode(args.mode);
    let results = project.search(&query).map_err(|e| e.to_string())?;
    Ok(SearchOut {
        mode: results.mode.as_str().to_string(),
        notice: results.notice,
        hits: results
            .hits
            .into_iter()
            .map(|hit| HitOut {
                kind: hit.hit.kind.as_str().to_string(),
                id: hit.hit.id,
                conversation: hit.hit.conversation_id,
                title: hit.hit.title,
                label: hit.hit.label,
                time: hit.hit.timestamp,
                snippet: hit.hit.snippet,
                score: hit.hit.score,
                references: hit.references.iter().map(reference).collect(),
            })
            .collect(),
    })
}

/// `remember`: a moment saved to the project's memory, its code references anchored now.
pub fn remember(project: &mut Project, args: RememberArgs) -> Result<RememberOut, String> {
    if args.content.trim().is_empty() {
        return Err("content is empty: say what to remember".into());
    }
    let mut references = Vec::new();
    for (i, r) in args.references.iter().enumerate() {
        let Some(lines) = r.lines else {
            return Err(format!("references[{i}]: lines are required, as [first, last]"));
        };
        references.push(json!({ "file": r.file, "lines": lines, "purpose": r.purpose }));
    }
    let moment = json!({
        "type": args.kind,
        "content": args.content,
        "context": args.context,
        "conversation_id": args.conversation,
        "code_references": references,
        "tags": args.tags,
    });
    // Through the same parser and validation as a moment file: paths inside the project, no
    // secrets, sane sizes.
    let moment = parse_moment(moment.to_string().as_bytes(), "remember").map_err(|e| e.to_string())?;
    let outcome = project
        .add_moments(vec![(moment, "mcp remember".into())])
        .map_err(|e| e.to_string())?
        .pop()
        .ok_or("the moment was not stored")?;
    // Found by meaning at once; a model that cannot load leaves it to keyword search and
    // `zblade index`, which is no reason to fail a moment that is stored.
    let _ = project.embed_new_memory();
    let references = match project.show(&outcome.id) {
        Ok(Shown::Moment { references, .. }) => references.iter().map(reference).collect(),
        _ => Vec::new(),
    };
    // A decision that replaces or rules out an earlier one says so in the earlier one.
    if let Some(old) = args.supersedes.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        project
            .supersede(old, &outcome.id)
            .map_err(|e| format!("supersedes: {e}"))?;
    }
    if let Some(ruled_out) = args.rejects.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        project
            .reject(ruled_out, &args.content)
            .map_err(|e| format!("rejects: {e}"))?;
    }
    Ok(RememberOut {
        id: outcome.id,
        references,
    })
}

/// `get_conversation`: a stored conversation's messages, or a range of them, each cut when long.
pub fn get_conversation(project: &mut Project, args: GetConversationArgs) -> Result<ConversationOut, String> {
    let Ok(Shown::Conversation { conversation, .. }) = project.show(args.id.trim()) else {
        return Err(format!(
            "no conversation {:?}; list_conversations gives the ids",
            args.id
        ));
    };
    let total = conversation.messages.len();
    let from = args.from.unwrap_or(1).max(1);
    let to = args.to.unwrap_or(from.saturating_add(DEFAULT_MESSAGES - 1));
    if to < from {
        return Err(format!("the range {from}-{to} ends before it starts"));
    }
    let messages = conversation
        .messages
        .iter()
        .enumerate()
        .skip(from as usize - 1)
        .take((to - from + 1) as usize)
        .map(|(i, m)| MessageOut {
            n: i + 1,
            id: m.id.clone(),
            role: m.role.as_str().to_string(),
            time: m.timestamp.map(|t| t.to_rfc3339()),
            text: cut(&m.content, MAX_MESSAGE_CHARS),
            tools: m.tool_calls.iter().map(|c| c.name.clone()).collect(),
        })
        .collect();
    Ok(ConversationOut {
        id: conversation.conversation_id.clone(),
        title: conversation.title.clone(),
        created: conversation.created_at.map(|t| t.to_rfc3339()),
        updated: conversation.updated_at.map(|t| t.to_rfc3339()),
        source: conversation.metadata.source.as_ref().map(|s| s.tool.clone()),
        total_messages: total,
        messages,
    })
}

/// `list_conversations`: a page of conversations, newest first.
pub fn list_conversations(project: &mut Project, args: ListConversationsArgs) -> Result<ConversationList, String> {
    let limit = args.limit.unwrap_or(20).clamp(1, 200) as usize;
    let rows = project
        .list_conversations(
            Page::new(limit, args.offset.unwrap_or(0) as usize),
            args.source.as_deref(),
        )
        .map_err(|e| e.to_string())?;
    Ok(ConversationList {
        conversations: rows
            .into_iter()
            .map(|c| ConversationRow {
                id: c.id,
                title: c.title,
                updated: c.updated_at,
                messages: c.message_count,
                source: c.source,
            })
            .collect(),
    })
}

/// `zblade why` as lines a model reads: each commit with what became of its lines, each
/// turn or moment with its reference's status and what changed its code since.
fn why_lines(why: &zblade_engine::Why) -> Vec<String> {
    let mut out: Vec<String> = why.notes.clone();
    for c in &why.commits {
        let commit = &c.view.commit;
        let body = commit.body.lines().find(|l| !l.trim().is_empty()).unwrap_or_default();
        out.push(format!(
            "commit {} {} '{}' {} {} line(s){}; {}",
            commit.short(),
            commit.committed_at.get(..10).unwrap_or_default(),
            commit.subject,
            if c.role == "wrote" {
                "wrote"
            } else {
                "wrote what replaced"
            },
            c.lines,
            if body.is_empty() {
                String::new()
            } else {
                format!(" — {}", cut(body, 200))
            },
            c.view.status
        ));
    }
    for m in &why.memory {
        let state = m
            .state
            .as_ref()
            .map(|s| format!(" [{}]", s.describe()))
            .unwrap_or_default();
        let changed = match m.changed_since.is_empty() {
            true => String::new(),
            false => format!("; changed since by {}", m.changed_since.join(", ")),
        };
        out.push(format!(
            "{} {}{state}: {} (code {}{changed})",
            m.id,
            m.time.as_deref().and_then(|t| t.get(..10)).unwrap_or_default(),
            cut(&m.text, 300),
            m.reference.status_text()
        ));
    }
    out
}

/// `read_project_file`: a project file as it is now, through the engine's path checks.
pub fn read_project_file(project: &mut Project, args: ReadFileArgs) -> Result<FileOut, String> {
    let file = project
        .read_project_file(&args.path, args.lines.map(|[a, b]| (a, b)))
        .map_err(|e| e.to_string())?;
    let why = match args.why.unwrap_or(false) {
        true => why_lines(
            &project
                .why(&file.path, Some((file.lines[0], file.lines[1])))
                .map_err(|e| e.to_string())?,
        ),
        false => Vec::new(),
    };
    Ok(FileOut {
        path: file.path,
        lines: file.lines,
        total_lines: file.total_lines,
        truncated: file.truncated,
        text: file.text,
        why,
    })
}

/// `search_project`: the project's code as it is now.
pub fn search_project(project: &mut Project, args: SearchProjectArgs) -> Result<CodeSearchOut, String> {
    let query = SearchQuery::new(args.query, limit(args.limit), SearchKind::Code).with_filter(under(args.path));
    let found = project.search_code_now(&query).map_err(|e| e.to_string())?;
    Ok(CodeSearchOut {
        notice: found.notice,
        hits: found
            .hits
            .into_iter()
            .map(|hit| CodeHit {
                at: format!("{}:{}-{}", hit.path, hit.lines[0], hit.lines[1]),
                score: hit.score,
                code: hit.code,
            })
            .collect(),
    })
}

/// `status`: what zblade holds for the project and how search runs.
pub fn status(project: &mut Project, _: StatusArgs) -> Result<StatusOut, String> {
    let status = project.status().map_err(|e| e.to_string())?;
    let search = match project.semantic_unavailable() {
        None => "hybrid".to_string(),
        Some(why) => format!("keyword ({why})"),
    };
    Ok(StatusOut {
        root: status.root,
        storage: status.storage_mode,
        conversations: status.conversation_artifacts,
        moments: status.moment_artifacts,
        code_files: status.code_files,
        embedding_model: status.embedding_model,
        search,
        index_health: status.index_health,
    })
}

/// Only what is about code under `path` (`./src` and `src` alike).
fn under(path: Option<String>) -> SearchFilter {
    SearchFilter {
        path_prefix: path,
        ..SearchFilter::default()
    }
}

/// The limit asked for, or the default; the engine refuses 0 and caps a large one.
fn limit(asked: Option<u32>) -> usize {
    asked.map_or(SearchQuery::DEFAULT_LIMIT, |n| n as usize)
}

/// A reference as the code is now.
fn reference(report: &ReferenceReport) -> ReferenceOut {
    ReferenceOut {
        file: report.live.as_ref().unwrap_or(&report.captured).file.clone(),
        lines: report.live.as_ref().map(|l| l.lines),
        status: serde_json::to_value(report.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        code: report.code.as_ref().map(|lines| lines.join("\n")),
    }
}

/// `text` cut to `max` characters, saying so.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((at, _)) => format!("{}… [{} more characters]", &text[..at], text[at..].chars().count()),
    }
}

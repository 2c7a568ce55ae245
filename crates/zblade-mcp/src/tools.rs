//! The tools: their definitions (`tools/list`, in a fixed order) and what a call does. Each
//! call parses its arguments (leniently, see [`crate::lenient`]), runs one engine call on a
//! blocking thread, and answers with `structuredContent` matching the tool's `outputSchema`,
//! repeated as JSON text. Bad arguments and engine errors come back as `isError` results with
//! the reason, so the model can correct itself; nothing fails silently.

use std::any::Any;

use rmcp::handler::server::common::{schema_for_output, schema_for_type};
use rmcp::model::{CallToolResult, ContentBlock, Tool, ToolAnnotations};
use rmcp::schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use zblade_engine::{
    ContextRequest, ContextTier, Page, Project, ReferenceReport, SearchFilter, SearchKind, SearchMode, SearchQuery,
    Shown, parse_moment,
};

use crate::Memory;
use crate::args::*;
use crate::wire::*;

/// Most hits a search returns, whatever is asked.
const MAX_HITS: u32 = 50;
/// Messages `get_conversation` returns when no end is given.
const DEFAULT_MESSAGES: u32 = 50;
/// A message's text is cut to this many characters in `get_conversation`.
const MAX_MESSAGE_CHARS: usize = 20_000;

/// Every tool, in the order `tools/list` gives them; built (schemas derived and compacted) once
/// per process, not per connection.
pub fn all() -> &'static [Tool] {
    static TOOLS: std::sync::LazyLock<Vec<Tool>> = std::sync::LazyLock::new(definitions);
    &TOOLS
}

fn definitions() -> Vec<Tool> {
    vec![
        define::<ContextArgs, ContextOut>(
            "context",
            "Project memory for a task: past conversations, decisions and the code they reference, packed into a token budget.",
            true,
        ),
        define::<SearchArgs, SearchOut>(
            "search",
            "Search past conversations and saved moments; hits carry the current code they reference.",
            true,
        ),
        define::<RememberArgs, RememberOut>(
            "remember",
            "Save a decision, pattern, solution or context to project memory.",
            false,
        ),
        define::<GetConversationArgs, ConversationOut>(
            "get_conversation",
            "A stored conversation's messages by id, optionally a range.",
            true,
        ),
        define::<ListConversationsArgs, ConversationList>(
            "list_conversations",
            "Stored conversations, newest first.",
            true,
        ),
        define::<ReadFileArgs, FileOut>(
            "read_project_file",
            "Current text of a project file, or a line range.",
            true,
        ),
        define::<SearchProjectArgs, CodeSearchOut>(
            "search_project",
            "Search the project's code: path:lines with the code as it is now.",
            true,
        ),
        define::<StatusArgs, StatusOut>(
            "status",
            "What zblade holds for this project and how search runs.",
            true,
        ),
    ]
}

fn define<A: JsonSchema + Any, O: JsonSchema + Any>(
    name: &'static str,
    description: &'static str,
    read_only: bool,
) -> Tool {
    let annotations = if read_only {
        ToolAnnotations::new().read_only(true)
    } else {
        ToolAnnotations::new().read_only(false).destructive(false)
    };
    Tool::new(name, description, compact(&schema_for_type::<A>(), Side::Input))
        .with_raw_output_schema(compact(&schema_for_output::<O>(), Side::Output))
        .with_annotations(annotations)
}

/// Which schema [`compact`] trims.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    Input,
    Output,
}

/// A schema as small as it can be without saying less to a model or a validator. Every agent
/// pays for `tools/list` in its context window on every turn, and schemars writes a lot: the
/// draft, titles, number formats, `null` alternatives, definitions behind `$ref`s, the
/// closed-object marker (unknown arguments are refused anyway, with the reason). Inputs
/// keep their field descriptions (that is how a model learns the arguments) and drop `null`
/// (an absent optional argument says the same); outputs keep only types and structure, `null`
/// included, because clients validate results against them.
fn compact(schema: &Map<String, Value>, side: Side) -> std::sync::Arc<Map<String, Value>> {
    let defs = schema
        .get("$defs")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut root = Value::Object(schema.clone());
    if let Value::Object(map) = &mut root {
        map.remove("description");
        map.remove("$defs"); // inlined below: each is used once per tool, a `$ref` costs more
    }
    trim(&mut root, side, &defs);
    match root {
        Value::Object(map) => std::sync::Arc::new(map),
        _ => unreachable!("a schema is an object"),
    }
}

fn trim(value: &mut Value, side: Side, defs: &Map<String, Value>) {
    match value {
        Value::Object(map) => {
            // Property names are data, not keywords: `title` may be a field.
            for key in ["properties", "$defs"] {
                if let Some(Value::Object(named)) = map.get_mut(key) {
                    named.values_mut().for_each(|schema| trim(schema, side, defs));
                }
            }
            for key in [
                "$schema",
                "title",
                "format",
                "minimum",
                "minItems",
                "maxItems",
                "additionalProperties",
            ] {
                map.remove(key);
            }
            if matches!(map.get("default"), Some(Value::Null)) || map.get("default") == Some(&json!([])) {
                map.remove("default");
            }
            if side == Side::Output {
                map.remove("description");
                map.remove("required");
            }
            if side == Side::Input {
                // `["integer", "null"]` → `"integer"`; `anyOf: [{$ref}, {type: null}]` → the ref.
                if let Some(Value::Array(types)) = map.get("type") {
                    let kept: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
                    if kept.len() == 1 {
                        let only = kept[0].clone();
                        map.insert("type".into(), only);
                    }
                }
                if let Some(Value::Array(options)) = map.get("anyOf") {
                    let kept: Vec<Value> = options
                        .iter()
                        .filter(|o| o.get("type") != Some(&json!("null")))
                        .cloned()
                        .collect();
                    if kept.len() == 1 {
                        map.remove("anyOf");
                        if let Value::Object(only) = &kept[0] {
                            map.extend(only.clone());
                        }
                    }
                }
            }
            // Definitions are inlined: one less indirection for a model to follow, fewer tokens.
            if let Some(name) = map
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/$defs/"))
                && let Some(Value::Object(def)) = defs.get(name)
            {
                let def = def.clone();
                map.remove("$ref");
                for (key, field) in def {
                    if key != "description" {
                        map.entry(key).or_insert(field);
                    }
                }
                trim(value, side, defs); // the inlined definition's own keywords
                return;
            }
            for (key, child) in map.iter_mut() {
                if key != "properties" && key != "$defs" {
                    trim(child, side, defs);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| trim(item, side, defs)),
        _ => {}
    }
}

/// Runs tool `name`; `None` when there is no such tool.
pub async fn call(memory: &Memory, name: &str, arguments: Option<Map<String, Value>>) -> Option<CallToolResult> {
    let arguments = Value::Object(arguments.unwrap_or_default());
    Some(match name {
        "context" => run(memory, arguments, context).await,
        "search" => run(memory, arguments, search).await,
        "remember" => run(memory, arguments, remember).await,
        "get_conversation" => run(memory, arguments, get_conversation).await,
        "list_conversations" => run(memory, arguments, list_conversations).await,
        "read_project_file" => run(memory, arguments, read_project_file).await,
        "search_project" => run(memory, arguments, search_project).await,
        "status" => run(memory, arguments, status).await,
        _ => return None,
    })
}

/// Parses the arguments, runs `tool` against the project, and turns the outcome into a result.
async fn run<A, O>(memory: &Memory, arguments: Value, tool: fn(&mut Project, A) -> Result<O, String>) -> CallToolResult
where
    A: DeserializeOwned + Send + 'static,
    O: Serialize + Send + 'static,
{
    let args: A = match serde_json::from_value(arguments) {
        Ok(args) => args,
        Err(e) => return error(format!("invalid arguments: {e}")),
    };
    match memory.with(move |project| tool(project, args)).await {
        Ok(out) => CallToolResult::structured(serde_json::to_value(out).expect("tool output serialises")),
        Err(e) => error(e),
    }
}

/// An `isError` result: the reason as text, which the model reads and can act on.
fn error(reason: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(reason)])
}

/// The `context` tool; also what the `start_session` prompt packs.
pub(crate) fn context(project: &mut Project, args: ContextArgs) -> Result<ContextOut, String> {
    if args.query.trim().is_empty() {
        return Err("query is empty: say what you are working on".into());
    }
    let request = ContextRequest {
        query: args.query,
        budget: args.budget.map(|b| b as usize),
        conversation: args.conversation,
        format: Default::default(),
        tier: match args.tier {
            Some(Tier::Smart) => ContextTier::Smart,
            Some(Tier::Fast) => ContextTier::Fast,
            Some(Tier::Balanced) | None => ContextTier::Balanced,
        },
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

fn search(project: &mut Project, args: SearchArgs) -> Result<SearchOut, String> {
    let kind = match args.kind {
        Some(Kind::Messages) => SearchKind::Messages,
        Some(Kind::Moments) => SearchKind::Moments,
        Some(Kind::Conversations) => SearchKind::Conversations,
        Some(Kind::All) | None => SearchKind::All,
    };
    let mode = args.mode.map(|m| match m {
        Mode::Keyword => SearchMode::Keyword,
        Mode::Semantic => SearchMode::Semantic,
        Mode::Hybrid => SearchMode::Hybrid,
    });
    let query = SearchQuery::new(args.query, limit(args.limit), kind).with_filter(under(args.path));
    let results = project.search_with(&query, mode).map_err(|e| e.to_string())?;
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

fn remember(project: &mut Project, args: RememberArgs) -> Result<RememberOut, String> {
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
    let references = match project.show(&outcome.id) {
        Ok(Shown::Moment { references, .. }) => references.iter().map(reference).collect(),
        _ => Vec::new(),
    };
    Ok(RememberOut {
        id: outcome.id,
        references,
    })
}

fn get_conversation(project: &mut Project, args: GetConversationArgs) -> Result<ConversationOut, String> {
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

fn list_conversations(project: &mut Project, args: ListConversationsArgs) -> Result<ConversationList, String> {
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

fn read_project_file(project: &mut Project, args: ReadFileArgs) -> Result<FileOut, String> {
    let file = project
        .read_project_file(&args.path, args.lines.map(|[a, b]| (a, b)))
        .map_err(|e| e.to_string())?;
    Ok(FileOut {
        path: file.path,
        lines: file.lines,
        total_lines: file.total_lines,
        truncated: file.truncated,
        text: file.text,
    })
}

fn search_project(project: &mut Project, args: SearchProjectArgs) -> Result<CodeSearchOut, String> {
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

fn status(project: &mut Project, _: StatusArgs) -> Result<StatusOut, String> {
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
        path_prefix: path.map(|p| p.trim_start_matches("./").to_string()),
        ..SearchFilter::default()
    }
}

fn limit(asked: Option<u32>) -> usize {
    asked
        .map_or(SearchQuery::DEFAULT_LIMIT, |n| n as usize)
        .clamp(1, MAX_HITS as usize)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every agent pays for tools/list on every turn: all tools together stay within 1,500
    /// cl100k tokens (the benchmark reports the number).
    #[test]
    fn tools_list_fits_in_a_small_budget() {
        let text = serde_json::to_string(&json!({ "tools": all() })).unwrap();
        let tokens = bpe_openai::cl100k_base().count(&text);
        assert!(tokens <= 1_500, "tools/list is {tokens} tokens:\n{text}");
    }

    #[test]
    fn input_schemas_inline_enums_and_drop_nulls() {
        let search = all().iter().find(|t| t.name == "search").unwrap();
        let schema = Value::Object((*search.input_schema).clone());
        assert_eq!(schema["properties"]["limit"]["type"], "integer");
        assert_eq!(
            schema["properties"]["kind"]["enum"],
            json!(["all", "messages", "moments", "conversations"])
        );
        assert!(schema.get("$defs").is_none() && schema.get("$schema").is_none());
        assert_eq!(schema["required"], json!(["query"]));
    }
}

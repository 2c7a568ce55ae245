//! Tools a chat offers the model (OpenAI `tools`): `read_project_file`, `search_project` and
//! `search_memory`. All three only read. They run here, on the user's machine, through the same
//! engine calls as the MCP server's tools — `read_project_file` through the same path checks
//! (inside the project, not ignored secrets, not `.git/` or `.zblade/`).
//!
//! A model's arguments are untrusted: they are parsed strictly (unknown fields, wrong types and
//! missing fields are refused with the reason, which goes back to the model as the result), and
//! results are cut to [`MAX_RESULT_CHARS`] before they are sent back.

use serde_json::{Value, json};
use zblade_engine::{HitKind, Project, SearchFilter, SearchKind, SearchQuery};

/// The most of one result sent back to the model (and recorded).
pub const MAX_RESULT_CHARS: usize = 16_000;
/// Hits a search tool returns unless asked for fewer.
const DEFAULT_HITS: u64 = 8;
/// The most hits a search tool returns.
const MAX_HITS: u64 = 25;

/// The tools as an OpenAI Chat Completions request lists them.
pub fn definitions() -> Value {
    let function = |name: &str, description: &str, parameters: Value| json!({"type": "function", "function": {"name": name, "description": description, "parameters": parameters}});
    json!([
        function(
            "read_project_file",
            "Read a file of this project as it is now, whole or a line range.",
            json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "Relative to the project root."},
                "lines": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2,
                          "description": "[first, last], 1-based, inclusive."}
            }, "required": ["path"], "additionalProperties": false})
        ),
        function(
            "search_project",
            "Search the project's code; returns path:lines with the code as it is now.",
            json!({"type": "object", "properties": {
                "query": {"type": "string", "description": "Words, identifiers or a question."},
                "path": {"type": "string", "description": "Only files under this path."},
                "limit": {"type": "integer", "description": "At most this many hits (default 8)."}
            }, "required": ["query"], "additionalProperties": false})
        ),
        function(
            "search_memory",
            "Search this project's memory: earlier conversations and the decisions taken in them.",
            json!({"type": "object", "properties": {
                "query": {"type": "string", "description": "What to look for."},
                "limit": {"type": "integer", "description": "At most this many hits (default 8)."}
            }, "required": ["query"], "additionalProperties": false})
        ),
    ])
}

/// The same tools as Anthropic's Messages API lists them (`input_schema`).
pub fn anthropic_definitions() -> Value {
    let listed = definitions();
    Value::Array(
        listed
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| {
                let f = &t["function"];
                json!({"name": f["name"], "description": f["description"], "input_schema": f["parameters"]})
            })
            .collect(),
    )
}

/// What a tool call gave: the text sent back to the model, and whether it is an error.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The result (or the error's reason), cut to [`MAX_RESULT_CHARS`].
    pub text: String,
    /// Size of the whole result in bytes, before cutting.
    pub size: u64,
    /// True when the call was refused or failed.
    pub is_error: bool,
}

impl Outcome {
    fn ok(text: String) -> Outcome {
        Outcome::of(text, false)
    }

    fn error(why: impl Into<String>) -> Outcome {
        Outcome::of(format!("error: {}", why.into()), true)
    }

    fn of(text: String, is_error: bool) -> Outcome {
        let size = text.len() as u64;
        let text = if text.chars().count() > MAX_RESULT_CHARS {
            let kept: String = text.chars().take(MAX_RESULT_CHARS).collect();
            format!("{kept}\n[cut: {size} bytes in all; ask for a narrower range]")
        } else {
            text
        };
        Outcome { text, size, is_error }
    }
}

/// Runs the tool `name` with the model's `arguments` (a JSON object as text).
pub fn run(project: &mut Project, name: &str, arguments: &str) -> Outcome {
    let args: Value = match serde_json::from_str(if arguments.trim().is_empty() { "{}" } else { arguments }) {
        Ok(Value::Object(map)) => Value::Object(map),
        Ok(_) => return Outcome::error("the arguments must be a JSON object"),
        Err(e) => return Outcome::error(format!("the arguments are not valid JSON: {e}")),
    };
    let result = match name {
        "read_project_file" => read_project_file(project, &args),
        "search_project" => search_project(project, &args),
        "search_memory" => search_memory(project, &args),
        other => Err(format!(
            "there is no tool {:?}; the tools are read_project_file, search_project and search_memory",
            other.chars().take(100).collect::<String>()
        )),
    };
    match result {
        Ok(text) => Outcome::ok(text),
        Err(why) => Outcome::error(why),
    }
}

/// Refuses fields other than `known`.
fn only(args: &Value, known: &[&str]) -> Result<(), String> {
    let unknown: Vec<&String> = args
        .as_object()
        .map(|m| m.keys().filter(|k| !known.contains(&k.as_str())).collect())
        .unwrap_or_default();
    match unknown.first() {
        Some(field) => Err(format!("unknown argument {field:?} (known: {})", known.join(", "))),
        None => Ok(()),
    }
}

fn string<'a>(args: &'a Value, field: &str) -> Result<&'a str, String> {
    match args.get(field) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s),
        Some(Value::String(_)) => Err(format!("{field} is empty")),
        Some(_) => Err(format!("{field} must be a string")),
        None => Err(format!("{field} is required")),
    }
}

fn limit(args: &Value) -> Result<usize, String> {
    match args.get("limit") {
        None | Some(Value::Null) => Ok(DEFAULT_HITS as usize),
        Some(v) => v
            .as_u64()
            .filter(|n| *n >= 1)
            .map(|n| n.min(MAX_HITS) as usize)
            .ok_or_else(|| "limit must be a positive integer".to_string()),
    }
}

fn read_project_file(project: &mut Project, args: &Value) -> Result<String, String> {
    only(args, &["path", "lines"])?;
    let path = string(args, "path")?;
    let lines = match args.get("lines") {
        None | Some(Value::Null) => None,
        Some(Value::Array(pair)) if pair.len() == 2 => {
            let n = |v: &Value| {
                v.as_u64()
                    .filter(|n| (1..=u32::MAX as u64).contains(n))
                    .map(|n| n as u32)
            };
            match (n(&pair[0]), n(&pair[1])) {
                (Some(a), Some(b)) if a <= b => Some((a, b)),
                _ => return Err("lines must be [first, last], 1-based, first ≤ last".into()),
            }
        }
        Some(_) => return Err("lines must be [first, last]".into()),
    };
    let file = project.read_project_file(path, lines).map_err(|e| e.to_string())?;
    let more = if file.truncated {
        " (more lines follow: ask for a range)"
    } else {
        ""
    };
    Ok(format!(
        "{}:{}-{} of {} lines{more}\n{}",
        file.path, file.lines[0], file.lines[1], file.total_lines, file.text
    ))
}

fn search_project(project: &mut Project, args: &Value) -> Result<String, String> {
    only(args, &["query", "path", "limit"])?;
    let query = string(args, "query")?;
    let path = match args.get("path") {
        None | Some(Value::Null) => None,
        Some(Value::String(p)) => Some(p.trim_start_matches("./").to_string()),
        Some(_) => return Err("path must be a string".into()),
    };
    let filter = SearchFilter {
        path_prefix: path,
        ..SearchFilter::default()
    };
    let search = SearchQuery::new(query, limit(args)?, SearchKind::Code).with_filter(filter);
    let found = project.search_code_now(&search).map_err(|e| e.to_string())?;
    let out: Vec<String> = found
        .hits
        .iter()
        .map(|hit| format!("{}:{}-{}\n{}", hit.path, hit.lines[0], hit.lines[1], hit.code))
        .collect();
    Ok(if out.is_empty() {
        "no code found".into()
    } else {
        out.join("\n\n")
    })
}

fn search_memory(project: &mut Project, args: &Value) -> Result<String, String> {
    only(args, &["query", "limit"])?;
    let query = string(args, "query")?;
    let search = SearchQuery::new(query, limit(args)?, SearchKind::All);
    let hits = project.search(&search).map_err(|e| e.to_string())?;
    let found: Vec<String> = hits
        .into_iter()
        .filter(|h| !matches!(h.hit.kind, HitKind::Code))
        .map(|h| {
            let what = h.hit.label.unwrap_or_default();
            let title = h.hit.title.unwrap_or_default();
            let text = h.hit.snippet.replace(['«', '»'], "");
            format!("[{what}] {title} ({}, {}): {text}", h.hit.id, h.hit.timestamp)
        })
        .collect();
    Ok(if found.is_empty() {
        "nothing found in memory".into()
    } else {
        found.join("\n")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> (tempfile::TempDir, Project) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(
            dir.path().join("src/auth.rs"),
            "fn validate_token(t: &str) -> bool {\n    !t.is_empty()\n}\n",
        )
        .unwrap();
        std::fs::write(dir.path().join(".env"), "API_KEY=hunter2value\n").unwrap();
        let (mut project, _) = Project::init(dir.path()).unwrap();
        let json = json!({"title": "Tokens", "messages": [
            {"role": "user", "content": "Where do we validate tokens?"},
            {"role": "assistant", "content": "We decided to validate tokens in src/auth.rs."},
        ]});
        project.add_conversation(json.to_string().as_bytes(), "c.json").unwrap();
        (dir, project)
    }

    #[test]
    fn files_are_read_through_the_projects_path_checks() {
        let (dir, mut project) = project();
        let read = run(
            &mut project,
            "read_project_file",
            r#"{"path": "src/auth.rs", "lines": [1, 1]}"#,
        );
        assert!(!read.is_error, "{read:?}");
        assert!(
            read.text.starts_with("src/auth.rs:1-1 of 3 lines\nfn validate_token"),
            "{}",
            read.text
        );
        let outside = format!(r#"{{"path": "{}/../etc/passwd"}}"#, dir.path().display());
        for hostile in [
            r#"{"path": "../../etc/passwd"}"#,
            r#"{"path": "/etc/passwd"}"#,
            r#"{"path": ".env"}"#,
            r#"{"path": ".zblade/settings.json"}"#,
            outside.as_str(),
        ] {
            let refused = run(&mut project, "read_project_file", hostile);
            assert!(refused.is_error, "{hostile}: {refused:?}");
            assert!(
                !refused.text.contains("hunter2value") && !refused.text.contains("root:"),
                "{}",
                refused.text
            );
        }
    }

    #[test]
    fn bad_arguments_are_refused_with_the_reason() {
        let (_dir, mut project) = project();
        let cases = [
            ("read_project_file", "not json", "not valid JSON"),
            ("read_project_file", "[1]", "JSON object"),
            ("read_project_file", "{}", "path is required"),
            ("read_project_file", r#"{"path": 3}"#, "path must be a string"),
            (
                "read_project_file",
                r#"{"path": "src/auth.rs", "lines": [5, 2]}"#,
                "first ≤ last",
            ),
            (
                "read_project_file",
                r#"{"path": "src/auth.rs", "mode": "w"}"#,
                "unknown argument \"mode\"",
            ),
            ("search_project", r#"{"query": "x", "limit": -1}"#, "positive integer"),
            ("delete_everything", "{}", "there is no tool"),
        ];
        for (tool, args, why) in cases {
            let outcome = run(&mut project, tool, args);
            assert!(
                outcome.is_error && outcome.text.contains(why),
                "{tool} {args}: {outcome:?}"
            );
        }
    }

    #[test]
    fn code_and_memory_are_searched() {
        let (_dir, mut project) = project();
        let memory = run(&mut project, "search_memory", r#"{"query": "validate tokens"}"#);
        assert!(
            !memory.is_error && memory.text.contains("We decided to validate tokens"),
            "{memory:?}"
        );
        project.update_search_index(&mut |_, _, _| {}).unwrap();
        let code = run(&mut project, "search_project", r#"{"query": "validate_token"}"#);
        assert!(!code.is_error && code.text.contains("src/auth.rs:1-"), "{code:?}");
    }

    #[test]
    fn long_results_are_cut_and_say_so() {
        let outcome = Outcome::ok("x".repeat(MAX_RESULT_CHARS + 10));
        assert_eq!(outcome.size, (MAX_RESULT_CHARS + 10) as u64);
        assert!(outcome.text.ends_with("ask for a narrower range]"));
        assert!(outcome.text.len() < MAX_RESULT_CHARS + 100);
    }
}

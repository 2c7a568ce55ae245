//! Tools a chat offers the model: zblade-tools' read-only ones ([`zblade_tools::CHAT`]:
//! `read_project_file`, `search_project`, `search`), with the schemas and the code the MCP
//! server serves — `read_project_file` through the engine's path checks (inside the project, not
//! ignored secrets, not `.git/` or `.zblade/`). All three only read. They run here, on the
//! user's machine.
//!
//! A model's arguments are untrusted: they are parsed strictly (unknown fields, wrong types and
//! missing fields are refused with the reason, which goes back to the model as the result), and
//! results — the tool's JSON, as an MCP client would hand it to a model — are cut to
//! [`MAX_RESULT_CHARS`] before they are sent back.

use serde_json::{Value, json};
use zblade_engine::Project;

/// The most of one result sent back to the model (and recorded).
pub const MAX_RESULT_CHARS: usize = 16_000;

/// The tools as an OpenAI Chat Completions request lists them.
pub fn definitions() -> Value {
    zblade_tools::for_chat()
        .map(|tool| {
            json!({"type": "function", "function": {
                "name": tool.name, "description": tool.description, "parameters": *tool.input_schema,
            }})
        })
        .collect()
}

/// The same tools as Anthropic's Messages API lists them (`input_schema`).
pub fn anthropic_definitions() -> Value {
    zblade_tools::for_chat()
        .map(|tool| json!({"name": tool.name, "description": tool.description, "input_schema": *tool.input_schema}))
        .collect()
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

/// Runs the tool `name` with the model's `arguments` (a JSON object as text). Only the tools
/// the chat offers run: a model cannot call `remember` by naming it.
pub fn run(project: &mut Project, name: &str, arguments: &str) -> Outcome {
    let Some(tool) = zblade_tools::for_chat().find(|tool| tool.name == name) else {
        return Outcome::error(format!(
            "there is no tool {:?}; the tools are {}",
            name.chars().take(100).collect::<String>(),
            zblade_tools::CHAT.join(", ")
        ));
    };
    let args: Value = match serde_json::from_str(if arguments.trim().is_empty() { "{}" } else { arguments }) {
        Ok(Value::Object(map)) => Value::Object(map),
        Ok(_) => return Outcome::error("the arguments must be a JSON object"),
        Err(e) => return Outcome::error(format!("the arguments are not valid JSON: {e}")),
    };
    match tool.call(project, args) {
        Ok(result) => Outcome::ok(result.to_string()),
        Err(why) => Outcome::error(why),
    }
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
        let file: Value = serde_json::from_str(&read.text).unwrap();
        assert_eq!(file["path"], "src/auth.rs");
        assert_eq!(file["lines"], json!([1, 1]));
        assert_eq!(file["total_lines"], 3);
        assert!(
            file["text"].as_str().unwrap().starts_with("fn validate_token"),
            "{file}"
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
            ("read_project_file", "{}", "missing field `path`"),
            ("read_project_file", r#"{"path": 3}"#, "expected a string"),
            (
                "read_project_file",
                r#"{"path": "src/auth.rs", "lines": [5, 2]}"#,
                "ends before it starts",
            ),
            (
                "read_project_file",
                r#"{"path": "src/auth.rs", "mode": "w"}"#,
                "unknown field `mode`",
            ),
            ("search_project", r#"{"query": "x", "limit": -1}"#, "whole number ≥ 0"),
            ("delete_everything", "{}", "there is no tool"),
            ("remember", r#"{"content": "x"}"#, "there is no tool"),
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
        let memory = run(&mut project, "search", r#"{"query": "validate tokens"}"#);
        assert!(
            !memory.is_error && memory.text.contains("We decided to «validate» «tokens»"),
            "{memory:?}"
        );
        project.update_search_index(&mut |_, _, _| {}).unwrap();
        let code = run(&mut project, "search_project", r#"{"query": "validate_token"}"#);
        assert!(
            !code.is_error && code.text.contains("\"at\":\"src/auth.rs:1-"),
            "{code:?}"
        );
    }

    /// The chat's `search_project` (the MCP server's too: both run `zblade_tools`' one tool)
    /// answers with the engine's code search: the same places in the same order.
    #[test]
    fn search_project_answers_what_the_engines_code_search_finds() {
        let (dir, mut project) = project();
        for (name, body) in [
            (
                "src/cache.rs",
                "fn evict_oldest(lru: &mut Lru) {\n    lru.remove_oldest();\n}\n",
            ),
            (
                "src/token.rs",
                "fn refresh_token(t: &str) -> String {\n    rotate(t)\n}\n",
            ),
            (
                "src/user.rs",
                "fn validate_user(u: &User) -> bool {\n    u.token_valid()\n}\n",
            ),
        ] {
            std::fs::write(dir.path().join(name), body).unwrap();
        }
        project.update_search_index(&mut |_, _, _| {}).unwrap();
        for query in ["validate token", "evict the oldest entry", "refresh"] {
            let engine: Vec<String> = project
                .search(&zblade_engine::SearchQuery::new(
                    query,
                    5,
                    zblade_engine::SearchKind::Code,
                ))
                .unwrap()
                .hits
                .iter()
                .map(|h| {
                    let (first, last) = h.hit.lines.unwrap();
                    format!("{}:{first}-{last}", h.hit.path.as_deref().unwrap())
                })
                .collect();
            assert!(!engine.is_empty(), "{query}: nothing found");
            let args = json!({"query": query, "limit": 5}).to_string();
            let chat = run(&mut project, "search_project", &args);
            assert!(!chat.is_error, "{chat:?}");
            let chat: Value = serde_json::from_str(&chat.text).unwrap();
            let places: Vec<&str> = chat["hits"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| h["at"].as_str().unwrap())
                .collect();
            assert_eq!(places, engine, "{query}");
        }
    }

    #[test]
    fn long_results_are_cut_and_say_so() {
        let outcome = Outcome::ok("x".repeat(MAX_RESULT_CHARS + 10));
        assert_eq!(outcome.size, (MAX_RESULT_CHARS + 10) as u64);
        assert!(outcome.text.ends_with("ask for a narrower range]"));
        assert!(outcome.text.len() < MAX_RESULT_CHARS + 100);
    }
}

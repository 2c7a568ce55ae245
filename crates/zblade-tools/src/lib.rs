//! The tools zblade offers models, written once: each tool's name, description, argument type
//! (`args.rs`, parsed leniently: `lenient.rs`), result type (`out.rs`), the JSON schemas derived
//! from both (`schema.rs`) and the engine call it makes (`run.rs`). The MCP server serves all of
//! them (`zblade-mcp`); the chat offers the read-only ones a model needs while it answers
//! ([`CHAT`]), with the same schemas and the same code behind them.
//!
//! Adding a tool: its argument and result types, its function in `run.rs`, one line in
//! [`all`]. Every face that serves tools picks it up from the list.

mod args;
mod lenient;
mod out;
pub mod run;
mod schema;

use std::any::Any;
use std::sync::{Arc, LazyLock};

use rmcp::handler::server::common::{schema_for_output, schema_for_type};
use rmcp::schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use zblade_engine::Project;

pub use args::*;
pub use out::*;
use schema::{Side, compact};

/// The tools the chat offers a model: they only read, so a turn cannot change the project.
pub const CHAT: [&str; 3] = ["read_project_file", "search_project", "search"];

/// A tool's call: the arguments as a model sent them in, the result as JSON or why it failed.
type Runner = Box<dyn Fn(&mut Project, Value) -> Result<Value, String> + Send + Sync>;

/// One tool: what a model is told about it and what a call does.
pub struct Tool {
    /// Its name in `tools/list` and in a model's tool calls.
    pub name: &'static str,
    /// One sentence for the model.
    pub description: &'static str,
    /// True when it only reads.
    pub read_only: bool,
    /// The arguments' schema (compact: see `schema.rs`).
    pub input_schema: Arc<Map<String, Value>>,
    /// The result's schema.
    pub output_schema: Arc<Map<String, Value>>,
    /// Parses the arguments and runs the tool.
    run: Runner,
}

impl Tool {
    /// Runs the tool with `arguments` (a JSON object from a model, untrusted).
    pub fn call(&self, project: &mut Project, arguments: Value) -> Result<Value, String> {
        (self.run)(project, arguments)
    }
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool").field("name", &self.name).finish()
    }
}

/// Every tool, in the order `tools/list` gives them; built (schemas derived and compacted) once
/// per process.
pub fn all() -> &'static [Tool] {
    static TOOLS: LazyLock<Vec<Tool>> = LazyLock::new(|| {
        vec![
            tool(
                "context",
                "Project memory for a task (conversations, commits, decisions, their code) within a token budget.",
                true,
                run::context,
            ),
            tool(
                "search",
                "Search conversations, moments and commits; hits carry the current code they reference.",
                true,
                run::search,
            ),
            tool(
                "remember",
                "Save a decision, pattern, solution or context to project memory.",
                false,
                run::remember,
            ),
            tool(
                "get_conversation",
                "A stored conversation's messages by id, optionally a range.",
                true,
                run::get_conversation,
            ),
            tool(
                "list_conversations",
                "Stored conversations, newest first.",
                true,
                run::list_conversations,
            ),
            tool(
                "read_project_file",
                "Current text of a project file, or a line range.",
                true,
                run::read_project_file,
            ),
            tool(
                "search_project",
                "Search the project's code: path:lines with the code as it is now.",
                true,
                run::search_project,
            ),
            tool(
                "status",
                "What zblade holds for this project and how search runs.",
                true,
                run::status,
            ),
        ]
    });
    &TOOLS
}

/// The tool called `name`.
pub fn find(name: &str) -> Option<&'static Tool> {
    all().iter().find(|tool| tool.name == name)
}

/// The tools the chat offers ([`CHAT`]), in that order.
pub fn for_chat() -> impl Iterator<Item = &'static Tool> {
    CHAT.into_iter().filter_map(find)
}

fn tool<A, O>(
    name: &'static str,
    description: &'static str,
    read_only: bool,
    run: fn(&mut Project, A) -> Result<O, String>,
) -> Tool
where
    A: DeserializeOwned + JsonSchema + Any,
    O: Serialize + JsonSchema + Any,
{
    Tool {
        name,
        description,
        read_only,
        input_schema: compact(&schema_for_type::<A>(), Side::Input),
        output_schema: compact(&schema_for_output::<O>(), Side::Output),
        run: Box::new(move |project, arguments| {
            let args: A = serde_json::from_value(arguments).map_err(|e| format!("invalid arguments: {e}"))?;
            let out = run(project, args)?;
            Ok(serde_json::to_value(out).expect("tool output serialises"))
        }),
    }
}

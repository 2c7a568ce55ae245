//! The tools as MCP serves them: `tools/list` from [`zblade_tools::all`] (names, descriptions,
//! schemas, read-only annotations), and a call run on a blocking thread, answered with
//! `structuredContent` matching the tool's `outputSchema`, repeated as JSON text. Bad arguments
//! and engine errors come back as `isError` results with the reason, so the model can correct
//! itself; nothing fails silently. What each tool does is written in zblade-tools.

use std::sync::LazyLock;

use rmcp::model::{CallToolResult, ContentBlock, Tool, ToolAnnotations};
use serde_json::{Map, Value};

use crate::Memory;

/// Every tool as `tools/list` gives it; built once per process, not per connection.
pub fn all() -> &'static [Tool] {
    static TOOLS: LazyLock<Vec<Tool>> = LazyLock::new(|| zblade_tools::all().iter().map(listed).collect());
    &TOOLS
}

fn listed(tool: &zblade_tools::Tool) -> Tool {
    let annotations = if tool.read_only {
        ToolAnnotations::new().read_only(true)
    } else {
        ToolAnnotations::new().read_only(false).destructive(false)
    };
    Tool::new(tool.name, tool.description, tool.input_schema.clone())
        .with_raw_output_schema(tool.output_schema.clone())
        .with_annotations(annotations)
}

/// Runs tool `name`; `None` when there is no such tool.
pub async fn call(memory: &Memory, name: &str, arguments: Option<Map<String, Value>>) -> Option<CallToolResult> {
    let tool = zblade_tools::find(name)?;
    let arguments = Value::Object(arguments.unwrap_or_default());
    Some(match memory.with(move |project| tool.call(project, arguments)).await {
        Ok(out) => CallToolResult::structured(out),
        Err(reason) => CallToolResult::error(vec![ContentBlock::text(reason)]),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

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
            json!(["all", "messages", "moments", "conversations", "code", "commits"])
        );
        assert!(schema.get("$defs").is_none() && schema.get("$schema").is_none());
        assert_eq!(schema["required"], json!(["query"]));
    }
}

//! Keeping tool calls small: a 50 MB tool output or a whole file passed as an argument is
//! stored as its head and tail plus its size, never in full.

use serde_json::Value;
use zblade_core::ToolResult;

/// Bytes kept of a tool result (head and tail).
pub const MAX_RESULT_BYTES: usize = 4000;
/// Bytes kept of each string inside a tool call's arguments.
pub const MAX_ARGUMENT_BYTES: usize = 2000;

/// `text` cut to about `max` bytes: its head, a marker saying how much was left out, and its
/// tail (where errors and summaries usually are). Costs O(`max`), not O(length): a 50 MB
/// output is cut without walking it.
pub fn trim_text(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let head = floor_boundary(text, max * 3 / 4);
    let tail = ceil_boundary(text, text.len() - max / 4);
    format!(
        "{}\n[… {} bytes left out …]\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

/// The largest char boundary at or before `i`.
fn floor_boundary(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The smallest char boundary at or after `i`.
fn ceil_boundary(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// A tool result from its full text.
pub fn result(text: &str, is_error: bool) -> ToolResult {
    ToolResult {
        text: trim_text(text, MAX_RESULT_BYTES),
        size: text.len() as u64,
        is_error,
        extra: Default::default(),
    }
}

/// Arguments with every long string trimmed.
pub fn arguments(mut value: Value) -> Value {
    trim_strings(&mut value);
    value
}

fn trim_strings(value: &mut Value) {
    match value {
        Value::String(s) if s.len() > MAX_ARGUMENT_BYTES => *s = trim_text(s, MAX_ARGUMENT_BYTES),
        Value::Array(items) => items.iter_mut().for_each(trim_strings),
        Value::Object(map) => map.values_mut().for_each(trim_strings),
        _ => {}
    }
}

/// Arguments given as a JSON string (OpenAI's function calls): parsed when they parse, kept as
/// a string otherwise.
pub fn arguments_from_json_string(raw: &str) -> Value {
    arguments(serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string())))
}

/// The text of a content value: a string (borrowed, not copied: tool outputs can be huge), or
/// the `text` of each block of an array.
pub fn content_text(content: &Value) -> std::borrow::Cow<'_, str> {
    match content {
        Value::String(s) => std::borrow::Cow::Borrowed(s),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| match b {
                Value::String(s) => Some(s.as_str()),
                _ => b.get("text").and_then(Value::as_str),
            })
            .collect::<Vec<_>>()
            .join("\n")
            .into(),
        _ => std::borrow::Cow::Borrowed(""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_results_keep_head_tail_and_size() {
        let text = "x".repeat(50_000_000);
        let r = result(&text, false);
        assert_eq!(r.size, 50_000_000);
        assert!(r.text.len() < MAX_RESULT_BYTES + 100);
        assert!(r.text.contains("bytes left out"));
        let accents = "é".repeat(10_000);
        let cut = trim_text(&accents, 101);
        assert!(cut.starts_with("éé") && cut.ends_with("éé"), "cut on char boundaries");
    }

    #[test]
    fn arguments_are_trimmed_inside() {
        let v = arguments(serde_json::json!({"file_path": "a.rs", "content": "y".repeat(10_000)}));
        assert_eq!(v["file_path"], "a.rs");
        assert!(v["content"].as_str().unwrap().len() < MAX_ARGUMENT_BYTES + 100);
    }
}

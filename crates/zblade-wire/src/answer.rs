//! The provider's answer, put back together from what the proxy relayed — a JSON body or a
//! server-sent event stream — so the turn can be recorded: text, tool calls (arguments joined
//! by `index`), finish reason, usage, model. A stream cut short gives what arrived, marked
//! partial.

use serde_json::{Map, Value};
use zblade_core::{Message, Role, ToolCall};

use crate::api::{Api, arguments, chat_tool_calls, str_of, text_of};

/// An answer as far as it arrived.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Answer {
    /// The assistant's text.
    pub text: String,
    /// Tool calls: id, name, arguments (as the model wrote them).
    pub tool_calls: Vec<(String, String, String)>,
    /// `stop`, `tool_calls`, `end_turn`, `max_tokens`, ...
    pub finish_reason: Option<String>,
    /// Token usage as the provider reported it.
    pub usage: Option<Value>,
    /// The model that answered.
    pub model: Option<String>,
    /// The provider's id of the answer (`chatcmpl-…`, `resp_…`, `msg_…`).
    pub id: Option<String>,
    /// True when the answer arrived whole.
    pub complete: bool,
    /// An error the provider sent instead of (or in the middle of) the answer.
    pub error: Option<String>,
}

impl Answer {
    /// The assistant message to record, with id `id`.
    pub fn message(&self, id: String) -> Message {
        let mut message = Message::new(Role::Assistant, self.text.clone());
        message.id = id;
        message.model = self.model.clone();
        message.tool_calls = self
            .tool_calls
            .iter()
            .map(|(id, name, args)| {
                ToolCall::new(id.clone(), name.clone(), arguments(Some(&Value::String(args.clone()))))
            })
            .collect();
        let mut extra = Map::new();
        if let Some(reason) = &self.finish_reason {
            extra.insert("finish_reason".into(), Value::String(reason.clone()));
        }
        if let Some(usage) = &self.usage {
            extra.insert("usage".into(), usage.clone());
        }
        if !self.complete {
            // The client went away (or the stream broke) before the answer ended.
            extra.insert("partial".into(), Value::Bool(true));
        }
        message.extra = extra;
        message
    }

    /// True when there is something worth recording.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty() && self.tool_calls.is_empty()
    }
}

/// The text one line of `api`'s event stream adds to the answer (`data: {…}` with a text
/// delta), decoded as [`parse`] decodes the whole stream, so tokens can be shown as they
/// arrive; `None` for a line that adds no text (a keep-alive, `[DONE]`, a tool call's part).
pub fn text_delta(api: Api, line: &[u8]) -> Option<String> {
    let text = parse(api, line, true).text;
    (!text.is_empty()).then_some(text)
}

/// Reassembles the answer of `api` from the relayed `body`; `stream` says how it was sent.
pub fn parse(api: Api, body: &[u8], stream: bool) -> Answer {
    if !stream {
        let Ok(value) = serde_json::from_slice::<Value>(body) else {
            return Answer::default();
        };
        let mut answer = whole(api, &value);
        answer.complete = answer.error.is_none();
        return answer;
    }
    let mut answer = Answer::default();
    let mut calls = Calls::default();
    for (event, data) in events(body) {
        if data == "[DONE]" {
            answer.complete = true;
            continue;
        }
        let Ok(value) = serde_json::from_str::<Value>(&data) else {
            continue;
        };
        if let Some(error) = value.get("error").filter(|e| !e.is_null()) {
            answer.error = Some(error_text(error));
            continue;
        }
        match api {
            Api::ChatCompletions => chat_chunk(&value, &mut answer, &mut calls),
            Api::Responses => response_event(event.as_deref(), &value, &mut answer, &mut calls),
            Api::Messages => anthropic_event(&value, &mut answer, &mut calls),
        }
    }
    if answer.error.is_some() {
        answer.complete = false;
    }
    if answer.tool_calls.is_empty() {
        answer.tool_calls = calls.finish();
    }
    answer
}

/// Tool calls assembled from deltas, by index.
#[derive(Default)]
struct Calls(Vec<(u64, String, String, String)>);

impl Calls {
    fn at(&mut self, index: u64) -> &mut (u64, String, String, String) {
        if let Some(position) = self.0.iter().position(|c| c.0 == index) {
            return &mut self.0[position];
        }
        self.0.push((index, String::new(), String::new(), String::new()));
        self.0.last_mut().expect("just pushed")
    }

    fn finish(mut self) -> Vec<(String, String, String)> {
        self.0.sort_by_key(|c| c.0);
        self.0.into_iter().map(|(_, id, name, args)| (id, name, args)).collect()
    }
}

fn chat_chunk(value: &Value, answer: &mut Answer, calls: &mut Calls) {
    set_once(&mut answer.id, value.get("id"));
    set_once(&mut answer.model, value.get("model"));
    if let Some(usage) = value.get("usage").filter(|u| !u.is_null()) {
        answer.usage = Some(usage.clone());
    }
    for choice in value.get("choices").and_then(Value::as_array).into_iter().flatten() {
        if choice.get("index").and_then(Value::as_u64).unwrap_or(0) != 0 {
            continue; // n > 1: the first choice is the one the conversation goes on with
        }
        let delta = choice.get("delta").unwrap_or(&Value::Null);
        if let Some(text) = delta.get("content").and_then(Value::as_str) {
            answer.text.push_str(text);
        }
        for call in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            let slot = calls.at(call.get("index").and_then(Value::as_u64).unwrap_or(0));
            if let Some(id) = call.get("id").and_then(Value::as_str) {
                slot.1 = id.to_string();
            }
            let function = call.get("function").unwrap_or(&Value::Null);
            if let Some(name) = function.get("name").and_then(Value::as_str) {
                slot.2.push_str(name);
            }
            if let Some(args) = function.get("arguments").and_then(Value::as_str) {
                slot.3.push_str(args);
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            answer.finish_reason = Some(reason.to_string());
        }
    }
}

fn response_event(event: Option<&str>, value: &Value, answer: &mut Answer, calls: &mut Calls) {
    let kind = value.get("type").and_then(Value::as_str).or(event).unwrap_or_default();
    match kind {
        "response.created" | "response.in_progress" => {
            if let Some(response) = value.get("response") {
                set_once(&mut answer.id, response.get("id"));
                set_once(&mut answer.model, response.get("model"));
            }
        }
        "response.output_text.delta" => {
            answer
                .text
                .push_str(value.get("delta").and_then(Value::as_str).unwrap_or_default());
        }
        "response.output_item.added" => {
            let item = value.get("item").unwrap_or(&Value::Null);
            if item.get("type").and_then(Value::as_str) == Some("function_call") {
                let slot = calls.at(value.get("output_index").and_then(Value::as_u64).unwrap_or(0));
                slot.1 = item
                    .get("call_id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                slot.2 = item.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
            }
        }
        "response.function_call_arguments.delta" => {
            let slot = calls.at(value.get("output_index").and_then(Value::as_u64).unwrap_or(0));
            slot.3
                .push_str(value.get("delta").and_then(Value::as_str).unwrap_or_default());
        }
        "response.completed" | "response.incomplete" => {
            if let Some(response) = value.get("response") {
                // The final event carries the whole response: it is the truth.
                let whole = whole(Api::Responses, response);
                *answer = Answer {
                    complete: kind == "response.completed",
                    ..whole
                };
            }
        }
        "response.failed" => {
            let error = value.pointer("/response/error").cloned().unwrap_or(Value::Null);
            answer.error = Some(error_text(&error));
        }
        _ => {}
    }
}

fn anthropic_event(value: &Value, answer: &mut Answer, calls: &mut Calls) {
    match value.get("type").and_then(Value::as_str).unwrap_or_default() {
        "message_start" => {
            let message = value.get("message").unwrap_or(&Value::Null);
            set_once(&mut answer.id, message.get("id"));
            set_once(&mut answer.model, message.get("model"));
            if let Some(usage) = message.get("usage") {
                answer.usage = Some(usage.clone());
            }
        }
        "content_block_start" => {
            let block = value.get("content_block").unwrap_or(&Value::Null);
            let index = value.get("index").and_then(Value::as_u64).unwrap_or(0);
            match block.get("type").and_then(Value::as_str) {
                Some("tool_use") => {
                    let slot = calls.at(index);
                    slot.1 = block.get("id").and_then(Value::as_str).unwrap_or_default().to_string();
                    slot.2 = block
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string();
                }
                Some("text") => answer
                    .text
                    .push_str(block.get("text").and_then(Value::as_str).unwrap_or_default()),
                _ => {}
            }
        }
        "content_block_delta" => {
            let delta = value.get("delta").unwrap_or(&Value::Null);
            let index = value.get("index").and_then(Value::as_u64).unwrap_or(0);
            match delta.get("type").and_then(Value::as_str) {
                Some("text_delta") => answer
                    .text
                    .push_str(delta.get("text").and_then(Value::as_str).unwrap_or_default()),
                Some("input_json_delta") => calls
                    .at(index)
                    .3
                    .push_str(delta.get("partial_json").and_then(Value::as_str).unwrap_or_default()),
                _ => {}
            }
        }
        "message_delta" => {
            if let Some(reason) = value.pointer("/delta/stop_reason").and_then(Value::as_str) {
                answer.finish_reason = Some(reason.to_string());
            }
            if let Some(usage) = value.get("usage") {
                // Output tokens arrive here; input tokens came with message_start.
                let mut merged = answer.usage.take().unwrap_or_else(|| Value::Object(Map::new()));
                if let (Some(into), Some(from)) = (merged.as_object_mut(), usage.as_object()) {
                    into.extend(from.clone());
                }
                answer.usage = Some(merged);
            }
        }
        "message_stop" => answer.complete = true,
        _ => {}
    }
}

/// A non-streamed answer (or the final object of a Responses stream).
fn whole(api: Api, value: &Value) -> Answer {
    let mut answer = Answer {
        id: value.get("id").and_then(Value::as_str).map(str::to_string),
        model: value.get("model").and_then(Value::as_str).map(str::to_string),
        usage: value.get("usage").filter(|u| !u.is_null()).cloned(),
        ..Default::default()
    };
    if let Some(error) = value.get("error").filter(|e| !e.is_null()) {
        answer.error = Some(error_text(error));
        return answer;
    }
    match api {
        Api::ChatCompletions => {
            let choice = value.pointer("/choices/0").unwrap_or(&Value::Null);
            let message = choice.get("message").unwrap_or(&Value::Null);
            answer.text = text_of(message.get("content").unwrap_or(&Value::Null));
            answer.finish_reason = choice.get("finish_reason").and_then(Value::as_str).map(str::to_string);
            for (id, name, args) in chat_tool_calls(message) {
                let args = args.and_then(Value::as_str).unwrap_or_default().to_string();
                answer.tool_calls.push((id, name, args));
            }
        }
        Api::Responses => {
            let mut texts = Vec::new();
            for item in value.get("output").and_then(Value::as_array).into_iter().flatten() {
                match item.get("type").and_then(Value::as_str) {
                    Some("message") => texts.push(text_of(item.get("content").unwrap_or(&Value::Null))),
                    Some("function_call") => answer.tool_calls.push((
                        str_of(item, "call_id"),
                        str_of(item, "name"),
                        str_of(item, "arguments"),
                    )),
                    _ => {}
                }
            }
            answer.text = texts.join("\n");
            answer.finish_reason = value.get("status").and_then(Value::as_str).map(str::to_string);
        }
        Api::Messages => {
            answer.text = text_of(value.get("content").unwrap_or(&Value::Null));
            for block in value.get("content").and_then(Value::as_array).into_iter().flatten() {
                if block.get("type").and_then(Value::as_str) == Some("tool_use") {
                    let input = block.get("input").map(Value::to_string).unwrap_or_default();
                    answer
                        .tool_calls
                        .push((str_of(block, "id"), str_of(block, "name"), input));
                }
            }
            answer.finish_reason = value.get("stop_reason").and_then(Value::as_str).map(str::to_string);
        }
    }
    answer
}

/// The events of a server-sent event stream: `(event name, data)`.
pub(crate) fn events(body: &[u8]) -> Vec<(Option<String>, String)> {
    let text = String::from_utf8_lossy(body);
    let mut out = Vec::new();
    let (mut name, mut data): (Option<String>, Vec<&str>) = (None, Vec::new());
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            if !data.is_empty() {
                out.push((name.take(), data.join("\n")));
            }
            name = None;
            data.clear();
        } else if let Some(value) = line.strip_prefix("data:") {
            data.push(value.strip_prefix(' ').unwrap_or(value));
        } else if let Some(value) = line.strip_prefix("event:") {
            name = Some(value.trim().to_string());
        }
    }
    if !data.is_empty() {
        out.push((name, data.join("\n")));
    }
    out
}

fn set_once(slot: &mut Option<String>, value: Option<&Value>) {
    if slot.is_none()
        && let Some(text) = value.and_then(Value::as_str)
    {
        *slot = Some(text.to_string());
    }
}

fn error_text(error: &Value) -> String {
    error
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_line_gives_its_text_delta() {
        let line = br#"data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}"#;
        assert_eq!(text_delta(Api::ChatCompletions, line).as_deref(), Some("Hel"));
        assert_eq!(text_delta(Api::ChatCompletions, b"data: [DONE]\n"), None);
        assert_eq!(text_delta(Api::ChatCompletions, b": keep-alive\n"), None);
        assert_eq!(
            text_delta(
                Api::ChatCompletions,
                br#"data: {"choices":[{"delta":{"role":"assistant"}}]}"#
            ),
            None
        );
        assert_eq!(text_delta(Api::ChatCompletions, b"data: {not json"), None);
        let anthropic =
            br#"data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Argon"}}"#;
        assert_eq!(text_delta(Api::Messages, anthropic).as_deref(), Some("Argon"));
        let tool_input = br#"data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{"p"}}"#;
        assert_eq!(text_delta(Api::Messages, tool_input), None);
    }

    #[test]
    fn chat_stream_tool_call_deltas_are_joined_by_index() {
        let body = concat!(
            "data: {\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Let me \"}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"look.\",\"tool_calls\":[{\"index\":1,\"id\":\"call_b\",\"function\":{\"name\":\"grep\",\"arguments\":\"{\\\"q\\\"\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"function\":{\"name\":\"read\",\"arguments\":\"{}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\":\\\"x\\\"}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":7}}\n\n",
            "data: [DONE]\n\n"
        );
        let answer = parse(Api::ChatCompletions, body.as_bytes(), true);
        assert_eq!(answer.text, "Let me look.");
        assert_eq!(
            answer.tool_calls,
            [
                ("call_a".into(), "read".into(), "{}".into()),
                ("call_b".into(), "grep".into(), "{\"q\":\"x\"}".into())
            ]
        );
        assert_eq!(answer.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(answer.usage.as_ref().unwrap()["completion_tokens"], 7);
        assert!(answer.complete);
    }

    #[test]
    fn an_anthropic_stream_cut_short_is_partial() {
        let body = concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"claude\",\"usage\":{\"input_tokens\":9}}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Half an\"}}\n\n",
        );
        let answer = parse(Api::Messages, body.as_bytes(), true);
        assert_eq!(answer.text, "Half an");
        assert!(!answer.complete);
        assert_eq!(answer.message("m".into()).extra["partial"], true);
    }

    #[test]
    fn a_responses_stream_ends_with_the_whole_response() {
        let body = concat!(
            "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"model\":\"gpt\"}}\n\n",
            "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hel\"}\n\n",
            "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"model\":\"gpt\",\"status\":\"completed\",",
            "\"output\":[{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"Hello\"}]}],\"usage\":{\"input_tokens\":3}}}\n\n",
        );
        let answer = parse(Api::Responses, body.as_bytes(), true);
        assert_eq!((answer.text.as_str(), answer.complete), ("Hello", true));
        assert_eq!(answer.id.as_deref(), Some("resp_1"));
    }

    #[test]
    fn an_error_mid_stream_is_kept() {
        let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"error\":{\"message\":\"overloaded\"}}\n\n";
        let answer = parse(Api::ChatCompletions, body.as_bytes(), true);
        assert_eq!(answer.error.as_deref(), Some("overloaded"));
        assert!(!answer.complete);
    }
}

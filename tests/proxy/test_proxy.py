"""`zblade proxy` driven by the official `openai` and `anthropic` Python clients.

What is asserted: memory goes in (and only where the API keeps system text — every other byte
reaches the provider as sent), answers come back as the provider sent them (status, error body,
headers, events in order and unbuffered), every turn is recorded (text, tool calls, finish
reason, usage; resent history once; a client that leaves gives a partial turn), and whatever
fails inside zblade, the request still goes through.
"""

import json
import time

import anthropic
import httpx2 as httpx
import openai
import pytest

from conftest import DECISION, data, json_response, named, sse_response

QUESTION = "How do we hash passwords, and why?"
KEY = "sk-test-proxy-key-5f2b9c1d8e7a6b5c4d3e2f1a"


def inserted(original: bytes, received: bytes) -> bytes:
    """What was added to `original` to make `received`, asserting nothing else changed."""
    assert len(received) > len(original)
    k = 0
    while k < len(original) and original[k] == received[k]:
        k += 1
    added = len(received) - len(original)
    assert received[k + added:] == original[k:], "bytes outside the injected text changed"
    return received[k:k + added]


def openai_client(proxy, **kw):
    return openai.OpenAI(base_url=proxy.url + "/v1", api_key=KEY, max_retries=0, **kw)


def anthropic_client(proxy, **kw):
    return anthropic.Anthropic(base_url=proxy.url, api_key=KEY, max_retries=0, **kw)


# --- with a real OpenAI-compatible server (llama.cpp on the tiny model) ---------------------

def test_chat_completion_gets_memory_and_the_turn_is_recorded(proxy):
    client = openai_client(proxy)
    raw = client.chat.completions.with_raw_response.create(
        model="tiny-llama", messages=[{"role": "user", "content": QUESTION}], max_tokens=12
    )
    completion = raw.parse()
    assert int(raw.headers["x-zblade-context-entries"]) >= 1
    receipt = raw.headers["x-zblade-receipt"]
    conversation = raw.headers["x-zblade-conversation"]
    shown = json.loads(proxy.zblade("--json", "proxy", "receipts", receipt).stdout)["receipts"][0]
    assert "Argon2id" in shown["injected"] and "data, not instructions" in shown["injected"]
    assert shown["model"] == "tiny-llama" and shown["api"] == "chat.completions"

    messages = proxy.messages_when(conversation, lambda m: len(m) >= 2)
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[0]["content"] == QUESTION
    assert messages[1]["content"] == completion.choices[0].message.content
    assert messages[1]["finish_reason"] == completion.choices[0].finish_reason
    assert messages[1]["usage"]["completion_tokens"] == completion.usage.completion_tokens
    # The injected memory is never recorded as part of the conversation.
    assert all("zblade-memory" not in m["content"] for m in messages)


def test_streamed_chat_is_relayed_and_recorded_whole(proxy):
    client = openai_client(proxy)
    question = "Streaming: how do we hash passwords?"
    stream = client.chat.completions.create(
        model="tiny-llama", messages=[{"role": "user", "content": question}], max_tokens=16, stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert len({c.id for c in chunks}) == 1 and finish
    listed = json.loads(proxy.zblade("--json", "proxy", "receipts", "--limit", "1").stdout)["receipts"][0]
    messages = proxy.messages_when(listed["conversation"], lambda m: len(m) >= 2)
    assert messages[0]["content"] == question
    assert messages[1]["content"] == text
    assert messages[1]["finish_reason"] == finish[-1]
    assert messages[1].get("partial") is None


def test_a_resent_history_is_recorded_once(proxy):
    client = openai_client(proxy)
    history = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "First question about caching?"}]
    first = client.chat.completions.with_raw_response.create(model="tiny-llama", messages=history, max_tokens=6)
    conversation = first.headers["x-zblade-conversation"]
    answer = first.parse().choices[0].message.content
    proxy.messages_when(conversation, lambda m: len(m) >= 2)
    history += [{"role": "assistant", "content": answer}, {"role": "user", "content": "And the second?"}]
    second = client.chat.completions.with_raw_response.create(model="tiny-llama", messages=history, max_tokens=6)
    assert second.headers["x-zblade-conversation"] == conversation, "the resent history was not recognised"
    messages = proxy.messages_when(conversation, lambda m: len(m) >= 4)
    assert [m["content"] for m in messages[:3]] == ["First question about caching?", answer, "And the second?"]
    assert len(messages) == 4
    assert all(m["role"] != "system" for m in messages), "the client's system prompt was recorded"


def test_other_paths_pass_through_untouched(proxy):
    models = openai_client(proxy).models.list()
    assert [m.id for m in models.data] == ["tiny-llama"]


# --- fidelity, against the scripted upstream ------------------------------------------------

def chat_answer(text="Fine.", model="gpt-4o"):
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def test_every_byte_outside_the_memory_passes_as_sent(faults, scripted):
    # Fields the proxy does not know, odd spellings of numbers, an image, tools: all as sent.
    body = (b'{"model": "gpt-4o",  "temperature":1.0e0, "future_field": {"nested": [1, 2.50, null]},'
            b'"messages":[{"role":"user","content":[{"type":"text","text":"' + QUESTION.encode() + b'"},'
            b'{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}],'
            b'"tools":[{"type":"function","function":{"name":"grep","parameters":{"type":"object"}}}],'
            b'"tool_choice":"auto","parallel_tool_calls":false,"response_format":{"type":"text"},"seed":7}')
    scripted.queue(json_response(chat_answer(), headers={"x-request-id": "req_123", "x-ratelimit-remaining-requests": "99"}))
    response = httpx.post(faults.url + "/v1/chat/completions", content=body,
                          headers={"authorization": f"Bearer {KEY}", "content-type": "application/json",
                                   "x-custom-header": "kept", "openai-organization": "org_1"})
    assert response.status_code == 200
    assert response.headers["x-request-id"] == "req_123"
    assert response.headers["x-ratelimit-remaining-requests"] == "99"
    sent = scripted.last()
    # A new system message, first in `messages`; nothing else differs.
    at = body.index(b'"messages":[') + len(b'"messages":[')
    added = sent["body"][at:at + len(sent["body"]) - len(body)]
    assert sent["body"][:at] + sent["body"][at + len(added):] == body
    assert added.startswith(b'{"role":"system","content":"') and added.endswith(b'"},') and b"Argon2id" in added
    headers = {k.lower(): v for k, v in sent["headers"].items()}
    assert headers["authorization"] == f"Bearer {KEY}"
    assert headers["x-custom-header"] == "kept" and headers["openai-organization"] == "org_1"
    assert not any(k.startswith("x-zblade") for k in headers)
    assert sent["path"] == "/v1/chat/completions"


def test_a_prompt_the_memory_knows_nothing_about_goes_through_untouched(faults, scripted):
    """The relevance gate (docs/CONTEXT.md): nothing remembered bears on the prompt, so the
    request reaches the provider byte for byte, and the header and the receipt say why."""
    body = (b'{"model":"gpt-4o","messages":[{"role":"user","content":"fix the typo in README"}]}')
    scripted.queue(json_response(chat_answer()))
    response = httpx.post(faults.url + "/v1/chat/completions", content=body,
                          headers={"authorization": f"Bearer {KEY}", "content-type": "application/json"})
    assert response.status_code == 200
    assert scripted.last()["body"] == body
    assert response.headers["x-zblade-context-entries"] == "0"
    assert response.headers["x-zblade-gate"].startswith("closed: relevance ")
    listed = faults.zblade("--json", "proxy", "receipts", response.headers["x-zblade-receipt"]).stdout
    receipt = json.loads(listed)["receipts"][0]
    assert receipt["injected"] == "" and receipt["gate"]["passed"] is False
    assert receipt["gate"]["evidence"]["unknown_names"] == ["readme"]


def test_the_api_key_is_never_stored(faults, project):
    stored = b"".join(p.read_bytes() for p in (project["root"] / ".zblade").rglob("*") if p.is_file())
    assert KEY.encode() not in stored


def test_rate_limit_reaches_the_client_with_its_headers(faults, scripted):
    error = {"error": {"message": "Rate limit reached for gpt-4o", "type": "requests", "code": "rate_limit_exceeded"}}
    scripted.queue(json_response(error, status=429, headers={
        "x-ratelimit-limit-requests": "500", "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "120ms", "retry-after": "1", "x-request-id": "req_429"}))
    with pytest.raises(openai.RateLimitError) as caught:
        openai_client(faults).chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    headers = caught.value.response.headers
    assert headers["x-ratelimit-remaining-requests"] == "0" and headers["retry-after"] == "1"
    assert caught.value.request_id == "req_429"
    assert caught.value.body["message"] == "Rate limit reached for gpt-4o"


def test_a_server_error_keeps_its_body(faults, scripted):
    scripted.queue(json_response({"error": {"message": "The server had an error", "type": "server_error"}}, status=500))
    with pytest.raises(openai.InternalServerError) as caught:
        openai_client(faults).chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert caught.value.status_code == 500 and caught.value.body["message"] == "The server had an error"


def chunk(delta, finish=None, **extra):
    return data({"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o",
                 "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra})


def test_tool_call_deltas_and_usage_are_reassembled(faults, scripted):
    events = [
        chunk({"role": "assistant", "content": None, "tool_calls": [
            {"index": 0, "id": "call_a", "type": "function", "function": {"name": "read_file", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{\"path\": "}}]}),
        chunk({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "grep", "arguments": "{\"q\":\"x\"}"}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": "\"src/auth.rs\"}"}}]}),
        chunk({}, finish="tool_calls"),
        data({"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o", "choices": [],
              "usage": {"prompt_tokens": 11, "completion_tokens": 22, "total_tokens": 33}}),
        data("[DONE]"),
    ]
    scripted.queue(sse_response(events))
    client = openai_client(faults)
    with client.chat.completions.with_streaming_response.create(
        model="gpt-4o", messages=[{"role": "user", "content": "Tool time: read auth"}], stream=True,
        stream_options={"include_usage": True}, tools=[{"type": "function", "function": {"name": "read_file"}}],
    ) as raw:
        conversation = raw.headers["x-zblade-conversation"]
        chunks = list(raw.parse())
    assert chunks[-1].usage.total_tokens == 33
    messages = faults.messages_when(conversation, lambda m: len(m) >= 2)
    calls = messages[1]["tool_calls"]
    assert [(c["id"], c["name"]) for c in calls] == [("call_a", "read_file"), ("call_b", "grep")]
    assert calls[0]["arguments"] == {"path": "src/auth.rs"}
    assert messages[1]["finish_reason"] == "tool_calls" and messages[1]["usage"]["total_tokens"] == 33


def test_events_are_flushed_as_they_arrive_after_a_slow_first_byte(faults, scripted):
    events = [chunk({"content": "one"}), chunk({"content": " two"}), chunk({}, finish="stop"), data("[DONE]")]
    scripted.queue(sse_response(events, delays=[0, 1.0, 0, 0], first_byte_delay=1.5))
    started = time.time()
    stream = openai_client(faults).chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "slow please"}], stream=True)
    arrivals = [(time.time() - started, c.choices[0].delta.content) for c in stream]
    assert arrivals[0][0] >= 1.4, "the slow first byte was not waited for"
    # The first event reached the client a second before the second one was even sent.
    assert arrivals[1][0] - arrivals[0][0] >= 0.8, f"events were buffered: {arrivals}"
    assert [text for _, text in arrivals[:2]] == ["one", " two"]


def test_an_error_event_mid_stream_raises_in_the_client(faults, scripted):
    events = [chunk({"content": "partial"}), data({"error": {"message": "upstream overloaded", "type": "server_error"}})]
    scripted.queue(sse_response(events))
    stream = openai_client(faults).chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "mid-stream error"}], stream=True)
    with pytest.raises(openai.APIError, match="upstream overloaded"):
        list(stream)


def test_a_stream_broken_mid_way_breaks_the_client_and_leaves_a_partial_turn(faults, scripted):
    events = [chunk({"content": "Half "}), chunk({"content": "an answer"}), chunk({}, finish="stop"), data("[DONE]")]
    scripted.queue(sse_response(events, break_after=2))
    client = openai_client(faults)
    received = []
    with pytest.raises((openai.APIError, httpx.HTTPError)):
        with client.chat.completions.with_streaming_response.create(
            model="gpt-4o", messages=[{"role": "user", "content": "Broken stream question"}], stream=True
        ) as raw:
            conversation = raw.headers["x-zblade-conversation"]
            for c in raw.parse():
                received.append(c.choices[0].delta.content)
    assert received == ["Half ", "an answer"]
    messages = faults.messages_when(conversation, lambda m: len(m) >= 2)
    assert messages[1]["content"] == "Half an answer" and messages[1]["partial"] is True


def test_a_client_that_leaves_mid_stream_leaves_a_partial_turn(faults, scripted):
    events = [chunk({"content": "First words"}), chunk({"content": " never read"}), chunk({}, finish="stop"), data("[DONE]")]
    scripted.queue(sse_response(events, delays=[0, 2.0, 0, 0]))
    client = openai_client(faults)
    with client.chat.completions.with_streaming_response.create(
        model="gpt-4o", messages=[{"role": "user", "content": "I will hang up"}], stream=True
    ) as raw:
        conversation = raw.headers["x-zblade-conversation"]
        first = next(iter(raw.parse()))
        assert first.choices[0].delta.content == "First words"
    # The client closed the connection; the proxy records what it had.
    messages = faults.messages_when(conversation, lambda m: len(m) >= 2, settle=10)
    assert messages[1]["content"].startswith("First words") and messages[1]["partial"] is True


def test_if_zblade_fails_the_request_goes_through_unmodified(faults, scripted):
    body = json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": QUESTION}]}).encode()
    scripted.queue(json_response(chat_answer()))
    response = httpx.post(faults.url + "/v1/chat/completions", content=body,
                          headers={"content-type": "application/json", "x-zblade-conversation": "conv_../../etc/passwd"})
    assert response.status_code == 200 and response.json()["choices"][0]["message"]["content"] == "Fine."
    assert "x-zblade-conversation" in response.headers["x-zblade-error"]
    assert scripted.last()["body"] == body
    # Not JSON at all: the provider decides what to say about it.
    scripted.queue(json_response({"error": {"message": "We could not parse the JSON body"}}, status=400))
    response = httpx.post(faults.url + "/v1/chat/completions", content=b"{not json", headers={"content-type": "application/json"})
    assert response.status_code == 400 and "not JSON" in response.headers["x-zblade-error"]
    assert scripted.last()["body"] == b"{not json"


def test_an_unreachable_provider_is_a_provider_shaped_error(project):
    from conftest import Proxy, free_port
    dead = f"http://127.0.0.1:{free_port()}"
    p = Proxy(project, dead, dead)
    try:
        with pytest.raises(openai.InternalServerError) as caught:
            openai_client(p).chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        assert caught.value.status_code == 502 and "cannot reach the upstream provider" in caught.value.message
        with pytest.raises(anthropic.APIStatusError) as caught:
            anthropic_client(p).messages.create(model="claude-sonnet-5", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
        assert caught.value.status_code == 502
    finally:
        p.stop()


# --- Anthropic Messages (Claude Code's API) -------------------------------------------------

def anthropic_stream(text_parts, tool=None):
    events = [named("message_start", {"type": "message_start", "message": {
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-5", "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 25, "output_tokens": 1}}}),
        named("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        named("ping", {"type": "ping"})]
    for part in text_parts:
        events.append(named("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": part}}))
    events.append(named("content_block_stop", {"type": "content_block_stop", "index": 0}))
    if tool:
        events.append(named("content_block_start", {"type": "content_block_start", "index": 1, "content_block": {
            "type": "tool_use", "id": tool[0], "name": tool[1], "input": {}}}))
        for piece in tool[2]:
            events.append(named("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": piece}}))
        events.append(named("content_block_stop", {"type": "content_block_stop", "index": 1}))
    events.append(named("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use" if tool else "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 15}}))
    events.append(named("message_stop", {"type": "message_stop"}))
    return events


def claude_code_request():
    """The shape Claude Code sends: system blocks with cache_control, tools, tool use history."""
    return dict(
        model="claude-sonnet-5",
        max_tokens=32000,
        system=[{"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
                {"type": "text", "text": "Working directory: /repo", "cache_control": {"type": "ephemeral"}}],
        tools=[{"name": "Read", "description": "Read a file", "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}}],
        messages=[
            {"role": "user", "content": [{"type": "text", "text": QUESTION}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Let me read it."},
                                              {"type": "tool_use", "id": "toolu_01", "name": "Read", "input": {"file_path": "src/auth.rs"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "argon2id(password)"}]},
        ],
        metadata={"user_id": "user_abc"},
        extra_headers={"anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14"},
    )


def test_claude_code_shaped_stream_through_the_anthropic_client(faults, scripted):
    scripted.queue(sse_response(anthropic_stream(["Argon2id, ", "because bcrypt truncates."], tool=("toolu_02", "Read", ['{"file_', 'path": "a.rs"}']))))
    client = anthropic_client(faults)
    request = claude_code_request()
    with client.messages.stream(**request) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "Argon2id, because bcrypt truncates."
    assert final.content[1].input == {"file_path": "a.rs"} and final.stop_reason == "tool_use"
    sent = scripted.last()
    headers = {k.lower(): v for k, v in sent["headers"].items()}
    assert KEY in (headers.get("x-api-key"), headers.get("authorization", "").removeprefix("Bearer ")) and headers["anthropic-beta"].startswith("claude-code")
    assert sent["path"] == "/v1/messages"
    body = json.loads(sent["body"])
    assert body["system"][1]["cache_control"] == {"type": "ephemeral"}
    assert body["system"][2]["type"] == "text" and "Argon2id" in body["system"][2]["text"]
    assert body["tools"] == request["tools"] and body["metadata"] == request["metadata"]
    listed = json.loads(faults.zblade("--json", "proxy", "receipts", "--limit", "1").stdout)["receipts"][0]
    messages = faults.messages_when(listed["conversation"], lambda m: len(m) >= 4)
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[1]["tool_calls"][0]["arguments"] == {"file_path": "src/auth.rs"}
    assert messages[3]["content"] == text and messages[3]["tool_calls"][0]["arguments"] == {"file_path": "a.rs"}
    assert messages[3]["usage"]["output_tokens"] == 15 and messages[3]["finish_reason"] == "tool_use"


def test_anthropic_non_streaming_and_errors(faults, scripted):
    answer = {"id": "msg_02", "type": "message", "role": "assistant", "model": "claude-sonnet-5",
              "content": [{"type": "text", "text": "Use Argon2id."}], "stop_reason": "end_turn", "stop_sequence": None,
              "usage": {"input_tokens": 10, "output_tokens": 3}}
    scripted.queue(json_response(answer, headers={"request-id": "req_a1", "anthropic-ratelimit-requests-remaining": "49"}))
    client = anthropic_client(faults)
    raw = client.messages.with_raw_response.create(model="claude-sonnet-5", max_tokens=100, system="Be brief.",
                                                   messages=[{"role": "user", "content": "Anthropic: which password hashing?"}])
    assert raw.parse().content[0].text == "Use Argon2id."
    assert raw.headers["anthropic-ratelimit-requests-remaining"] == "49" and raw.headers["request-id"] == "req_a1"
    sent = json.loads(scripted.last()["body"])
    assert sent["system"].startswith("Be brief.\n\n") and "Argon2id" in sent["system"]

    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    scripted.queue(json_response(overloaded, status=529))
    with pytest.raises(anthropic.APIStatusError) as caught:
        client.messages.create(model="claude-sonnet-5", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    assert caught.value.status_code == 529 and caught.value.body["error"]["type"] == "overloaded_error"


# --- OpenAI Responses (Codex's API) ---------------------------------------------------------

def responses_stream(text_parts, response_id="resp_1"):
    base = {"id": response_id, "object": "response", "model": "gpt-5-codex", "status": "in_progress", "output": []}
    events = [named("response.created", {"type": "response.created", "sequence_number": 0, "response": base})]
    for i, part in enumerate(text_parts):
        events.append(named("response.output_text.delta", {"type": "response.output_text.delta", "sequence_number": i + 1,
                                                           "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": part}))
    done = dict(base, status="completed", output=[{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                                                   "content": [{"type": "output_text", "text": "".join(text_parts), "annotations": []}]}],
                usage={"input_tokens": 12, "output_tokens": 4, "total_tokens": 16})
    events.append(named("response.completed", {"type": "response.completed", "sequence_number": 99, "response": done}))
    return events


def test_codex_shaped_responses_stream(faults, scripted):
    scripted.queue(sse_response(responses_stream(["Argon2id ", "it is."])))
    client = openai_client(faults)
    stream = client.responses.create(
        model="gpt-5-codex", instructions="You are Codex.", stream=True, store=False,
        input=[{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Codex: how are passwords hashed?"}]}],
        tools=[{"type": "function", "name": "shell", "parameters": {"type": "object"}, "strict": False}],
        reasoning={"effort": "medium", "summary": "auto"}, include=["reasoning.encrypted_content"],
    )
    events = list(stream)
    assert [e.type for e in events] == ["response.created", "response.output_text.delta", "response.output_text.delta", "response.completed"]
    sent = json.loads(scripted.last()["body"])
    assert sent["instructions"].startswith("You are Codex.\n\n") and "Argon2id" in sent["instructions"]
    assert sent["reasoning"] == {"effort": "medium", "summary": "auto"} and sent["include"] == ["reasoning.encrypted_content"]
    listed = json.loads(faults.zblade("--json", "proxy", "receipts", "--limit", "1").stdout)["receipts"][0]
    assert listed["api"] == "responses"
    messages = faults.messages_when(listed["conversation"], lambda m: len(m) >= 2)
    assert messages[1]["content"] == "Argon2id it is." and messages[1]["usage"]["total_tokens"] == 16

    # A follow-up that continues on the provider's side lands in the same conversation.
    answer = {"id": "resp_2", "object": "response", "model": "gpt-5-codex", "status": "completed",
              "output": [{"type": "message", "id": "m2", "role": "assistant", "status": "completed",
                          "content": [{"type": "output_text", "text": "Yes.", "annotations": []}]}]}
    scripted.queue(json_response(answer))
    raw = client.responses.with_raw_response.create(model="gpt-5-codex", input="Sure?", previous_response_id="resp_1")
    assert raw.headers["x-zblade-conversation"] == listed["conversation"]
    messages = faults.messages_when(listed["conversation"], lambda m: len(m) >= 4)
    assert [m["content"] for m in messages] == ["Codex: how are passwords hashed?", "Argon2id it is.", "Sure?", "Yes."]


def test_a_request_memory_pushed_over_the_limit_goes_again_without_it(faults, scripted):
    too_long = {"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 200412 tokens > 200000 maximum"}}
    answer = {"id": "msg_03", "type": "message", "role": "assistant", "model": "claude-sonnet-5",
              "content": [{"type": "text", "text": "Fits now."}], "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}}
    scripted.queue(json_response(too_long, status=400), json_response(answer))
    raw = anthropic_client(faults).messages.with_raw_response.create(
        model="claude-sonnet-5", max_tokens=10, messages=[{"role": "user", "content": QUESTION}])
    assert raw.parse().content[0].text == "Fits now."
    assert "sent again without it" in raw.headers["x-zblade-error"]
    first, second = scripted.requests[-2:]
    assert b"zblade-memory" in first["body"] and b"zblade-memory" not in second["body"]
    assert json.loads(second["body"]) == {"model": "claude-sonnet-5", "max_tokens": 10, "messages": [{"role": "user", "content": QUESTION}]}

    # Any other refusal is the client's to see, as the provider sent it, and is not retried.
    bad = {"type": "error", "error": {"type": "invalid_request_error", "message": "messages: roles must alternate"}}
    scripted.queue(json_response(bad, status=400))
    before = len(scripted.requests)
    with pytest.raises(anthropic.BadRequestError, match="roles must alternate"):
        anthropic_client(faults).messages.create(model="claude-sonnet-5", max_tokens=10, messages=[{"role": "user", "content": QUESTION}])
    assert len(scripted.requests) == before + 1


def test_claude_code_beta_endpoint_and_token_counting(faults, scripted):
    answer = {"id": "msg_04", "type": "message", "role": "assistant", "model": "claude-sonnet-5",
              "content": [{"type": "text", "text": "Beta."}], "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}}
    scripted.queue(json_response(answer), json_response({"input_tokens": 42}))
    client = anthropic_client(faults)
    # Claude Code (the TypeScript SDK) calls the beta endpoint as /v1/messages?beta=true.
    message = client.beta.messages.create(model="claude-sonnet-5", max_tokens=10, betas=["claude-code-20250219"],
                                          messages=[{"role": "user", "content": "Beta: password hashing?"}],
                                          extra_query={"beta": "true"})
    assert message.content[0].text == "Beta."
    assert scripted.requests[-1]["path"] == "/v1/messages?beta=true"
    assert b"Argon2id" in scripted.requests[-1]["body"]
    body = {"model": "claude-sonnet-5", "messages": [{"role": "user", "content": "count me"}]}
    counted = client.messages.count_tokens(**body)
    assert counted.input_tokens == 42
    assert scripted.requests[-1]["path"] == "/v1/messages/count_tokens" and json.loads(scripted.requests[-1]["body"]) == body

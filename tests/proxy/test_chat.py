"""`zblade chat` against a real OpenAI-compatible server (llama-cpp-python on the tiny GGUF
model), driven through pipes and through tmux, and against the scripted upstream for what a real
server cannot be made to do (an answer cut off mid-stream, a refusal, hostile bytes).

What is asserted: each turn packs the project's memory, streams the answer to the terminal,
and is recorded as a conversation (prompt and answer; a cut-off answer marked partial; a
refused prompt still kept); a chat resumes from its conversation; nothing is sent off the
machine without --allow-remote; the model's control sequences never reach the terminal.
"""

import json
import shutil
import subprocess
import time
import unicodedata

import pytest

import socket

from conftest import ZBLADE, Scripted, data, json_response, named, sse_response, zblade

QUESTION = "How do we hash passwords?"
# The tiny model's window is 2,048 of its own tokens (about as many bytes): chats with it pack
# little memory, or the prompt would not fit.


def chat(project, *args, stdin="", check=True):
    result = subprocess.run(
        [ZBLADE, "--project", str(project["root"]), *args],
        input=stdin, env=project["env"], capture_output=True, text=True, timeout=120,
    )
    if check:
        assert result.returncode == 0, result.stderr
    return result


def shown(project, conversation):
    result = zblade("--project", str(project["root"]), "--json", "show", conversation, env=project["env"])
    value = json.loads(result.stdout)
    return value.get("conversation", value)


def printable(text):
    """What zblade shows of a model's text: control characters other than newline and tab
    removed (the tiny model's random tokens hold some)."""
    return "".join(c for c in text if c in "\n\t" or unicodedata.category(c) != "Cc")


def turns(result):
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def test_a_chat_with_the_local_model_packs_memory_streams_and_is_remembered(project, llama):
    result = chat(project, "chat", "--endpoint", llama + "/v1", "--budget", "200", "--model", "tiny-llama", "--max-tokens", "12",
                  stdin=f"{QUESTION}\n\nAnd why that one?\n")
    assert "memory: " in result.stderr, result.stderr
    conversation = result.stderr.split("conversation ")[1].split()[0].rstrip(".")
    messages = shown(project, conversation)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"], result.stderr
    assert messages[0]["content"] == QUESTION and messages[2]["content"] == "And why that one?"
    # What streamed to the terminal is what was recorded.
    for answer in (messages[1], messages[3]):
        assert answer["content"] and printable(answer["content"]).strip() in result.stdout
        assert not answer.get("partial")
    # The injected memory is data for the model, not part of the conversation.
    assert all("zblade-memory" not in m["content"] for m in messages)
    listed = zblade("--project", str(project["root"]), "--json", "list", "conversations", env=project["env"])
    assert conversation in listed.stdout


def test_a_local_gguf_runs_inside_zblade_with_memory_and_is_remembered(project):
    # No server at all: the tiny GGUF is installed and run by llama.cpp inside zblade.
    from conftest import GGUF
    zblade("--project", str(project["root"]), "compressor", "import", GGUF, "--name", "tiny-local", "--force", env=project["env"])
    lines = turns(chat(project, "--json", "chat", "--local", "tiny-local", "--context-window", "2048", "--budget", "200",
                       "--max-tokens", "10", "--tools", "off", "--prompt", QUESTION))
    assert len(lines) == 1 and lines[0]["error"] is None, lines
    assert lines[0]["answer"] and lines[0]["partial"] is False
    assert lines[0]["memory_entries"] >= 1, "the turn packed the project's memory"
    messages = shown(project, lines[0]["conversation"])["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[1]["content"] == lines[0]["answer"]
    # A name that is not installed is a clear error that lists what is.
    missing = chat(project, "chat", "--local", "nope", "--prompt", "hi", check=False)
    assert missing.returncode != 0 and "no local model named nope" in missing.stderr and "tiny-local" in missing.stderr


def test_one_prompt_as_json_names_the_model_itself_and_resumes(project, llama):
    first = turns(chat(project, "--json", "chat", "--endpoint", llama + "/v1", "--budget", "200", "--max-tokens", "8",
                       "--prompt", QUESTION))
    assert len(first) == 1 and first[0]["error"] is None and first[0]["partial"] is False
    assert first[0]["memory_entries"] >= 1 and first[0]["memory_tokens"] > 0
    conversation = first[0]["conversation"]
    again = turns(chat(project, "--json", "chat", "--endpoint", llama + "/v1", "--budget", "200", "--max-tokens", "8",
                       "--conversation", conversation, "--prompt", "Say it again."))
    assert again[0]["conversation"] == conversation
    messages = shown(project, conversation)["messages"]
    assert [m["content"] for m in messages if m["role"] == "user"] == [QUESTION, "Say it again."]


def test_an_answer_cut_off_mid_stream_is_kept_and_marked_partial(project, scripted):
    chunk = lambda text: data({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "scripted",
                               "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]})
    scripted.queue(sse_response([chunk("Argon2id, "), chunk("because "), chunk("never sent")], break_after=2))
    result = chat(project, "--json", "chat", "--endpoint", scripted.url + "/v1", "--model", "scripted",
                  "--prompt", "Cut me off", check=False)
    assert result.returncode == 1, result.stderr
    turn = turns(result)[0]
    assert turn["partial"] is True and turn["answer"] == "Argon2id, because "
    messages = shown(project, turn["conversation"])["messages"]
    assert messages[-1]["role"] == "assistant" and messages[-1]["content"] == "Argon2id, because "
    assert messages[-1]["partial"] is True
    # The request the server got: memory first (fenced, as data), then the prompt.
    sent = json.loads(scripted.last()["body"])
    assert sent["stream"] is True and sent["messages"][-1] == {"role": "user", "content": "Cut me off"}


def test_a_refused_prompt_is_named_and_still_remembered(project, scripted):
    scripted.queue(json_response({"error": {"message": "model 'nope' not found", "type": "invalid_request_error"}}, status=404))
    result = chat(project, "--json", "chat", "--endpoint", scripted.url + "/v1", "--model", "nope",
                  "--prompt", "Is this kept?", check=False)
    assert result.returncode == 1
    turn = turns(result)[0]
    assert "404" in turn["error"] and "model 'nope' not found" in turn["error"]
    messages = shown(project, turn["conversation"])["messages"]
    assert [m["content"] for m in messages] == ["Is this kept?"]


def test_the_model_cannot_drive_the_terminal(project, scripted):
    hostile = "safe \x1b]0;owned\x07text\x1b[2J\x1b[H done"
    scripted.queue(sse_response([data({"choices": [{"index": 0, "delta": {"content": hostile}}]}), data("[DONE]")]))
    result = chat(project, "chat", "--endpoint", scripted.url + "/v1", "--model", "scripted", "--prompt", "hi")
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "safe ]0;ownedtext[2J[H done" in result.stdout


def test_nothing_is_sent_off_the_machine_without_consent(project):
    before = zblade("--project", str(project["root"]), "--json", "list", "conversations", env=project["env"]).stdout
    result = chat(project, "chat", "--endpoint", "https://api.example.com/v1", "--model", "gpt",
                  "--prompt", "secret plans", check=False)
    assert result.returncode != 0 and "--allow-remote" in result.stderr
    after = zblade("--project", str(project["root"]), "--json", "list", "conversations", env=project["env"]).stdout
    assert before == after


def delta(content=None, finish=None, **fields):
    d = dict(fields)
    if content is not None:
        d["content"] = content
    return data({"id": "chatcmpl-t", "object": "chat.completion.chunk", "model": "scripted",
                 "choices": [{"index": 0, "delta": d, "finish_reason": finish}]})


def tool_call_stream(call_id, name, argument_pieces):
    return [
        delta(role="assistant", tool_calls=[{"index": 0, "id": call_id, "type": "function",
                                             "function": {"name": name, "arguments": ""}}]),
        *[delta(tool_calls=[{"index": 0, "function": {"arguments": piece}}]) for piece in argument_pieces],
        delta(finish="tool_calls"),
        data("[DONE]"),
    ]


def test_the_model_reads_a_project_file_through_a_tool(project, scripted):
    scripted.queue(
        sse_response(tool_call_stream("call_1", "read_project_file", ['{"path": ', '"src/auth.rs"}'])),
        sse_response([delta("We hash with argon2id."), delta(finish="stop"), data("[DONE]")]),
    )
    result = chat(project, "--json", "chat", "--endpoint", scripted.url + "/v1", "--model", "scripted",
                  "--prompt", "How do we hash passwords? Read the code.")
    turn = turns(result)[0]
    assert turn["answer"] == "We hash with argon2id." and turn["partial"] is False
    assert turn["tool_calls"] == [{"name": "read_project_file", "arguments": '{"path": "src/auth.rs"}',
                                   "result_bytes": turn["tool_calls"][0]["result_bytes"], "is_error": False}]
    first, second = [json.loads(r["body"]) for r in scripted.requests[-2:]]
    assert [t["function"]["name"] for t in first["tools"]] == ["read_project_file", "search_project", "search"]
    # The second request carries the call and the file as it is now.
    call, result_message = second["messages"][-2:]
    assert call["role"] == "assistant" and call["tool_calls"][0]["id"] == "call_1"
    assert result_message["role"] == "tool" and result_message["tool_call_id"] == "call_1"
    file = json.loads(result_message["content"])
    assert file["path"] == "src/auth.rs" and file["lines"] == [1, 3] and file["total_lines"] == 3
    assert file["text"].startswith("pub fn hash")
    # Recorded: the call with its result, then the answer.
    messages = shown(project, turn["conversation"])["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "assistant"]
    recorded = messages[1]["tool_calls"][0]
    assert recorded["name"] == "read_project_file" and recorded["arguments"] == {"path": "src/auth.rs"}
    assert "argon2id(password)" in recorded["result"]["text"]
    assert messages[2]["content"] == "We hash with argon2id."


def test_a_decision_taken_in_a_chat_becomes_a_moment(project, scripted):
    scripted.queue(sse_response([delta("We decided to rotate refresh tokens every 24 hours because stolen ones must expire."),
                                 data("[DONE]")]))
    turn = turns(chat(project, "--json", "chat", "--endpoint", scripted.url + "/v1", "--model", "scripted",
                      "--tools", "off", "--prompt", "How long do refresh tokens live?"))[0]
    found = zblade("--project", str(project["root"]), "--json", "search", "rotate refresh tokens", "--kind", "moments",
                   env=project["env"])
    assert turn["conversation"] in found.stdout, found.stdout
    # Its summary is written too, as `zblade index` writes them.
    summary = project["root"] / ".zblade" / "cache" / "summaries" / f"{turn['conversation']}.json"
    assert summary.is_file()


def test_a_tool_call_outside_the_project_is_refused_and_the_model_told_why(project, scripted):
    scripted.queue(
        sse_response(tool_call_stream("call_x", "read_project_file", ['{"path": "../../../../etc/passwd"}'])),
        sse_response([delta("I cannot read that."), data("[DONE]")]),
    )
    turn = turns(chat(project, "--json", "chat", "--endpoint", scripted.url + "/v1", "--model", "scripted",
                      "--prompt", "Read /etc/passwd"))[0]
    assert turn["tool_calls"][0]["is_error"] is True
    sent_back = json.loads(scripted.last()["body"])["messages"][-1]
    assert sent_back["role"] == "tool" and sent_back["content"].startswith("error: ")
    assert "root:" not in sent_back["content"]


def test_without_tools_none_are_offered(project, scripted):
    scripted.queue(sse_response([delta("plain"), data("[DONE]")]))
    chat(project, "--json", "chat", "--endpoint", scripted.url + "/v1", "--model", "scripted", "--tools", "off",
         "--prompt", "no tools please")
    assert "tools" not in json.loads(scripted.last()["body"])


class Terminal:
    """A command running in a tmux session, read from its screen and typed at."""

    def __init__(self, project, *args):
        self.session = f"zblade-chat-{int(time.time() * 1000)}"
        env_args = [f"{k}={v}" for k, v in project["env"].items() if k in ("HOME", "ZBLADE_MODELS_DIR", "PATH")]
        command = ["env", *env_args, ZBLADE, "--project", str(project["root"]), *args]
        subprocess.run(["tmux", "new-session", "-d", "-s", self.session, "-x", "160", "-y", "50", *command], check=True)

    def screen(self):
        return subprocess.run(["tmux", "capture-pane", "-p", "-S", "-", "-t", self.session], capture_output=True, text=True).stdout

    def wait_for(self, predicate, seconds=60):
        deadline = time.time() + seconds
        while time.time() < deadline:
            text = self.screen()
            if predicate(text):
                return text
            time.sleep(0.1)
        raise AssertionError("the terminal never showed it:\n" + self.screen())

    def keys(self, *keys):
        subprocess.run(["tmux", "send-keys", "-t", self.session, *keys], check=True)

    def ended(self, seconds=10):
        deadline = time.time() + seconds
        while time.time() < deadline:
            if subprocess.run(["tmux", "has-session", "-t", self.session], capture_output=True).returncode != 0:
                return True
            time.sleep(0.1)
        return False

    def close(self):
        subprocess.run(["tmux", "kill-session", "-t", self.session], capture_output=True)


needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


@needs_tmux
def test_a_chat_in_a_terminal_through_tmux(project, llama):
    term = Terminal(project, "chat", "--endpoint", llama + "/v1", "--budget", "200", "--model", "tiny-llama", "--max-tokens", "8")
    try:
        term.wait_for(lambda s: "you>" in s and "Ctrl-D ends" in s)
        term.keys(QUESTION, "Enter")
        text = term.wait_for(lambda s: s.count("you>") >= 2)
        assert "memory: " in text
        conversation = text.split("conversation ")[1].split()[0].rstrip(".")
        term.keys("C-d")
        assert term.ended(), term.screen()
        messages = shown(project, conversation)["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant"]
    finally:
        term.close()


@needs_tmux
def test_ctrl_c_stops_an_answer_and_keeps_what_arrived(project, scripted):
    chunk = lambda text: data({"choices": [{"index": 0, "delta": {"content": text}}]})
    # The second token comes only after 30 s: the user stops the answer before that.
    scripted.queue(sse_response([chunk("Argon2id "), chunk("because"), data("[DONE]")], delays=[0, 30, 0]))
    term = Terminal(project, "chat", "--endpoint", scripted.url + "/v1", "--model", "scripted")
    try:
        term.wait_for(lambda s: "Ctrl-D ends" in s)
        term.keys("Stop me", "Enter")
        term.wait_for(lambda s: "Argon2id" in s)
        started = time.time()
        term.keys("C-c")
        text = term.wait_for(lambda s: "did not end" in s and s.count("you>") >= 2, seconds=10)
        assert time.time() - started < 5
        conversation = text.split("conversation ")[1].split()[0].rstrip(".")
        messages = shown(project, conversation)["messages"]
        assert messages[-1]["content"] == "Argon2id " and messages[-1]["partial"] is True
        # Ctrl-C at the prompt ends the chat.
        term.keys("C-c")
        assert term.ended(), term.screen()
    finally:
        term.close()


def test_a_request_too_long_for_the_model_is_asked_again_with_less_memory(project, scripted):
    too_long = json_response({"error": {"message": "Requested tokens (9000) exceed context window of 2048"}}, status=400)
    # 2,000 tokens of memory: refused, then asked with 500.
    scripted.queue(too_long, sse_response([delta("Argon2id."), data("[DONE]")]))
    result = chat(project, "--json", "chat", "--endpoint", scripted.url + "/v1", "--model", "scripted",
                  "--budget", "2000", "--tools", "off", "--prompt", QUESTION)
    turn = turns(result)[0]
    assert turn["answer"] == "Argon2id." and turn["error"] is None
    messages = shown(project, turn["conversation"])["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"], "the prompt is recorded once"
    # 300 tokens: refused, then asked with no memory at all.
    scripted.queue(too_long, sse_response([delta("Still Argon2id."), data("[DONE]")]))
    result = chat(project, "chat", "--endpoint", scripted.url + "/v1", "--model", "scripted",
                  "--budget", "300", "--tools", "off", "--prompt", QUESTION)
    assert "asking again with no memory" in result.stderr, result.stderr
    first, second = [json.loads(r["body"]) for r in scripted.requests[-2:]]
    assert first["messages"][0]["role"] == "system" and "zblade-memory" in first["messages"][0]["content"]
    assert second["messages"] == [{"role": "user", "content": QUESTION}]


def this_machines_address():
    """An address of this machine that is not loopback (zblade treats it as remote), if any."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # no packet is sent: this only picks a route
            address = s.getsockname()[0]
        return None if address.startswith("127.") else address
    except OSError:
        return None


@needs_tmux
@pytest.mark.skipif(this_machines_address() is None, reason="this machine has no non-loopback address")
def test_before_the_first_remote_send_the_user_sees_what_leaves_and_decides(project):
    remote = Scripted(bind="0.0.0.0")
    endpoint = f"http://{this_machines_address()}:{remote.port}/v1"
    args = ("chat", "--endpoint", endpoint, "--model", "far-away", "--allow-remote", "--tools", "off")
    term = Terminal(project, *args)
    try:
        term.wait_for(lambda s: "Ctrl-D ends" in s)
        term.keys(QUESTION, "Enter")
        text = term.wait_for(lambda s: "send it?" in s)
        assert "leaves your machine for" in text and "--- user (" in text and QUESTION in text
        assert "zblade-memory" in text  # the packed memory is shown too
        term.keys("n", "Enter")
        term.wait_for(lambda s: "not sent" in s)
        assert remote.requests == [], "nothing may leave before consent"
        remote.queue(sse_response([delta("far answer"), data("[DONE]")]))
        term.keys("Try again", "Enter")
        term.wait_for(lambda s: s.count("send it?") >= 2)
        term.keys("a", "Enter")
        term.wait_for(lambda s: "far answer" in s)
        assert len(remote.requests) == 1
        term.keys("C-d")
        assert term.ended(), term.screen()
    finally:
        term.close()
    # "always" was remembered for this model at this host: the next chat does not ask.
    remote.queue(sse_response([delta("again"), data("[DONE]")]))
    term = Terminal(project, *args)
    try:
        term.wait_for(lambda s: "Ctrl-D ends" in s)
        term.keys("Once more", "Enter")
        text = term.wait_for(lambda s: "again" in s)
        assert "send it?" not in text
    finally:
        term.close()
        remote.server.shutdown()


def anthropic_events(text_parts=(), tool=None):
    """An Anthropic Messages stream as the API sends it: text deltas, or one tool_use block
    whose input arrives in pieces."""
    events = [named("message_start", {"type": "message_start", "message": {
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-test", "content": [],
        "stop_reason": None, "usage": {"input_tokens": 25, "output_tokens": 1}}})]
    if text_parts:
        events.append(named("content_block_start", {"type": "content_block_start", "index": 0,
                                                    "content_block": {"type": "text", "text": ""}}))
        for part in text_parts:
            events.append(named("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                        "delta": {"type": "text_delta", "text": part}}))
        events.append(named("content_block_stop", {"type": "content_block_stop", "index": 0}))
    if tool:
        events.append(named("content_block_start", {"type": "content_block_start", "index": 1, "content_block": {
            "type": "tool_use", "id": tool[0], "name": tool[1], "input": {}}}))
        for piece in tool[2]:
            events.append(named("content_block_delta", {"type": "content_block_delta", "index": 1,
                                                        "delta": {"type": "input_json_delta", "partial_json": piece}}))
        events.append(named("content_block_stop", {"type": "content_block_stop", "index": 1}))
    events.append(named("message_delta", {"type": "message_delta",
                                          "delta": {"stop_reason": "tool_use" if tool else "end_turn"},
                                          "usage": {"output_tokens": 9}}))
    events.append(named("message_stop", {"type": "message_stop"}))
    return events


def test_a_chat_over_anthropics_messages_api_with_a_tool(project, scripted):
    key = "sk-ant-test-5f2b9c1d8e7a6b5c4d3e"
    env = dict(project["env"], ZBLADE_TEST_ANTHROPIC_KEY=key)
    scripted.queue(
        sse_response(anthropic_events(["Let me look. "], tool=("toolu_01", "read_project_file",
                                                                ['{"path": "src/', 'auth.rs"}']))),
        sse_response(anthropic_events(["Passwords are hashed ", "with argon2id."])),
    )
    result = subprocess.run(
        [ZBLADE, "--project", str(project["root"]), "--json", "chat", "--api", "anthropic",
         "--endpoint", scripted.url, "--model", "claude-test", "--api-key-env", "ZBLADE_TEST_ANTHROPIC_KEY",
         "--budget", "500", "--prompt", QUESTION],
        env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    turn = turns(result)[0]
    assert turn["answer"] == "Passwords are hashed with argon2id." and turn["partial"] is False
    assert turn["tool_calls"][0]["name"] == "read_project_file" and not turn["tool_calls"][0]["is_error"]
    first, second = scripted.requests[-2:]
    assert first["path"] == "/v1/messages"
    headers = {k.lower(): v for k, v in first["headers"].items()}
    assert headers["x-api-key"] == key and headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in headers
    body = json.loads(first["body"])
    assert "zblade-memory" in body["system"] and body["max_tokens"] == 4096
    assert body["messages"][-1] == {"role": "user", "content": QUESTION}
    assert [t["name"] for t in body["tools"]] == ["read_project_file", "search_project", "search"]
    assert "input_schema" in body["tools"][0]
    # The round trip: the tool_use block back, then the result as a tool_result block.
    again = json.loads(second["body"])["messages"]
    assert again[-2]["role"] == "assistant"
    assert again[-2]["content"][-1] == {"type": "tool_use", "id": "toolu_01", "name": "read_project_file",
                                         "input": {"path": "src/auth.rs"}}
    result_block = again[-1]["content"][0]
    assert again[-1]["role"] == "user" and result_block["type"] == "tool_result"
    assert result_block["tool_use_id"] == "toolu_01" and "argon2id(password)" in result_block["content"]
    # Recorded like any chat; the key is nowhere in the project.
    messages = shown(project, turn["conversation"])["messages"]
    assert messages[-1]["content"] == "Passwords are hashed with argon2id."
    stored = subprocess.run(["grep", "-r", "-l", key, str(project["root"] / ".zblade")], capture_output=True, text=True)
    assert stored.stdout == ""


def last_line(screen):
    lines = [line for line in screen.splitlines() if line.strip()]
    return lines[-1] if lines else ""


@needs_tmux
def test_up_arrow_and_ctrl_r_bring_back_earlier_prompts(project, scripted):
    prompt = "Remember the zebrafinch plan"
    for answer in ("first answer", "second answer", "third answer", "fourth answer"):
        scripted.queue(sse_response([delta(answer), data("[DONE]")]))
    args = ("chat", "--endpoint", scripted.url + "/v1", "--model", "scripted", "--tools", "off", "--budget", "200")
    term = Terminal(project, *args)
    try:
        text = term.wait_for(lambda s: "Ctrl-D ends" in s and last_line(s).endswith("you>"))
        conversation = text.split("conversation ")[1].split()[0].rstrip(".")
        term.keys(prompt, "Enter")
        # Keys go only to a prompt that is up: typed while an answer ends, the terminal would
        # echo them instead of the line editor reading them.
        term.wait_for(lambda s: "first answer" in s and last_line(s).endswith("you>"))
        term.keys("Up")
        term.wait_for(lambda s: last_line(s).endswith("you> " + prompt))
        term.keys("Enter")
        term.wait_for(lambda s: "second answer" in s and last_line(s).endswith("you>"))
        term.keys("C-r")
        term.keys("zebraf")
        term.wait_for(lambda s: "zebrafinch" in last_line(s))
        term.keys("Enter")
        term.wait_for(lambda s: "third answer" in s and last_line(s).endswith("you>"))
        term.keys("C-d")
        assert term.ended(), term.screen()
    finally:
        term.close()
    users = [m["content"] for m in shown(project, conversation)["messages"] if m["role"] == "user"]
    assert users == [prompt, prompt, prompt]
    # A new chat starts with the project's earlier prompts in its history.
    term = Terminal(project, *args)
    try:
        text = term.wait_for(lambda s: "Ctrl-D ends" in s and last_line(s).endswith("you>"))
        conversation = text.split("conversation ")[1].split()[0].rstrip(".")
        term.keys("Up")
        term.wait_for(lambda s: last_line(s).endswith("you> " + prompt))
        term.keys("Enter")
        term.wait_for(lambda s: "fourth answer" in s and last_line(s).endswith("you>"))
        term.keys("C-d")
        assert term.ended(), term.screen()
    finally:
        term.close()
    assert [m["content"] for m in shown(project, conversation)["messages"] if m["role"] == "user"] == [prompt]

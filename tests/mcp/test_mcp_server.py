"""`zblade mcp` driven by the official Python MCP SDK over stdio and Streamable HTTP, in the
legacy (2025-11-25, `initialize`) and current (2026-07-28, `server/discover`) protocol modes."""

import json
import os
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import anyio
import jsonschema
import pytest
from mcp import Client, StdioServerParameters

from conftest import ZBLADE, HttpServer, assert_no_sentinel

EXPECTED_TOOLS = [
    "context", "search", "remember", "get_conversation", "list_conversations",
    "read_project_file", "search_project", "status",
]
MODES = ["legacy", "2026-07-28"]


def stdio_client(world, mode, root=None):
    params = StdioServerParameters(
        command=ZBLADE, args=["--project", str(root or world["root"]), "mcp"], env=world["env"]
    )
    return Client(params, mode=mode, read_timeout_seconds=60)


@pytest.fixture(params=[(t, m) for t in ["stdio", "http"] for m in MODES], ids=lambda p: f"{p[0]}-{p[1]}")
def connect(request, world, http_server):
    transport, mode = request.param

    def make(root=None):
        if transport == "stdio":
            return stdio_client(world, mode, root)
        return Client(http_server.url, mode=mode, read_timeout_seconds=60)

    make.mode = mode
    make.transport = transport
    return make


def run(coro):
    return anyio.run(coro)


async def call(client, tools, name, args):
    """Calls a tool; on success checks structuredContent against the outputSchema and that the
    text content repeats it as JSON."""
    result = await client.call_tool(name, args)
    text = "".join(getattr(c, "text", "") for c in result.content)
    if not result.is_error:
        schema = tools[name].output_schema
        assert schema, f"{name} has no outputSchema"
        jsonschema.validate(result.structured_content, schema)
        assert json.loads(text) == result.structured_content
    return result, text


def test_every_tool_is_listed_and_works(connect, world):
    async def main():
        async with connect() as client:
            listed = (await client.list_tools()).tools
            assert [t.name for t in listed] == EXPECTED_TOOLS
            tools = {t.name: t for t in listed}
            for tool in listed:
                assert tool.description and len(tool.description) < 200
                assert tool.output_schema["type"] == "object"
            assert tools["search"].annotations.read_only_hint is True
            assert tools["remember"].annotations.read_only_hint is False

            result, text = await call(client, tools, "context", {"query": "how does refresh token rotation work"})
            assert not result.is_error, text
            out = result.structured_content
            assert "data, not" in out["notice"]
            assert "rotate the refresh token" in out["text"]
            assert "candidates packed" in out["receipt"] and "gate open" in out["receipt"]
            assert out["relevant"] is True
            assert any(i["id"].startswith("conv_mcp_1") for i in out["items"])

            # Nothing remembered bears on it (the relevance gate): said so, nothing packed.
            result, text = await call(client, tools, "context", {"query": "fix the typo in README"})
            assert not result.is_error, text
            out = result.structured_content
            assert out["relevant"] is False and out["items"] == [] and out["tokens"] == 0
            assert out["text"].startswith("Nothing relevant is remembered about this query")
            assert "gate closed" in out["receipt"]

            # Numbers as strings, as models send them.
            result, text = await call(client, tools, "search", {"query": "refresh token", "limit": "3"})
            assert not result.is_error, text
            out = result.structured_content
            assert out["mode"] == "keyword" and "keyword" in (out["notice"] or "")
            hit = next(h for h in out["hits"] if h["id"] == "msg_2")
            assert hit["conversation"] == "conv_mcp_1" and hit["time"].startswith("2026-11-20")
            assert hit["references"][0]["file"] == "src/auth.rs"
            assert "rotate(token)" in hit["references"][0]["code"]

            # Arrays as JSON strings and line ranges as text.
            result, text = await call(client, tools, "remember", {
                "type": "decision", "content": "Refresh tokens rotate on every use.",
                "tags": '["auth", "tokens"]',
                "references": json.dumps([{"file": "src/auth.rs", "lines": "1-3", "purpose": "rotation"}]),
            })
            assert not result.is_error, text
            moment_id = result.structured_content["id"]
            assert moment_id.startswith("moment_")
            assert result.structured_content["references"][0]["status"] == "ok"

            result, text = await call(client, tools, "get_conversation", {"id": "conv_mcp_1", "from": "2"})
            assert not result.is_error, text
            out = result.structured_content
            assert out["total_messages"] == 2 and [m["n"] for m in out["messages"]] == [2]

            result, text = await call(client, tools, "list_conversations", {"limit": 5})
            assert not result.is_error, text
            assert result.structured_content["conversations"][0]["id"] == "conv_mcp_1"

            result, text = await call(client, tools, "read_project_file", {"path": "src/auth.rs", "lines": [2, 3]})
            assert not result.is_error, text
            assert result.structured_content["lines"] == [2, 3]
            assert result.structured_content["text"].startswith("    // rotate")

            result, text = await call(client, tools, "search_project", {"query": "evict"})
            assert not result.is_error, text
            assert result.structured_content["hits"], result.structured_content
            assert result.structured_content["hits"][0]["at"].startswith("src/cache.rs:")
            assert "lru.remove" in result.structured_content["hits"][0]["code"]
            # The engine's one code search, as `zblade search --kind code` runs it: the same
            # places in the same order (the chat's tool is the same tool: zblade-chat's tests).
            import subprocess
            result, text = await call(client, tools, "search_project", {"query": "rotate tokens", "limit": 5})
            cli = subprocess.run([ZBLADE, "--project", str(world["root"]), "search", "--kind", "code", "--json",
                                  "--limit", "5", "rotate tokens"], env=world["env"], capture_output=True, text=True,
                                 check=True)
            places = [hit["id"] for hit in json.loads(cli.stdout)["hits"]]
            assert places, cli.stdout
            assert [hit["at"] for hit in result.structured_content["hits"]] == places

            result, text = await call(client, tools, "status", {})
            assert not result.is_error, text
            assert result.structured_content["conversations"] >= 1
            assert result.structured_content["search"].startswith("keyword")

            # The moment just remembered is a resource too.
            read = await client.read_resource(f"zblade://moment/{moment_id}")
            assert "Refresh tokens rotate" in read.contents[0].text

    run(main)


@pytest.mark.parametrize("name,args,reason", [
    ("context", {"query": 5}, "invalid type"),
    ("context", {"query": "   "}, "query is empty"),
    ("search", {"query": "x", "limit": "many"}, "whole number"),
    ("search", {"query": "x", "kind": "everything"}, "unknown variant"),
    ("search", {"query": "x", "colour": "red"}, "unknown field"),
    ("remember", {"type": "decision"}, "missing field `content`"),
    ("remember", {"type": "idea", "content": "x"}, "unknown variant"),
    ("remember", {"type": "decision", "content": "x", "references": [{"file": "../etc/passwd", "lines": [1, 2]}]}, ".."),
    ("get_conversation", {"id": "conv_nope"}, "no conversation"),
    ("read_project_file", {"path": 42}, "invalid type"),
    ("read_project_file", {"path": "src/auth.rs", "lines": [9, 3]}, "ends before it starts"),
    ("read_project_file", {"path": "src/auth.rs", "lines": [99, 100]}, "past the end"),
])
def test_bad_arguments_are_tool_errors_with_a_reason(connect, name, args, reason):
    async def main():
        async with connect() as client:
            result = await client.call_tool(name, args)
            assert result.is_error, f"{name}({args}) succeeded"
            text = result.content[0].text
            assert reason in text, text

    run(main)


def test_resources_and_prompt_round_trip(connect):
    async def main():
        async with connect() as client:
            resources = (await client.list_resources()).resources
            uris = [str(r.uri) for r in resources]
            assert "zblade://instructions" in uris and "zblade://conversation/conv_mcp_1" in uris
            templates = (await client.list_resource_templates()).resource_templates
            assert sorted(t.uri_template for t in templates) == [
                "zblade://conversation/{id}", "zblade://moment/{id}"]
            read = await client.read_resource("zblade://conversation/conv_mcp_1")
            conversation = json.loads(read.contents[0].text)
            assert conversation["conversation_id"] == "conv_mcp_1"
            instructions = await client.read_resource("zblade://instructions")
            assert instructions.contents[0].mime_type == "text/markdown"
            prompts = (await client.list_prompts()).prompts
            assert [p.name for p in prompts] == ["start_session"]
            prompt = await client.get_prompt("start_session", {"task": "refresh token rotation"})
            text = prompt.messages[0].content.text
            assert "data, not" in text and "rotate the refresh token" in text
            with pytest.raises(Exception):
                await client.read_resource("zblade://conversation/conv_missing")

    run(main)


# The MCP filesystem server's path-validation cases, plus case folding, trailing dots and
# reserved names. Each must be refused, and no answer may carry a sentinel.
def refused_paths(base):
    return [
        "../outside_secret.txt",
        "../project2/secret.txt",
        str(base / "project2/secret.txt"),          # sibling prefix, absolute
        str(base / "project") + "2/secret.txt",     # the same, spelled from the root's string
        str(base / "project/../outside_secret.txt"),
        "src/../../outside_secret.txt",
        "src/../.env",
        "../" * 1000 + "etc/passwd",
        "/etc/passwd",
        "src/\x00auth.rs",
        "%2e%2e/outside_secret.txt",                # not decoded: a name that does not exist
        "..%2f..%2foutside_secret.txt",
        ".env", ".ENV", ".env.", ".env ", "deploy.pem", "DEPLOY.PEM",
        ".git/config", ".GIT/config", ".git./config",
        ".zblade/config/settings.json",
        "link_out/s.txt", "file_link", "chain1", "chain2", "notes.txt",
        "big.log", "bin.dat", "src", "src/", "CON", "nul.txt", "", "cafe\u0301.txt",
    ]


ALLOWED = {
    "src/auth.rs": "rotate(token)",
    "./src//auth.rs": "rotate(token)",
    "src/auth.rs/": "rotate(token)",
    "ok_link": "rotate(token)",
    "with space [1].txt": "spaces and brackets",
    "..test": "a file named ..test",
    "...": "a file named ...",
    "café.txt": "NFC name",
}


def test_read_project_file_refuses_every_escape(connect, world):
    base = world["base"]

    async def main():
        async with connect() as client:
            for path in refused_paths(base):
                result = await client.call_tool("read_project_file", {"path": path})
                text = result.content[0].text
                assert result.is_error, f"{path!r} was read: {text[:200]}"
                assert_no_sentinel(text)
            for path, expected in {**ALLOWED, str(world["root"] / "src/auth.rs"): "rotate(token)"}.items():
                result = await client.call_tool("read_project_file", {"path": path})
                assert not result.is_error, f"{path!r}: {result.content[0].text}"
                assert expected in result.structured_content["text"]
            # search_project and search never reach secrets either.
            for query in ["SENTINEL_ENV_7f3a", "API_KEY", "SENTINEL_OUTSIDE_7f3a"]:
                for tool in ["search_project", "search"]:
                    result = await client.call_tool(tool, {"query": query})
                    assert_no_sentinel(result.content[0].text)

    run(main)


def test_a_root_that_is_a_symlink(world):
    base = world["base"]

    async def main():
        async with stdio_client(world, "legacy", root=base / "rootlink") as client:
            for path in ["src/auth.rs", str(base / "rootlink/src/auth.rs"), str(world["root"] / "src/auth.rs")]:
                result = await client.call_tool("read_project_file", {"path": path})
                assert not result.is_error, f"{path}: {result.content[0].text}"
            for path in ["../outside_secret.txt", "link_out/s.txt", "file_link", str(base / "rootlink2/x")]:
                result = await client.call_tool("read_project_file", {"path": path})
                assert result.is_error
                assert_no_sentinel(result.content[0].text)

    run(main)


def test_a_symlink_swapped_during_reads_never_leaks(world):
    """Races: a link flips between a project file and a secret outside while the agent reads it."""
    root, base = world["root"], world["base"]
    link = root / "racy.txt"
    stop = threading.Event()

    def flip():
        targets = [root / "src/cache.rs", base / "outside_secret.txt"]
        i = 0
        while not stop.is_set():
            tmp = root / f".racy.{i}"
            os.symlink(targets[i % 2], tmp)
            os.replace(tmp, link)
            i += 1

    async def main():
        async with stdio_client(world, "legacy") as client:
            served = 0
            for _ in range(300):
                result = await client.call_tool("read_project_file", {"path": "racy.txt"})
                assert_no_sentinel(result.content[0].text)
                served += not result.is_error
            return served

    flipper = threading.Thread(target=flip)
    flipper.start()
    try:
        served = run(main)
    finally:
        stop.set()
        flipper.join()
        link.unlink(missing_ok=True)
    assert served > 0, "the project file itself was never served"


def post(url, body, headers):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def test_http_refuses_foreign_origins_and_checks_the_token(world, http_server):
    status, _ = post(http_server.url, INIT, {"Origin": "http://evil.example"})
    assert status == 403
    status, body = post(http_server.url, INIT, {"Origin": f"http://127.0.0.1:{http_server.url.split(':')[2].split('/')[0]}"})
    assert status == 200, body
    guarded = HttpServer(world["root"], world["env"], token="s3cret-token")
    try:
        assert post(guarded.url, INIT, {})[0] == 401
        assert post(guarded.url, INIT, {"Authorization": "Bearer wrong"})[0] == 401
        status, body = post(guarded.url, INIT, {"Authorization": "Bearer s3cret-token"})
        assert status == 200 and "zblade" in body, body
    finally:
        guarded.stop()


def test_stdout_carries_only_protocol_messages(world):
    """A stdio server that prints anything else breaks its client: every line must be JSON-RPC."""
    import subprocess

    requests = "\n".join(json.dumps(m) for m in [
        INIT,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "status", "arguments": {}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "search", "arguments": {"query": "refresh"}}},
    ]) + "\n"
    proc = subprocess.run([ZBLADE, "--project", str(world["root"]), "mcp"], input=requests, env=world["env"],
                          capture_output=True, text=True, timeout=60)
    lines = [l for l in proc.stdout.splitlines() if l.strip()]
    assert len(lines) == 3, proc.stdout + proc.stderr
    for line in lines:
        assert json.loads(line)["jsonrpc"] == "2.0"


# Claude Code's documented .mcp.json entry for a stdio server (code.claude.com/docs/en/mcp):
# {"mcpServers": {NAME: {"type": "stdio", "command": …, "args": [...], "env": {...}}}}.
CLAUDE_CODE_SERVER = {
    "type": "object",
    "required": ["command"],
    "properties": {
        "type": {"const": "stdio"},
        "command": {"type": "string", "minLength": 1},
        "args": {"type": "array", "items": {"type": "string"}},
        "env": {"type": "object", "additionalProperties": {"type": "string"}},
    },
    "additionalProperties": False,
}


@pytest.mark.parametrize("client", ["claude-code", "cursor", "vscode", "codex"])
def test_installed_client_configs_start_a_working_server(world, client, tmp_path):
    """`zblade mcp install CLIENT` writes the client's documented format, and the command it
    writes, started the way the client starts it, serves zblade's tools."""
    import tomllib

    from conftest import zblade

    env = {**world["env"], "HOME": str(tmp_path), "CODEX_HOME": str(tmp_path / ".codex"),
           "XDG_CONFIG_HOME": str(tmp_path / ".config")}
    root = world["root"]
    dry = zblade("mcp", "install", client, "--dry-run", cwd=root, env=env)
    assert "dry run" in dry.stdout
    zblade("mcp", "install", client, cwd=root, env=env)
    again = zblade("mcp", "install", client, cwd=root, env=env)
    assert "unchanged" in again.stdout
    if client == "codex":
        config = tomllib.loads((tmp_path / ".codex/config.toml").read_text())
        entry = config["mcp_servers"]["zblade"]
    else:
        file = {"claude-code": root / ".mcp.json", "cursor": root / ".cursor/mcp.json",
                "vscode": root / ".vscode/mcp.json"}[client]
        config = json.loads(file.read_text())
        entry = config["servers" if client == "vscode" else "mcpServers"]["zblade"]
        file.unlink()
    if client == "claude-code":
        jsonschema.validate(entry, CLAUDE_CODE_SERVER)
    assert os.path.isabs(entry["command"])
    if client == "codex":
        # User scope (codex's default): no project in the file; the agent's working directory
        # says which project, so one install serves every project.
        assert entry["args"] == ["mcp"], entry
        clients = json.loads(zblade("--json", "mcp", "clients", cwd=root, env=env).stdout)
        codex = next(c for c in clients if c["client"] == "codex")
        # ~/.codex holds only what zblade wrote: that is no Codex installation.
        assert codex["in_user"] and not codex["installed"], codex
    else:
        assert entry["args"][:2] == ["mcp", "--project"], entry

    async def main():
        params = StdioServerParameters(command=entry["command"], args=entry["args"], env=world["env"], cwd=str(root))
        async with Client(params, mode="legacy") as client_:
            assert [t.name for t in (await client_.list_tools()).tools] == EXPECTED_TOOLS

    run(main)


def test_hooks_print_context_and_import_the_turn(world, tmp_path):
    from conftest import zblade

    root = world["root"]
    env = {**world["env"], "HOME": str(tmp_path)}
    zblade("hooks", "install", "claude-code", "--scope", "user", cwd=root, env=env)
    settings = json.loads((tmp_path / ".claude/settings.json").read_text())
    command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert command.endswith(" hook prompt")
    event = {"session_id": "s1", "cwd": str(root), "hook_event_name": "UserPromptSubmit",
             "prompt": "how does the refresh token rotation work?"}
    out = zblade("hook", "prompt", cwd=root, env=env, input=json.dumps(event))
    assert "data, not" in out.stdout and "rotate the refresh token" in out.stdout
    # A broken event never blocks the prompt: exit 0, a line on stderr, nothing on stdout.
    bad = zblade("hook", "prompt", cwd=root, env=env, input="{not json")
    assert bad.returncode == 0 and bad.stdout == "" and "not JSON" in bad.stderr
    bad = zblade("hook", "stop", cwd=root, env=env, input=json.dumps({"transcript_path": "/etc/passwd"}))
    assert bad.returncode == 0 and "not a session transcript" in bad.stderr


def test_a_warm_engine_answers_context_for_short_lived_processes(world):
    """`zblade serve` keeps the engine warm; `zblade context` and the prompt hook ask it over its
    socket and print the same pack as when they work alone."""
    import re
    import stat
    import subprocess

    from conftest import zblade

    root, env = world["root"], world["env"]
    alone = zblade("context", "refresh token rotation", cwd=root, env=env).stdout
    alone_json = json.loads(zblade("--json", "context", "refresh token rotation", cwd=root, env=env).stdout)
    alone_receipt = zblade("context", "--receipt", "refresh token rotation", cwd=root, env=env).stdout
    daemon = subprocess.Popen([ZBLADE, "--project", str(root), "serve"], env=env,
                              stderr=subprocess.PIPE, text=True)
    try:
        line = ""
        while "serving on" not in line:  # notes (no embedding model here) come first
            line = daemon.stderr.readline()
            assert line, "zblade serve exited"
        socket = re.search(r"serving on (\S+) ", line).group(1)
        assert stat.S_IMODE(os.stat(socket).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(os.path.dirname(socket)).st_mode) == 0o700
        warm = zblade("context", "refresh token rotation", cwd=root, env=env).stdout
        assert warm == alone and "rotate the refresh token" in warm
        # The whole result (--json, --receipt) comes from the warm engine too: asked over the
        # socket as the CLI asks, and through the CLI, it equals what a process alone assembles
        # (but for the time taken).
        import socket as unix
        with unix.socket(unix.AF_UNIX) as s:
            s.connect(socket)
            s.sendall(json.dumps({"whole": {"query": "refresh token rotation"}}).encode() + b"\n")
            answer = json.loads(s.makefile().readline())["Ok"]
        assert json.loads(answer["result"])["text"] == alone_json["text"] and answer["receipt"].startswith("---\n")
        # Time moves between the runs: the time taken, and each candidate's recency (part of
        # its score), are left out of the comparison.
        def untimed(result):
            result = {k: v for k, v in result.items() if k not in ("elapsed_ms", "timings")}
            for key in ("entries", "receipt"):
                result[key] = [{k: v for k, v in e.items() if k != "score"} for e in result[key]]
            return result
        warm_json = json.loads(zblade("--json", "context", "refresh token rotation", cwd=root, env=env).stdout)
        assert untimed(warm_json) == untimed(alone_json)
        warm_receipt = zblade("context", "--receipt", "refresh token rotation", cwd=root, env=env).stdout
        no_time = lambda text: re.sub(r" score .*", "", re.sub(r"in [0-9.]+ ms", "in _ ms", text))
        assert no_time(warm_receipt) == no_time(alone_receipt) and "candidates packed" in warm_receipt
        second = subprocess.run([ZBLADE, "--project", str(root), "serve"], env=env,
                                capture_output=True, text=True, timeout=60)
        assert second.returncode != 0 and "already serves" in second.stderr
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)


def test_the_first_prompt_hook_starts_the_warm_engine(world, tmp_path):
    """With no warm engine, the prompt hook answers by itself and starts `zblade serve
    --idle-exit 30` detached, so the session's next prompt is answered warm; it holds the
    project's engine lock, so a second engine cannot start beside it."""
    import re
    import signal
    import subprocess
    import time

    from conftest import zblade

    root = world["root"]
    env = {k: v for k, v in world["env"].items() if k != "ZBLADE_NO_AUTO_SERVE"}
    event = {"session_id": "s1", "cwd": str(root), "hook_event_name": "UserPromptSubmit",
             "prompt": "how does the refresh token rotation work?"}
    first = zblade("hook", "prompt", cwd=root, env=env, input=json.dumps(event))
    assert "rotate the refresh token" in first.stdout, first.stderr
    log = root / ".zblade/cache/serve.log"
    deadline = time.time() + 60
    while not (log.exists() and "serving on" in log.read_text()):
        assert time.time() < deadline, log.read_text() if log.exists() else "no serve.log"
        time.sleep(0.2)
    socket = re.search(r"serving on (\S+) ", log.read_text()).group(1)
    pid = int(open(socket[: -len(".sock")] + ".lock").read())
    try:
        assert "exits after 30 idle minutes" in log.read_text()
        second = zblade("hook", "prompt", cwd=root, env=env, input=json.dumps(event))
        assert second.stdout == first.stdout
        another = subprocess.run([ZBLADE, "--project", str(root), "serve"], env=env,
                                 capture_output=True, text=True, timeout=60)
        assert another.returncode != 0 and "already serves" in another.stderr
    finally:
        os.kill(pid, signal.SIGINT)  # its Ctrl-C handler removes the socket
    deadline = time.time() + 20
    while os.path.exists(socket):
        assert time.time() < deadline, "the engine did not stop"
        time.sleep(0.2)


def test_writes_beside_other_writers_never_surface_busy(world, tmp_path):
    """The server's `remember` calls racing `zblade add` processes on the same project: every
    write lands, none fails with SQLITE_BUSY or a lock error."""
    import subprocess

    root, env = world["root"], world["env"]
    files = []
    for i in range(6):
        path = tmp_path / f"c{i}.json"
        path.write_text(json.dumps({"conversation_id": f"conv_race_{i}", "title": f"Race {i}", "messages": [
            {"id": "m1", "role": "user", "content": f"concurrent writer number {i}"}]}))
        files.append(path)
    writers = [subprocess.Popen([ZBLADE, "--project", str(root), "add", "conversation", str(f)], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for f in files]

    async def main():
        async with stdio_client(world, "legacy") as client:
            for i in range(12):
                result = await client.call_tool("remember", {"type": "context", "content": f"racing moment {i}"})
                assert not result.is_error, result.content[0].text

    run(main)
    for writer in writers:
        _, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err
        assert "busy" not in err.lower() and "locked" not in err.lower(), err

    async def check():
        async with stdio_client(world, "legacy") as client:
            listed = await client.call_tool("list_conversations", {"limit": 200})
            ids = {c["id"] for c in listed.structured_content["conversations"]}
            assert {f"conv_race_{i}" for i in range(6)} <= ids

    run(check)


def test_the_stop_hook_imports_the_finished_turn(world, tmp_path):
    """Claude Code's Stop event names the session transcript: `zblade hook stop` imports it,
    and the conversation is then reachable through the MCP tools."""
    from pathlib import Path

    from conftest import zblade

    root, env = world["root"], world["env"]
    fixture = Path(__file__).resolve().parents[2] / "crates/zblade-import/tests/fixtures/claude"
    source = next(fixture.glob("*.jsonl"))
    transcript = tmp_path / source.name
    transcript.write_text(source.read_text().replace("__ROOT__", str(root)))
    event = {"session_id": source.stem, "transcript_path": str(transcript), "hook_event_name": "Stop",
             "stop_hook_active": False}
    out = zblade("hook", "stop", cwd=root, env=env, input=json.dumps(event))
    assert out.returncode == 0 and out.stdout == "", out.stderr
    assert out.stderr == "", out.stderr

    async def main():
        async with stdio_client(world, "legacy") as client:
            listed = await client.call_tool("list_conversations", {"source": "claude-code"})
            conversations = listed.structured_content["conversations"]
            assert any(source.stem in c["id"] for c in conversations), conversations

    run(main)


@pytest.fixture(scope="module")
def embedded_world(tmp_path_factory):
    """A project whose memory is embedded with the real model setup builds: a semantic search
    loads the model and opens LanceDB's tables, which is what used to make the server panic
    when the client closed it."""
    import subprocess

    models = os.environ.get("ZBLADE_MODELS_DIR") or str(Path.home() / ".cache/zblade/models")
    if not (Path(models) / "all-minilm-l6-v2/model.onnx").exists():
        pytest.skip(f"no embedding model in {models} (scripts/setup.sh builds it)")
    base = tmp_path_factory.mktemp("mcp-exit")
    home, root = base / "home", base / "project"
    home.mkdir()
    root.mkdir()
    env = dict(os.environ, HOME=str(home), ZBLADE_MODELS_DIR=models, ZBLADE_NO_AUTO_SERVE="1")
    env.pop("ZBLADE_MCP_TOKEN", None)
    subprocess.run([ZBLADE, "init"], cwd=root, env=env, check=True, capture_output=True)
    conv = {"conversation_id": "conv_exit", "title": "Retries", "messages": [
        {"id": "m1", "role": "user", "content": "Why do we back off before retrying the upload?"},
        {"id": "m2", "role": "assistant", "content": "The storage gateway throttles bursts; we wait 2 s, then 4 s."},
    ]}
    (base / "c.json").write_text(json.dumps(conv))
    subprocess.run([ZBLADE, "add", "conversation", str(base / "c.json")], cwd=root, env=env, check=True,
                   capture_output=True)
    return {"base": base, "root": root, "env": env}


SESSIONS_CLOSED = 20


def test_closing_the_session_exits_zero_every_time(embedded_world):
    """The official SDK's client closes the session after a semantic search and `status`; the
    server must exit 0 every time (it used to panic dropping LanceDB's runtime inside tokio's)."""
    base = embedded_world["base"]
    codes = []
    for i in range(SESSIONS_CLOSED):
        code_file = base / f"exit-{i}"
        # The SDK owns the process; a shell in front of zblade records its exit status.
        params = StdioServerParameters(
            command="sh",
            args=["-c", '"$0" --project "$1" mcp; echo $? > "$2"', ZBLADE, str(embedded_world["root"]), str(code_file)],
            env=embedded_world["env"],
        )

        async def session():
            async with Client(params, mode="legacy", read_timeout_seconds=60) as client:
                result = await client.call_tool("search", {"query": "why wait before retrying", "mode": "semantic"})
                assert not result.is_error, result.content
                status = await client.call_tool("status", {})
                assert not status.is_error, status.content

        run(session)
        for _ in range(100):
            if code_file.exists() and code_file.read_text().strip():
                break
            time.sleep(0.1)
        codes.append(code_file.read_text().strip() if code_file.exists() else "killed")
    assert codes == ["0"] * SESSIONS_CLOSED, codes


def test_end_of_input_exits_zero(embedded_world):
    """A plain EOF on stdin (no SDK) after a semantic search: exit 0, nothing on stderr but notices."""
    import subprocess

    requests = "\n".join(json.dumps(m) for m in [
        INIT,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "search", "arguments": {"query": "throttled uploads", "mode": "semantic"}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "status", "arguments": {}}},
    ]) + "\n"
    proc = subprocess.run([ZBLADE, "--project", str(embedded_world["root"]), "mcp"], input=requests,
                          env=embedded_world["env"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "panicked" not in proc.stderr, proc.stderr
    assert len([l for l in proc.stdout.splitlines() if l.strip()]) == 3, proc.stdout

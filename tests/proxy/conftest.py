"""Fixtures for driving `zblade proxy` with the official `openai` and `anthropic` clients.

Two upstreams:
- a real OpenAI-compatible server: llama-cpp-python's (PyPI `llama-cpp-python[server]`) serving
  the repo's tiny random-weight GGUF model. It speaks Chat Completions; its words are nonsense,
  so tests compare what the client got with what was recorded, never the wording.
- a scripted upstream (`Scripted`), only for what a real server cannot be made to do on demand:
  429 with rate-limit headers, 500, a stream broken mid-way, a slow first byte, tool-call
  deltas, usage chunks, and the Anthropic Messages and OpenAI Responses wire formats (no
  provider runs on this machine). It records every request byte for byte.
"""

import json
import os
import socket
import subprocess
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ZBLADE = os.environ.get("ZBLADE") or str(
    Path(os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache/zblade-target")) / "debug/zblade"
)
GGUF = os.environ.get("ZBLADE_TEST_GGUF") or str(Path.home() / ".cache/zblade/models/test/tiny-llama.gguf")
PYTHON = os.environ.get("ZBLADE_PYTHON", "python3")
DECISION = "We chose Argon2id for password hashing because bcrypt silently truncates passwords at 72 bytes."


def zblade(*args, cwd=None, env=None, check=True):
    result = subprocess.run([ZBLADE, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    if check and result.returncode != 0:
        raise AssertionError(f"zblade {' '.join(args)} failed ({result.returncode}): {result.stderr}")
    return result


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, seconds: float = 60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url, timeout=1)
            return
        except urllib.error.HTTPError:
            return  # it answers
        except Exception:
            time.sleep(0.1)
    raise AssertionError(f"{url} did not come up")


class Scripted:
    """An upstream that answers from a queue of scripts and records each request.

    A script is a function `(handler) -> None` that writes the whole response; helpers below
    build the common ones. With no script queued, it answers 200 with `{"ok": true}`.
    """

    def __init__(self, bind="127.0.0.1"):
        self.requests = []
        self.scripts = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def setup(self):
                super().setup()
                # Like real providers' servers: small writes leave at once (no Nagle delay).
                self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def _any(self):
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                owner.requests.append({"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body})
                script = owner.scripts.pop(0) if owner.scripts else json_response({"ok": True})
                try:
                    script(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST = do_PUT = do_DELETE = _any

        self.server = ThreadingHTTPServer((bind, 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def queue(self, *scripts):
        self.scripts.extend(scripts)

    def last(self):
        return self.requests[-1]


def json_response(body, status=200, headers=None):
    def script(h):
        data = json.dumps(body).encode()
        h.send_response(status)
        h.send_header("content-type", "application/json")
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.send_header("content-length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    return script


def sse_response(events, delays=None, first_byte_delay=0.0, break_after=None, headers=None):
    """Server-sent events, chunked; `events` are raw event texts (without the blank line).
    `break_after=N` closes the connection after N events without ending the chunked body."""

    def script(h):
        time.sleep(first_byte_delay)
        h.send_response(200)
        h.send_header("content-type", "text/event-stream")
        h.send_header("transfer-encoding", "chunked")
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.flush()
        for i, event in enumerate(events):
            if break_after is not None and i == break_after:
                h.wfile.flush()
                # Let the events already sent arrive first: closing with unread bytes on either
                # side can become a reset that discards them in flight (seen once in CI), which
                # tests the kernel, not the proxy. The body still ends mid-stream.
                time.sleep(0.2)
                h.connection.shutdown(socket.SHUT_RDWR)
                h.close_connection = True
                return
            if delays:
                time.sleep(delays[i] if i < len(delays) else 0)
            chunk = (event + "\n\n").encode()
            h.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            h.wfile.flush()
        h.wfile.write(b"0\r\n\r\n")
        h.wfile.flush()

    return script


def data(obj) -> str:
    return "data: " + (obj if isinstance(obj, str) else json.dumps(obj))


def named(name, obj) -> str:
    return f"event: {name}\ndata: {json.dumps(obj)}"


@pytest.fixture(scope="session")
def project(tmp_path_factory):
    """A project whose memory holds a decision the proxy should find."""
    base = tmp_path_factory.mktemp("proxy")
    root = base / "project"
    (root / "src").mkdir(parents=True)
    (root / "src/auth.rs").write_text("pub fn hash(password: &str) -> String {\n    argon2id(password)\n}\n")
    env = dict(os.environ)
    env["HOME"] = str(base / "home")
    env["ZBLADE_MODELS_DIR"] = str(base / "no-models")  # keyword search: fast and deterministic
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    zblade("init", cwd=root, env=env)
    conversation = {
        "conversation_id": "conv_earlier",
        "title": "Password hashing",
        "messages": [
            {"role": "user", "content": "Which password hashing should we use?"},
            {"role": "assistant", "content": DECISION},
        ],
    }
    (base / "c.json").write_text(json.dumps(conversation))
    zblade("add", "conversation", str(base / "c.json"), cwd=root, env=env)
    return {"root": root, "env": env}


class Proxy:
    def __init__(self, project, upstream_openai, upstream_anthropic):
        self.project = project
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(project["root"].parent / f"proxy-{self.port}.log", "w+")
        self.process = subprocess.Popen(
            [ZBLADE, "--project", str(project["root"]), "proxy", "--listen", f"127.0.0.1:{self.port}",
             "--openai-upstream", upstream_openai, "--anthropic-upstream", upstream_anthropic],
            env=project["env"], stdout=subprocess.DEVNULL, stderr=self.log,
        )
        wait_http(self.url + "/zblade-proxy-probe", 30)

    def zblade(self, *args):
        return zblade("--project", str(self.project["root"]), *args, env=self.project["env"])

    def conversation(self, conversation_id, settle=5.0):
        """The recorded conversation (recording happens once the answer ends: poll briefly)."""
        deadline = time.time() + settle
        while True:
            result = zblade("--project", str(self.project["root"]), "--json", "show", conversation_id,
                            env=self.project["env"], check=False)
            if result.returncode == 0 or time.time() > deadline:
                break
            time.sleep(0.1)
        assert result.returncode == 0, result.stderr
        shown = json.loads(result.stdout)
        return shown.get("conversation", shown)

    def messages_when(self, conversation_id, predicate, settle=5.0):
        deadline = time.time() + settle
        while True:
            try:
                messages = self.conversation(conversation_id, settle)["messages"]
                if predicate(messages) or time.time() > deadline:
                    return messages
            except AssertionError:
                if time.time() > deadline:
                    raise
            time.sleep(0.1)

    def stop(self):
        self.process.terminate()
        self.process.wait(10)
        self.log.close()


@pytest.fixture(scope="session")
def scripted():
    upstream = Scripted()
    yield upstream
    upstream.server.shutdown()


@pytest.fixture(scope="session")
def llama(tmp_path_factory):
    """llama-cpp-python's OpenAI-compatible server on the tiny GGUF model."""
    port = free_port()
    log = open(tmp_path_factory.mktemp("llama") / "server.log", "w+")
    process = subprocess.Popen(
        [PYTHON, "-m", "llama_cpp.server", "--model", GGUF, "--model_alias", "tiny-llama",
         "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--verbose", "False"],
        stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(url + "/v1/models", 120)
    except AssertionError:
        log.seek(0)
        raise AssertionError("llama-cpp-python's server did not start:\n" + log.read()[-3000:])
    yield url
    process.terminate()
    process.wait(10)


@pytest.fixture(scope="session")
def proxy(project, llama, scripted):
    """The proxy with the real llama.cpp server for OpenAI-style requests and the scripted
    upstream for Anthropic ones."""
    p = Proxy(project, llama + "/v1", scripted.url)
    yield p
    p.stop()


@pytest.fixture(scope="session")
def faults(project, scripted):
    """The proxy with the scripted upstream for both APIs."""
    p = Proxy(project, scripted.url, scripted.url)
    yield p
    p.stop()

"""Fixtures for driving `zblade mcp` with the official Python MCP SDK (PyPI `mcp`).

A project is made with the real `zblade` binary (init, a conversation, files), next to things
that must never come back through the server: a secret file outside the root, a sibling folder
whose name shares the root's prefix (`project2`), symlinks that lead out, and secrets inside.
Each of those holds a sentinel string; no tool answer may ever contain one.
"""

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

ZBLADE = os.environ.get("ZBLADE") or str(
    Path(os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache/zblade-target")) / "debug/zblade"
)
SENTINELS = ["SENTINEL_OUTSIDE_7f3a", "SENTINEL_SIBLING_7f3a", "SENTINEL_ENV_7f3a", "SENTINEL_GIT_7f3a", "SENTINEL_KEY_7f3a"]


def zblade(*args, cwd=None, env=None, input=None, check=True):
    result = subprocess.run(
        [ZBLADE, *args], cwd=cwd, env=env, input=input, capture_output=True, text=True, timeout=120
    )
    if check and result.returncode != 0:
        raise AssertionError(f"zblade {' '.join(args)} failed ({result.returncode}): {result.stderr}")
    return result


def server_env(home: Path) -> dict:
    env = dict(os.environ)
    # No embedding model: search must answer in keyword mode and say so.
    env["ZBLADE_MODELS_DIR"] = str(home / "no-models")
    env["HOME"] = str(home)
    env.pop("ZBLADE_MCP_TOKEN", None)
    # The prompt hook would start a warm engine for the project in the background, which the
    # tests that start `zblade serve` themselves would then find; the one test of that start
    # drops this.
    env["ZBLADE_NO_AUTO_SERVE"] = "1"
    return env


@pytest.fixture(scope="session")
def world(tmp_path_factory):
    base = tmp_path_factory.mktemp("mcp")
    home = base / "home"
    home.mkdir()
    root = base / "project"
    (root / "src").mkdir(parents=True)
    (root / "src/auth.rs").write_text(
        "pub fn refresh(token: &str) -> Token {\n    // rotate the refresh token on every use\n    rotate(token)\n}\n"
    )
    (root / "src/cache.rs").write_text("pub fn evict(key: &str) {\n    lru.remove(key);\n}\n")
    (root / "with space [1].txt").write_text("spaces and brackets\n")
    (root / "..test").write_text("a file named ..test\n")
    (root / "...").write_text("a file named ...\n")
    (root / "café.txt").write_text("NFC name\n")
    (root / ".env").write_text("API_KEY=SENTINEL_ENV_7f3a\n")
    (root / "deploy.pem").write_text("-----BEGIN PRIVATE KEY----- SENTINEL_KEY_7f3a\n")
    (root / "big.log").write_text("x" * (2 * 1024 * 1024))
    (root / "bin.dat").write_bytes(b"\x00\x01SENTINEL_BIN\x00")
    (base / "outside_secret.txt").write_text("SENTINEL_OUTSIDE_7f3a\n")
    (base / "secret_dir").mkdir()
    (base / "secret_dir/s.txt").write_text("SENTINEL_OUTSIDE_7f3a\n")
    (base / "project2").mkdir()
    (base / "project2/secret.txt").write_text("SENTINEL_SIBLING_7f3a\n")
    os.symlink(base / "secret_dir", root / "link_out")
    os.symlink(base / "outside_secret.txt", root / "file_link")
    os.symlink(root / "chain2", root / "chain1")
    os.symlink(base / "outside_secret.txt", root / "chain2")
    os.symlink(root / ".env", root / "notes.txt")
    os.symlink(root / "src/auth.rs", root / "ok_link")
    os.symlink(root, base / "rootlink")

    env = server_env(home)
    zblade("init", cwd=root, env=env)
    (root / ".git").mkdir()
    (root / ".git/config").write_text("[remote] url = https://SENTINEL_GIT_7f3a@example.com\n")
    conversation = {
        "conversation_id": "conv_mcp_1",
        "title": "Token refresh design",
        "messages": [
            {"id": "msg_1", "role": "user", "content": "How should the refresh token rotation work?",
             "timestamp": "2026-11-20T10:00:00Z"},
            {"id": "msg_2", "role": "assistant", "timestamp": "2026-11-20T10:01:00Z",
             "content": "We decided to rotate the refresh token on every use; see src/auth.rs.",
             "code_references": [{"file": "src/auth.rs", "lines": [1, 4], "context": "the refresh function"}]},
        ],
    }
    conv_file = base / "conv.json"
    conv_file.write_text(json.dumps(conversation))
    zblade("add", "conversation", str(conv_file), cwd=root, env=env)
    zblade("index", cwd=root, env=env, check=False)  # code chunks for search_project (no model: no vectors)
    return {"base": base, "root": root, "home": home, "env": env}


class HttpServer:
    def __init__(self, root: Path, env: dict, token: str | None = None):
        args = [ZBLADE, "--project", str(root), "mcp", "--http", "127.0.0.1:0"]
        if token:
            args += ["--token", token]
        self.proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 30
        line = ""
        while time.time() < deadline:
            line = self.proc.stderr.readline()
            match = re.search(r"http://(127\.0\.0\.1:\d+)/mcp", line)
            if match:
                self.url = f"http://{match.group(1)}/mcp"
                return
            if self.proc.poll() is not None:
                break
        raise AssertionError(f"zblade mcp --http did not start: {line}")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture(scope="session")
def http_server(world):
    server = HttpServer(world["root"], world["env"])
    yield server
    server.stop()


def assert_no_sentinel(text: str):
    for sentinel in SENTINELS:
        assert sentinel not in text, f"{sentinel} came back: {text[:300]}"


@pytest.fixture(scope="session")
def zblade_bin():
    assert shutil.which(ZBLADE) or Path(ZBLADE).exists(), f"{ZBLADE} is not built"
    return ZBLADE

"""Checks what the installed `zblade` printed in tests/package/install-test.sh (its scratch
folder is the argument): semantic search worked with the packaged models and ONNX Runtime,
and agents' configs point at /usr/bin/zblade."""

import json
import sys
from pathlib import Path

scratch = Path(sys.argv[1])


def fail(why: str) -> None:
    sys.exit(f"package test: FAILED: {why}")


def load(name: str):
    try:
        return json.loads((scratch / name).read_text())
    except (OSError, ValueError) as e:
        fail(f"{name}: {e}")


models = load("models.json")
in_use = [m for m in models if m.get("active") or m.get("code")]
if not in_use:
    fail(f"no model in use: {models}")
for model in in_use:
    if not (model.get("dir") or "").startswith("/usr/share/zblade/models/"):
        fail(f"model {model['name']} is not the package's: {model.get('dir')}")

status = load("status.json")
if not status.get("vectors") or not status.get("code_vectors"):
    fail(f"zblade index embedded nothing: vectors {status.get('vectors')}, code {status.get('code_vectors')}")

semantic = load("semantic.json")
if semantic.get("mode") != "semantic" or not semantic.get("hits"):
    fail(f"semantic search found nothing: {semantic}")
if "Cache eviction" not in semantic["hits"][0].get("title", ""):
    fail(f"semantic search ranked another conversation first: {semantic['hits'][0]}")

code = load("code.json")
paths = [h.get("path") or h.get("file") or "" for h in code.get("hits", [])]
if not any(p.startswith("src/") for p in paths):
    fail(f"code search found no project file: {code}")

context = (scratch / "context.txt").read_text()
if "JWT" not in context:
    fail(f"zblade context packed nothing about JWT: {context[:500]}")

mcp = (scratch / "mcp.txt").read_text()
if "/usr/bin/zblade" not in mcp:
    fail(f"zblade mcp install would not start /usr/bin/zblade: {mcp}")

print(f"package test: CLI ok (models {', '.join(m['dir'] for m in in_use)}; "
      f"{len(semantic['hits'])} semantic hits, {len(paths)} code hits)", file=sys.stderr)

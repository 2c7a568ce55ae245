"""Runs the shell blocks of README.md and docs/*.md: every command of every block, in order, in a
scratch copy of the demo project (scripts/demo-project.sh) with an empty HOME and no network. A
block that needs what a test cannot have (root, a sync server, a model download, an agent's
sessions, minutes of training) says so on the line before it:

    <!-- doc-test: example — needs a sync server -->

Its commands still must parse (crates/zblade-cli/src/doc_commands.rs checks every documented
`zblade` command, inline ones too). Any other block must run: each command exits 0.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ZBLADE = os.environ.get("ZBLADE") or str(
    Path(os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache/zblade-target")) / "debug/zblade"
)
FENCE = re.compile(r"^```(sh|bash|shell|console)\s*$")
EXAMPLE = re.compile(r"<!--\s*doc-test:\s*example\s*[—-]+\s*(.+?)\s*-->")


def documents():
    return [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))


def blocks(path: Path):
    """(line, commands, why-it-is-an-example or None) for each shell block."""
    lines = path.read_text().splitlines()
    found = []
    i = 0
    while i < len(lines):
        if FENCE.match(lines[i].strip()):
            start = i + 1
            marker = EXAMPLE.search(lines[i - 1]) if i > 0 else None
            body = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                body.append(lines[i])
                i += 1
            commands, pending = [], ""
            for raw in body:
                line = raw.strip()
                if not line or (line.startswith("#") and not pending):
                    continue
                if line.endswith("\\"):
                    pending += line[:-1] + " "
                    continue
                commands.append((pending + line).strip())
                pending = ""
            found.append((start, commands, marker.group(1) if marker else None))
        i += 1
    return found


ALL_BLOCKS = [(path, line, commands, why) for path in documents() for (line, commands, why) in blocks(path)]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    base = tmp_path_factory.mktemp("docs")
    home = base / "home"
    home.mkdir()
    env = {
        "HOME": str(home),
        "PATH": f"{Path(ZBLADE).parent}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "ZBLADE_MODELS_DIR": os.environ.get("ZBLADE_MODELS_DIR", str(Path.home() / ".cache/zblade/models")),
        "ZBLADE_PY_ENV": os.environ.get("ZBLADE_PY_ENV", str(Path.home() / ".cache/zblade-py")),
        "ZBLADE_NO_AUTO_SERVE": "1",
    }
    return {"base": base, "env": env}


def test_every_block_runs_or_says_why_not():
    """A shell block is either run below or marked as an example with its reason."""
    runnable = [b for b in ALL_BLOCKS if b[3] is None]
    examples = [b for b in ALL_BLOCKS if b[3] is not None]
    assert runnable, "no runnable block found"
    for path, line, commands, why in examples:
        assert why.startswith("needs") or why.startswith("is"), f"{path.name}:{line}: say what it needs: {why}"
    ran = sum(len(b[2]) for b in runnable)
    print(f"{len(runnable)} blocks ({ran} commands) run, {len(examples)} marked examples "
          f"({sum(len(b[2]) for b in examples)} commands, parsed only)")


@pytest.mark.parametrize(
    "path,line,commands",
    [(p, l, c) for (p, l, c, why) in ALL_BLOCKS if why is None],
    ids=[f"{p.name}:{l}" for (p, l, c, why) in ALL_BLOCKS if why is None],
)
def test_block_runs(demo, path, line, commands, tmp_path):
    project = tmp_path / "demo"
    subprocess.run(["bash", str(ROOT / "scripts/demo-project.sh"), str(project), ZBLADE],
                   check=True, env=demo["env"], capture_output=True)
    for command in commands:
        assert command.startswith("zblade "), f"{path.name}:{line}: only zblade commands run here: {command}"
        result = subprocess.run(["bash", "-c", command], cwd=project, env=demo["env"],
                                capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        assert result.returncode == 0, (
            f"{path.name}:{line}: `{command}` exited {result.returncode}:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
        )

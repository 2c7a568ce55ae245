#!/usr/bin/env python3
"""Measures the code's structure against issue 58's targets and prints one line per target.

Each measure reads the sources as text (no build needed), so it runs anywhere `python3` does.
`--check` exits 1 when a measure is over its target (scripts/test.sh runs it that way, so the
stores, the engine-owned requests and the one server store cannot quietly come apart again).
`--json` prints the numbers for scripts.

The definitions are the issue's; where a definition needs a rule to be measured, the rule is
written beside the measure below.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "crates/zblade-engine/src"
FACES = [ROOT / "crates/zblade-cli/src", ROOT / "src-tauri/src", ROOT / "crates/zblade-tools/src",
         ROOT / "crates/zblade-mcp/src"]
CLI_AND_APP = [ROOT / "crates/zblade-cli/src", ROOT / "src-tauri/src"]


def rust_files(*dirs: Path) -> list[Path]:
    return sorted(p for d in dirs for p in d.rglob("*.rs"))


def without_tests(text: str) -> str:
    """The text before a file's `#[cfg(test)]` module: tests are not the code being measured."""
    found = re.search(r"^#\[cfg\(test\)\]\n(pub(\(crate\))? )?mod ", text, re.M)
    return text if not found else text[:found.start()]


def without_comments(text: str) -> str:
    return re.sub(r"^\s*//.*$", "", text, flags=re.M)


def block_end(lines: list[str], start: int) -> int:
    """The index of the line that closes the block opened on `lines[start]` (braces counted,
    string and char literals and comments ignored well enough for Rust source as formatted)."""
    depth = 0
    opened = False
    for i in range(start, len(lines)):
        line = re.sub(r'"(\\.|[^"\\])*"', '""', lines[i].split("//")[0])
        line = re.sub(r"'(\\.|[^'\\])'", "''", line)
        for ch in line:
            if ch == "{":
                depth += 1
                opened = True
            elif ch == "}":
                depth -= 1
        if opened and depth <= 0:
            return i
    return len(lines) - 1


def struct_fields(text: str, name: str) -> list[str]:
    """The field names of `struct name { … }` in `text` (empty when there is none)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if re.match(rf"\s*(pub(\([a-z]+\))?\s+)?struct {name}\b[^;(]*$", line):
            end = block_end(lines, i)
            body = lines[i + 1:end]
            return [m.group(1) for l in body if (m := re.match(r"\s*(?:pub(?:\([a-z]+\))?\s+)?([a-z_][a-z0-9_]*)\s*:(?!:)", l))]
    return []


def measure() -> dict[str, dict]:
    out: dict[str, dict] = {}
    engine = {p: without_comments(without_tests(p.read_text())) for p in rust_files(ENGINE)}

    out["impl Deref for Project"] = {
        "value": sum(len(re.findall(r"impl\s+(std::ops::)?Deref\s+for\s+Project\b", t)) for t in engine.values()),
        "target": 0, "before": 1}

    # The engine's state struct: the one `Project` holds its stores in (`Parts` before).
    fields = 0
    for t in engine.values():
        for name in ("Parts", "Stores", "Project"):
            fields = max(fields, len(struct_fields(t, name)))
    out["fields of the engine's state struct"] = {"value": fields, "target": 6, "before": 12}

    longest = (0, "")
    for p, t in engine.items():
        lines = t.splitlines()
        for i, line in enumerate(lines):
            m = re.match(r"impl(<[^>]*>)?\s+([A-Z][A-Za-z0-9_]*)\s*(<[^>]*>)?\s*\{", line)
            if m:
                # Lines of code: blank lines and comment lines do not count.
                n = sum(1 for l in lines[i:block_end(lines, i) + 1]
                        if l.strip() and not l.strip().startswith("//"))
                if n > longest[0]:
                    longest = (n, f"impl {m.group(2)} in {p.relative_to(ROOT)}:{i + 1}")
    out["longest impl block in zblade-engine"] = {"value": longest[0], "target": 300, "before": 727,
                                                   "where": longest[1]}

    faces = {p: without_comments(without_tests(p.read_text())) for p in rust_files(*FACES)}
    calls = [f"{p.relative_to(ROOT)}" for p, t in faces.items() for _ in re.findall(r"\.search_(with|fresh)\(", t)]
    out["search_with/search_fresh calls in faces"] = {"value": len(calls), "target": 0, "before": 3, "where": calls}
    # A face-side clamp of a limit: `.clamp(` or `.min(`/`.max(` on something named like a limit.
    clamps = [f"{p.relative_to(ROOT)}" for p, t in faces.items()
              for _ in re.findall(r"limit[a-z_]*( as usize\)|\)|\.unwrap_or\([^)]*\))?\s*\.(clamp|min|max)\(", t)]
    # Two list pages (the app's and the MCP tool's conversation lists) still bound their size
    # in the face: the engine has no page-size rule yet (the CLI lists any size).
    out["face-side limit clamps"] = {"value": len(clamps), "target": 0, "before": 4, "where": clamps,
                                     "enforced": False}

    app_cli = {p: without_comments(without_tests(p.read_text())) for p in rust_files(*CLI_AND_APP)}
    files = [str(p.relative_to(ROOT)) for p, t in app_cli.items() if "import_history" in t]
    out["CLI/app files calling import_history"] = {"value": len(files), "target": 0, "before": 2, "where": files}
    saves = [str(p.relative_to(ROOT)) for p, t in app_cli.items() for _ in re.findall(r"credentials::save\(", t)]
    out["credentials::save calls in CLI/app"] = {"value": len(saves), "target": 0, "before": 3, "where": saves}

    copied = ["ExportArg", "ApiArg", "ScopeArg", "RoleArg", "Tier", "Kind", "Mode", "MomentKind"]
    copies = []
    for p in [ROOT / "crates/zblade-cli/src/cli.rs", *rust_files(ROOT / "crates/zblade-tools/src")]:
        for name in re.findall(r"^\s*pub(?:\([a-z]+\))?\s+enum\s+([A-Za-z0-9_]+)", without_tests(p.read_text()), re.M):
            if name in copied:
                copies.append(f"{name} ({p.relative_to(ROOT)})")
    out["enums in cli.rs/zblade-tools copying a domain enum"] = {"value": len(copies), "target": 0, "before": 8,
                                                                  "where": copies}

    # A result type re-declared in the app: a struct of the app sent to the UI (`Serialize`)
    # that shares three or more fields, and three quarters of its own, with a struct of crates/
    # that its file names (it is built from that struct).
    crate_structs: list[tuple[str, set[str]]] = []
    for p in rust_files(ROOT / "crates"):
        t = without_tests(p.read_text())
        for name in re.findall(r"^\s*pub\s+struct\s+([A-Za-z0-9_]+)\s*\{", t, re.M):
            crate_structs.append((f"{p.relative_to(ROOT)}::{name}", set(struct_fields(t, name))))
    redeclared = []
    overlapping = []
    for p in rust_files(ROOT / "src-tauri/src"):
        t = without_tests(p.read_text())
        lines = t.splitlines()
        for i, line in enumerate(lines):
            m = re.match(r"\s*pub\s+struct\s+([A-Za-z0-9_]+)\s*\{", line)
            if not m or "Serialize" not in " ".join(lines[max(0, i - 4):i]):
                continue
            own = set(struct_fields(t, m.group(1)))
            if len(own) < 3:
                continue
            for other, theirs in crate_structs:
                if len(own & theirs) >= 3 and len(own & theirs) >= 0.75 * len(own):
                    overlapping.append(f"{m.group(1)} ~ {other}")
                    # A copy is built from the original: the app's file names the crate's type.
                    if re.search(rf"\b{other.rsplit('::', 1)[1]}\b", t):
                        redeclared.append(f"{m.group(1)} ~ {other}")
                    break
    out["result types re-declared in src-tauri"] = {"value": len(redeclared), "target": 3, "before": 3,
                                                     "where": redeclared}
    # The looser count the issue started from (10): field overlap alone, coincidences included.
    out["app structs overlapping a crate struct (information)"] = {"value": len(overlapping), "target": 99,
                                                                   "before": 10, "where": overlapping}

    store_dir = ROOT / "crates/zblade-server/src/store"
    any_lines = 0
    for p in rust_files(store_dir) + rust_files(ROOT / "crates/zblade-server/src"):
        lines = p.read_text().splitlines()
        for i, line in enumerate(lines):
            if re.match(r"\s*impl\s+Store\s+for\s+AnyStore", line):
                any_lines = max(any_lines, block_end(lines, i) - i + 1)
    out["lines of impl Store for AnyStore"] = {"value": any_lines, "target": 0, "before": 175}

    def sql_literals(path: Path) -> set[str]:
        if not path.exists():
            return set()
        text = without_tests(path.read_text())
        found = set()
        for lit in re.findall(r'r#"(.*?)"#|"((?:\\.|[^"\\])*)"', text, re.S):
            s = lit[0] or lit[1]
            if re.match(r"\s*(SELECT|INSERT|UPDATE|DELETE|WITH|CREATE)\b", s, re.I):
                s = re.sub(r"\?(\d+)", r"$\1", s)
                s = re.sub(r"\\\n\s*", " ", s)
                found.add(" ".join(s.split()))
        return found
    same = sql_literals(store_dir / "sqlite.rs") & sql_literals(store_dir / "postgres.rs")
    out["SQL literals identical in sqlite.rs and postgres.rs"] = {"value": len(same), "target": 5, "before": 28}

    out["import circles (engine files, crates)"] = {"value": import_circles(engine), "target": 0, "before": 0}
    return out


def import_circles(engine: dict[Path, str]) -> int:
    """Loops of engine files importing each other through `crate::…` paths (a file's `super::`
    use of its own folder's shared items is containment, not an import), plus crates whose
    Cargo.toml dependencies loop."""
    def node(p: Path) -> str:
        rel = p.relative_to(ENGINE).with_suffix("")
        return str(rel.parent) if rel.name == "mod" else str(rel)

    def resolve(path: list[str]) -> str | None:
        # The longest prefix of the path that names a file: `crate::semantic::store::X` is
        # semantic/store.rs, `crate::semantic::Space` is semantic/mod.rs.
        for n in range(len(path), 0, -1):
            base = ENGINE.joinpath(*path[:n])
            if base.with_suffix(".rs").is_file() or (base / "mod.rs").is_file():
                return "/".join(path[:n])
        return None
    graph: dict[str, set[str]] = {}
    for p, t in engine.items():
        me = node(p)
        graph.setdefault(me, set())
        for path in re.findall(r"crate::((?:[a-z_][a-z0-9_]*::)*[a-z_][a-z0-9_]*)", t):
            target = resolve(path.split("::"))
            if target and target != me and target != "lib":
                graph[me].add(target)
    crates: dict[str, set[str]] = {}
    for toml in list((ROOT / "crates").glob("*/Cargo.toml")) + [ROOT / "src-tauri/Cargo.toml"]:
        name = re.search(r'^name\s*=\s*"([^"]+)"', toml.read_text(), re.M).group(1)
        deps = set(re.findall(r'^(zblade-[a-z-]+)\s*=', toml.read_text().split("[dev-dependencies]")[0], re.M))
        crates[name] = deps
    found = cycles(graph) + cycles(crates)
    for c in found:
        print("circle:", " -> ".join(c), file=sys.stderr)
    return len(found)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one member."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(group)
    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when a measure is over its target (those marked open are not enforced)")
    parser.add_argument("--json", action="store_true", help="print the measures as JSON")
    args = parser.parse_args()
    measures = measure()
    if args.json:
        print(json.dumps(measures, indent=2))
    else:
        for name, m in measures.items():
            mark = "ok  " if m["value"] <= m["target"] else "OVER" if m.get("enforced", True) else "open"
            print(f"{mark} {name}: {m['value']} (target ≤ {m['target']}, issue 58 started at {m['before']})")
            if m["value"] > m["target"] and m.get("where"):
                where = m["where"] if isinstance(m["where"], list) else [m["where"]]
                for w in where[:12]:
                    print(f"       {w}")
    over = [n for n, m in measures.items() if m["value"] > m["target"] and m.get("enforced", True)]
    return 1 if args.check and over else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# Drives `zblade mcp` with MCP clients written by others:
#   1. pytest with the official Python SDK (stdio and HTTP, both protocol modes, the path corpus);
#   2. the official conformance suite (@modelcontextprotocol/conformance) against --http, for the
#      2025-11-25 and 2026-07-28 requirement sets, with the expected failures in
#      conformance-expected-failures.yml (each one explained there);
#   3. the MCP Inspector's CLI mode calling a tool over stdio.
# Needs ZBLADE (the binary) and what setup.sh installs; test.sh runs it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
here="$ZBLADE_ROOT/tests/mcp"
ZBLADE="${ZBLADE:-$CARGO_TARGET_DIR/debug/zblade}"
export ZBLADE
clients="$ZBLADE_MCP_CLIENTS/node_modules/.bin"
node22="$clients/node"

echo "mcp: pytest with the official Python SDK" >&2
(cd "$here" && "$ZBLADE_PYTHON" -m pytest -q -p no:cacheprovider test_mcp_server.py)

work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
project="$work/project"
mkdir -p "$project/src"
printf 'pub fn refresh() {}\n' > "$project/src/auth.rs"
export ZBLADE_MODELS_DIR="$work/no-models"
"$ZBLADE" --project "$project" init >/dev/null
printf '{"conversation_id": "conv_c", "title": "Conformance", "messages": [{"id": "m1", "role": "user", "content": "hello conformance"}]}' > "$work/c.json"
"$ZBLADE" --project "$project" add conversation "$work/c.json" >/dev/null

echo "mcp: the official conformance suite against zblade mcp --http" >&2
"$ZBLADE" --project "$project" mcp --http 127.0.0.1:0 2> "$work/server.log" &
server_pid=$!
url=""
for _ in $(seq 1 100); do
  url="$(grep -o 'http://127.0.0.1:[0-9]*/mcp' "$work/server.log" || true)"
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { cat "$work/server.log" >&2; echo "mcp: the HTTP server did not start" >&2; exit 1; }
for version in 2025-11-25 2026-07-28; do
  "$node22" "$clients/conformance" server --url "$url" --requirements "$version" \
    --expected-failures "$here/conformance-expected-failures.yml" -o "$work/conformance-$version" 2>&1 | tail -n 25
done

echo "mcp: the MCP Inspector (CLI mode) calling a tool over stdio" >&2
out="$("$node22" "$clients/mcp-inspector" --cli "$ZBLADE" --project "$project" mcp \
  --method tools/call --tool-name search --tool-arg query=conformance)"
echo "$out" | "$ZBLADE_PYTHON" -c '
import json, sys
result = json.load(sys.stdin)
hits = result["structuredContent"]["hits"]
assert not result.get("isError") and hits and hits[0]["conversation"] == "conv_c", result
print("mcp: inspector called search over stdio: %d hit(s)" % len(hits))'

#!/usr/bin/env bash
# Builds the zblade CLI and walks through it on a demo project: a small git repository with code,
# two conversations and a moment. Usage: scripts/demo-cli.sh [DEMO_DIR]   (default: a new temp dir)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ZBLADE_ROOT"

bash scripts/setup.sh
# The dev profile, as scripts/run.sh builds it (a release build of LanceDB alone takes ~20
# minutes on two cores).
cargo build --workspace --locked --bin zblade
zblade="$CARGO_TARGET_DIR/debug/zblade"

demo="${1:-$(mktemp -d -t zblade-demo.XXXXXX)}"
bash scripts/demo-project.sh "$demo" "$zblade" --code-only
cd "$demo"

step() { printf '\n\033[1m$ zblade %s\033[0m\n' "$*"; "$zblade" "$@"; }

step init
step add conversation "$ZBLADE_ROOT/examples/conversations/jwt-auth.json" "$ZBLADE_ROOT/examples/conversations/cache-eviction.json"
step add moment "$ZBLADE_ROOT/examples/moments/refresh-token-store.json"
step list conversations
step list moments
step search jwt --mode keyword
step index
step search "how long do sessions last before the user must log in again" --limit 3
step search "how do we revoke refresh tokens" --kind conversations
step refs check

printf '\n\033[1m# the code moves: two lines are inserted at the top of src/auth.ts\033[0m\n'
{ printf '// Auth helpers\n// (see docs/auth.md)\n'; git show HEAD:src/auth.ts; } > src/auth.ts
step refs check
step search "refresh token" --kind messages --limit 2
step compressor status
step moments extract
step summarize
conv="$("$zblade" --json list conversations | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["id"])')"
step context "how do we refresh tokens?" --conversation "$conv" --budget 800 --receipt
step reindex
step fsck
step status

cat <<MSG

Demo project: $demo
Try more:   cd "$demo" && "$zblade" --help
MSG

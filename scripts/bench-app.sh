#!/usr/bin/env bash
# The desktop app's benchmark (cold start, idle memory in the tray, search keystroke → rendered
# results at 100,000 chunks) on the real app under Xvfb; rewrites the "desktop-app" section of
# docs/BENCHMARKS.md. Usage: scripts/bench-app.sh [--smoke] [--chat] [--release]
#   --smoke    a small, quick version that writes nothing (scripts/test.sh runs it)
#   --chat     only the Chat view's frame rate while an answer streams (its own section)
#   --release  build and measure the release binaries (LanceDB alone takes ~70 min to build on 2 cores)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ZBLADE_ROOT"
mode="--full"
chat=""
profile="debug"
for arg in "$@"; do
  case "$arg" in
    --smoke) mode="" ;;
    --chat) chat="--chat" ;;
    --release) profile="release" ;;
    *) echo "bench-app: unknown option $arg (expected --smoke, --chat or --release)" >&2; exit 2 ;;
  esac
done
if [ "$profile" = release ]; then
  # The same selection as for the engine's benchmarks, so LanceDB is built once for both.
  cargo build --release --locked -p zblade-engine -p zblade-app -p zblade-cli --bins --benches
else
  # The binaries scripts/test.sh builds (same features: nothing is rebuilt after a test run).
  cargo test --workspace --all-targets --locked --no-run
fi
ZBLADE_APP="$CARGO_TARGET_DIR/$profile/zblade-app" ZBLADE="$CARGO_TARGET_DIR/$profile/zblade" \
  node ui/bench/app.mjs $mode $chat

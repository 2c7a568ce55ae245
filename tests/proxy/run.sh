#!/usr/bin/env bash
# Drives `zblade proxy` with clients written by others (PyPI openai and anthropic) against
# llama-cpp-python's OpenAI-compatible server on the tiny GGUF model and a scripted upstream for
# faults, then runs the proxy benchmark in its smoke mode (no dropped or reordered events).
# Needs ZBLADE (the binary) and what setup.sh installs; test.sh runs it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
here="$ZBLADE_ROOT/tests/proxy"
ZBLADE="${ZBLADE:-$CARGO_TARGET_DIR/debug/zblade}"
export ZBLADE ZBLADE_TEST_GGUF ZBLADE_PYTHON

echo "proxy and chat: pytest with the openai and anthropic clients and zblade chat" >&2
(cd "$here" && "$ZBLADE_PYTHON" -m pytest -q -p no:cacheprovider test_proxy.py test_chat.py)
echo "proxy: benchmark, smoke mode" >&2
"$ZBLADE_PYTHON" "$here/bench_proxy.py" --smoke | tail -n 1

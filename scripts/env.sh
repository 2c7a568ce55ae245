# Shared settings for zblade's scripts; sourced, not run.
ZBLADE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export ZBLADE_ROOT
# tauri-driver (installed by setup.sh with cargo install) lives here.
export PATH="$HOME/.cargo/bin:$PATH"
# Build outputs live outside the work tree so a fresh clone (and CI) reuses earlier builds.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/zblade-target}"
# The Python environment holding ONNX Runtime and the offline model builder.
export ZBLADE_PY_ENV="${ZBLADE_PY_ENV:-$HOME/.cache/zblade-py}"
export ZBLADE_PYTHON="$ZBLADE_PY_ENV/bin/python"
# Where embedding models live (zblade's default; see docs/SEARCH.md).
export ZBLADE_MODELS_DIR="${ZBLADE_MODELS_DIR:-$HOME/.cache/zblade/models}"
# The tiny llama.cpp model tests use (scripts/models/build_tiny_gguf.py writes it).
export ZBLADE_TEST_GGUF="${ZBLADE_TEST_GGUF:-$ZBLADE_MODELS_DIR/test/tiny-llama.gguf}"
# ONNX Runtime is found by zblade itself (zblade_search::embed::find_onnx_runtime: ORT_DYLIB_PATH
# if set, then beside the binary, then $ZBLADE_PY_ENV), so nothing here depends on whether
# setup.sh has created the Python environment yet.
# The MCP test clients from npm (conformance suite, Inspector, Node 22); setup.sh installs
# them here, one folder per lockfile.
if [ -z "${ZBLADE_MCP_CLIENTS:-}" ]; then
  ZBLADE_MCP_CLIENTS="$HOME/.cache/zblade-npm/mcp-clients-$(sha256sum "$ZBLADE_ROOT/tests/mcp/package-lock.json" | cut -c1-16)"
  export ZBLADE_MCP_CLIENTS
fi
# The archive's test gateway from npm (arlocal) and the reference Arweave client (arweave-js).
# The agents whose configurations zblade writes (Gemini CLI, Qwen Code), from npm, to load
# those configurations with the agents' own settings loaders.
if [ -z "${ZBLADE_AGENT_CLIENTS:-}" ]; then
  ZBLADE_AGENT_CLIENTS="$HOME/.cache/zblade-npm/agent-clients-$(sha256sum "$ZBLADE_ROOT/tests/agents/package-lock.json" | cut -c1-16)"
  export ZBLADE_AGENT_CLIENTS
fi
if [ -z "${ZBLADE_ARCHIVE_CLIENTS:-}" ]; then
  ZBLADE_ARCHIVE_CLIENTS="$HOME/.cache/zblade-npm/archive-clients-$(sha256sum "$ZBLADE_ROOT/tests/archive/package-lock.json" | cut -c1-16)"
  export ZBLADE_ARCHIVE_CLIENTS
fi

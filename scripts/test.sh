#!/usr/bin/env bash
# Runs every test of zblade: unit, integration, end-to-end journeys, doc tests, and a smoke run
# of each benchmark. Installs what is missing first.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ZBLADE_ROOT"

bash scripts/setup.sh
# Style and lints first: they fail fast and cheaply.
if cargo fmt --version >/dev/null 2>&1; then
  cargo fmt --all --check
else
  echo "test: rustfmt is not installed; skipping the format check" >&2
fi
if cargo clippy --version >/dev/null 2>&1; then
  cargo clippy --workspace --all-targets --locked -- -D warnings
else
  echo "test: clippy is not installed; skipping lints" >&2
fi
# --all-targets builds and runs benches too (in a small smoke mode), so they cannot rot.
cargo test --workspace --all-targets --locked
cargo test --workspace --doc --locked

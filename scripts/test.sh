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
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
# --all-targets builds and runs benches too (in a small smoke mode), so they cannot rot.
cargo test --workspace --all-targets --locked 2>&1 | tee "$log"
cargo test --workspace --doc --locked 2>&1 | tee -a "$log"

# One closing line with the totals of every test binary above.
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "tests: %d passed, %d failed\n", p, f; exit (f > 0 || p == 0) }' "$log"

#!/usr/bin/env bash
# Runs every test of zblade: unit, integration, end-to-end journeys, doc tests, and a smoke run
# of each benchmark. Installs what is missing first.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ZBLADE_ROOT"

bash scripts/setup.sh
# --all-targets builds and runs benches too (in a small smoke mode), so they cannot rot.
cargo test --workspace --all-targets --locked
cargo test --workspace --doc --locked

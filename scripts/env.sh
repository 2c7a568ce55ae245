# Shared settings for zblade's scripts; sourced, not run.
# Build outputs live outside the work tree so a fresh clone (and CI) reuses earlier builds.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/zblade-target}"
ZBLADE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export ZBLADE_ROOT

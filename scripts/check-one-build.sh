#!/usr/bin/env bash
# Checks that `cargo build` (scripts/run.sh: no dev-dependencies) and `cargo test` (scripts/test.sh)
# resolve every shared dependency with the same features. A dev-dependency that turns on one more
# feature of a crate LanceDB or DataFusion depend on makes the second command rebuild them (minutes
# on two cores); the fix is to ask for that feature in a normal dependency too (see the bstr line in
# crates/zblade-core/Cargo.toml). Reads only the lockfile: no compiling.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ZBLADE_ROOT"
features() {
  cargo tree --workspace --locked --prefix none -f '{p} {f}' -e "$1" 2>/dev/null |
    sed 's/ (\*)$//; s/ (proc-macro)//' | awk '{print $1, $2, $NF}' | sort -u
}
features normal,build > "${TMPDIR:-/tmp}/zblade-features-build.txt"
features normal,build,dev > "${TMPDIR:-/tmp}/zblade-features-test.txt"
# A feature set the app build has that the test build lacks: that dependency differs between them.
# (A package can be listed twice, for build scripts and for the program; each must match.)
differ="$(comm -23 "${TMPDIR:-/tmp}/zblade-features-build.txt" "${TMPDIR:-/tmp}/zblade-features-test.txt")"
if [ -n "$differ" ]; then
  echo "check-one-build: these dependencies get other features in test builds than in app builds," >&2
  echo "so scripts/run.sh and scripts/test.sh would each rebuild them (package, version, features in the app build):" >&2
  echo "$differ" >&2
  exit 1
fi
echo "check-one-build: app and test builds share every dependency's features"

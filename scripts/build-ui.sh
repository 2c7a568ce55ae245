#!/usr/bin/env bash
# Installs the UI's npm dependencies (from package-lock.json, only when it changed) and builds
# ui/dist, which the desktop app embeds at compile time.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ZBLADE_ROOT/ui"
stamp="node_modules/.zblade-lock-sha"
want="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "build-ui: installing npm dependencies" >&2
  # `npm install` rather than `npm ci`: npm 11 writes the lockfile without rollup's optional
  # per-platform packages and `npm ci` then refuses it as out of sync. With the lockfile present,
  # `npm install` installs exactly the locked versions.
  npm install --no-audit --no-fund --loglevel=error
  echo "$want" > "$stamp"
fi
npm run --silent build -- --logLevel warn

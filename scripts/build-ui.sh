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
  # Hashed again: should npm rewrite the lockfile, the next run must not install once more.
  sha256sum package-lock.json | cut -d' ' -f1 > "$stamp"
fi
# Built again only when what it is built from changed: a rebuilt ui/dist has new files, and the
# app's build script (tauri-build) then recompiles zblade-app, so scripts/run.sh after
# scripts/test.sh (both run setup) would each rebuild it for nothing (issue 43).
sources="$(find src index.html package.json package-lock.json svelte.config.js tsconfig.json vite.config.ts -type f -print0 |
  sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)"
built="node_modules/.zblade-dist-sources-sha"
if [ -f dist/index.html ] && [ -f "$built" ] && [ "$(cat "$built")" = "$sources" ]; then
  exit 0
fi
npm run --silent build -- --logLevel warn
echo "$sources" > "$built"

#!/usr/bin/env bash
# Builds zblade (CLI, UI and desktop app) and launches the desktop app on the embedded defaults
# (local mode, SQLite, LanceDB) with a demo project: a small git repository with code, two
# conversations that reference it and a moment. On the first launch the privacy wizard comes first.
# Usage: scripts/run.sh [DEMO_DIR]   (default: ~/zblade-demo; kept between runs)
# Without a display (an SSH session, a container) the app runs under Xvfb and a screenshot is saved.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ZBLADE_ROOT"

bash scripts/setup.sh   # also builds the UI (ui/dist), which the app embeds
# The dev profile: a release build of LanceDB alone takes ~20 minutes on two cores.
# The same packages and features as scripts/test.sh builds, so neither command rebuilds what the
# other built (the sync server is built on its own there too: see scripts/test.sh).
cargo build --workspace --locked --bin zblade --bin zblade-app
bin="$CARGO_TARGET_DIR/debug"

demo="${1:-$HOME/zblade-demo}"
bash scripts/demo-project.sh "$demo" "$bin/zblade"
echo "run: demo project in $demo (the CLI walkthrough: scripts/demo-cli.sh)"

if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  exec "$bin/zblade-app" "$demo"
fi

display=":$((70 + RANDOM % 20))"
echo "run: no display found; starting the app under Xvfb on $display"
Xvfb "$display" -screen 0 1360x860x24 -nolisten tcp &
xvfb=$!
trap 'kill $xvfb 2>/dev/null || true' EXIT
sleep 1
DISPLAY="$display" "$bin/zblade-app" "$demo" &
app=$!
sleep 8
shot="$demo/zblade-app.png"
if DISPLAY="$display" import -window root "$shot" 2>/dev/null; then
  echo "run: the app is running; a screenshot of its window: $shot"
fi
echo "run: Ctrl-C quits"
wait $app

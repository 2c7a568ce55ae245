#!/usr/bin/env bash
# Proves docs/PRIVACY.md on the built binaries: `index`, `search`, `context`, `serve` (the warm
# engine a hook starts), `mcp` and the app's tray indexer run with an empty HOME, each in a
# network namespace of its own (no route anywhere but its own loopback), under `strace -f`.
# Fails on any network call to anything but loopback and Unix sockets, on any file written
# outside the project, the models folder and the places PRIVACY.md lists, and if ONNX Runtime's
# telemetry store (~/.cache/Microsoft) appears.
#
# ZBLADE (default: the debug build) and ZBLADE_APP (the app; skipped with a note when absent or
# when there is no Xvfb) name the binaries; the package test passes /usr/bin's.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
here="$ZBLADE_ROOT/tests/privacy"
ZBLADE="${ZBLADE:-$CARGO_TARGET_DIR/debug/zblade}"
ZBLADE_APP="${ZBLADE_APP:-$CARGO_TARGET_DIR/debug/zblade-app}"
models="$ZBLADE_MODELS_DIR"
[ -f "$models/all-minilm-l6-v2/model.onnx" ] || { echo "privacy: no model in $models (run scripts/setup.sh)" >&2; exit 1; }

work="$(mktemp -d)"
xvfb_pid=""
cleanup() {
  [ -n "$xvfb_pid" ] && kill "$xvfb_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
home="$work/home" project="$work/project" logs="$work/logs"
mkdir -p "$home" "$project/src" "$logs"

# A network namespace of its own for every traced command: root makes one directly, anyone
# else through a user namespace.
if unshare --net true 2>/dev/null; then
  netns=(unshare --net)
elif unshare --net --map-root-user true 2>/dev/null; then
  netns=(unshare --net --map-root-user)
else
  echo "privacy: cannot make a network namespace here (unshare --net failed)" >&2
  exit 1
fi
calls=connect,sendto,sendmsg,bind,open,openat,creat,mkdir,mkdirat,unlink,unlinkat,rmdir,rename,renameat,renameat2,link,linkat,symlink,symlinkat,truncate

# The environment a new user has: an empty HOME, the models, ONNX Runtime where setup put it
# (a package keeps it beside the binary), nothing else of ours.
clean_env=(env -i "HOME=$home" "PATH=/usr/local/bin:/usr/bin:/bin" "LANG=C.UTF-8"
  "ZBLADE_MODELS_DIR=$models" "ZBLADE_PY_ENV=$ZBLADE_PY_ENV" "ZBLADE_NO_AUTO_SERVE=1")

traced() { # NAME COMMAND…: runs COMMAND in the project, traced, in its own network namespace
  local name="$1"
  shift
  (cd "$project" && "${clean_env[@]}" "${netns[@]}" strace -f -y -qq -e trace="$calls" -o "$logs/$name.log" "$@")
}

# First the check itself: a program that tries the network and writes outside the project
# must be caught, or a clean result below would prove nothing.
traced canary "$ZBLADE_PYTHON" -c "
import socket
for family, kind, address in [(socket.AF_INET, socket.SOCK_STREAM, ('93.184.216.34', 443)),
                              (socket.AF_INET, socket.SOCK_DGRAM, ('10.0.0.2', 53))]:
    try:
        socket.socket(family, kind).connect(address)
    except OSError:
        pass
open('$work/outside.txt', 'w').write('x')
"
canary="$("$ZBLADE_PYTHON" "$here/check_trace.py" --home "$home" --cwd "$project" --allow "$project" "$logs/canary.log" || true)"
for expected in 93.184.216.34 10.0.0.2 outside.txt; do
  grep -q "$expected" <<< "$canary" || { echo "privacy: the check missed $expected in a canary trace:" >&2; echo "$canary" >&2; exit 1; }
done
rm "$logs/canary.log"

printf 'pub fn refresh(token: &str) -> Token {\n    rotate(token)\n}\n' > "$project/src/auth.rs"
git -C "$project" init -q
git -C "$project" -c user.name=t -c user.email=t@example.com add -A
git -C "$project" -c user.name=t -c user.email=t@example.com commit -qm "auth: rotate refresh tokens"
cat > "$work/conversation.json" <<'JSON'
{"conversation_id": "conv_privacy", "title": "Token refresh", "messages": [
  {"id": "m1", "role": "user", "content": "When do we refresh the session token?"},
  {"id": "m2", "role": "assistant", "content": "Thirty seconds before it expires, never on the 401.",
   "code_references": [{"file": "src/auth.rs", "lines": [1, 3]}]}]}
JSON

traced init "$ZBLADE" init >/dev/null
traced add "$ZBLADE" add conversation "$work/conversation.json" >/dev/null
traced index "$ZBLADE" index >/dev/null
traced search "$ZBLADE" search --mode semantic "when is the token refreshed" >/dev/null
traced context "$ZBLADE" context "token refresh timing" >/dev/null

# The warm engine, asked by a short-lived context (as the prompt hook does).
traced serve "$ZBLADE" serve 2> "$work/serve.err" &
serve_pid=$!
for _ in $(seq 1 300); do
  grep -q "serving on" "$work/serve.err" 2>/dev/null && break
  sleep 0.1
done
grep -q "serving on" "$work/serve.err" || { cat "$work/serve.err" >&2; echo "privacy: zblade serve did not start" >&2; exit 1; }
traced context-warm "$ZBLADE" context "token refresh timing" >/dev/null
# The engine itself, not the strace in front of it (which would detach and leave it running).
pkill -INT -f "^$ZBLADE serve" || true
wait "$serve_pid" || true

# MCP over stdio: a semantic search and status, then end of input.
requests='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"privacy","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search","arguments":{"query":"token refresh","mode":"semantic"}}}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"status","arguments":{}}}'
printf '%s\n' "$requests" | traced mcp "$ZBLADE" mcp > "$work/mcp.out"
[ "$(grep -c '"jsonrpc"' "$work/mcp.out")" -eq 3 ] || { cat "$work/mcp.out" >&2; echo "privacy: mcp did not answer" >&2; exit 1; }

# The app's tray indexer (no window, no web view), on a private X server.
app_ran=no
if [ -x "$ZBLADE_APP" ] && command -v Xvfb >/dev/null 2>&1; then
  display=":$((90 + RANDOM % 100))"
  Xvfb "$display" -nolisten tcp >/dev/null 2>&1 &
  xvfb_pid=$!
  sleep 1
  clean_env+=("DISPLAY=$display")
  # As after a first run whose wizard kept the defaults (local storage, no network).
  mkdir -p "$home/.config/zblade"
  printf '{"wizard_completed": true, "storage_mode": "local", "allow_network": false, "recent_projects": [{"path": "%s", "name": "project", "opened_at": "2026-11-28T00:00:00Z"}]}' \
    "$project" > "$home/.config/zblade/app.json"
  # A file changes while the tray runs: its indexer indexes and embeds it again.
  (sleep 8 && printf 'pub fn rotate(token: &str) -> Token { token.into() }\n' >> "$project/src/auth.rs") &
  (traced app timeout -s TERM 20 "$ZBLADE_APP" --hidden "$project" >/dev/null 2>&1 || true)
  app_ran=yes
  grep -q "$project/.zblade/index" "$logs/app.log" || { echo "privacy: the app's indexer never opened the project's index" >&2; exit 1; }
else
  echo "privacy: note: the app ($ZBLADE_APP) or Xvfb is missing; its tray indexer is not traced" >&2
fi

# Where zblade may write besides the project and the models (docs/PRIVACY.md, "What is
# written where"): the list of known projects, the app's settings and socket, ONNX Runtime's
# optimised copies of the models, and what the GTK toolkit under the app keeps for every
# program (fonts cache, settings store).
allow=(--allow "$project" --allow "$models" --allow "$home/.cache/zblade/onnx"
  --allow "$home/.local/share/zblade" --allow "$home/.config/zblade"
  --allow "/tmp/zblade-$(id -u)")
if [ "$app_ran" = yes ]; then
  allow+=(--allow "$home/.cache/fontconfig" --allow "$home/.cache/mesa_shader_cache"
    --allow "$home/.config/dconf" --allow "$home/.local/share/recently-used.xbel"
    --allow "/run/user" --allow "/tmp/tray-icon")
fi
# ZBLADE_PRIVACY_LOGS=DIR keeps the traces for a look.
[ -n "${ZBLADE_PRIVACY_LOGS:-}" ] && mkdir -p "$ZBLADE_PRIVACY_LOGS" && cp "$logs"/*.log "$ZBLADE_PRIVACY_LOGS/"
"$ZBLADE_PYTHON" "$here/check_trace.py" --home "$home" --cwd "$project" "${allow[@]}" "$logs"/*.log
echo "privacy: $(ls "$logs" | wc -l) traced commands: no network call beyond loopback and Unix sockets, no file outside the listed places, no ~/.cache/Microsoft" >&2

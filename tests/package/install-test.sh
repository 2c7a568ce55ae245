#!/usr/bin/env bash
# Installs zblade's packages on this machine as a user would, uses what they installed, removes
# them, and checks nothing of zblade's is left. Run by `scripts/package.sh --test` (as root, or
# with sudo) after it built the packages:
#   tests/package/install-test.sh zblade_VERSION_amd64.deb zblade-server_VERSION_amd64.deb
# The programs run from /usr/bin with an empty HOME, no zblade variable, and Python hidden (a
# private mount namespace puts nothing over /usr/lib/python3*), so they use only what the
# package brought: ONNX Runtime from /usr/lib/zblade, the models from /usr/share/zblade/models.
# Writes the wizard's screenshot and a log to $ZBLADE_PACKAGES (default $CARGO_TARGET_DIR/packages).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
cd "$ZBLADE_ROOT"
app_deb="$(realpath "$1")"
server_deb="$(realpath "$2")"
out="${ZBLADE_PACKAGES:-$CARGO_TARGET_DIR/packages}"
mkdir -p "$out"
# It installs packages and runs programs in a private mount namespace: it needs root.
if [ "$(id -u)" -ne 0 ]; then exec sudo -E bash "$0" "$@"; fi
export DEBIAN_FRONTEND=noninteractive
step() { echo "package test: $*" >&2; }
fail() { echo "package test: FAILED: $*" >&2; exit 1; }

# 1. lintian: no errors (warnings are printed, not fatal).
if ! command -v lintian >/dev/null; then
  step "installing lintian"
  apt-get install -y -qq --no-install-recommends lintian >/dev/null
fi
step "lintian $(lintian --version | cut -d' ' -f2)"
lintian --fail-on error --tag-display-limit 0 "$app_deb" "$server_deb" || fail "lintian reported errors"

# 2. What the packages hold: the expected file lists, and the app package's size target.
python3 tests/package/files.py "$app_deb" packaging/zblade.files
python3 tests/package/files.py "$server_deb" packaging/zblade-server.files
# At most 120 MB: the CLI and the app share one engine library, which exports only what they
# import (the linker drops the rest), and the package is xz-compressed: 100.8 MB on 2026-11-29
# (281 MB before; docs/INSTALL.md).
app_size=$(stat -c %s "$app_deb")
step "zblade package: $((app_size / 1000000)) MB (at most 120 MB)"
[ "$app_size" -le 120000000 ] || fail "the zblade package is $((app_size / 1000000)) MB, past 120 MB"
depends="$(dpkg-deb -f "$app_deb" Depends)"
for needed in libc6 libwebkit2gtk-4.1-0 libgtk-3-0 libayatana-appindicator3-1; do
  case "$depends" in *"$needed"*) ;; *) fail "the zblade package does not depend on $needed: $depends" ;; esac
done

# 3. Install with apt (pulling the declared dependencies). What zblade-named paths the system has
#    before is remembered, to find anything left after the purge.
leftovers() { find /etc /usr /var /opt /lib /run -xdev -iname '*zblade*' 2>/dev/null | grep -v '^/var/cache/apt/' | sort; }
apt-get purge -y -qq zblade zblade-server >/dev/null 2>&1 || true
before="$(leftovers)"
step "apt install ./$(basename "$app_deb") ./$(basename "$server_deb")"
apt-get install -y -qq "$app_deb" "$server_deb" >/dev/null
for program in /usr/bin/zblade /usr/bin/zblade-app /usr/bin/zblade-server; do
  [ -x "$program" ] || fail "$program is not installed"
done

# 4. The CLI as a user: a git repository, an empty HOME, nothing but /usr/bin on PATH, Python hidden.
scratch="$(mktemp -d)"
trap 'kill "${server_pid:-}" 2>/dev/null || true; rm -rf "$scratch"' EXIT
home="$scratch/home"
project="$scratch/project"
mkdir -p "$home" "$project" "$scratch/empty"
cp -r crates/zblade-core/src "$project/src"
cp examples/conversations/*.json "$scratch/"
# The files the example conversations reference (src/auth.ts, src/cache.ts: `zblade add` refuses
# a reference to a file the project lacks), committed with the rest.
bash scripts/demo-project.sh "$project" /usr/bin/true --code-only
# as_user CMD…: run CMD in the project as a fresh user would, with Python hidden.
as_user() {
  unshare --mount --fork sh -c '
    for p in /usr/bin/python3*; do mount --bind /dev/null "$p"; done
    for d in /usr/lib/python3*; do mount --bind "$EMPTY" "$d"; done
    cd "$PROJECT" && exec env -i HOME="$HOME_DIR" PATH=/usr/bin:/bin LANG=C.UTF-8 "$@"' \
    as_user "$@"
}
export EMPTY="$scratch/empty" PROJECT="$project" HOME_DIR="$home"
as_user sh -c 'python3 -c "print(1)"' >/dev/null 2>&1 && fail "Python is still reachable in the test's namespace"
step "zblade init / add / index / search / context / mcp install / hooks install from /usr/bin"
as_user zblade init >/dev/null
as_user zblade add conversation "$scratch"/*.json >/dev/null
as_user zblade index >"$out/index.log" 2>&1 || { cat "$out/index.log" >&2; fail "zblade index"; }
as_user zblade status --json >"$scratch/status.json"
as_user zblade models list --json >"$scratch/models.json"
as_user zblade search --json --mode semantic "how do we drop old items once memory fills up" >"$scratch/semantic.json"
as_user zblade search --json --kind code --mode semantic "parse the settings file" >"$scratch/code.json"
as_user zblade context "why did we choose JWT" >"$scratch/context.txt"
as_user zblade mcp install claude-code --dry-run >"$scratch/mcp.txt" 2>&1
python3 tests/package/check_cli.py "$scratch"
as_user zblade hooks install claude-code >/dev/null
for event in prompt stop; do
  grep -q "\"/usr/bin/zblade hook $event\"" "$project/.claude/settings.json" ||
    fail "zblade hooks install did not point the $event hook at /usr/bin/zblade: $(cat "$project/.claude/settings.json")"
done

# 5. The app from its desktop entry, under Xvfb with an empty HOME: the first-run wizard.
step "zblade-app from its menu entry under Xvfb"
desktop=/usr/share/applications/zblade.desktop
[ -f "$desktop" ] || fail "no desktop entry at $desktop"
if command -v desktop-file-validate >/dev/null; then desktop-file-validate "$desktop"; fi
exec_line="$(sed -n 's/^Exec=//p' "$desktop" | head -1)"
[ "$exec_line" = zblade-app ] || fail "the desktop entry starts '$exec_line', not zblade-app"
icon="$(sed -n 's/^Icon=//p' "$desktop" | head -1)"
ls /usr/share/icons/hicolor/*/apps/"$icon".png >/dev/null || fail "no icon $icon in /usr/share/icons/hicolor"
shot="$out/installed-wizard.png"
rm -f "$shot"
as_user dbus-run-session -- xvfb-run -a -s "-screen 0 1280x800x24" sh -c "
  $exec_line >'$scratch/app.log' 2>&1 & app=\$!
  sleep 12
  kill -0 \$app || exit 3
  import -window root '$shot'
  kill \$app; wait \$app || true" || { cat "$scratch/app.log" >&2; fail "zblade-app did not stay up under Xvfb"; }
colours="$(convert "$shot" -format '%k' info:)"
step "wizard screenshot: $shot ($colours colours)"
[ "$colours" -gt 64 ] || fail "the screenshot is blank ($colours colours); the app log: $(cat "$scratch/app.log")"

# 6. The server: its unit checked, then run as systemd would (its User=, EnvironmentFile= and
#    ExecStart=; systemd itself where it is PID 1), and the CLI moves the project onto it.
unit=/lib/systemd/system/zblade-server.service
step "zblade-server.service"
if command -v systemd-analyze >/dev/null; then systemd-analyze verify "$unit"; fi
getent passwd zblade-server >/dev/null || fail "the package did not create the zblade-server user"
[ "$(stat -c %U /var/lib/zblade-server)" = zblade-server ] || fail "/var/lib/zblade-server is not the service's"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
db="$(sed -n 's/^ZBLADE_SERVER_DB=//p' /etc/default/zblade-server)"
token="$(runuser -u zblade-server -- zblade-server user add alice --db "$db" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])')"
if [ -d /run/systemd/system ]; then
  mkdir -p /run/systemd/system/zblade-server.service.d
  printf '[Service]\nEnvironment=ZBLADE_SERVER_LISTEN=127.0.0.1:%s\n' "$port" | tee /run/systemd/system/zblade-server.service.d/test.conf >/dev/null
  systemctl daemon-reload && systemctl restart zblade-server
else
  user="$(sed -n 's/^User=//p' "$unit")"
  command="$(sed -n 's/^ExecStart=//p' "$unit")"
  workdir="$(sed -n 's/^WorkingDirectory=//p' "$unit")"
  (cd "$workdir" && set -a && . /etc/default/zblade-server && ZBLADE_SERVER_LISTEN="127.0.0.1:$port" && set +a &&
    exec runuser -u "$user" -- sh -c "exec $command") >"$scratch/server.log" 2>&1 &
  server_pid=$!
fi
for _ in $(seq 50); do
  (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.2
done
as_user zblade migrate to-server --server "http://127.0.0.1:$port" --token "$token" --yes >"$scratch/migrate.txt" 2>&1 ||
  { cat "$scratch/migrate.txt" "$scratch/server.log" >&2; fail "zblade migrate to-server"; }
as_user zblade list conversations --json >"$scratch/server-list.json"
python3 - "$scratch/server-list.json" <<'EOF' || fail "the server does not list the project's conversations"
import json, sys
listed = json.load(open(sys.argv[1]))
items = listed["items"] if isinstance(listed, dict) else listed
assert len(items) == 2, listed
EOF
[ "$(stat -c %U "$db")" = zblade-server ] || fail "the database $db is not the service user's"
if [ -d /run/systemd/system ]; then
  systemctl stop zblade-server
  rm -rf /run/systemd/system/zblade-server.service.d
else
  kill "$server_pid"; wait "$server_pid" || true
fi

# 7. Purge: nothing of zblade's is left outside the user's projects (and their HOME).
step "apt purge zblade zblade-server"
apt-get purge -y -qq zblade zblade-server >/dev/null
after="$(leftovers)"
left="$(comm -13 <(echo "$before") <(echo "$after"))"
[ -z "$left" ] || fail "left after purge: $left"
getent passwd zblade-server >/dev/null && fail "the zblade-server user is left after purge"
getent group zblade-server >/dev/null && fail "the zblade-server group is left after purge"
step "passed: installed, used, purged, nothing left"

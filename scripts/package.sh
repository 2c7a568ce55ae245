#!/usr/bin/env bash
# Builds zblade's Debian packages (release profile) into $ZBLADE_PACKAGES (default
# $CARGO_TARGET_DIR/packages):
#   zblade_<version>_amd64.deb         the desktop app, the `zblade` CLI, ONNX Runtime and the
#                                      default models; made by Tauri's own bundler
#   zblade-server_<version>_amd64.deb  the sync server with its systemd unit
#
#   scripts/package.sh           build both packages
#   scripts/package.sh --test    build, check with lintian, install with apt, use the installed
#                                programs, purge, and check nothing is left (tests/package/)
#   scripts/package.sh --check   no build: the bundle configuration, the unit file and the
#                                packages' file lists checked against packaging/*.files
#   scripts/package.sh --bench   build, install the app's package, measure the installed
#                                binaries (ui/bench/installed.mjs → docs/BENCHMARKS.md), purge
# See docs/INSTALL.md.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ZBLADE_ROOT"
source packaging/files.sh

mode="${1:-build}"
case "$mode" in
  build | --test | --check | --bench) ;;
  -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "package.sh: unknown option '$mode' (try --help)" >&2; exit 2 ;;
esac

if [ "$mode" = --check ]; then
  exec bash tests/package/check.sh
fi

out="${ZBLADE_PACKAGES:-$CARGO_TARGET_DIR/packages}"
release="$CARGO_TARGET_DIR/release"
mkdir -p "$out"
started=$SECONDS

# 1. The release binaries, in one cargo run: they share every dependency build.
#    `custom-protocol` is what `tauri build` would switch on: the app serves its embedded UI.
#    `shared-engine`: the CLI and the app link the engine from one shared library
#    (crates/zblade-shared, installed in /usr/lib/zblade) instead of carrying a copy each.
#    Then the library is linked a second time exporting only what the two programs (and Rust's
#    std) import from it, so the linker can drop the rest (crates/zblade-shared/build.rs); the
#    programs are linked again against it, which checks that nothing they need went missing.
bash scripts/build-ui.sh
release_build() {
  cargo build --release --locked -p zblade-cli -p zblade-app -p zblade-server \
    --features zblade-app/custom-protocol,zblade-app/shared-engine,zblade-cli/shared-engine
}
unset ZBLADE_ENGINE_EXPORTS
release_build
exports="$release/engine-exports.txt"
engine_imports "$release/zblade-cli" "$release/zblade-app" >"$exports.new"
# Rewritten only when it changed: the build script reruns when the file's time does.
cmp -s "$exports.new" "$exports" && rm "$exports.new" || mv "$exports.new" "$exports"
ZBLADE_ENGINE_EXPORTS="$exports" release_build
echo "package: release binaries built ($((SECONDS - started)) s;" \
  "the engine library exports $(wc -l <"$exports") symbols)" >&2

# 2. The app's package, by Tauri's bundler. What goes beside the app (the CLI, ONNX Runtime, the
#    models, the copyright file) is merged into the bundle configuration here, because where the
#    build put it depends on this machine ($CARGO_TARGET_DIR, $ZBLADE_MODELS_DIR, $ZBLADE_PY_ENV).
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
app_files_json "$release" "$stage/files" >"$stage/files.json"
rm -f "$release"/bundle/deb/*.deb
ui/node_modules/.bin/tauri bundle --ci --bundles deb --features custom-protocol --config "$stage/files.json"
app_deb="$(ls "$release"/bundle/deb/zblade_*_amd64.deb)"
# Tauri's bundler compresses with gzip; xz makes the package about a third smaller (dpkg and apt
# read both). The tree is unpacked and packed again unchanged.
repacked="$stage/repacked"
dpkg-deb -R "$app_deb" "$repacked"
fakeroot dpkg-deb --root-owner-group -Zxz -z9 --build "$repacked" "$out/$(basename "$app_deb")" >/dev/null
rm -rf "$repacked"

# 3. The server's package, with dpkg-deb: it is one binary, a unit and its maintainer scripts.
version="$(zblade_version)"
root="$stage/server"
stage_server "$root" "$release/zblade-server"
# The shared libraries the binary links, as Debian dependencies.
shlibs="$(shared_library_depends "$root/usr/lib" "$root/usr/bin/zblade-server")"
size_kb="$(du -sk --exclude=DEBIAN "$root" | cut -f1)"
sed -e "s/@VERSION@/$version/" -e "s/@DEPENDS@/adduser, $shlibs/" -e "s/@SIZE@/$size_kb/" \
  packaging/server/control >"$root/DEBIAN/control"
server_deb="$out/zblade-server_${version}_amd64.deb"
fakeroot dpkg-deb --root-owner-group -Zxz --build "$root" "$server_deb" >/dev/null

echo "package: built in $((SECONDS - started)) s:" >&2
ls -l "$out"/zblade_"${version}"_amd64.deb "$server_deb" >&2

if [ "$mode" = --test ]; then
  bash tests/package/install-test.sh "$out/zblade_${version}_amd64.deb" "$server_deb"
elif [ "$mode" = --bench ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$out/zblade_${version}_amd64.deb" >/dev/null
  status=0
  ZBLADE_PACKAGE_DEB="$out/zblade_${version}_amd64.deb" node ui/bench/installed.mjs --write || status=$?
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get purge -y -qq zblade >/dev/null
  exit "$status"
fi

# What goes into zblade's packages besides what Tauri's bundler puts there itself; sourced by
# scripts/package.sh and tests/package/check.sh, not run. The expected file lists are
# packaging/zblade.files and packaging/zblade-server.files.

# The workspace version (Cargo.toml), which both packages carry.
zblade_version() {
  python3 -c 'import tomllib; print(tomllib.load(open("Cargo.toml", "rb"))["workspace"]["package"]["version"])'
}

# The models a fresh project uses, as the given zblade binary's `init` writes them (the defaults
# are decided once, in zblade-core's settings): "conversation-model code-model".
default_models() {
  local zblade="$1" project libraries
  project="$(mktemp -d)"
  # A binary built with `shared-engine` finds its libraries in /usr/lib/zblade once installed;
  # here they are beside it and in the toolchain.
  libraries="$(dirname "$zblade"):$(rustc --print target-libdir)"
  (cd "$project" && HOME="$project" LD_LIBRARY_PATH="$libraries" "$zblade" init >/dev/null)
  python3 - "$project/.zblade/config/settings.json" <<'EOF'
import json, sys
search = json.load(open(sys.argv[1]))["search"]
print(search["embedding_model"], search["code_model"])
EOF
  rm -rf "$project"
}

# ONNX Runtime's shared library from the onnxruntime wheel setup.sh installs.
onnx_runtime_library() {
  local found
  found="$(ls "$ZBLADE_PY_ENV"/lib/python3*/site-packages/onnxruntime/capi/libonnxruntime.so.* 2>/dev/null | sort | tail -1)"
  if [ -z "$found" ]; then
    echo "package: no ONNX Runtime in $ZBLADE_PY_ENV; run scripts/setup.sh" >&2
    return 1
  fi
  echo "$found"
}

# The Debian dependencies of the binaries given, as dpkg-shlibdeps finds them from the shared
# libraries they link (WebKitGTK, GTK and the tray library for the app; libc, libstdc++ … for
# both): "libc6 (>= 2.34), libgtk-3-0 (>= 3.24), …". $1 is the folder of the package's own
# libraries (/usr/lib/zblade), which have no Debian package to depend on.
shared_library_depends() {
  local private="$1" scratch
  shift
  scratch="$(mktemp -d)"
  mkdir -p "$scratch/debian"
  printf 'Source: zblade\n\nPackage: zblade\nArchitecture: amd64\n' >"$scratch/debian/control"
  (cd "$scratch" && dpkg-shlibdeps -O --ignore-missing-info -l"$private" "$@" 2>/dev/null) | sed -n 's/^shlibs:Depends=//p'
  rm -rf "$scratch"
}

# The shared libraries a binary built with the `shared-engine` feature needs from /usr/lib/zblade
# (crates/zblade-shared): zblade-shared's library and Rust's std library, one path per line;
# nothing for a binary linked statically (test builds).
engine_libraries() {
  local binary="$1" release needed name
  release="$(dirname "$binary")"
  needed="$(readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')"
  for name in $needed; do
    case "$name" in
      libzblade_shared.so) echo "$release/$name" ;;
      libstd-*.so) echo "$(rustc --print target-libdir)/$name" ;;
    esac
  done
}

# The symbols the binaries $@ and Rust's std library import from the libraries they link, one
# per line, sorted: what libzblade_shared.so must export (crates/zblade-shared/link/ld.bfd).
engine_imports() {
  local binaries=("$@") library
  for library in $(for binary in "$@"; do engine_libraries "$binary"; done | sort -u); do
    case "$(basename "$library")" in libstd-*.so) binaries+=("$library") ;; esac
  done
  nm -D --undefined-only --format=just-symbols "${binaries[@]}" | sed 's/@.*//' | sort -u
}

# The app package's extra files and its dependencies as a Tauri configuration to merge
# ({"bundle": {"linux": {"deb": {"files": {DEST: SOURCE}, "depends": […]}}}}), for the release
# binaries in $1, copying what needs another mode to the folder $2 (the copyright file and the
# changelog are in src-tauri/tauri.conf.json):
#   /usr/bin/zblade                      the CLI's front door, beside the app (the app and agents
#                                        start it): answers a warm `zblade context`, else runs
#   /usr/lib/zblade/zblade-cli           the full CLI (crates/zblade-cli/src/front.rs says why)
#   /usr/lib/zblade/libzblade_shared.so  the engine both binaries link (crates/zblade-shared)
#   /usr/lib/zblade/libstd-*.so          Rust's std library, which that library and both binaries link
#   /usr/lib/zblade/libonnxruntime.so.*  found by zblade_search::embed::find_onnx_runtime
#   /usr/share/zblade/models/NAME/*      found by zblade_engine::models::packaged_models_dir
app_files_json() {
  local release="$1" staged="$2" runtime models model
  runtime="$(onnx_runtime_library)"
  models="$(default_models "$release/zblade-cli")"
  if [ -z "$models" ]; then
    echo "package: $release/zblade-cli init did not name the default models" >&2
    return 1
  fi
  for model in $models; do
    if [ ! -f "$ZBLADE_MODELS_DIR/$model/model.onnx" ]; then
      echo "package: the default model $model is not in $ZBLADE_MODELS_DIR; run scripts/setup.sh" >&2
      return 1
    fi
  done
  # A shared library is not executable in a package (the wheel ships it 0755), and carries no
  # debug information (Rust's std library comes with it).
  mkdir -p "$staged/lib"
  install -m 0644 "$runtime" "$staged/lib/$(basename "$runtime")"
  runtime="$staged/lib/$(basename "$runtime")"
  local library
  for library in $( (engine_libraries "$release/zblade-cli"; engine_libraries "$release/zblade-app") | sort -u); do
    install -m 0644 "$library" "$staged/lib/$(basename "$library")"
    strip --strip-unneeded "$staged/lib/$(basename "$library")"
  done
  # The models go in with ONNX Runtime's graph optimizations applied, by the wheel whose
  # runtime the package ships (scripts/models/optimize_graph.py: ~10 ms off each cold start).
  for model in $models; do
    "$ZBLADE_PYTHON" scripts/models/optimize_graph.py "$ZBLADE_MODELS_DIR/$model" "$staged/models/$model" >&2
  done
  depends="$(shared_library_depends "$staged/lib" "$release/zblade-app" "$release/zblade" "$release/zblade-cli" $(ls "$staged"/lib/lib*.so 2>/dev/null))"
  python3 - "$release/zblade" "$release/zblade-cli" "$staged/lib" "$staged/models" "$depends" $models <<'EOF'
import json, os, sys
front, cli, libraries, models_dir, depends, *models = sys.argv[1:]
files = {"/usr/bin/zblade": front, "/usr/lib/zblade/zblade-cli": cli}
for name in sorted(os.listdir(libraries)):
    files["/usr/lib/zblade/" + name] = os.path.join(libraries, name)
for model in models:
    folder = os.path.join(models_dir, model)
    for name in sorted(os.listdir(folder)):
        if os.path.isfile(os.path.join(folder, name)):
            files[f"/usr/share/zblade/models/{model}/{name}"] = os.path.join(folder, name)
depends = [d.strip() for d in depends.split(",") if d.strip()]
print(json.dumps({"bundle": {"linux": {"deb": {"files": files, "depends": depends}}}}, indent=2))
EOF
}

# Lays out the server package's tree in $1 for the server binary $2 (its DEBIAN/control is
# written by scripts/package.sh, which knows the binary's shared libraries).
stage_server() {
  local root="$1" binary="$2"
  install -D -m 0755 "$binary" "$root/usr/bin/zblade-server"
  install -D -m 0644 packaging/server/zblade-server.service "$root/lib/systemd/system/zblade-server.service"
  install -D -m 0644 packaging/server/default "$root/etc/default/zblade-server"
  install -D -m 0644 packaging/copyright "$root/usr/share/doc/zblade-server/copyright"
  install -D -m 0644 packaging/server/README "$root/usr/share/doc/zblade-server/README"
  install -D -m 0644 packaging/server/lintian-overrides "$root/usr/share/lintian/overrides/zblade-server"
  sed '1s/^zblade /zblade-server /' packaging/changelog | gzip -9n >"$root/usr/share/doc/zblade-server/changelog.gz"
  chmod 0644 "$root/usr/share/doc/zblade-server/changelog.gz"
  mkdir -p "$root/DEBIAN"
  for script in postinst prerm postrm; do
    install -m 0755 "packaging/server/$script" "$root/DEBIAN/$script"
  done
  echo /etc/default/zblade-server >"$root/DEBIAN/conffiles"
}

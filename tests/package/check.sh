#!/usr/bin/env bash
# The packaging's cheap check, without a release build (`scripts/package.sh --check`; test.sh
# runs it whenever the full install test does not run): the app's bundle configuration, the
# server's unit and maintainer scripts, and both packages' file lists as packaging/*.files
# expects them. Uses the debug binaries test.sh built.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
cd "$ZBLADE_ROOT"
source packaging/files.sh
debug="$CARGO_TARGET_DIR/debug"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# The bundle configuration: a deb, and every file it names (its dependencies are computed by
# dpkg-shlibdeps when the package is built; the install test checks them).
python3 - <<'EOF'
import json, os, sys
config = json.load(open("src-tauri/tauri.conf.json"))
bundle = config["bundle"]
deb = bundle["linux"]["deb"]
problems = []
if not bundle.get("active") or "deb" not in bundle.get("targets", []):
    problems.append("bundle.active and bundle.targets must build a deb")
named = list(bundle["icon"]) + [deb["changelog"]] + list(deb.get("files", {}).values())
problems += [f"{path} (named in the bundle configuration) does not exist"
             for path in named if not os.path.isfile(os.path.join("src-tauri", path))]
if problems:
    sys.exit("package check: " + "\n".join(problems))
EOF

# The files the build adds to Tauri's (the CLI, ONNX Runtime, the default models) and the
# server's tree, against the expected lists.
app_files_json "$debug" "$scratch/staged" >"$scratch/files.json"
python3 - "$scratch/files.json" >"$scratch/app-extra.files" <<'EOF'
import json, sys
print("\n".join(json.load(open(sys.argv[1]))["bundle"]["linux"]["deb"]["files"]))
EOF
python3 tests/package/files.py --some "$scratch/app-extra.files" packaging/zblade.files
stage_server "$scratch/server" "$debug/zblade-server"
python3 tests/package/files.py "$scratch/server" packaging/zblade-server.files

# The unit, as systemd reads it (its ExecStart pointed at the debug build), and the maintainer
# scripts' syntax.
sed "s|/usr/bin/zblade-server|$debug/zblade-server|" packaging/server/zblade-server.service >"$scratch/zblade-server.service"
if command -v systemd-analyze >/dev/null; then
  systemd-analyze verify "$scratch/zblade-server.service"
fi
for script in packaging/server/postinst packaging/server/prerm packaging/server/postrm; do
  sh -n "$script"
done
echo "package check: bundle configuration, unit, maintainer scripts and file lists ok" >&2

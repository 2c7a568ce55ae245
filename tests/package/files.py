"""Compares what a package holds with its expected file list.

    python3 tests/package/files.py PACKAGE.deb|FOLDER packaging/NAME.files
    python3 tests/package/files.py --some PATHS packaging/NAME.files

The list has one installed path per line (`*` stands for a version or a model's file names,
`#` starts a comment). Every file or link in the package must match a line, and every line a
file; a folder is read as a package's tree (scripts/package.sh's staging), its DEBIAN/ left out.
With `--some`, PATHS is a file of installed paths, one per line, that are part of a package: each
must match a line, but not every line needs one (the check without a build uses it).
"""

import fnmatch
import os
import subprocess
import sys


def package_paths(source: str) -> list[str]:
    if os.path.isdir(source):
        found = []
        for folder, dirs, files in os.walk(source):
            dirs[:] = [d for d in dirs if not (folder == source and d == "DEBIAN")]
            found += ["/" + os.path.relpath(os.path.join(folder, f), source) for f in files]
        return sorted(found)
    listing = subprocess.run(["dpkg-deb", "--contents", source], check=True, capture_output=True, text=True)
    found = []
    for line in listing.stdout.splitlines():
        fields = line.split(None, 5)
        if len(fields) == 6 and not fields[0].startswith("d"):
            # `./usr/bin/x` from dpkg-deb, `usr/bin/x` from Tauri's bundler: either way `/usr/bin/x`.
            found.append("/" + fields[5].split(" -> ")[0].removeprefix(".").lstrip("/"))
    return sorted(found)


def expected_patterns(list_file: str) -> list[str]:
    with open(list_file) as f:
        lines = (line.split("#", 1)[0].strip() for line in f)
        return [line for line in lines if line]


def main() -> int:
    some = sys.argv[1] == "--some"
    source, list_file = sys.argv[2:4] if some else sys.argv[1:3]
    if some:
        with open(source) as f:
            paths = f.read().split()
    else:
        paths = package_paths(source)
    patterns = expected_patterns(list_file)
    unexpected = [p for p in paths if not any(fnmatch.fnmatchcase(p, pat) for pat in patterns)]
    missing = [] if some else [pat for pat in patterns if not any(fnmatch.fnmatchcase(p, pat) for p in paths)]
    for path in unexpected:
        print(f"{source}: {path} is not in {list_file}", file=sys.stderr)
    for pattern in missing:
        print(f"{source}: nothing matches {pattern} of {list_file}", file=sys.stderr)
    if unexpected or missing:
        return 1
    print(f"package test: {os.path.basename(source)}: {len(paths)} files, as {list_file} says", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

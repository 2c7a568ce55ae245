"""Reads `strace -f -y` logs of zblade's binaries and reports what docs/PRIVACY.md forbids:

- a network system call (connect, sendto, sendmsg, bind) to an address that is neither loopback
  nor a Unix socket (AF_NETLINK, the kernel's own interface list, is local too);
- a file or folder written (opened for writing, created, renamed, linked, removed) outside the
  places given with --allow (the project, the models folder, and what PRIVACY.md lists);
- anything created under ~/.cache/Microsoft (ONNX Runtime's telemetry).

Usage: check_trace.py --allow PREFIX [--allow PREFIX …] --home HOME LOG…
Exit 0 when the logs are clean; 1 with one line per finding (log, pid, call) otherwise.
"""

import argparse
import ipaddress
import os
import re
import sys

# `connect(3<socket:[123]>, {sa_family=AF_INET, sin_port=htons(443), sin_addr=inet_addr("1.2.3.4")}, 16)`
NET_CALL = re.compile(r"^(?:\[pid\s+)?(\d+)?\]?\s*(connect|sendto|sendmsg|bind)\((.*)$")
FAMILY = re.compile(r"sa_family=(AF_[A-Z0-9]+)")
INET4 = re.compile(r'sin_addr=inet_addr\("([^"]+)"\)')
INET6 = re.compile(r'inet_pton\(AF_INET6, "([^"]+)"')
# Calls that write a path: the call, and where its path argument(s) are.
OPEN_CALL = re.compile(r"\b(open|openat|creat)\((?:(\d+|AT_FDCWD)(?:<([^>]*)>)?, )?\"((?:[^\"\\]|\\.)*)\"(?:, ([A-Z_|0-9]+))?")
PATH_CALLS = re.compile(
    r"\b(mkdir|mkdirat|unlink|unlinkat|rmdir|rename|renameat|renameat2|link|linkat|symlink|symlinkat|truncate)\((.*)"
)
QUOTED = re.compile(r'(?:(\d+|AT_FDCWD)(?:<([^>]*)>)?, )?"((?:[^"\\]|\\.)*)"')
WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC")


def is_local_address(args: str) -> bool:
    family = FAMILY.search(args)
    if family is None:
        # sendto/sendmsg on a connected socket names no address: the connect was checked.
        return True
    family = family.group(1)
    if family in ("AF_UNIX", "AF_LOCAL", "AF_NETLINK", "AF_UNSPEC"):
        return True
    if family == "AF_INET":
        found = INET4.search(args)
        return found is not None and ipaddress.ip_address(found.group(1)).is_loopback
    if family == "AF_INET6":
        found = INET6.search(args)
        if found is None:
            return False
        address = ipaddress.ip_address(found.group(1))
        return address.is_loopback or (address.ipv4_mapped is not None and address.ipv4_mapped.is_loopback)
    return False


def resolve(dirfd_path: str | None, path: str, cwd: str) -> str:
    path = path.encode().decode("unicode_escape") if "\\" in path else path
    if os.path.isabs(path):
        return os.path.normpath(path)
    base = dirfd_path or cwd
    return os.path.normpath(os.path.join(base, path))


def written_paths(line: str, cwd: str):
    """The paths a traced call writes, if any."""
    opened = OPEN_CALL.search(line)
    if opened:
        call, _dirfd, dirfd_path, path, flags = opened.groups()
        if call == "creat" or (flags and any(f in flags for f in WRITE_FLAGS)):
            yield resolve(dirfd_path, path, cwd)
        return
    other = PATH_CALLS.search(line)
    if other:
        for _dirfd, dirfd_path, path in QUOTED.findall(other.group(2)):
            yield resolve(dirfd_path or None, path, cwd)


def allowed(path: str, prefixes: list[str], call: str) -> bool:
    if path.startswith("/dev/") or path.startswith("/proc/") or path.startswith("/sys/"):
        return True
    if any(path == p or path.startswith(p.rstrip("/") + "/") for p in prefixes):
        return True
    # Making the folders above an allowed place (`~/.local`, then `~/.local/share`) writes
    # nothing of its own.
    return call.startswith("mkdir") and any(p.startswith(path.rstrip("/") + "/") for p in prefixes)


def check(log: str, prefixes: list[str], home: str, cwd: str) -> list[str]:
    findings = []
    microsoft = os.path.join(home, ".cache/Microsoft")
    with open(log, errors="replace") as f:
        for line in f:
            if "= -1 " in line and ("ENOENT" in line or "EEXIST" in line or "EACCES" in line):
                # A write that failed wrote nothing (a mkdir of a folder that exists, say).
                continue
            net = NET_CALL.search(line.strip())
            if net and not is_local_address(net.group(3)):
                findings.append(f"{log}: network call to a non-local address: {line.strip()[:300]}")
                continue
            call = line.split("(", 1)[0].split()[-1] if "(" in line else ""
            for path in written_paths(line, cwd):
                if path.startswith(microsoft):
                    findings.append(f"{log}: ONNX Runtime telemetry store written: {path}")
                elif not allowed(path, prefixes, call):
                    findings.append(f"{log}: file written outside the allowed places: {path} ({line.strip()[:200]})")
    return findings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--allow", action="append", default=[], help="a folder writes may go to")
    parser.add_argument("--home", required=True, help="the HOME the commands ran with")
    parser.add_argument("--cwd", required=True, help="the folder the commands ran in")
    parser.add_argument("logs", nargs="+")
    args = parser.parse_args()
    findings = []
    for log in args.logs:
        findings += check(log, [os.path.normpath(p) for p in args.allow], args.home, args.cwd)
    if os.path.exists(os.path.join(args.home, ".cache/Microsoft")):
        findings.append(f"{args.home}/.cache/Microsoft exists: ONNX Runtime's telemetry ran")
    for finding in findings:
        print(finding)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())

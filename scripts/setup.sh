#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks to build and test zblade. Safe to run again.
# Needs: the Rust toolchain (cargo), a C compiler (SQLite is built from source by rusqlite's
# `bundled` feature) and git (the demo and the tests create real repositories).
set -euo pipefail

missing=()
command -v cc >/dev/null 2>&1 || missing+=(gcc libc6-dev)
command -v git >/dev/null 2>&1 || missing+=(git)
command -v make >/dev/null 2>&1 || missing+=(make)

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo not found; install the Rust toolchain (https://rustup.rs) first" >&2
  exit 1
fi

#!/usr/bin/env bash
# tests/all.sh: installs what the tests need and runs every test of the workspace; the README's
# test command, and the one .ci/run runs. Debian's packages come from apt-get (as root, or
# through sudo); Go (which builds the tests' linters) and Rust must be on the machine already.
# Arguments go to `cargo test` (a test name, `-p CRATE`).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
  # shellcheck disable=SC1091
  . "$HOME/.cargo/env"
fi
command -v cargo >/dev/null 2>&1 || { echo "tests: cargo is not installed on this machine" >&2; exit 1; }
command -v go >/dev/null 2>&1 || { echo "tests: go is not installed: the tests build their linters with it" >&2; exit 1; }

# gzip reads the recordings; kubectl is the real client the serve tests drive; script
# (util-linux) gives the binary a terminal in the output tests; Chromium renders the HTML
# report; the shells load the completion scripts and groff formats the man pages; a real
# Prometheus scrapes a recorder and promtool tests the shipped alert rules; npm installs
# Microsoft's SARIF Multitool, which validates `lint -o sarif` (tests/sarif/install.sh).
missing=()
need() { command -v "$1" >/dev/null 2>&1 || missing+=("$2"); }
need gzip gzip
need kubectl kubernetes-client
need script bsdutils
need chromium chromium
need zsh zsh
need fish fish
need groff groff-base
need prometheus prometheus
need promtool prometheus
need npm npm
if [ ${#missing[@]} -gt 0 ]; then
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
  echo "tests: installing ${missing[*]} (Debian packages)" >&2
  as_root=()
  [ "$(id -u)" = 0 ] || as_root=(sudo)
  if [ ${#as_root[@]} -gt 0 ] && ! command -v sudo >/dev/null 2>&1; then
    echo "tests: not root and no sudo: install ${missing[*]} and run again" >&2
    exit 1
  fi
  "${as_root[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq "${missing[@]}"
fi

# Every test binary runs, whatever an earlier one did; the exit code says whether any failed.
exec cargo test --workspace --locked --no-fail-fast "$@"

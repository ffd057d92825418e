#!/usr/bin/env bash
# Counts the instructions `analyze FILE -o json` executes with each build, and those of
# `gzip -dc FILE`, under valgrind's cachegrind (`I refs`). Unlike time, the count does not move
# with a neighbour's load, so two builds are compared in one run of each, where CPU time needs
# many alternating rounds (`alternate.sh`) on these shared machines. It is not time: a build
# that misses the cache more runs slower on as many instructions, so a change is judged by
# both. Under valgrind a run takes about 30 times as long: use a small file (100,000 records:
# `rollout-forensics simulate scale --rollouts 200 --events 100000`).
#
#   benches/instructions.sh FILE BINARY...
#
# Needs gzip and valgrind.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 FILE BINARY..." >&2; exit 2; }
file=$1
shift
for tool in gzip valgrind; do
  command -v "$tool" >/dev/null || { echo "instructions.sh needs $tool" >&2; exit 2; }
done
[ -s "$file" ] || { echo "instructions.sh: no recording at $file" >&2; exit 2; }

# The instructions of one run ("I refs", without its commas).
count() {
  local out
  out=$(valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$@" 2>&1 >/dev/null) || {
    echo "instructions.sh: $* failed:" >&2
    echo "$out" | tail -5 >&2
    exit 2
  }
  echo "$out" | awk '/I +refs:/ {gsub(",", "", $NF); print $NF}'
}

gz=$(count gzip -dc "$file")
echo "gzip -dc: $gz instructions"
for bin in "$@"; do
  n=$(count "$bin" analyze "$file" -o json --fail-on never)
  awk -v n="$n" -v g="$gz" -v b="$bin" 'BEGIN {printf "%s: %.0f instructions, analyze / gzip -dc %.3f\n", b, n, n / g}'
done

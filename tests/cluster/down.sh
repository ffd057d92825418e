#!/usr/bin/env bash
# tests/cluster/down.sh DIR: stops what up.sh DIR started, by the pids it wrote, newest first.
set -u
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
pids=$1/pids
[ -f "$pids" ] || exit 0
tac "$pids" | while read -r pid name; do
  kill "$pid" 2>/dev/null && echo "cluster: stopped $name ($pid)" >&2
done
# Up to 10 s for them to exit, then SIGKILL.
for _ in $(seq 50); do
  alive=0
  while read -r pid _; do kill -0 "$pid" 2>/dev/null && alive=1; done < "$pids"
  [ "$alive" = 0 ] && break
  sleep 0.2
done
while read -r pid _; do kill -9 "$pid" 2>/dev/null; done < "$pids"
rm -f "$pids"

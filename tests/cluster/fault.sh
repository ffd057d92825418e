#!/usr/bin/env bash
# tests/cluster/fault.sh DIR FAULT: a fault in a cluster of up.sh DIR, for the ground-truth
# tests of the recorder.
#   restart NAME        stop component NAME (SIGTERM) and start it again as up.sh did
#   pause NAME SECONDS  freeze NAME (SIGSTOP) for SECONDS, then let it go on (SIGCONT): its
#                       open connections stall without closing
#   compact             stop kube-apiserver, write a key to etcd and compact etcd to that
#                       revision, start kube-apiserver again: a watch resumed from any version
#                       before the fault gets a real 410 Gone
# A restarted kube-apiserver is waited for until it is ready.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 DIR restart NAME | pause NAME SECONDS | compact" >&2; exit 2; }
dir=$(cd "$1" && pwd)
log() { printf 'fault: %s\n' "$*" >&2; }
pid_of() { awk -v n="$1" '$2 == n { p = $1 } END { if (p) print p }' "$dir/pids"; }

stop() {
  local name=$1 pid
  pid=$(pid_of "$name")
  [ -n "$pid" ] || { log "no $name in $dir/pids"; exit 2; }
  kill "$pid" || { log "$name ($pid) is not running"; exit 1; }
  for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.2; done
  kill -9 "$pid" 2>/dev/null || true
}

begin() {
  local name=$1
  [ -f "$dir/$name.cmd" ] || { log "no $dir/$name.cmd"; exit 2; }
  # exec: the background job becomes the component, so $! is its pid.
  eval "exec $(cat "$dir/$name.cmd")" >> "$dir/$name.log" 2>&1 &
  local pid=$!
  awk -v n="$name" '$2 != n' "$dir/pids" > "$dir/pids.new"
  echo "$pid $name" >> "$dir/pids.new"
  mv "$dir/pids.new" "$dir/pids"
  if [ "$name" = kube-apiserver ]; then
    local kubectl
    kubectl=$(cat "$dir/bin")/kubectl
    for _ in $(seq 300); do
      "$kubectl" --kubeconfig "$dir/kubeconfig" get --raw /readyz >/dev/null 2>&1 && { log "kube-apiserver ready again"; return 0; }
      sleep 0.2
    done
    log "kube-apiserver not ready 60 s after its start"
    exit 1
  fi
}

case $2 in
  restart)
    stop "$3"
    log "stopped $3"
    begin "$3"
    ;;
  pause)
    pid=$(pid_of "$3")
    kill -STOP "$pid"
    log "froze $3 ($pid) for $4 s"
    sleep "$4"
    kill -CONT "$pid"
    log "let $3 go on"
    ;;
  compact)
    stop kube-apiserver
    etcd=http://127.0.0.1:$(cat "$dir/etcd-port")
    # Two writes: a watch from version V starts at V+1, so compacting to the second of them
    # leaves no version a watch could resume from without a 410.
    for _ in 1 2; do
      rev=$(curl -fsS -X POST "$etcd/v3/kv/put" -d '{"key":"cmYtZmF1bHQ=","value":"eA=="}' |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["header"]["revision"])')
    done
    curl -fsS -X POST "$etcd/v3/kv/compaction" -d "{\"revision\":\"$rev\",\"physical\":true}" >/dev/null
    log "compacted etcd to revision $rev with kube-apiserver stopped"
    begin kube-apiserver
    ;;
  *) echo "unknown fault $2" >&2; exit 2 ;;
esac

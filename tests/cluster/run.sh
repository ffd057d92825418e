#!/usr/bin/env bash
# tests/cluster/run.sh: starts a cluster (up.sh), runs the real-cluster suite against it (the
# smoke check, then the Rust tests of crates/cli/tests/cluster.rs, which the workspace's tests
# skip as ignored), and stops it (down.sh), whatever they did. Exit code: the suite's.
# RF_KEEP_RECORDINGS=DIR keeps a copy of each recording the tests make (recordings/real/ is
# made that way); other arguments go to the test binary (a test name, --nocapture).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
dir=$(mktemp -d "${TMPDIR:-/tmp}/rf-cluster.XXXXXX")
finish() {
  rc=$?
  if [ "$rc" != 0 ]; then
    for log in "$dir"/*.log; do
      [ "$(basename "$log")" = audit.log ] && continue
      echo "== the last lines of $(basename "$log")" >&2
      tail -n 15 "$log" | cut -c1-400 >&2
    done
  fi
  "$here/down.sh" "$dir"
  rm -rf "$dir"
  exit "$rc"
}
trap finish EXIT
"$here/up.sh" "$dir"
(
  export KUBECONFIG=$dir/kubeconfig PATH=$(cat "$dir/bin"):$PATH
  "$here/smoke.sh"
)
cd "$root"
started=$(date +%s)
RF_CLUSTER=$dir cargo test --locked -p rollout-forensics --test cluster -- --ignored "$@"
echo "cluster: the real-cluster tests took $(($(date +%s) - started)) s"

#!/usr/bin/env bash
# tests/cluster/run.sh: starts a cluster (up.sh), runs the real-cluster checks against it, and
# stops it (down.sh), whatever the checks did. Exit code: the checks'.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d "${TMPDIR:-/tmp}/rf-cluster.XXXXXX")
trap '"$here/down.sh" "$dir"; rm -rf "$dir"' EXIT
"$here/up.sh" "$dir"
bin=$(cat "$dir/bin")
export KUBECONFIG=$dir/kubeconfig PATH=$bin:$PATH
"$here/smoke.sh"

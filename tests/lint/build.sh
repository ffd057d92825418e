#!/usr/bin/env bash
# tests/lint/build.sh: builds actionlint and dockerfilelint from go.mod beside this file, once
# per set of versions, into $RF_LINT_CACHE (default ~/.cache/rollout-forensics/lint), and prints
# the directory that holds them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export GOFLAGS=${GOFLAGS:--buildvcs=false}
key=$(cat "$here/go.mod" "$here/go.sum" "$here/dockerfilelint/main.go" | sha256sum | cut -c1-16)
bin=${RF_LINT_CACHE:-$HOME/.cache/rollout-forensics/lint}/$key
mkdir -p "$bin"
build() {
  local name=$1 pkg=$2
  if [ ! -x "$bin/$name" ]; then
    echo "lint: building $name ($pkg)" >&2
    (cd "$here" && go build -trimpath -o "$bin/$name.tmp" "$pkg") && mv "$bin/$name.tmp" "$bin/$name"
  fi
}
build actionlint github.com/rhysd/actionlint/cmd/actionlint
build dockerfilelint ./dockerfilelint
echo "$bin"

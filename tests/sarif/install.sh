#!/usr/bin/env bash
# tests/sarif/install.sh: installs Microsoft's SARIF Multitool from the npm registry, once per
# version, into $RF_SARIF_CACHE (default ~/.cache/rollout-forensics/sarif), and prints the path
# of its binary. The lint tests validate `lint -o sarif` with it.
set -euo pipefail
version=5.7.0
dir=${RF_SARIF_CACHE:-$HOME/.cache/rollout-forensics/sarif}/$version
bin=$dir/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool
if [ ! -x "$bin" ]; then
  command -v npm >/dev/null 2>&1 || { echo "sarif: npm is not installed (Debian: npm)" >&2; exit 1; }
  echo "sarif: installing @microsoft/sarif-multitool@$version" >&2
  mkdir -p "$dir"
  # Its postinstall script only makes the binary executable: done here instead.
  (cd "$dir" && npm install --silent --no-audit --no-fund --ignore-scripts \
    "@microsoft/sarif-multitool@$version" >&2)
  chmod u+x "$bin"
fi
echo "$bin"

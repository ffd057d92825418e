#!/usr/bin/env bash
# Times `analyze -o json` against `gzip -dc` of the same recording, in one run, and reports
# peak RSS: ratios, not absolute times (machines here are shared and noisy).
#
#   benches/measure.sh [EVENTS] [ROLLOUTS]        default: 200000 events over 20 rollouts
set -euo pipefail
cd "$(dirname "$0")/.."
events=${1:-200000}
rollouts=${2:-20}
cargo build --release --quiet -p rollout-forensics
bin=target/release/rollout-forensics
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
file="$dir/scale.rfr"
"$bin" simulate scale --rollouts "$rollouts" --events "$events" -o "$file" 2>/dev/null

measure() { # prints "seconds max_rss_kib"
  /usr/bin/time -f "%e %M" "$@" 2>&1 >/dev/null | tail -1
}
read -r a_s a_kib < <(measure "$bin" analyze "$file" -o json --fail-on never)
read -r g_s g_kib < <(measure gzip -dc "$file")
records=$("$bin" inspect "$file" -o json | sed -n 's/^  "records": \([0-9]*\),$/\1/p' | head -1)
bytes=$(stat -c %s "$file")
awk -v a="$a_s" -v g="$g_s" -v kib="$a_kib" -v n="$records" -v b="$bytes" 'BEGIN {
  printf "recording: %d records, %.1f MB compressed (%.0f bytes/record)\n", n, b / 1e6, b / n
  printf "analyze -o json: %.2f s, peak RSS %.1f MiB\n", a, kib / 1024
  printf "gzip -dc:        %.2f s\n", g
  printf "ratio analyze / gzip -dc: %.2f\n", (g > 0 ? a / g : 0)
}'

#!/usr/bin/env bash
# `lint` of a large render, measured as a ratio of CPU time against gzip -c of the same bytes
# (a floor any tool that reads the render pays; these machines are shared and noisy: ratios of
# runs side by side mean more than absolute times). The render is docs/examples/shop-render.yaml
# (a Rollout, two Services and an Ingress, four findings' worth) repeated with new names until it
# holds OBJECTS objects, in one namespace, so that every rollout's Services and routers are looked
# up among all of them.
#
#   benches/lint.sh [OBJECTS]        default: 10000 objects; best of 3 runs each
#
# Needs: gzip, awk, /usr/bin/time (GNU time).
set -euo pipefail
cd "$(dirname "$0")/.."
objects=${1:-10000}
for tool in gzip awk /usr/bin/time; do
  command -v "$tool" >/dev/null 2>&1 || { echo "lint.sh: needs $tool" >&2; exit 1; }
done
cargo build --release --locked -q -p rollout-forensics
bin=target/release/rollout-forensics
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
copies=$(( (objects + 3) / 4 ))
awk -v n="$copies" '
  { lines[NR] = $0 }
  END {
    for (i = 0; i < n; i++)
      for (l = 1; l <= NR; l++) {
        s = lines[l]
        gsub(/checkout-api/, "checkout-api-" i, s)
        gsub(/name: shop$/, "name: shop-" i, s)
        print s
      }
  }' docs/examples/shop-render.yaml > "$dir/render.yaml"
count=$(grep -c '^kind:' "$dir/render.yaml")
bytes=$(wc -c < "$dir/render.yaml")
# CPU seconds (user+sys) and peak RSS (KiB) of the best of three runs of a command.
best() {
  local best_cpu="" best_rss=""
  for _ in 1 2 3; do
    /usr/bin/time -f '%U %S %M' -o "$dir/time" "$@" > /dev/null || [ $? -eq 1 ]
    read -r u s m < <(tail -n 1 "$dir/time")
    cpu=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.3f", u + s }')
    if [ -z "$best_cpu" ] || awk -v a="$cpu" -v b="$best_cpu" 'BEGIN { exit !(a < b) }'; then
      best_cpu=$cpu best_rss=$m
    fi
  done
  echo "$best_cpu $best_rss"
}
read -r lint_cpu lint_rss < <(best "$bin" lint "$dir/render.yaml" -o json)
read -r gzip_cpu _ < <(best gzip -c "$dir/render.yaml")
findings=$("$bin" lint "$dir/render.yaml" -o json | grep -c '"rule":' || true)
echo "render: $count objects, $bytes bytes, $findings findings"
awk -v l="$lint_cpu" -v g="$gzip_cpu" -v r="$lint_rss" 'BEGIN {
  printf "lint -o json: %.2f s CPU, peak RSS %.0f MiB\n", l, r / 1024
  printf "gzip -c:      %.2f s CPU\n", g
  printf "ratio lint / gzip (CPU): %.2f\n", (g > 0 ? l / g : 0)
}'

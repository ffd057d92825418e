#!/usr/bin/env bash
# Compares builds of rollout-forensics on one recording, in alternating rounds: each round
# times `gzip -dc FILE`, then `analyze FILE -o json` with each binary in turn. These machines
# are shared and their speed drifts over minutes, so builds are compared round by round, never
# against a figure measured at another time. Prints each round, then per binary the median of
# its wall time, its CPU time (user + system), its ratio to that round's `gzip -dc` in wall time
# and in CPU time (steadier on a shared machine), the least wall time and ratios, and its largest
# peak RSS.
#
#   benches/alternate.sh ROUNDS FILE BINARY...
#
# Needs gzip and /usr/bin/time (GNU time).
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 ROUNDS FILE BINARY..." >&2; exit 2; }
rounds=$1
file=$2
shift 2
for tool in gzip /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "alternate.sh needs $tool" >&2; exit 2; }
done
[ -s "$file" ] || { echo "alternate.sh: no recording at $file" >&2; exit 2; }

# "wall cpu max_rss_kib" of one run.
run() {
  /usr/bin/time -f "%e %U %S %M" "$@" 2>&1 >/dev/null | tail -1 | awk '{print $1, $2 + $3, $4}'
}
median() { tr ' ' '\n' | grep . | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
least() { tr ' ' '\n' | grep . | sort -n | head -1; }

declare -A walls cpus ratios cpu_ratios rss
for round in $(seq 1 "$rounds"); do
  read -r g gc _ < <(run gzip -dc "$file")
  line="round $round: gzip -dc ${g}s (CPU ${gc}s)"
  for bin in "$@"; do
    read -r w c m < <(run "$bin" analyze "$file" -o json --fail-on never)
    r=$(awk -v a="$w" -v b="$g" 'BEGIN {printf "%.3f", a / b}')
    rc=$(awk -v a="$c" -v b="$gc" 'BEGIN {printf "%.3f", a / b}')
    walls[$bin]+="$w "
    cpus[$bin]+="$c "
    ratios[$bin]+="$r "
    cpu_ratios[$bin]+="$rc "
    rss[$bin]=$(( ${rss[$bin]:-0} > m ? ${rss[$bin]:-0} : m ))
    line+="  $(basename "$bin") ${w}s ($r; CPU ${c}s, $rc)"
  done
  echo "$line"
done
# A neighbour's load only ever adds time, and it comes in bursts that can take half the
# rounds: the least of the rounds is the steadier figure, the median the usual one.
for bin in "$@"; do
  printf '%s: median wall %ss, CPU %ss, analyze / gzip -dc %s, of CPU %s; least wall %ss, ratio %s, of CPU %s; peak RSS %s MiB\n' \
    "$bin" "$(echo "${walls[$bin]}" | median)" "$(echo "${cpus[$bin]}" | median)" \
    "$(echo "${ratios[$bin]}" | median)" "$(echo "${cpu_ratios[$bin]}" | median)" \
    "$(echo "${walls[$bin]}" | least)" "$(echo "${ratios[$bin]}" | least)" \
    "$(echo "${cpu_ratios[$bin]}" | least)" "$(awk -v k="${rss[$bin]}" 'BEGIN {printf "%.1f", k / 1024}')"
done

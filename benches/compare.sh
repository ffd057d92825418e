#!/usr/bin/env bash
# The performance targets, measured in one run on one generated recording, as ratios (these machines
# are shared and noisy: absolute times mean little, ratios of runs side by side do):
#
#   analyze -o json          vs  gzip -dc FILE            (target: ratio <= 1.0; of CPU, <= 1.5)
#                            and gzip -dc of the same events as gzip -6 JSON lines (the same
#                            JSON decompressed; since format 2, FILE holds most objects as deltas)
#                            and both on the same records as a version 1 file (`convert`)
#   analyze -o json          vs  a jq pipeline over the same events as JSON lines (target: >= 20x)
#   peak RSS of analyze      (target: <= 100 MiB at 1M events)
#   file size                vs  gzip -6 of the same JSON lines (target: within 5%)
#   serve FILE: time to its first answer vs analyze (target: <= 1.5x), at the end and at a
#   moment in the middle (--at; no slower than the end: three pairs, each served right after
#   the other), its peak RSS (target: <= 256 MiB), how
#   long a list of each kind takes at the served moment (target: <= 100 ms at 2,000 objects),
#   and the size of its scratch file
#   record from serve --speed max, record pinned to one core and serve to another (taskset):
#   records/s on one core, and CPU per record; serve --speed max to plain watch clients, one
#   curl per kind (events/s, CPU of serve)
#
#   benches/compare.sh [EVENTS] [ROLLOUTS] [SEED]     default: 1000000 events over 200 rollouts
#   APPLICATIONS=1 benches/compare.sh ...             each rollout managed by an Argo CD Application
#   CROWDED=0 benches/compare.sh ...                  without the crowded namespace below
#   DIR_RECORDS=10000000 benches/compare.sh ...       also serve DIR over a flight recorder's
#                                                     directory of that many records (below),
#                                                     alternately with analyze, and the middle,
#                                                     DIR_ROUNDS times (2)
#
# Then analyze -o json vs gzip -dc on a second generated recording, a namespace the size of a
# cluster's: 200 rollouts of 100 pods in one namespace (simulate scale --per-namespace 200
# --replicas 100), where each EndpointSlice holds 100 endpoints and the namespace 200 Services.
#
# Needs: jq, gzip, curl, /usr/bin/time (GNU time). The recording is generated (deterministic by seed)
# in a temporary directory and removed at the end; set KEEP=DIR to keep it there.
set -euo pipefail
cd "$(dirname "$0")/.."
events=${1:-1000000}
rollouts=${2:-200}
seed=${3:-1}
for tool in jq gzip curl taskset /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "compare.sh needs $tool" >&2; exit 2; }
done
cargo build --release --quiet -p rollout-forensics
bin=${CARGO_TARGET_DIR:-$PWD/target}/release/rollout-forensics
dir=${KEEP:-$(mktemp -d)}
mkdir -p "$dir"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$dir"; kill "${serve_pid:-}" 2>/dev/null || true' EXIT
apps=()
suffix=
if [ -n "${APPLICATIONS:-}" ]; then apps=(--applications); suffix=-apps; fi
file="$dir/scale-$events-$rollouts-$seed$suffix.rfr"
if [ ! -s "$file" ]; then
  echo "generating $events events over $rollouts rollouts (seed $seed)${suffix:+ with Applications}..." >&2
  "$bin" simulate scale --rollouts "$rollouts" --events "$events" --seed "$seed" "${apps[@]}" -o "$file" >/dev/null 2>&1
fi
# The equivalent JSON lines (one per record: kind, op, namespace, name, resourceVersion, object),
# compressed with gzip -6 as a team would keep them.
jsonl="$dir/events$suffix.jsonl.gz"
[ -s "$jsonl" ] || "$bin" inspect "$file" --jsonl | gzip -6 >"$jsonl"

measure() { # prints "seconds max_rss_kib cpu_seconds" (CPU: user + system)
  /usr/bin/time -f "%e %M %U %S" "$@" 2>&1 >/dev/null | tail -1 | awk '{print $1, $2, $3 + $4}'
}
jq_fields='{kind, name, resourceVersion, currentPodHash: .object.status.currentPodHash, currentStepIndex: .object.status.currentStepIndex, replicas: .object.spec.replicas}'

read -r a_s a_kib a_cpu < <(measure "$bin" analyze "$file" -o json --fail-on never)
read -r g_s _ g_cpu < <(measure gzip -dc "$file")
read -r j_s _ _ < <(measure sh -c "gzip -dc '$jsonl' | jq -c '$jq_fields'")
# The same run again, in the other order, so a burst of load on the machine shows as a spread.
read -r g2_s _ g2_cpu < <(measure gzip -dc "$file")
read -r a2_s a2_kib a2_cpu < <(measure "$bin" analyze "$file" -o json --fail-on never)
read -r gj_s _ _ < <(measure gzip -dc "$jsonl")
# The same records as a version 1 file (every object whole, as the target was first measured):
# gzip -dc of it inflates all of the JSON, as gzip -dc of a version 2 file no longer does.
v1="$dir/v1$suffix.rfr"
[ -s "$v1" ] || "$bin" convert "$file" -o "$v1" --format-version 1 >/dev/null 2>&1
read -r a1_s a1_kib _ < <(measure "$bin" analyze "$v1" -o json --fail-on never)
read -r g1_s _ _ < <(measure gzip -dc "$v1")

records=$(gzip -dc "$jsonl" | wc -l)
bytes=$(stat -L -c %s "$file")
gz6=$(stat -L -c %s "$jsonl")

# serve FILE [--at T] (or $served, a directory): from start to its first answer (it prints its URL once it listens, after
# reading the whole recording), then one list of each kind at the served moment (curl's time),
# then its peak RSS once stopped, and the size of its scratch file (unlinked when made: found
# among its open files). Prints "seconds peak_kib slowest_list_s slowest_list_path scratch_bytes
# lists cpu", lists being each list's kind, objects and milliseconds (kind:objects:ms,
# comma-separated), cpu its user+system CPU seconds to the first answer.
serve_first() {
  local out="$dir/first.out" t0 t1 url pid server fd scratch=0 slowest=0 slowest_path=- p t lists= cpu=
  rm -f "$out" "$dir/first.time"
  t0=$(date +%s.%N)
  /usr/bin/time -f "%M" -o "$dir/first.time" "$bin" serve "${served:-$file}" --kubeconfig-out "$dir/first.kc" "$@" \
    >"$out" 2>"$dir/first.err" &
  pid=$!
  until [ -s "$out" ]; do
    kill -0 "$pid" 2>/dev/null || { cat "$dir/first.err" >&2; return 1; }
    sleep 0.02
  done
  t1=$(date +%s.%N)
  url=$(head -1 "$out")
  server=$(pgrep -P "$pid" || echo "$pid")
  # Its CPU time to the first answer, user+system seconds: the system share is mostly the
  # kernel finding and filling pages for the scratch file.
  cpu=$(awk -v hz="$(getconf CLK_TCK)" '{ printf "%.0f+%.0f", $14 / hz, $15 / hz }' "/proc/$server/stat")
  for fd in /proc/"$server"/fd/*; do
    case "$(readlink "$fd" 2>/dev/null)" in
      *.rollout-forensics-serve-*.spill*) scratch=$(stat -L -c %s "$fd") ;;
    esac
  done
  # First a page of 2,000 Events, before their whole list is made (and kept): the state of
  # every Event at the served moment is worked out for it, so it takes at least what a list of
  # a kind of 2,000 objects takes.
  for p in '/api/v1/events?limit=2000' /apis/argoproj.io/v1alpha1/rollouts /apis/apps/v1/replicasets \
    /api/v1/services /apis/discovery.k8s.io/v1/endpointslices /api/v1/pods /api/v1/events; do
    t=$(curl -s -o "$dir/list.json" -w '%{time_total}' "$url$p")
    if awk -v a="$t" -v b="$slowest" 'BEGIN { exit !(a > b) }'; then slowest=$t; slowest_path=$p; fi
    lists="$lists${lists:+,}${p##*/}:$(jq '.items | length' "$dir/list.json"):$(awk -v t="$t" 'BEGIN { printf "%.0f", t * 1000 }')"
  done
  kill -INT "$server" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') $(tail -1 "$dir/first.time") $slowest $slowest_path $scratch $lists $cpu"
}
read -r f_s f_kib f_list f_path f_scratch f_lists _ < <(serve_first)
read -r a3_s _ _ < <(measure "$bin" analyze "$file" -o json --fail-on never)
half=$("$bin" inspect "$file" -o json | jq -r '
  def t: sub("\\.[0-9]+Z$"; "Z") | fromdateiso8601;
  ((.last_record_at | t) - (.first_record_at | t)) / 2 | floor')
mid="+${half}s"
# The middle and the end are the same work (the whole file is read either way): each is served
# right after the other, three times, and the ratio is each pair's.
mids=""
end_s=$f_s
for round in 1 2 3; do
  read -r m_s m_kib m_list m_path _ < <(serve_first --at "$mid")
  if [ "$round" -gt 1 ]; then read -r end_s _ < <(serve_first); fi
  mids="$mids $(awk -v m="$m_s" -v f="$end_s" 'BEGIN { printf "%.2f (%.2f s / %.2f s)", m / f, m, f }')"
done
awk -v f="$f_s" -v a="$a3_s" -v kib="$f_kib" -v l="$f_list" -v lp="$f_path" -v mkib="$m_kib" \
    -v ml="$m_list" -v mp="$m_path" -v mid="$mid" -v mids="$mids" -v sc="$f_scratch" -v bytes="$bytes" 'BEGIN {
  printf "serve FILE, first answer / analyze: %.2f (serve %.2f s, analyze %.2f s)   (target <= 1.5)\n", f / a, f, a
  printf "serve --at %s (mid), first answer / the end'"'"'s, by pair:%s   (target <= 1.0)\n", mid, mids
  printf "serve peak RSS:              %.1f MiB at the end, %.1f MiB mid   (target <= 256)\n", kib / 1024, mkib / 1024
  printf "serve list, slowest kind:    %.0f ms (%s) at the end, %.0f ms (%s) mid   (target <= 100 ms at 2,000 objects)\n", l * 1000, lp, ml * 1000, mp
  printf "serve scratch file:          %.0f MB, %.1fx the recording\n", sc / 1e6, sc / bytes
}'
echo "serve lists at the end (kind:objects:ms): $f_lists"

# record <- serve --speed max, on loopback.
kc="$dir/kubeconfig"
# serve on the last CPU, record on the first: record's rate is what one core sustains.
last_cpu=$(( $(nproc) - 1 ))
taskset -c "$last_cpu" "$bin" serve "$file" --speed max --kubeconfig-out "$kc" >"$dir/serve.out" 2>"$dir/serve.err" &
serve_pid=$!
# serve prints its URL once it listens.
for _ in $(seq 1 1200); do [ -s "$dir/serve.out" ] && break; sleep 0.1; done
url=$(grep -o 'http://[^ ]*' "$dir/serve.out" | head -1 || true)
rec_out="$dir/recorded.rfr"
# Record the kinds the recording holds (a served recording serves only those), for long enough
# to take everything; the rate comes from the records' own receive times (first to last), and
# the CPU share from record's CPU time over that span (it idles after the last record).
kinds=$("$bin" inspect "$file" -o json | jq -r '.by_kind | keys | map(ascii_downcase + "s") | join(",")')
# The watch path of each kind, and the resourceVersion of its list before anything was watched
# (serve --speed max serves a list at what its watches have sent so far), for the plain watch
# clients below.
watch_path() {
  case "$1" in
    rollouts | applications) echo "/apis/argoproj.io/v1alpha1/$1" ;;
    replicasets) echo "/apis/apps/v1/$1" ;;
    endpointslices) echo "/apis/discovery.k8s.io/v1/$1" ;;
    *) echo "/api/v1/$1" ;;
  esac
}
watches=()
for k in ${kinds//,/ }; do
  path=$(watch_path "$k")
  rv=$(curl -sf "$url$path?limit=1" | jq -r '.metadata.resourceVersion // empty' || true)
  if [ -n "$rv" ]; then
    watches+=("$path?watch=1&allowWatchBookmarks=true&resourceVersion=$rv")
  fi
done
rec_secs=$(( events / 10000 + 30 ))
/usr/bin/time -f "%e %U %S %M" -o "$dir/record.time" \
  taskset -c 0 "$bin" record -A --kinds "$kinds" --kubeconfig "$kc" --duration "${rec_secs}s" -o "$rec_out" \
  >/dev/null 2>"$dir/record.err" || true
read -r _ r_user r_sys _ < <(tail -1 "$dir/record.time")
read -r recorded r_span < <("$bin" inspect "$rec_out" -o json 2>/dev/null | jq -r '
  def t: (sub("\\.[0-9]+Z$"; "Z") | fromdateiso8601)
    + ([capture("\\.(?<f>[0-9]+)Z$").f] | first // "0" | "0." + . | tonumber);
  "\(.records) \((.last_record_at | t) - (.first_record_at | t))"' || echo "0 0")

# serve -> plain watch clients: one curl per kind at once, each from its list's version, as
# record watches; each stream's end is the first bookmark after the backlog (serve sends one
# once a watch has caught up). Events/s: lines before those bookmarks over the time to the last.
cpu_of() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
s_cpu0=$(cpu_of "$serve_pid")
s_t0=$(date +%s.%N)
clients=()
for w in "${watches[@]}"; do
  ( curl -sN --max-time "$rec_secs" "$url$w" \
      | { n=$(grep -m1 -nF '"type":"BOOKMARK"' | cut -d: -f1); echo "${n:-0} $(date +%s.%N)"; } \
      >"$dir/watch-${#clients[@]}.end" ) &
  clients+=($!)
done
[ ${#clients[@]} -eq 0 ] || wait "${clients[@]}" || true
s_cpu1=$(cpu_of "$serve_pid")
kill "$serve_pid" 2>/dev/null || true
read -r served s_span < <(cat "$dir"/watch-*.end 2>/dev/null | awk -v t0="$s_t0" '
  $1 > 0 { n += $1 - 1; if ($2 > t) t = $2 } END { printf "%d %.3f\n", n, (n > 0 ? t - t0 : 0) }' \
  || echo "0 0")
s_cpu=$(awk -v a="$s_cpu0" -v b="$s_cpu1" -v hz="$(getconf CLK_TCK)" 'BEGIN { print (b - a) / hz }')

awk -v a="$a_s" -v a2="$a2_s" -v g="$g_s" -v g2="$g2_s" -v ac="$a_cpu" -v a2c="$a2_cpu" -v gc="$g_cpu" -v g2c="$g2_cpu" -v gj="$gj_s" -v j="$j_s" -v kib="$a_kib" -v kib2="$a2_kib" \
    -v a1="$a1_s" -v g1="$g1_s" -v kib1="$a1_kib" \
    -v n="$records" -v b="$bytes" -v gz6="$gz6" -v rs="${r_span:-0}" -v ru="$r_user" -v rsy="$r_sys" \
    -v rn="${recorded:-0}" -v sn="${served:-0}" -v ss="${s_span:-0}" -v sc="${s_cpu:-0}" 'BEGIN {
  printf "recording: %d records, %.1f MB (%.0f bytes/record); gzip -6 of the JSON lines: %.1f MB (%.0f bytes/record)\n", n, b / 1e6, b / n, gz6 / 1e6, gz6 / n
  printf "size / gzip -6:              %.3f   (target <= 1.05)\n", b / gz6
  printf "analyze / gzip -dc:          %.2f, %.2f   (target <= 1.0)\n", a / g, a2 / g2
  printf "analyze / gzip -dc, CPU:     %.2f, %.2f   (target <= 1.5; analyze %.2f s / %.2f s, gzip -dc %.2f s / %.2f s of CPU)\n", ac / gc, a2c / g2c, ac, a2c, gc, g2c
  printf "analyze / gzip -dc of the JSON lines: %.2f, %.2f\n", a / gj, a2 / gj
  printf "analyze / gzip -dc, the same records as a version 1 file: %.2f (analyze %.2f s, %.1f MiB; gzip -dc %.2f s)\n", a1 / g1, a1, kib1 / 1024, g1
  printf "jq pipeline / analyze:       %.1f, %.1f   (target >= 20; the jq run sits between the two analyze runs)\n", j / a, j / a2
  printf "analyze peak RSS:            %.1f MiB, %.1f MiB   (target <= 100)\n", kib / 1024, kib2 / 1024
  if (rn > 0 && rs > 0) {
    printf "record <- serve --speed max: %.0f records/s on one core over %.1f s, record CPU %.2f cores, %.1f us/record   (target >= 50000 events/s on <= 1 core)\n", rn / rs, rs, (ru + rsy) / rs, (ru + rsy) / rn * 1e6
  } else {
    printf "record <- serve --speed max: not measured (see %s)\n", "record.err"
  }
  if (sn > 0 && ss > 0) {
    printf "serve --speed max -> curl:   %.0f events/s over %.1f s, serve CPU %.2f cores, %.1f us/event   (target >= 100000 events/s)\n", sn / ss, ss, sc / ss, sc / sn * 1e6
  } else {
    printf "serve --speed max -> curl:   not measured\n"
  }
  printf "(times: analyze %.2f s / %.2f s, gzip -dc %.2f s / %.2f s, gzip -dc of the JSON lines %.2f s, jq %.2f s)\n", a, a2, g, g2, gj, j
}'

if [ "${CROWDED:-1}" != 0 ]; then
  crowded="$dir/crowded-200x100-$seed.rfr"
  if [ ! -s "$crowded" ]; then
    echo "generating the crowded namespace (200 rollouts x 100 pods)..." >&2
    "$bin" simulate scale --rollouts 200 --per-namespace 200 --replicas 100 --events 300000 --seed "$seed" -o "$crowded" >/dev/null 2>&1
  fi
  read -r c_s c_kib c_cpu < <(measure "$bin" analyze "$crowded" -o json --fail-on never)
  read -r cg_s _ cg_cpu < <(measure gzip -dc "$crowded")
  awk -v a="$c_s" -v g="$cg_s" -v kib="$c_kib" -v ac="$c_cpu" -v gc="$cg_cpu" 'BEGIN {
    printf "crowded namespace: analyze / gzip -dc %.2f (analyze %.2f s, %.1f MiB; gzip -dc %.2f s)   (target <= 1.0)\n", a / g, a, kib / 1024, g
    printf "crowded namespace, CPU: analyze / gzip -dc %.2f (analyze %.2f s, gzip -dc %.2f s of CPU)   (target <= 1.5)\n", ac / gc, ac, gc
  }'
fi

# serve DIR over a flight recorder's directory of DIR_RECORDS records (opt-in: it takes a while):
# a recording of that many records, the same rollouts and seed, split by `convert
# --records-per-file` into ten files as a rotating recorder writes them.
if [ -n "${DIR_RECORDS:-}" ]; then
  big="$dir/scale-$DIR_RECORDS-$rollouts-$seed.rfr"
  if [ ! -s "$big" ]; then
    echo "generating $DIR_RECORDS events over $rollouts rollouts (seed $seed)..." >&2
    "$bin" simulate scale --rollouts "$rollouts" --events "$DIR_RECORDS" --seed "$seed" -o "$big" >/dev/null 2>&1
  fi
  flight="$dir/scale-$DIR_RECORDS-$rollouts-$seed.d"
  if [ ! -d "$flight" ]; then
    "$bin" convert "$big" -o "$flight" --records-per-file $(( DIR_RECORDS / 10 )) 2>/dev/null
  fi
  served=$flight
  # Serve and analyze alternately, DIR_ROUNDS times (2 unless set): at a minute each, a busy
  # machine's drift shows as rounds that disagree, and the ratio is each round's.
  # Each round also serves the middle of the recording, after analyze: the same work as the
  # end, compared with the round's end.
  half=$("$bin" inspect "$big" -o json | jq -r '
    def t: sub("\\.[0-9]+Z$"; "Z") | fromdateiso8601;
    ((.last_record_at | t) - (.first_record_at | t)) / 2 | floor')
  ratios=""
  mids=""
  for _ in $(seq 1 "${DIR_ROUNDS:-2}"); do
    read -r d_s d_kib d_list d_path d_scratch d_lists d_cpu < <(serve_first)
    read -r da_s da_kib _ < <(measure "$bin" analyze "$flight" -o json --fail-on never)
    read -r dm_s dm_kib dm_list dm_path _ < <(serve_first --at "+${half}s")
    ratios="$ratios $(awk -v f="$d_s" -v a="$da_s" -v c="$d_cpu" 'BEGIN { printf "%.2f (%.0f s / %.0f s, serve CPU %s s)", f / a, f, a, c }')"
    mids="$mids $(awk -v m="$dm_s" -v f="$d_s" 'BEGIN { printf "%.2f (%.0f s / %.0f s)", m / f, m, f }')"
  done
  unset served
  records=$("$bin" inspect "$big" -o json | jq -r '.records')
  dir_bytes=$(stat -L -c %s "$flight"/*.rfr | awk '{ s += $1 } END { print s }')
  awk -v n="$records" -v files="$(ls "$flight" | wc -l)" -v r="$ratios" -v mids="$mids" -v akib="$da_kib" \
      -v kib="$d_kib" -v l="$d_list" -v lp="$d_path" -v mkib="$dm_kib" -v ml="$dm_list" \
      -v sc="$d_scratch" -v bytes="$dir_bytes" 'BEGIN {
    printf "serve DIR, %d records in %d files: first answer / analyze DIR, by round:%s   (target <= 1.5)\n", n, files, r
    printf "analyze DIR peak RSS:        %.1f MiB\n", akib / 1024
    printf "serve DIR scratch file:      %.0f MB, %.1fx the recordings\n", sc / 1e6, sc / bytes
    printf "serve DIR --at mid, first answer / the end'"'"'s, by round:%s   (target <= 1.0)\n", mids
    printf "serve DIR peak RSS:          %.1f MiB at the end, %.1f MiB mid   (target <= 256)\n", kib / 1024, mkib / 1024
    printf "serve DIR list, slowest kind: %.0f ms (%s) at the end, %.0f ms mid   (target <= 100 ms at 2,000 objects)\n", l * 1000, lp, ml * 1000
  }'
  echo "serve DIR lists at the end (kind:objects:ms): $d_lists"
fi

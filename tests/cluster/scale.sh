#!/usr/bin/env bash
# tests/cluster/scale.sh [ROLLOUTS [REPLICAS [ROLL_MINUTES]]]: the recorder at scale, against
# the real control plane of up.sh (in its scale mode: no audit log, client rate limits raised).
#
# ROLLOUTS canary Rollouts (default 200) of REPLICAS pods each (default 100: 20,000 pods on the
# kwok nodes), each with its Service, are created while `rollout-forensics record` records the
# namespace; once every one is Healthy they keep rolling (a new pod template for a tenth of them
# every 30 s) for ROLL_MINUTES (default 5). Every second a prober writes its send time into an
# annotation of a Pod, a Service and a Rollout; a recording's lag is how late it saw them
# (benches/examples/probe_lag.rs). Beside the recorder, a reference client (curl, and a few
# lines of Python that note when each line arrives) holds the same three watches: its lag is the
# API server's, and the recorder's time minus the reference's, probe by probe, is the lag the
# recorder adds. Prints the recorder's peak RSS, its CPU, the lag, the live pods, the gaps, and
# `analyze` of the result against `gzip -dc` of the same file.
# KEEP=DIR keeps the recording there (scale.rfr).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
rollouts=${1:-200}
replicas=${2:-100}
roll_minutes=${3:-5}
ns=scale

log() { printf 'scale: %s\n' "$*" >&2; }

cd "$root"
cargo build --release --locked --quiet -p rollout-forensics
cargo build --release --locked --quiet -p rf-benches --example probe_lag
rf=$root/target/release/rollout-forensics
probe_lag=$root/target/release/examples/probe_lag

dir=$(mktemp -d "${TMPDIR:-/tmp}/rf-scale.XXXXXX")
pids=()
finish() {
  rc=$?
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "$rc" != 0 ]; then
    for f in "$dir"/*.log; do
      echo "== the last lines of $(basename "$f")" >&2
      tail -n 15 "$f" | cut -c1-400 >&2
    done
  fi
  "$here/down.sh" "$dir" >/dev/null 2>&1 || true
  if [ -n "${KEEP:-}" ] && [ -f "$dir/scale.rfr" ]; then mkdir -p "$KEEP" && cp "$dir/scale.rfr" "$KEEP/"; fi
  rm -rf "$dir"
  exit "$rc"
}
trap finish EXIT
RF_CLUSTER_SCALE=1 "$here/up.sh" "$dir"
bin=$(cat "$dir/bin")
export KUBECONFIG=$dir/kubeconfig
kc() { "$bin/kubectl" "$@"; }
server=$(kc config view -o jsonpath='{.clusters[0].cluster.server}')
pki=$dir/pki
api() { # METHOD PATH [merge patch]
  curl -sS -o /dev/null -w '%{http_code}' --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" \
    -X "$1" -H 'Content-Type: application/merge-patch+json' ${3:+--data "$3"} "$server$2"
}

kc create namespace "$ns" >/dev/null
# The probe objects: a bare Pod on a kwok node, a Service, and a Rollout of one pod.
kc -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: probe, labels: {app: probe}}
spec:
  nodeName: kwok-node-0
  containers: [{name: probe, image: registry.example/probe:1.0}]
---
apiVersion: v1
kind: Service
metadata: {name: probe}
spec: {selector: {app: probe}, ports: [{port: 80, targetPort: 8080}]}
EOF

manifests=$dir/rollouts.yaml
: > "$manifests"
for i in $(seq 0 "$rollouts"); do
  # Rollout $rollouts (one past the count) is the probed one, with a single pod.
  n=$replicas
  [ "$i" = "$rollouts" ] && n=1
  cat >> "$manifests" <<EOF
---
apiVersion: v1
kind: Service
metadata: {name: app-$i}
spec: {selector: {app: app-$i}, ports: [{port: 80, targetPort: 8080}]}
---
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: app-$i}
spec:
  replicas: $n
  revisionHistoryLimit: 2
  selector: {matchLabels: {app: app-$i}}
  strategy: {canary: {maxSurge: 25%, maxUnavailable: 25%}}
  template:
    metadata:
      labels: {app: app-$i}
      annotations: {rf-roll: "0"}
    spec:
      nodeName: kwok-node-$((i % 3))
      containers: [{name: app, image: "registry.example/app:1.0@sha256:$(printf '%064d' 0)"}]
EOF
done

"$rf" record -n "$ns" -o "$dir/scale.rfr" > "$dir/record.log" 2>&1 &
recorder=$!
pids+=("$recorder")
until [ -s "$dir/scale.rfr" ]; do
  kill -0 "$recorder" 2>/dev/null || { log "the recorder exited"; cat "$dir/record.log" >&2; exit 1; }
  sleep 0.2
done

# The reference watches: the namespace's Pods, Services and Rollouts, as the recorder watches
# them. For each line carrying a probe of a probed object, the first time that value arrived.
cat > "$dir/stamp.py" <<'EOF'
import json, sys, time
kind, annotation, names = sys.argv[1], sys.argv[2], set(sys.argv[3:])
needle = f'"{annotation}":"'.encode()
seen = set()
for line in sys.stdin.buffer:
    t = time.time_ns()
    if needle not in line:
        continue
    try:
        meta = json.loads(line)["object"]["metadata"]
    except (ValueError, KeyError, TypeError):
        continue
    value = (meta.get("annotations") or {}).get(annotation)
    if meta.get("name") in names and value and (meta["name"], value) not in seen:
        seen.add((meta["name"], value))
        print(f"{kind}/{meta['name']} {value} {t}", flush=True)
EOF
reference() { # KIND PATH NAME
  # Until the probes stop, or the run ends and takes $dir with it.
  while [ -d "$dir" ] && [ ! -f "$dir/stop-probes" ]; do
    curl -sS -N --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" \
      "$server$2?watch=1" 2>> "$dir/reference.log" || sleep 1
  done | python3 -u "$dir/stamp.py" "$1" rf-probe "$3" >> "$dir/reference-$1"
}
reference Pod "/api/v1/namespaces/$ns/pods" probe &
pids+=($!)
reference Service "/api/v1/namespaces/$ns/services" probe &
pids+=($!)
reference Rollout "/apis/argoproj.io/v1alpha1/namespaces/$ns/rollouts" "app-$rollouts" &
pids+=($!)
sleep 3 # the initial lists of an empty namespace
started=$(date +%s)
clock_ticks=$(getconf CLK_TCK)

# The prober: every second, its send time on the probe Pod, Service and Rollout.
probed=app-$rollouts
(
  while [ ! -f "$dir/stop-probes" ]; do
    for path in "/api/v1/namespaces/$ns/pods/probe" "/api/v1/namespaces/$ns/services/probe" \
      "/apis/argoproj.io/v1alpha1/namespaces/$ns/rollouts/$probed"; do
      code=$(api PATCH "$path" "{\"metadata\":{\"annotations\":{\"rf-probe\":\"$(date +%s%N)\"}}}")
      [ "$code" = 200 ] && echo sent >> "$dir/probes" || echo "$code $path" >> "$dir/probe-errors"
    done
    sleep 1
  done
) &
prober=$!
pids+=("$prober")

# The sampler: the recorder's RSS and the live pods, every 5 s.
(
  while kill -0 "$recorder" 2>/dev/null; do
    rss=$(awk '/^VmRSS/ {print $2}' "/proc/$recorder/status")
    pods=$(kc get --raw "/api/v1/namespaces/$ns/pods?limit=1" | python3 -c 'import json,sys; m=json.load(sys.stdin)["metadata"]; print(1 + m.get("remainingItemCount", 0))' 2>/dev/null || echo "?")
    echo "$(($(date +%s) - started)) $rss $pods" >> "$dir/samples"
    sleep 5
  done
) &
pids+=($!)

kc -n "$ns" apply --server-side --field-manager argocd-controller -f "$manifests" >/dev/null
log "applied $rollouts rollouts of $replicas pods (and the probed one)"
healthy() {
  kc -n "$ns" get rollouts -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -c '^Healthy$' || true
}
deadline=$(($(date +%s) + 1800))
until [ "$(healthy)" -ge $((rollouts + 1)) ]; do
  [ "$(date +%s)" -lt "$deadline" ] || { log "not every rollout Healthy after 30 min"; exit 1; }
  sleep 10
done
ramp=$(($(date +%s) - started))
log "every rollout Healthy after $ramp s"

# Keep rolling: a new template for a tenth of the rollouts every 30 s.
rolled=0
per_round=$((rollouts / 10 > 0 ? rollouts / 10 : 1))
until_t=$(($(date +%s) + roll_minutes * 60))
round=1
while [ "$(date +%s)" -lt "$until_t" ]; do
  for k in $(seq 0 $((per_round - 1))); do
    i=$(((round * per_round + k) % rollouts))
    code=$(api PATCH "/apis/argoproj.io/v1alpha1/namespaces/$ns/rollouts/app-$i" \
      "{\"spec\":{\"template\":{\"metadata\":{\"annotations\":{\"rf-roll\":\"$round\"}}}}}")
    [ "$code" = 200 ] && rolled=$((rolled + 1))
  done
  round=$((round + 1))
  sleep 30
done
log "rolled $rolled times in $roll_minutes min"

# The prober stops first, and the recorder gets 3 s for its last probes: every probe sent
# must be in the recording.
touch "$dir/stop-probes"
wait "$prober" || true
sleep 3
peak_kib=$(awk '/^VmHWM/ {print $2}' "/proc/$recorder/status")
read -r utime stime < <(awk '{print $14, $15}' "/proc/$recorder/stat")
elapsed=$(($(date +%s) - started))
kill -INT "$recorder"
wait "$recorder" || { log "the recorder failed"; cat "$dir/record.log" >&2; exit 1; }

"$rf" inspect "$dir/scale.rfr" -o json > "$dir/inspect.json"
measure() { /usr/bin/time -f "%e %M" "$@" 2>&1 >/dev/null | tail -1; }
read -r a_s a_kib < <(measure "$rf" analyze "$dir/scale.rfr" -o json --fail-on never)
read -r g_s _ < <(measure gzip -dc "$dir/scale.rfr")

echo "== rollout-forensics record at scale: $rollouts rollouts x $replicas pods, rolling for $roll_minutes min"
python3 - "$dir" "$peak_kib" "$utime" "$stime" "$clock_ticks" "$elapsed" "$ramp" <<'EOF'
import json, sys
d, peak, ut, st, hz, elapsed, ramp = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
samples = [l.split() for l in open(f"{d}/samples")]
pods = [int(s[2]) for s in samples if s[2].isdigit()]
rss = [int(s[1]) for s in samples]
i = json.load(open(f"{d}/inspect.json"))
print(f"live pods: max {max(pods)} (sampled every 5 s); every rollout Healthy after {ramp} s")
print(f"recorder peak RSS: {peak / 1024:.1f} MiB (sampled max {max(rss) / 1024:.1f} MiB)")
print(f"recorder CPU: {(ut + st) / hz:.1f} s over {elapsed} s ({100 * (ut + st) / hz / elapsed:.0f}% of one core)")
gaps = i.get("gaps", [])
print(f"recording: {i['records']} records, by kind {json.dumps(i['by_kind'])}, {len(gaps)} gaps")
for g in gaps:
    print(f"  gap: {g['kind']} at {g['at']}: {g['reason']}")
EOF
echo "probes sent: $(wc -l < "$dir/probes"), refused: $(cat "$dir/probe-errors" 2>/dev/null | wc -l) (404: the probed Rollout before it is applied)"
if [ -f "$dir/probe-errors" ]; then sort "$dir/probe-errors" | uniq -c | sed 's/^/  /'; fi
echo "lag (ms from the probe's send to the recorder's observed_at; probes seen should equal probes sent),"
echo "the reference client's lag (the API server's), and the recorder's time minus the reference's:"
cat "$dir"/reference-* > "$dir/reference"
"$probe_lag" --reference "$dir/reference" "$dir/scale.rfr" rf-probe Pod/probe Service/probe "Rollout/$probed"
echo "file: $(stat -c %s "$dir/scale.rfr") bytes"
awk -v a="$a_s" -v g="$g_s" -v kib="$a_kib" 'BEGIN {
  printf "analyze -o json: %.2f s, peak RSS %.1f MiB; gzip -dc %.2f s; ratio %.2f\n", a, kib / 1024, g, (g > 0 ? a / g : 0)
}'

#!/usr/bin/env bash
# tests/cluster/smoke.sh: with KUBECONFIG at a cluster of up.sh, checks that the real chain
# works end to end: a canary Rollout's ReplicaSet gets pods, kwok runs them to Ready, the
# endpointslice controller lists them, the rollout becomes Healthy, and a new image pauses it
# at its first pause step.
set -euo pipefail
log() { printf 'smoke: %s\n' "$*" >&2; }
ns=smoke-$$
kubectl create namespace "$ns" >/dev/null
kubectl -n "$ns" apply --server-side --field-manager argocd-controller -f - >/dev/null <<'MANIFEST'
apiVersion: v1
kind: Service
metadata: {name: app}
spec:
  selector: {app: app}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: app}
spec:
  replicas: 3
  selector: {matchLabels: {app: app}}
  template:
    metadata:
      labels: {app: app}
      annotations: {checksum/config: a}
    spec:
      containers: [{name: app, image: "registry.example/app:1"}]
  strategy:
    canary:
      steps: [{setWeight: 20}, {pause: {}}, {setWeight: 50}]
MANIFEST
phase() { kubectl -n "$ns" get rollout app -o jsonpath='{.status.phase}' 2>/dev/null; }
wait_phase() {
  for _ in $(seq 120); do
    [ "$(phase)" = "$1" ] && return 0
    sleep 1
  done
  log "rollout phase $(phase), not $1, after 120 s"
  kubectl -n "$ns" get rollout,rs,pods -o wide >&2 || true
  return 1
}
wait_phase Healthy
# The rollout reads Healthy from the pods' readiness; the endpointslice controller lists them on
# its own schedule (it retries while its informer catches up), so the slices are waited for too.
ready_endpoints() {
  kubectl -n "$ns" get endpointslices -l kubernetes.io/service-name=app \
    -o jsonpath='{range .items[*].endpoints[?(@.conditions.ready==true)]}{.targetRef.name}{"\n"}{end}' |
    grep -c . || true
}
for _ in $(seq 60); do
  ready=$(ready_endpoints)
  [ "$ready" -eq 3 ] && break
  sleep 1
done
[ "$ready" -eq 3 ] || {
  log "$ready ready endpoints, not 3, 60 s after Healthy"
  kubectl -n "$ns" get endpointslices -o yaml >&2 || true
  exit 1
}
log "Healthy with 3 ready endpoints"
kubectl -n "$ns" patch rollout app --type merge \
  -p '{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"registry.example/app:2"}]}}}}' >/dev/null
wait_phase Paused
step=$(kubectl -n "$ns" get rollout app -o jsonpath='{.status.currentStepIndex}')
[ "$step" = 1 ] || { log "paused at step $step, not 1"; exit 1; }
log "a new image paused at step 1"
kubectl delete namespace "$ns" --wait=false >/dev/null
echo "smoke: ok"

#!/usr/bin/env bash
# tests/cluster/up.sh DIR: a real Kubernetes control plane on loopback for the real-cluster
# tests: etcd, kube-apiserver (with an audit log of the kinds rollout-forensics records),
# kube-controller-manager (replicaset, deployment, job, endpointslice, endpoint, garbage collector),
# kube-scheduler, kwok with fake nodes (pods become Running and Ready), and the Argo Rollouts
# controller with its CRDs, and the CRDs of the Istio VirtualService and of the prometheus-
# operator's ServiceMonitor and PrometheusRule, and Argo CD (application controller, repo server,
# redis-server; RF_CLUSTER_ARGOCD=0 leaves it out). Writes DIR/kubeconfig and DIR/pids; down.sh
# DIR stops it.
#
# The binaries are built from the Go module proxy by go.mod, kwok/go.mod, argocd/go.mod and
# helm/go.mod beside this file, once per set of versions, into $RF_CLUSTER_CACHE (default
# ~/.cache/rollout-forensics/cluster).
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
dir=$(cd "$1" && pwd)
# Argo Rollouts' go.mod asks for Go 1.26.10: the go command fetches this toolchain as a module.
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.27.3}
export GOFLAGS=${GOFLAGS:--buildvcs=false}

cache=${RF_CLUSTER_CACHE:-$HOME/.cache/rollout-forensics/cluster}
key=$(cat "$here/go.mod" "$here/go.sum" "$here/kwok/go.mod" "$here/kwok/go.sum" | sha256sum | cut -c1-16)
bin=$cache/$key
mkdir -p "$bin"
# Argo CD (application controller and repo server) and the helm its repo server runs, unless
# RF_CLUSTER_ARGOCD=0 or in scale mode: cached apart, by their own go.mod files.
argocd=${RF_CLUSTER_ARGOCD:-1}
[ "${RF_CLUSTER_SCALE:-0}" = 1 ] && argocd=0
acd_key=$(cat "$here/argocd/go.mod" "$here/argocd/go.sum" "$here/argocd/main.go" "$here/helm/go.mod" "$here/helm/go.sum" | sha256sum | cut -c1-16)
acd_bin=$cache/argocd-$acd_key

log() { printf 'cluster: %s\n' "$*" >&2; }

build() {
  local module_dir=$1 name=$2 pkg=$3
  if [ ! -x "$bin/$name" ]; then
    log "building $name ($pkg)"
    (cd "$module_dir" && go build -trimpath -o "$bin/$name.tmp" "$pkg") && mv "$bin/$name.tmp" "$bin/$name"
  fi
}
begun=$(date +%s)
build "$here" etcd go.etcd.io/etcd/server/v3
build "$here" kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build "$here" kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
build "$here" kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler
build "$here" kubectl k8s.io/kubernetes/cmd/kubectl
build "$here" rollouts-controller github.com/argoproj/argo-rollouts/cmd/rollouts-controller
build "$here" kubectl-argo-rollouts github.com/argoproj/argo-rollouts/cmd/kubectl-argo-rollouts
build "$here/kwok" kwok sigs.k8s.io/kwok/cmd/kwok
if [ "$argocd" = 1 ]; then
  for tool in redis-server git; do
    command -v "$tool" >/dev/null 2>&1 || { log "Argo CD needs $tool (apt-get install $tool), or RF_CLUSTER_ARGOCD=0"; exit 1; }
  done
  bin_core=$bin
  bin=$acd_bin
  mkdir -p "$bin"
  build "$here/argocd" argocd .
  build "$here/helm" helm helm.sh/helm/v4/cmd/helm
  bin=$bin_core
  # One binary, called by the name of the component it runs.
  ln -sf argocd "$acd_bin/argocd-application-controller"
  ln -sf argocd "$acd_bin/argocd-repo-server"
fi
built=$(date +%s)
log "binaries ready in $((built - begun)) s: $bin"
echo "$bin" > "$dir/bin"

# Free loopback ports, asked of the kernel.
read -r etcd_client etcd_peer api_port healthz_port metrics_port redis_port repo_port repo_metrics acd_metrics < <(python3 - <<'EOF'
import socket
socks = [socket.socket() for _ in range(9)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])
EOF
)

# A CA, the API server's certificate, the service-account keys, and one client certificate per
# component (CN is the user, O the group).
pki=$dir/pki
mkdir -p "$pki"
openssl genrsa -out "$pki/ca.key" 2048 2>/dev/null
openssl req -x509 -new -key "$pki/ca.key" -subj "/CN=rollout-forensics-test-ca" -days 2 -out "$pki/ca.crt" 2>/dev/null
openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
cert() {
  # X.509 v3 (extensions), as rustls and Go's TLS both accept.
  local name=$1 subject=$2 ext=${3:-extendedKeyUsage=clientAuth}
  openssl genrsa -out "$pki/$name.key" 2048 2>/dev/null
  openssl req -new -key "$pki/$name.key" -subj "$subject" -out "$pki/$name.csr" 2>/dev/null
  printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n%s\n' "$ext" > "$pki/$name.ext"
  openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 2 -extfile "$pki/$name.ext" -out "$pki/$name.crt" 2>/dev/null
}
cert apiserver "/CN=kube-apiserver" "extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default"
cert admin "/O=system:masters/CN=admin"
cert controller-manager "/CN=system:kube-controller-manager"
cert scheduler "/CN=system:kube-scheduler"
# The Argo Rollouts controller and kwok run as cluster admins: what they may do is not what
# these tests check (the recorder's own RBAC is).
cert rollouts "/O=system:masters/CN=argo-rollouts"
cert kwok "/O=system:masters/CN=kwok"
cert argocd "/O=system:masters/CN=argocd-application-controller"

kubeconfig() {
  local user=$1 out=$2
  cat > "$out" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: https://127.0.0.1:$api_port
    certificate-authority: $pki/ca.crt
users:
- name: $user
  user:
    client-certificate: $pki/$user.crt
    client-key: $pki/$user.key
contexts:
- name: test
  context: {cluster: test, user: $user, namespace: default}
current-context: test
EOF
}
for u in admin controller-manager scheduler rollouts kwok argocd; do kubeconfig "$u" "$pki/$u.kubeconfig"; done
# Argo CD reads its settings from the namespace of its kubeconfig's context.
sed -i 's/namespace: default/namespace: argocd/' "$pki/argocd.kubeconfig"

# The audit log holds every write to the kinds rollout-forensics records, with its object:
# the ground truth a recording is checked against.
cat > "$dir/audit-policy.yaml" <<'EOF'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: None
  verbs: [get, list, watch]
- level: RequestResponse
  resources:
  - group: argoproj.io
    resources: [rollouts, rollouts/status, analysisruns, analysistemplates, experiments, applications]
  - group: apps
    resources: [replicasets, replicasets/status, replicasets/scale, deployments, deployments/status, deployments/scale]
  - group: ""
    resources: [services, pods, pods/status, events]
  - group: discovery.k8s.io
    resources: [endpointslices]
  - group: events.k8s.io
    resources: [events]
  - group: networking.k8s.io
    resources: [ingresses]
- level: None
EOF

: > "$dir/pids"
# Each component's command line is kept in DIR/NAME.cmd, so fault.sh can start it again.
start() {
  local name=$1
  shift
  printf '%q ' "$@" > "$dir/$name.cmd"
  "$@" >> "$dir/$name.log" 2>&1 &
  echo "$! $name" >> "$dir/pids"
}

# RF_CLUSTER_SCALE=1 (tests/cluster/scale.sh): no audit log (at RequestResponse it would cost the
# apiserver more than the 20,000 pods do), and the controllers' client rate limits raised so that
# many pods start in minutes, not hours.
audit=(--audit-policy-file "$dir/audit-policy.yaml" --audit-log-path "$dir/audit.log"
  --audit-log-format json --audit-log-mode blocking --audit-log-maxsize 0)
kcm_scale=()
rollouts_scale=()
if [ "${RF_CLUSTER_SCALE:-0}" = 1 ]; then
  audit=()
  kcm_scale=(--kube-api-qps 2000 --kube-api-burst 4000 --concurrent-replicaset-syncs 20
    --concurrent-service-endpoint-syncs 20)
  rollouts_scale=(--qps 2000 --burst 4000 --rollout-threads 20)
fi

start etcd "$bin/etcd" --data-dir "$dir/etcd" --name test \
  --listen-client-urls "http://127.0.0.1:$etcd_client" --advertise-client-urls "http://127.0.0.1:$etcd_client" \
  --listen-peer-urls "http://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
  --initial-cluster "test=http://127.0.0.1:$etcd_peer" --log-level warn
echo "$etcd_client" > "$dir/etcd-port"

# TaintNodesByCondition is off: it taints each new node not-ready, a taint only the node
# lifecycle controller (not run, see below) would lift.
start kube-apiserver "$bin/kube-apiserver" \
  --etcd-servers "http://127.0.0.1:$etcd_client" \
  --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
  --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
  --client-ca-file "$pki/ca.crt" \
  --service-account-issuer https://kubernetes.default.svc \
  --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
  --service-cluster-ip-range 10.96.0.0/16 \
  --authorization-mode Node,RBAC \
  "${audit[@]}" \
  --storage-media-type application/json \
  --enable-priority-and-fairness=false \
  --disable-admission-plugins TaintNodesByCondition

kc() { "$bin/kubectl" --kubeconfig "$pki/admin.kubeconfig" "$@"; }
cp "$pki/admin.kubeconfig" "$dir/kubeconfig"

wait_for() {
  local what=$1 limit=$2
  shift 2
  local t=0
  until "$@" >/dev/null 2>&1; do
    t=$((t + 1))
    if [ "$t" -gt "$limit" ]; then
      log "$what not ready after ${limit}s; its log:"
      tail -n 30 "$dir/$what.log" >&2 || true
      exit 1
    fi
    sleep 1
  done
}
wait_for kube-apiserver 120 kc get --raw /readyz

# No node lifecycle controller: kwok's heartbeats can lag on a busy 2-core machine, and that
# controller would then mark every pod not Ready and flap the rollouts under test.
start kube-controller-manager "$bin/kube-controller-manager" \
  --kubeconfig "$pki/controller-manager.kubeconfig" \
  --authentication-kubeconfig "$pki/controller-manager.kubeconfig" \
  --authorization-kubeconfig "$pki/controller-manager.kubeconfig" \
  --bind-address 127.0.0.1 --secure-port 0 --leader-elect=false \
  --controllers replicaset,deployment,job,endpointslice,endpoint,garbagecollector,serviceaccount,serviceaccount-token,namespace \
  --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
  --use-service-account-credentials=true "${kcm_scale[@]}"
start kube-scheduler "$bin/kube-scheduler" \
  --kubeconfig "$pki/scheduler.kubeconfig" \
  --authentication-kubeconfig "$pki/scheduler.kubeconfig" \
  --authorization-kubeconfig "$pki/scheduler.kubeconfig" \
  --bind-address 127.0.0.1 --secure-port 0 --leader-elect=false

# Fake nodes, run by kwok: pods scheduled on them become Running and Ready.
for i in 0 1 2; do
  kc apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-$i
  annotations: {kwok.x-k8s.io/node: fake}
  labels: {type: kwok, kubernetes.io/hostname: kwok-node-$i}
spec: {}
status:
  allocatable: {cpu: "64", memory: 256Gi, pods: "10000"}
  capacity: {cpu: "64", memory: 256Gi, pods: "10000"}
EOF
done
start kwok "$bin/kwok" --kubeconfig "$pki/kwok.kubeconfig" \
  --manage-all-nodes=false --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
  --cidr 10.244.0.0/16 --node-ip 127.0.0.1

# Argo Rollouts: its CRDs as its module ships them, then the controller.
rollouts_dir=$(cd "$here" && go list -m -f '{{.Dir}}' github.com/argoproj/argo-rollouts)
kc apply --server-side -k "$rollouts_dir/manifests/crds/" >/dev/null
wait_for kube-apiserver 60 kc wait --for condition=established --timeout 1s crd/rollouts.argoproj.io
# The Istio VirtualService API, for the controller's Istio traffic routing (no Istio runs).
kc apply --server-side -f "$here/istio-virtualservice-crd.yaml" >/dev/null
wait_for kube-apiserver 60 kc wait --for condition=established --timeout 1s crd/virtualservices.networking.istio.io
# The prometheus-operator's ServiceMonitor and PrometheusRule APIs (no operator runs), for
# deploy/monitoring.yaml: the CRDs as its module ships them.
promop=$(cd "$dir" && GOFLAGS=-mod=mod go mod download -json github.com/prometheus-operator/prometheus-operator@v0.85.0 \
  | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
for crd in servicemonitors prometheusrules; do
  kc apply --server-side -f "$promop/example/prometheus-operator-crd/monitoring.coreos.com_$crd.yaml" >/dev/null
  wait_for kube-apiserver 60 kc wait --for condition=established --timeout 1s "crd/$crd.monitoring.coreos.com"
done
start rollouts-controller "$bin/rollouts-controller" --kubeconfig "$pki/rollouts.kubeconfig" \
  --leader-elect=false --healthzPort "$healthz_port" --metricsPort "$metrics_port" "${rollouts_scale[@]}"

if [ "$argocd" = 1 ]; then
  # Argo CD: its CRDs as its module ships them, its settings, the default project (Applications
  # may live in any namespace, so each test keeps its own beside its rollout), a redis-server,
  # the repo server (which runs git and helm) and the application controller. Both read the
  # reconciliation timeout (and the repo server its revision cache) from the same variable, as
  # in Argo CD's own manifests; 20 s keeps a test's "next refresh" short. The controller reaches
  # the cluster through its kubeconfig as if in the cluster (ARGOCD_FAKE_IN_CLUSTER).
  echo "$acd_bin" > "$dir/argocd-bin"
  acd_src=$(cd "$here/argocd" && go list -m -f '{{.Dir}}' github.com/argoproj/argo-cd/v3)
  kc apply --server-side -k "$acd_src/manifests/crds/" >/dev/null
  wait_for kube-apiserver 60 kc wait --for condition=established --timeout 1s crd/applications.argoproj.io crd/appprojects.argoproj.io
  # (apply, not create: a cluster directory started again keeps its etcd data)
  kc create namespace argocd --dry-run=client -o yaml | kc apply -f - >/dev/null
  kc apply -n argocd -f - >/dev/null <<EOF
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-cm, labels: {app.kubernetes.io/part-of: argocd}}
data: {}
---
apiVersion: v1
kind: Secret
metadata: {name: argocd-secret, labels: {app.kubernetes.io/part-of: argocd}}
stringData: {server.secretkey: "$(openssl rand -hex 16)"}
---
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: default}
spec:
  sourceRepos: ["*"]
  sourceNamespaces: ["*"]
  destinations: [{server: "*", namespace: "*"}]
  clusterResourceWhitelist: [{group: "*", kind: "*"}]
EOF
  mkdir -p "$dir/argocd-home" "$dir/argocd-tmp" "$dir/argocd-path"
  # The repo server runs git-verify-wrapper.sh at every checkout (its image has it on PATH);
  # it is taken from the module, as the image's Dockerfile takes it from the source.
  for w in git-verify-wrapper.sh gpg-wrapper.sh; do
    install -m 0755 "$acd_src/hack/$w" "$dir/argocd-path/$w"
  done
  start redis-server redis-server --bind 127.0.0.1 --port "$redis_port" --save '' --appendonly no
  acd_env=(env "PATH=$acd_bin:$dir/argocd-path:$PATH" "HOME=$dir/argocd-home" "TMPDIR=$dir/argocd-tmp"
    ARGOCD_RECONCILIATION_TIMEOUT=20s ARGOCD_RECONCILIATION_JITTER=0s ARGOCD_GPG_ENABLED=false
    ARGOCD_FAKE_IN_CLUSTER=true "KUBECONFIG=$pki/argocd.kubeconfig")
  start argocd-repo-server "${acd_env[@]}" "$acd_bin/argocd-repo-server" \
    --address 127.0.0.1 --port "$repo_port" --metrics-address 127.0.0.1 --metrics-port "$repo_metrics" \
    --redis "127.0.0.1:$redis_port" --disable-tls --client-ca-path "" --logformat text
  start argocd-application-controller "${acd_env[@]}" "$acd_bin/argocd-application-controller" \
    --kubeconfig "$pki/argocd.kubeconfig" --repo-server "127.0.0.1:$repo_port" --repo-server-plaintext \
    --redis "127.0.0.1:$redis_port" --metrics-port "$acd_metrics" --application-namespaces '*' \
    --logformat text
  wait_for argocd-repo-server 60 bash -c "exec 3<>/dev/tcp/127.0.0.1/$repo_port"
fi

wait_for kwok 60 sh -c "'$bin/kubectl' --kubeconfig '$pki/admin.kubeconfig' get nodes -o jsonpath='{.items[*].status.conditions[?(@.type==\"Ready\")].status}' | grep -q True"
log "up in $(($(date +%s) - built)) s after the build: KUBECONFIG=$dir/kubeconfig"

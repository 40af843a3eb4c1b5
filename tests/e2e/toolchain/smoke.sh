#!/usr/bin/env bash
# Smoke test of the binaries build.sh produces: start etcd, kube-apiserver,
# kube-scheduler, kube-controller-manager and kwok on 127.0.0.1 (free ports,
# everything in a temp dir), check each is healthy, run a Deployment + PDB
# through them (scheduling, kwok, PDB status, GC, namespace deletion), then
# stop everything. The flags here are the ones NOTES.md documents.
#
#   tests/e2e/toolchain/smoke.sh [BIN_DIR]      (default: the output of build.sh)
#
# KEEP=1 keeps the temp dir (logs, certs) afterwards.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BIN="${1:-$("$here/build.sh")}"
work="$(mktemp -d "${TMPDIR:-/tmp}/reprieve-e2e-smoke.XXXXXX")"
pids=()

say() { echo "smoke: $*" >&2; }
names=()
stop() { # pid name: SIGTERM, then SIGKILL after 10 s
  local pid=$1 name=$2 t0 i
  t0=$(ms)
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    say "$name did not exit 10 s after SIGTERM; SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
  say "$name stopped in $(( $(ms) - t0 )) ms"
}
cleanup() {
  local rc=$? i
  trap - EXIT INT TERM
  if [[ $rc -ne 0 && -n "${KUBECONFIG:-}" ]]; then # state for the post-mortem
    kubectl --request-timeout=10s get nodes,all,pdb,events -A -o wide >"$work/dump.txt" 2>&1 || true
  fi
  # reverse start order: clients first, etcd last (the apiserver hangs on to a dead etcd)
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do stop "${pids[i]}" "${names[i]}"; done
  if [[ "${KEEP:-0}" == 1 || $rc -ne 0 ]]; then say "kept $work"; else rm -rf "$work"; fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ms() { date +%s%3N; }
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_ok() { # name start-ms timeout-s cmd... : poll cmd until it succeeds
  local name=$1 t0=$2 timeout=$3; shift 3
  local deadline=$(( $(ms) + timeout * 1000 ))
  until "$@" >/dev/null 2>&1; do
    if (( $(ms) > deadline )); then say "$name not ready after ${timeout}s"; return 1; fi
    sleep 0.1
  done
  say "$name ready after $(( $(ms) - t0 )) ms"
}
start() { # name cmd... (stdout+stderr to $work/name.log)
  local name=$1; shift
  "$@" >"$work/$name.log" 2>&1 &
  pids+=($!) names+=("$name")
}

# --- certificates (CA, apiserver serving cert, admin client cert, SA key pair) ---
t=$(ms)
cd "$work"
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 \
  -subj "/CN=reprieve-e2e-ca" 2>/dev/null
leaf() { # name subject extensions
  openssl req -new -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null
  printf '%s\n' "$3" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
    -extfile "$1.ext" -out "$1.crt" 2>/dev/null
}
leaf apiserver "/CN=kube-apiserver" \
  "subjectAltName=IP:127.0.0.1,DNS:localhost
extendedKeyUsage=serverAuth
keyUsage=critical,digitalSignature,keyEncipherment"
leaf admin "/O=system:masters/CN=reprieve-e2e-admin" \
  "extendedKeyUsage=clientAuth
keyUsage=critical,digitalSignature,keyEncipherment"
openssl genrsa -out sa.key 2048 2>/dev/null
openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
say "certs generated in $(( $(ms) - t )) ms"

ETCD_PORT=$(freeport) ETCD_PEER_PORT=$(freeport) API_PORT=$(freeport)
SCHED_PORT=$(freeport) KCM_PORT=$(freeport) KWOK_PORT=$(freeport)

cat >admin.kubeconfig <<EOF
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority: $work/ca.crt
users:
- name: admin
  user:
    client-certificate: $work/admin.crt
    client-key: $work/admin.key
contexts:
- name: e2e
  context: {cluster: e2e, user: admin}
current-context: e2e
EOF
export KUBECONFIG="$work/admin.kubeconfig"

# --- etcd ---------------------------------------------------------------------
t=$(ms)
start etcd "$BIN/etcd" \
  --name=e2e --data-dir="$work/etcd-data" \
  --listen-client-urls="http://127.0.0.1:$ETCD_PORT" --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster="e2e=http://127.0.0.1:$ETCD_PEER_PORT" \
  --unsafe-no-fsync --log-level=warn
wait_ok etcd "$t" 30 sh -c "curl -sf http://127.0.0.1:$ETCD_PORT/health | grep -q '\"health\":\"true\"'"

# --- kube-apiserver -----------------------------------------------------------
t=$(ms)
start kube-apiserver "$BIN/kube-apiserver" \
  --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
  --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$API_PORT" \
  --tls-cert-file="$work/apiserver.crt" --tls-private-key-file="$work/apiserver.key" \
  --client-ca-file="$work/ca.crt" \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$work/sa.pub" --service-account-signing-key-file="$work/sa.key" \
  --service-cluster-ip-range=10.96.0.0/16 \
  --authorization-mode=RBAC \
  --endpoint-reconciler-type=none \
  --disable-admission-plugins=TaintNodesByCondition \
  --profiling=false
wait_ok kube-apiserver "$t" 60 sh -c 'kubectl get --raw /readyz | grep -qx ok'
kubectl version >"$work/kubectl-version.txt" 2>&1 || true
cat "$work/kubectl-version.txt" >&2
want="$("$BIN/kube-apiserver" --version | awk '{print $2}')"
grep -q "^Server Version: $want\$" "$work/kubectl-version.txt" || { say "server version is not $want"; exit 1; }

# --- kube-scheduler -----------------------------------------------------------
t=$(ms)
start kube-scheduler "$BIN/kube-scheduler" \
  --kubeconfig="$KUBECONFIG" \
  --authentication-kubeconfig="$KUBECONFIG" --authorization-kubeconfig="$KUBECONFIG" \
  --bind-address=127.0.0.1 --secure-port="$SCHED_PORT" \
  --leader-elect=false
wait_ok kube-scheduler "$t" 60 sh -c "curl -skf https://127.0.0.1:$SCHED_PORT/healthz | grep -qx ok"

# --- kube-controller-manager --------------------------------------------------
t=$(ms)
start kube-controller-manager "$BIN/kube-controller-manager" \
  --kubeconfig="$KUBECONFIG" \
  --authentication-kubeconfig="$KUBECONFIG" --authorization-kubeconfig="$KUBECONFIG" \
  --bind-address=127.0.0.1 --secure-port="$KCM_PORT" \
  --leader-elect=false \
  --controllers=serviceaccount-controller,namespace-controller,deployment-controller,replicaset-controller,disruption-controller,garbage-collector-controller \
  --use-service-account-credentials=false
wait_ok kube-controller-manager "$t" 60 sh -c "curl -skf https://127.0.0.1:$KCM_PORT/healthz | grep -qx ok"

# --- kwok (fakes the kubelets of Nodes annotated kwok.x-k8s.io/node=fake) ---------
t=$(ms)
start kwok "$BIN/kwok" \
  --kubeconfig="$KUBECONFIG" \
  --config="$BIN/kwok-stages.yaml" \
  --manage-all-nodes=false \
  --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
  --cidr=10.0.0.1/24 --node-ip=10.0.0.1 --node-lease-duration-seconds=40 \
  --server-address="127.0.0.1:$KWOK_PORT"
wait_ok kwok "$t" 60 sh -c "curl -sf http://127.0.0.1:$KWOK_PORT/healthz"

# --- a fake node, a Deployment (-> ReplicaSet -> pods) and a PDB ----------------
t=$(ms)
kubectl apply -f - >&2 <<'EOF'
apiVersion: v1
kind: Node
metadata:
  name: fake-node-1
  annotations: {kwok.x-k8s.io/node: fake}
  labels: {type: kwok}
spec: {}
status:   # kept on create; kwok only fills capacity/allocatable when absent (then 1k CPU, 1Ti)
  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
---
apiVersion: v1
kind: Namespace
metadata: {name: smoke}
EOF
wait_ok "namespace default ServiceAccount" "$t" 60 kubectl -n smoke get serviceaccount default
kubectl apply -f - >&2 <<'EOF'
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: smoke}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: registry.invalid/none:1}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: smoke}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
EOF
wait_ok "2 pods Running on the kwok node" "$t" 60 sh -c \
  "test \"\$(kubectl -n smoke get pods --field-selector=status.phase=Running,spec.nodeName=fake-node-1 -o name | wc -l)\" = 2"
wait_ok "PDB status (2 healthy, 1 disruption allowed)" "$t" 60 sh -c \
  "test \"\$(kubectl -n smoke get pdb web -o jsonpath='{.status.currentHealthy}/{.status.disruptionsAllowed}')\" = 2/1"
got="$(kubectl get node fake-node-1 -o jsonpath='{.status.allocatable.cpu}/{.status.allocatable.memory}')"
[[ "$got" == 4/8Gi ]] || { say "node allocatable is $got, want 4/8Gi"; exit 1; }
kubectl get nodes -o wide >&2
kubectl -n smoke get deploy,rs,pods,pdb -o wide >&2

# --- garbage collector: deleting the Deployment removes its ReplicaSet and pods ----
t=$(ms)
kubectl -n smoke delete deployment web --wait=false >&2
wait_ok "garbage collector removed the ReplicaSet and pods" "$t" 60 sh -c \
  "test -z \"\$(kubectl -n smoke get rs,pods -o name)\""

# --- namespace controller: a deleted namespace goes away --------------------------
t=$(ms)
kubectl delete namespace smoke --wait=false >&2
wait_ok "namespace deleted" "$t" 60 sh -c "! kubectl get namespace smoke"
say "all good"

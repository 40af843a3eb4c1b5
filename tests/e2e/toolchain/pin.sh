#!/usr/bin/env bash
# Re-pin the e2e toolchain: regenerate the go.mod/go.sum files of the three
# small Go modules that build.sh builds from. This is the only script that
# chooses versions; build.sh only reads what the go.mod files say.
#
#   tests/e2e/toolchain/pin.sh [K8S_VERSION [ETCD_VERSION [HELM_VERSION]]]
#
# Defaults: K8S_VERSION = newest non-prerelease k8s.io/kubernetes v1.X.Y on the
# Go module proxy; ETCD_VERSION = the go.etcd.io/etcd/server/v3 version that
# k8s.io/kubernetes's own go.mod requires (the etcd it is tested with);
# HELM_VERSION = newest non-prerelease helm.sh/helm/v4 v4.X.Y.
#
# Modules written, one set per Kubernetes release in K8S_VERSION/ (build.sh builds
# the one KUBE_VERSION names, by default the one in DEFAULT_VERSION, which this
# script leaves alone):
#   K8S_VERSION/go.mod  k8s.io/kubernetes + one replace per k8s.io/* staging module
#                (what k8s.io/kubernetes's go.mod replaces to ./staging/...),
#                pointed at the published v0.X.Y of the same release.
#   K8S_VERSION/etcd/go.mod  go.etcd.io/etcd/server/v3 (its own go.mod has replace
#                directives, so `go install ...@version` refuses to build it).
#   K8S_VERSION/kubectl/go.mod  k8s.io/kubernetes's cmd/kubectl with the same replaces
#                (apart, so kubectl's dependencies leave go.sum above as it is).
#   helm/go.mod  helm.sh/helm/v4, shared by every release (its own module: helm's
#                k8s.io/* versions are not the pinned release's).
set -euo pipefail

top="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export GOWORK=off
GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"

newest_stable() { # module [major.minor prefix]
  "$GO" list -m -versions "$1" | tr ' ' '\n' | grep -E "^v${2:-[0-9]+\.[0-9]+\.}[0-9.]*$" |
    sort -V | tail -n1
}

k8s="${1:-$(newest_stable k8s.io/kubernetes '1\.[0-9]+\.')}"
[[ "$k8s" =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || { echo "pin.sh: bad k8s version '$k8s'" >&2; exit 1; }
staging="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
here="$top/$k8s"
mkdir -p "$here"

kmod="$("$GO" mod download -json "k8s.io/kubernetes@$k8s" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')"
# "go" line, replaced staging modules that are also required, etcd server version.
read -r k8s_go etcd_default < <("$GO" mod edit -json "$kmod" | python3 -c '
import json, sys
m = json.load(sys.stdin)
req = {r["Path"]: r["Version"] for r in m.get("Require") or []}
print(m["Go"], req.get("go.etcd.io/etcd/server/v3", ""))')
mapfile -t replaced < <("$GO" mod edit -json "$kmod" | python3 -c '
import json, sys
m = json.load(sys.stdin)
req = {r["Path"] for r in m.get("Require") or []}
for r in m.get("Replace") or []:
    # sample-cli-plugin / sample-controller are replaced but not required
    # by k8s.io/kubernetes, so they are not in the build graph: skip them.
    if r["New"]["Path"].startswith("./staging/") and r["Old"]["Path"] in req:
        print(r["Old"]["Path"])')

etcd="${2:-$etcd_default}"
echo "pin.sh: k8s.io/kubernetes $k8s (staging $staging, ${#replaced[@]} replaces), etcd $etcd" >&2

newmod() { # dir module-path go-version
  mkdir -p "$1"
  rm -f "$1/go.mod" "$1/go.sum"
  (cd "$1" && "$GO" mod init "$2" >/dev/null 2>&1 && "$GO" mod edit -go="$3")
}

# --- kubernetes ------------------------------------------------------------
newmod "$here" reprieve.local/e2e/toolchain "$k8s_go"
args=(-require="k8s.io/kubernetes@$k8s")
for m in "${replaced[@]}"; do args+=(-replace="$m=$m@$staging"); done
for c in kube-apiserver kube-scheduler kube-controller-manager; do args+=(-tool="k8s.io/kubernetes/cmd/$c"); done
(cd "$here" && "$GO" mod edit "${args[@]}" && "$GO" mod tidy)

# --- kubectl ---------------------------------------------------------------
newmod "$here/kubectl" reprieve.local/e2e/toolchain/kubectl "$k8s_go"
args=(-require="k8s.io/kubernetes@$k8s" -tool=k8s.io/kubernetes/cmd/kubectl)
for m in "${replaced[@]}"; do args+=(-replace="$m=$m@$staging"); done
(cd "$here/kubectl" && "$GO" mod edit "${args[@]}" && "$GO" mod tidy)

# --- etcd ------------------------------------------------------------------
emod="$("$GO" mod download -json "go.etcd.io/etcd/server/v3@$etcd" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')"
mkdir -p "$here/etcd"
newmod "$here/etcd" reprieve.local/e2e/toolchain/etcd "$("$GO" mod edit -json "$emod" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Go"])')"
(cd "$here/etcd" && "$GO" mod edit -require="go.etcd.io/etcd/server/v3@$etcd" -tool=go.etcd.io/etcd/server/v3 && "$GO" mod tidy)

# --- helm ------------------------------------------------------------------
helm="${3:-$(newest_stable helm.sh/helm/v4 '4\.[0-9]+\.')}"
hmod="$("$GO" mod download -json "helm.sh/helm/v4@$helm" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')"
mkdir -p "$top/helm"
newmod "$top/helm" reprieve.local/e2e/toolchain/helm "$("$GO" mod edit -json "$hmod" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Go"])')"
(cd "$top/helm" && "$GO" mod edit -require="helm.sh/helm/v4@$helm" -tool=helm.sh/helm/v4/cmd/helm && "$GO" mod tidy)
echo "pin.sh: helm $helm" >&2

echo "pin.sh: done; commit $k8s/ (go.mod/go.sum, etcd/, kubectl/) and helm/; to make $k8s the default, write it to DEFAULT_VERSION" >&2

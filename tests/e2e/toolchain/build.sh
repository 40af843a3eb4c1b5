#!/usr/bin/env bash
# Build the upstream binaries the e2e tests run (kube-apiserver, kube-scheduler,
# kube-controller-manager, etcd, kubectl for the plugin test, helm for the chart
# tests) from the Go module proxy, once per pinned version set, into
#   ${REPRIEVE_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/reprieve-e2e}/<k8s version>/bin/
#
# stdout: the bin directory, and nothing else (progress and timings: stderr).
# Exit status non-zero on failure, with a one-line reason as the last stderr line.
#
# Versions are not written here: they are read from the go.mod files beside
# this script, one set per Kubernetes release (KUBE_VERSION/go.mod, etcd/go.mod,
# kubectl/go.mod; helm/go.mod for every release), which pin.sh writes.
#
# The control plane, kubectl and helm have a stamp each, so that one being
# (re)built does not invalidate the others; helm is built once for every release.
#
# Env:
#   KUBE_VERSION        the Kubernetes release to build (default: DEFAULT_VERSION beside
#                       this script); its go.mod files must be in a folder of that name
#   REPRIEVE_E2E_CACHE  cache root (see above)
#   GO                  go binary (default: go on PATH, else /usr/local/go/bin/go)
#   GOMODCACHE, GOCACHE, GOPROXY ... are honoured as usual by go.
set -euo pipefail

prog="reprieve e2e"
top="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

say() { echo "$prog: $*" >&2; }
die() { echo "$prog: $*" >&2; exit 1; }

# Bump when the build recipe (flags below) changes, to force a rebuild.
RECIPE=2
K8S_TAGS="selinux,notest,grpcnotrace" # as upstream hack/lib/golang.sh (non-debug builds)

# --- pinned versions, read from the go.mod files ----------------------------
modver() { # go.mod module -> version of `require module version` (block or single line)
  awk -v m="$2" '
    $0 ~ /=>/ { next }
    $1 == "require" && $2 == m { print $3; exit }
    $1 == m { print $2; exit }' "$1"
}
wanted="${KUBE_VERSION:-$(cat "$top/DEFAULT_VERSION")}"
here="$top/$wanted"
[[ -f "$here/go.mod" ]] ||
  die "no pinned modules for KUBE_VERSION=$wanted (pinned: $(cd "$top" && ls -d v1.* | tr '\n' ' ')); run tests/e2e/toolchain/pin.sh $wanted"
K8S_VERSION="$(modver "$here/go.mod" k8s.io/kubernetes)"
ETCD_VERSION="$(modver "$here/etcd/go.mod" go.etcd.io/etcd/server/v3)"
[[ "$K8S_VERSION" == "$wanted" ]] ||
  die "$here/go.mod pins k8s.io/kubernetes '$K8S_VERSION', not $wanted; rerun pin.sh $wanted"
[[ "$K8S_VERSION" =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] ||
  die "cannot read the pinned k8s.io/kubernetes version from $here/go.mod (got '$K8S_VERSION'); rerun pin.sh"
K8S_MINOR="${BASH_REMATCH[1]}"
STAGING="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
[[ -n "$ETCD_VERSION" ]] || die "cannot read the pinned etcd version from $here/etcd/go.mod; rerun pin.sh"
HELM_MODULE=helm.sh/helm/v4
HELM_VERSION="$(modver "$top/helm/go.mod" "$HELM_MODULE")"
[[ "$HELM_VERSION" =~ ^v4\.[0-9]+\.[0-9]+$ ]] ||
  die "cannot read the pinned $HELM_MODULE version from $top/helm/go.mod (got '$HELM_VERSION'); rerun pin.sh"
bad="$(awk '$0 ~ /=> k8s\.io\// && $NF != v { print $1 " " $NF }' v="$STAGING" "$here/go.mod" | head -n1)"
[[ -z "$bad" ]] ||
  die "$here/go.mod replaces $bad but k8s.io/kubernetes is $K8S_VERSION (want $STAGING); rerun pin.sh"

COMPONENTS=(kube-apiserver kube-controller-manager kube-scheduler etcd)

cache_root="${REPRIEVE_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/reprieve-e2e}"
dir="$cache_root/$K8S_VERSION"
bin="$dir/bin"
stamp="$dir/build.stamp"
logs="$dir/logs"

# What the stamp must say for bin/ to be reused: versions + recipe + go.mod/go.sum contents.
fingerprint="$(
  printf 'recipe %s\nk8s.io/kubernetes %s\netcd %s\n' "$RECIPE" "$K8S_VERSION" "$ETCD_VERSION"
  cd "$here" && sha256sum go.mod go.sum etcd/go.mod etcd/go.sum
)"

kubectl_stamp="$dir/kubectl.stamp"
kubectl_fingerprint="$(
  printf 'recipe %s\nk8s.io/kubernetes %s\n' "$RECIPE" "$K8S_VERSION"
  cd "$here" && sha256sum kubectl/go.mod kubectl/go.sum
)"

cached() {
  [[ -f "$stamp" && "$(cat "$stamp")" == "$fingerprint" ]] || return 1
  local c
  for c in "${COMPONENTS[@]}"; do [[ -x "$bin/$c" ]] || return 1; done
}

kubectl_cached() {
  [[ -f "$kubectl_stamp" && "$(cat "$kubectl_stamp")" == "$kubectl_fingerprint" && -x "$bin/kubectl" ]]
}

# helm does not depend on the Kubernetes release: built once into its own folder, copied into bin/.
helm_dir="$cache_root/helm-$HELM_VERSION"
helm_stamp="$helm_dir/helm.stamp"
helm_fingerprint="$(
  printf 'recipe %s\n%s %s\n' "$RECIPE" "$HELM_MODULE" "$HELM_VERSION"
  cd "$top" && sha256sum helm/go.mod helm/go.sum
)"
helm_built() { [[ -f "$helm_stamp" && "$(cat "$helm_stamp")" == "$helm_fingerprint" && -x "$helm_dir/helm" ]]; }
helm_cached() { helm_built && [[ -x "$bin/helm" ]] && cmp -s "$helm_dir/helm" "$bin/helm"; }

if cached && kubectl_cached && helm_cached; then echo "$bin"; exit 0; fi

mkdir -p "$dir" || die "cannot create the cache directory $dir"
# One build at a time per version (parallel test workers may all call this).
if command -v flock >/dev/null 2>&1; then
  exec 9>"$dir/.lock"
  flock 9 || die "cannot lock $dir/.lock"
  if cached && kubectl_cached && helm_cached; then echo "$bin"; exit 0; fi
fi

GO="${GO:-$(command -v go || true)}"
[[ -z "$GO" && -x /usr/local/go/bin/go ]] && GO=/usr/local/go/bin/go
[[ -n "$GO" ]] || die "go not found on PATH (Go >= 1.26 is needed to build the e2e binaries)"

export GOWORK=off CGO_ENABLED=0

now() { date +%s.%N; }
dt() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }
reason() { # first informative line of a go log
  local r
  r="$(grep -m1 -E '^go: |\.go:[0-9]+(:[0-9]+)?: |[Ee]rror' "$1" || true)"
  [[ -n "$r" ]] || r="$(grep -v '^[[:space:]]*$' "$1" | tail -n1 || true)"
  printf '%s' "${r:0:300}"
}
fail() { # what log
  tail -n 20 "$2" >&2 || true
  die "$1 failed: $(reason "$2"); see log $2"
}

build_flags=(-mod=readonly -trimpath -buildvcs=false)
ts="$(cd "$here" && "$GO" list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes 2>/dev/null || true)"
k8s_ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  k8s_ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$K8S_MINOR"
  [[ -n "$ts" ]] && k8s_ldflags+=" -X $pkg.buildDate=$ts"
done

build_control_plane() {
  rm -f "$stamp"
  rm -rf "$logs" "$dir/bin.partial"
  mkdir -p "$logs" "$dir/bin.partial"
  out="$dir/bin.partial"

  say "building kube-apiserver/kube-controller-manager/kube-scheduler $K8S_VERSION, etcd $ETCD_VERSION into $bin (logs: $logs)"
  t_all="$(now)"

  # --- download ---------------------------------------------------------------
  t="$(now)"
  for m in ".:kubernetes $K8S_VERSION" "etcd:etcd $ETCD_VERSION"; do
    d="${m%%:*}" what="${m#*:}" log="$logs/download-${d/./kubernetes}.log"
    (cd "$here/$d" && "$GO" mod download -x) >"$log" 2>&1 ||
      fail "downloading the Go modules for $what from the Go module proxy" "$log"
  done
  say "download: $(dt "$t")"

  # --- compile ----------------------------------------------------------------
  for c in kube-apiserver kube-controller-manager kube-scheduler; do
    t="$(now)" log="$logs/$c.log"
    (cd "$here" && "$GO" build "${build_flags[@]}" -tags "$K8S_TAGS" -ldflags "$k8s_ldflags" \
      -o "$out/$c" "k8s.io/kubernetes/cmd/$c") >"$log" 2>&1 ||
      fail "building $c $K8S_VERSION from the Go module proxy" "$log"
    say "compile $c: $(dt "$t")"
  done

  t="$(now)" log="$logs/etcd.log"
  (cd "$here/etcd" && "$GO" build "${build_flags[@]}" \
    -ldflags "-s -w" \
    -o "$out/etcd" go.etcd.io/etcd/server/v3) >"$log" 2>&1 ||
    fail "building etcd $ETCD_VERSION from the Go module proxy" "$log"
  say "compile etcd: $(dt "$t")"

  # --- sanity check, publish, stamp last ---------------------------------------
  for c in "${COMPONENTS[@]}"; do
    log="$logs/$c.version.log"
    "$out/$c" --version >"$log" 2>&1 || fail "running the freshly built $c --version" "$log"
  done
  grep -q "Kubernetes $K8S_VERSION" "$logs/kube-apiserver.version.log" ||
    die "kube-apiserver --version does not report $K8S_VERSION: $(head -c 200 "$logs/kube-apiserver.version.log")"

  for c in kubectl helm; do # built apart, kept (their own stamps)
    if [[ -x "$bin/$c" ]]; then cp -p "$bin/$c" "$out/$c"; fi
  done
  rm -rf "$bin"
  mv "$out" "$bin"
  printf '%s\n' "$fingerprint" >"$stamp.tmp" && mv "$stamp.tmp" "$stamp"
  say "done in $(dt "$t_all"): $(cd "$bin" && du -ch "${COMPONENTS[@]}" | tail -n1 | cut -f1) in $bin"
}

# kubectl, for the `kubectl reprieve` plugin test: upstream's cmd/kubectl, from its own module
# (kubectl/go.mod) so that its dependencies do not touch the control plane's go.sum.
build_kubectl() {
  local t log="$logs/kubectl.log"
  t="$(now)"
  mkdir -p "$logs" "$bin"
  rm -f "$kubectl_stamp"
  say "building kubectl $K8S_VERSION into $bin"
  (cd "$here/kubectl" && "$GO" mod download -x) >"$logs/download-kubectl.log" 2>&1 ||
    fail "downloading the Go modules for kubectl $K8S_VERSION from the Go module proxy" "$logs/download-kubectl.log"
  (cd "$here/kubectl" && "$GO" build "${build_flags[@]}" -tags "$K8S_TAGS" -ldflags "$k8s_ldflags" \
    -o "$bin/kubectl.partial" k8s.io/kubernetes/cmd/kubectl) >"$log" 2>&1 ||
    fail "building kubectl $K8S_VERSION from the Go module proxy" "$log"
  "$bin/kubectl.partial" version --client >"$logs/kubectl.version.log" 2>&1 ||
    fail "running the freshly built kubectl version --client" "$logs/kubectl.version.log"
  grep -q "$K8S_VERSION" "$logs/kubectl.version.log" ||
    die "kubectl version does not report $K8S_VERSION: $(head -c 200 "$logs/kubectl.version.log")"
  mv "$bin/kubectl.partial" "$bin/kubectl"
  printf '%s\n' "$kubectl_fingerprint" >"$kubectl_stamp.tmp" && mv "$kubectl_stamp.tmp" "$kubectl_stamp"
  say "compile kubectl: $(dt "$t")"
}

# helm, for the chart tests (helm lint, template): helm.sh/helm/v4 cmd/helm from its own module
# (helm/go.mod: helm's k8s.io/* versions are not the pinned release's), flags as helm's Makefile.
build_helm() {
  local t log="$helm_dir/helm.log"
  t="$(now)"
  mkdir -p "$helm_dir"
  rm -f "$helm_stamp"
  say "building helm $HELM_VERSION into $helm_dir (log: $log)"
  (cd "$top/helm" && "$GO" mod download -x) >"$helm_dir/download-helm.log" 2>&1 ||
    fail "downloading the Go modules for helm $HELM_VERSION from the Go module proxy" "$helm_dir/download-helm.log"
  (cd "$top/helm" && "$GO" build "${build_flags[@]}" \
    -ldflags "-s -w -X $HELM_MODULE/internal/version.version=$HELM_VERSION" \
    -o "$helm_dir/helm.partial" "$HELM_MODULE/cmd/helm") >"$log" 2>&1 ||
    fail "building helm $HELM_VERSION from the Go module proxy" "$log"
  "$helm_dir/helm.partial" version --short >"$helm_dir/helm.version.log" 2>&1 ||
    fail "running the freshly built helm version" "$helm_dir/helm.version.log"
  grep -q "^$HELM_VERSION" "$helm_dir/helm.version.log" ||
    die "helm version does not report $HELM_VERSION: $(head -c 200 "$helm_dir/helm.version.log")"
  mv "$helm_dir/helm.partial" "$helm_dir/helm"
  printf '%s\n' "$helm_fingerprint" >"$helm_stamp.tmp" && mv "$helm_stamp.tmp" "$helm_stamp"
  say "compile helm: $(dt "$t")"
}

cached || build_control_plane
kubectl_cached || build_kubectl
if ! helm_cached; then
  helm_built || build_helm
  mkdir -p "$bin" && cp -p "$helm_dir/helm" "$bin/helm.partial" && mv "$bin/helm.partial" "$bin/helm"
fi
echo "$bin"

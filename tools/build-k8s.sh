#!/usr/bin/env bash
# Builds the control-plane binaries that envtest and the simulator run —
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler — from the Go
# module proxy, into .cache/k8s/<kube version>-etcd-<etcd version>/.
# The versions are pinned by tools/kube/go.mod and tools/etcd/go.mod.
# Idempotent: binaries already built for these versions are left alone.
# Prints the output directory (usable as KUBEBUILDER_ASSETS) on stdout.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
kube_version=$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" {print $3}' "$root/tools/kube/go.mod")
etcd_version=$(awk '$1 == "require" && $2 == "go.etcd.io/etcd/server/v3" {print $3}' "$root/tools/etcd/go.mod")
[ -n "$kube_version" ] && [ -n "$etcd_version" ] || { echo "build-k8s: cannot read pinned versions from tools/*/go.mod" >&2; exit 1; }

out="$root/.cache/k8s/${kube_version}-etcd-${etcd_version}"
mkdir -p "$out"

build() { # build <module dir> <version ldflags> <name>=<package>...: the binaries not built yet
  local dir=$1 ldflags=$2 spec names=() pkgs=()
  shift 2
  for spec in "$@"; do
    [ -x "$out/${spec%%=*}" ] || { names+=("${spec%%=*}"); pkgs+=("${spec#*=}"); }
  done
  [ ${#names[@]} -gt 0 ] || return 0
  echo "build-k8s: building ${names[*]}..." >&2
  local start=$SECONDS tmp i
  tmp=$(mktemp -d "$out/.build.XXXXXX")
  # Static and -trimpath, as the Makefile builds every binary (GOBUILD):
  # the LeaderWorkerSet controller, at these dependency versions where it can
  # be (tools/align.sh), reuses what this build compiled. One go build for
  # several binaries shares its package graph and links them side by side.
  (cd "$root/tools/$dir" && CGO_ENABLED=0 go build -trimpath -mod=readonly -ldflags "-s -w $ldflags" -o "$tmp/bin/" "${pkgs[@]}") || { rm -rf "$tmp"; return 1; }
  for i in "${!names[@]}"; do
    # go build names a binary after its package path's last element that
    # is not a major version (go.etcd.io/etcd/server/v3: server).
    local base=${pkgs[$i]##*/}
    [[ $base =~ ^v[0-9]+$ ]] && { base=${pkgs[$i]%/*}; base=${base##*/}; }
    mv "$tmp/bin/$base" "$out/${names[$i]}"
  done
  rm -rf "$tmp"
  echo "build-k8s: built ${names[*]} in $((SECONDS - start))s" >&2
}

kver="-X k8s.io/component-base/version.gitVersion=${kube_version} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$kube_version" | cut -d. -f2)"
# etcd is a module of its own: built beside the Kubernetes binaries, its
# download and compile fill the time their downloads and links leave the
# CPUs idle on a fresh machine.
build etcd "" etcd=go.etcd.io/etcd/server/v3 &
etcd_pid=$!
kube_rc=0
build kube "$kver" kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager kube-scheduler=k8s.io/kubernetes/cmd/kube-scheduler || kube_rc=$?
etcd_rc=0
wait "$etcd_pid" || etcd_rc=$?
[ "$kube_rc" -eq 0 ] && [ "$etcd_rc" -eq 0 ] || { echo "build-k8s: failed (Kubernetes binaries exit $kube_rc, etcd exit $etcd_rc)" >&2; exit 1; }

echo "$out"

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

build() { # build <module dir> <package> <binary name> <version ldflag>
  local dir=$1 pkg=$2 name=$3 ldflags=$4
  if [ -x "$out/$name" ]; then return 0; fi
  echo "build-k8s: building $name ($pkg)..." >&2
  local start=$SECONDS
  # Static and -trimpath, as the Makefile builds every binary (GOBUILD):
  # the LeaderWorkerSet controller, at these dependency versions where it can
  # be (tools/align.sh), reuses what this build compiled.
  (cd "$root/tools/$dir" && CGO_ENABLED=0 go build -trimpath -mod=readonly -ldflags "-s -w $ldflags" -o "$out/$name.tmp" "$pkg")
  mv "$out/$name.tmp" "$out/$name"
  echo "build-k8s: built $name in $((SECONDS - start))s" >&2
}

kver="-X k8s.io/component-base/version.gitVersion=${kube_version} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$kube_version" | cut -d. -f2)"
build etcd go.etcd.io/etcd/server/v3 etcd ""
build kube k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver "$kver"
build kube k8s.io/kubernetes/cmd/kube-controller-manager kube-controller-manager "$kver"
build kube k8s.io/kubernetes/cmd/kube-scheduler kube-scheduler "$kver"

echo "$out"

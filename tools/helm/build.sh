#!/bin/sh
# Builds the pinned helm (tools/helm/go.mod) into .cache/bin/helm, as
# released helm is built: its Makefile links in the Kubernetes version of the
# client-go it uses (1.<client-go minor>), which helm template and helm lint
# assume when they ask no cluster, and which a chart's kubeVersion is checked
# against. Built without it, helm assumes Kubernetes 1.20.
#
# One build path for make helm and the chart tests. The binary is moved into
# place whole, so a caller running the old one is not disturbed.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin="${1:-$root/.cache/bin/helm}"
case "$bin" in /*) ;; *) bin="$PWD/$bin" ;; esac
mkdir -p "$(dirname "$bin")"
cd "$here"
minor=$(${GO:-go} list -m -f '{{.Version}}' k8s.io/client-go | cut -d. -f2)
ldflags=""
for p in chartutil lint/rules; do
  ldflags="$ldflags -X helm.sh/helm/v3/pkg/$p.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/$p.k8sVersionMinor=$minor"
done
CGO_ENABLED=0 ${GO:-go} build -trimpath -ldflags "$ldflags" -o "$bin.tmp" helm.sh/helm/v3/cmd/helm
mv "$bin.tmp" "$bin"

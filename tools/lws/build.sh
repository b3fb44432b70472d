#!/bin/sh
# Builds the pinned LeaderWorkerSet controller (tools/lws/go.mod) into
# .cache/bin/lws-controller and copies its CRDs from the module into
# .cache/lws/crds. One build path for make lws and for dynamo-sim up, which
# runs it in the background when the controller is not built yet.
#
# Several callers may run it at once (CI's features-sim and scenarios side
# by side, a simulator's background build): a lock serialises them, and a
# build finding the binary up to date does nothing. The binary appears last,
# so its presence says the CRDs are there too.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cache="$root/.cache"
bin="$cache/bin/lws-controller"
crds="$cache/lws/crds"
mkdir -p "$cache/bin" "$cache/lws"
exec 9>"$cache/lws/.lock"
flock 9
if [ -x "$bin" ] && [ "$bin" -nt "$here/build.sh" ] && [ "$bin" -nt "$here/go.mod" ] && [ "$bin" -nt "$here/go.sum" ] && [ -d "$crds" ]; then
  exit 0
fi
cd "$here"
# Built as the Kubernetes binaries are (tools/build-k8s.sh), whose
# dependency versions tools/align.sh gives this module where it can: the
# packages they share are compiled once.
CGO_ENABLED=0 ${GO:-go} build -trimpath -o "$bin.tmp" sigs.k8s.io/lws/cmd
rm -rf "$crds.tmp" && mkdir -p "$crds.tmp"
cp "$(${GO:-go} list -m -f '{{.Dir}}' sigs.k8s.io/lws)"/config/crd/bases/*.yaml "$crds.tmp/"
chmod u+w "$crds.tmp"/*.yaml
rm -rf "$crds" && mv "$crds.tmp" "$crds"
mv "$bin.tmp" "$bin"

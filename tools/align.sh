#!/usr/bin/env bash
# Raises each tool module's dependencies to the versions the module whose
# compiled packages it can share builds with (tools/align/main.go says why):
# helm, controller-gen and the image builder to the operator's, the
# LeaderWorkerSet controller to the Kubernetes binaries'. etcd keeps its own:
# the server is run as released. Run after changing any go.mod; CI fails when
# it would change one (make verify-align).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root/tools"
go run ./align "$root/tools/helm" "$root"
go run ./align "$root/tools" "$root"
go run ./align "$root/tools/image" "$root"
go run ./align "$root/tools/lws" "$root/tools/kube"

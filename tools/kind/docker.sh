#!/usr/bin/env bash
# Makes a Docker engine ready for kind (make docker): installs Debian's
# docker.io when dockerd is missing, and starts dockerd when it does not
# answer, with runc-capfilter as its default runtime. Idempotent: a running
# engine is left alone (it says whether its default runtime is the filter).
#
# Why the runtime: where the machine's capability bounding set lacks a
# capability (here CAP_SYS_RESOURCE), runc cannot start a --privileged
# container; runc-capfilter removes what cannot be granted and runs runc
# (tools/kind/runc-capfilter). Without systemd on the machine, dockerd runs
# in the background with its log in .cache/kind/dockerd.log.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cache="$root/.cache/kind"
mkdir -p "$cache/bin"

if docker info >/dev/null 2>&1; then
  runtime=$(docker info --format '{{.DefaultRuntime}}')
  echo "docker: the engine is running (default runtime: $runtime)"
  [ "$runtime" = capfilter ] || echo "docker: not started by make docker; privileged containers fail here if the bounding set is reduced" >&2
  exit 0
fi

if ! command -v dockerd >/dev/null; then
  echo "docker: installing Debian's docker.io..."
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
fi

# The filter is installed outside the work tree: dockerd keeps its path
# for as long as it runs, and make clean-ups must not pull it away.
(cd "$root/tools/kind" && CGO_ENABLED=0 go build -trimpath -o "$cache/bin/runc-capfilter" ./runc-capfilter)
install -m 0755 "$cache/bin/runc-capfilter" /usr/local/sbin/runc-capfilter

# Containers reach each other and the outside through the host's
# forwarding; dockerd sets it too, but only when it manages iptables.
sysctl -qw net.ipv4.ip_forward=1 || true

echo "docker: starting dockerd (log: $cache/dockerd.log)"
nohup dockerd --add-runtime capfilter=/usr/local/sbin/runc-capfilter --default-runtime capfilter \
  >"$cache/dockerd.log" 2>&1 </dev/null &
echo $! >"$cache/dockerd.pid"
for _ in $(seq 60); do
  if docker info >/dev/null 2>&1; then
    echo "docker: ready (default runtime: $(docker info --format '{{.DefaultRuntime}}'))"
    exit 0
  fi
  if ! kill -0 "$(cat "$cache/dockerd.pid")" 2>/dev/null; then break; fi
  sleep 1
done
echo "docker: dockerd did not come up; the end of its log:" >&2
tail -20 "$cache/dockerd.log" >&2
exit 1

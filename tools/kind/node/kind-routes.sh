#!/bin/sh
# The kind-routes DaemonSet's loop (cni.yaml): on every change to a node (a
# new one, its pod CIDR, its address), read every node's name, pod CIDR and
# address; write this node's CNI configuration when it changes, and route
# the other nodes' pod CIDRs through them. A node that joins is routed to at
# once, before its pods start (a periodic sync would leave seconds without).
set -eu
sa=/var/run/secrets/kubernetes.io/serviceaccount
server=${CONTROL_PLANE_ENDPOINT:+https://$CONTROL_PLANE_ENDPOINT}
server=${server:-https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT}
conf=/etc/cni/net.d/10-kind-routes.conflist
k() { kubectl --server="$server" --certificate-authority="$sa/ca.crt" --token="$(cat "$sa/token")" "$@"; }

sync() {
  k get nodes -o jsonpath='{range .items[*]}{.metadata.name} {.spec.podCIDR} {.status.addresses[?(@.type=="InternalIP")].address}{"\n"}{end}' \
    >/tmp/nodes || return 1
  while read -r name cidr ip; do
    [ -n "$cidr" ] && [ -n "$ip" ] || continue
    if [ "$name" = "$NODE_NAME" ]; then
      cat >/tmp/conf <<JSON
{
  "cniVersion": "0.4.0",
  "name": "kind-routes",
  "plugins": [
    {
      "type": "ptp",
      "ipMasq": false,
      "mtu": 1500,
      "ipam": {
        "type": "host-local",
        "dataDir": "/run/cni-ipam-state",
        "ranges": [[{"subnet": "$cidr"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
JSON
      if ! cmp -s /tmp/conf "$conf"; then
        cp /tmp/conf "$conf.tmp" && mv "$conf.tmp" "$conf"
        echo "wrote $conf for $cidr"
      fi
    else
      ip route replace "$cidr" via "$ip"
    fi
  done </tmp/nodes
}

while true; do
  sync || echo "cannot read the nodes; trying again"
  # The watch ends now and then (the server's timeout); the loop starts it
  # again after a full sync.
  k get nodes --watch-only -o name 2>/dev/null | while read -r _; do sync || true; done
  sleep 2
done

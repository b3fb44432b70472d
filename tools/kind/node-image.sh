#!/usr/bin/env bash
# Builds kind's node image without a registry (make kind-image), or loads it
# from its archive in KIND_CACHE when one was built from the same inputs.
# Prints the image's name on stdout.
#
# KIND_CACHE (default $XDG_CACHE_HOME/dynamo-operator/kind, else
# ~/.cache/dynamo-operator/kind) holds what takes long to make: the node's
# Kubernetes binaries, CoreDNS, the Debian root and the node image's
# archive. It is outside the clone, so a fresh clone of the repository (CI)
# finds them, as it finds Go's build cache; what a clone made in its own
# .cache/kind before is taken over (hard links) the first time.
#
# kind's own node image (kindest/node) comes from a registry. This one is
# assembled from what is reachable here, in the layout kind expects (kind's
# images/base/Dockerfile and pkg/build/nodeimage, read from the kind module
# that tools/kind/go.mod pins):
#   - a Debian root file system (debootstrap): systemd, containerd, runc,
#     iptables, nftables, conntrack, the CNI plugins (containernetworking-plugins);
#   - kind's base files (entrypoint, systemd units, containerd configuration),
#     from the kind module;
#   - kubelet, kubeadm, kubectl and kube-proxy built from the Go module proxy
#     at the pinned Kubernetes version (tools/kind/kube/go.mod), as
#     tools/build-k8s.sh builds the control plane;
#   - the images kubeadm runs, imported into the node's containerd at build
#     time: kube-apiserver, kube-controller-manager, kube-scheduler (from
#     tools/build-k8s.sh), kube-proxy, etcd, CoreDNS (tools/kind/coredns),
#     pause (tools/kind/pause), and the CNI DaemonSet's (node/cni.yaml);
#   - runc-capfilter as containerd's runc, so privileged pods run where the
#     capability bounding set is reduced (tools/kind/runc-capfilter).
#
# The archive's name carries a hash of every input (versions, package list,
# this directory's files but the cluster tool's and docker.sh), as .cache/k8s
# is keyed by versions: a changed
# input builds a new image, an unchanged one loads in seconds. The archive
# of the last build is kept, no older one.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
here="$root/tools/kind"
cache="${KIND_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dynamo-operator/kind}"
local_dir="$root/.cache/kind" # the clone's: the programs built from this directory
mkdir -p "$cache" "$local_dir/bin"
log() { echo "kind-image: $*" >&2; }
# adopt <path relative to the cache>: take over what the clone's
# .cache/kind holds from before KIND_CACHE, as hard links (a copy across
# file systems); the clone's copy stays.
adopt() {
  local from="$local_dir/$1" to="$cache/$1"
  [ -e "$to" ] || [ ! -e "$from" ] || [ "$(cd "$local_dir" && pwd -P)" = "$(cd "$cache" && pwd -P)" ] && return 0
  log "taking over $from into $cache"
  mkdir -p "$(dirname "$to")"
  cp -al "$from" "$to.tmp" 2>/dev/null || { rm -rf "$to.tmp"; cp -a "$from" "$to.tmp"; }
  mv "$to.tmp" "$to"
}

gomod_version() { awk -v m="$2" '($1 == "require" && $2 == m) || $1 == m {print ($1 == "require" ? $3 : $2); exit}' "$1"; }
kube_version=$(gomod_version "$root/tools/kube/go.mod" k8s.io/kubernetes)
etcd_version=$(gomod_version "$root/tools/etcd/go.mod" go.etcd.io/etcd/server/v3)
coredns_version=$(gomod_version "$here/coredns/go.mod" github.com/coredns/coredns)
kind_version=$(gomod_version "$here/go.mod" sigs.k8s.io/kind)
[ -n "$kube_version" ] && [ -n "$etcd_version" ] && [ -n "$coredns_version" ] && [ -n "$kind_version" ] ||
  { log "cannot read the pinned versions from the go.mod files"; exit 1; }
kube_node_version=$(gomod_version "$here/kube/go.mod" k8s.io/kubernetes)
[ "$kube_node_version" = "$kube_version" ] ||
  { log "tools/kind/kube/go.mod pins $kube_node_version, tools/kube/go.mod $kube_version: align them"; exit 1; }

# The Debian release and packages of the node (kind's base image's list,
# less what only storage tests need, plus busybox for the CNI image).
suite=trixie
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
packages=systemd,systemd-sysv,dbus,containerd,runc,containernetworking-plugins,iptables,nftables,iproute2,conntrack,ethtool,util-linux,mount,kmod,libseccomp2,ca-certificates,procps,jq,bash,socat,e2fsprogs,pigz,busybox-static

# The pause tag is the one kubeadm of this version deploys; the
# KubeletConfiguration and ClusterConfiguration patches name etcd's and
# CoreDNS's tags (tools/kind/cluster), since these are not kubeadm's defaults.
pause_image=registry.k8s.io/pause:3.10.2
routes_image=kind.local/kind-routes:v1

inputs_hash=$( {
  echo "$kube_version $etcd_version $coredns_version $kind_version $suite $packages $pause_image $routes_image"
  cd "$root" && git ls-files -co --exclude-standard -- tools/kind tools/kube/go.mod tools/etcd/go.mod |
    grep -v -e '\.md$' -e '^tools/kind/cluster/' -e '^tools/kind/docker\.sh$' | LC_ALL=C sort | xargs -r sha256sum
} | sha256sum | cut -c1-12)
image="kind.local/node:${kube_version}-${inputs_hash}"
archive="$cache/node-${kube_version}-${inputs_hash}.tar"
adopt "$(basename "$archive")"

if docker image inspect "$image" >/dev/null 2>&1; then
  log "$image is loaded"
  echo "$image"
  exit 0
fi
if [ -f "$archive" ]; then
  log "loading $image from $archive"
  docker load -i "$archive" >&2
  echo "$image"
  exit 0
fi

start=$SECONDS
log "building $image (inputs $inputs_hash)"

# 1. Binaries: the control plane from tools/build-k8s.sh; the node's own
#    from tools/kind/kube, keyed by version as build-k8s.sh keys its own.
k8s_dir=$("$root/tools/build-k8s.sh")
adopt "k8s/$kube_version"
node_bins="$cache/k8s/$kube_version"
mkdir -p "$node_bins"
kver="-X k8s.io/component-base/version.gitVersion=${kube_version} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$kube_version" | cut -d. -f2)"
build() { # build <module dir> <package> <output> [ldflags]
  local dir=$1 pkg=$2 out=$3 ldflags=${4:-}
  [ -x "$out" ] && return 0
  log "building $(basename "$out") ($pkg)..."
  local t=$SECONDS
  (cd "$dir" && CGO_ENABLED=0 go build -trimpath -mod=readonly -ldflags "-s -w $ldflags" -o "$out.tmp" "$pkg")
  mv "$out.tmp" "$out"
  log "built $(basename "$out") in $((SECONDS - t))s"
}
for b in kubelet kubeadm kubectl kube-proxy; do
  build "$here/kube" "k8s.io/kubernetes/cmd/$b" "$node_bins/$b" "$kver"
done
adopt "coredns/$coredns_version"
coredns_bin="$cache/coredns/$coredns_version/coredns"
mkdir -p "$(dirname "$coredns_bin")"
build "$here/coredns" github.com/coredns/coredns "$coredns_bin"
# Built every time (seconds): they are this directory's own source.
(cd "$here" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$local_dir/bin/" ./pause ./runc-capfilter)

# 2. The Debian root, cached by release and package list (the slowest step
#    on a fresh machine: a few hundred packages to fetch).
debian_hash=$(echo "$suite $mirror $packages" | sha256sum | cut -c1-12)
adopt "debian-$suite-$debian_hash.tar"
debian_tar="$cache/debian-$suite-$debian_hash.tar"
# Two clones may build at once: each in a directory of its own.
work="$cache/build-$$"
rm -rf "$work" && mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
if [ ! -f "$debian_tar" ]; then
  log "debootstrap $suite (log: $work/debootstrap.log)..."
  t=$SECONDS
  debootstrap --variant=minbase --include="$packages" "$suite" "$work/debian" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log" >&2; exit 1; }
  rm -rf "$work/debian/var/cache/apt/archives/"*.deb "$work/debian/var/lib/apt/lists/"*
  tar -C "$work/debian" --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' -cf "$debian_tar.tmp" .
  mv "$debian_tar.tmp" "$debian_tar"
  rm -rf "$work/debian"
  log "debootstrap took $((SECONDS - t))s"
fi
rootfs="$work/rootfs"
mkdir -p "$rootfs"
tar -C "$rootfs" -xf "$debian_tar"

# 3. kind's base files and the steps of its base image's Dockerfile.
kind_dir=$(cd "$here" && go list -m -f '{{.Dir}}' sigs.k8s.io/kind)
files="$kind_dir/images/base/files"
install -d -m 0755 "$rootfs/kind" "$rootfs/kind/bin" "$rootfs/kind/manifests" "$rootfs/usr/local/bin" \
  "$rootfs/etc/containerd" "$rootfs/etc/systemd/system/kubelet.service.d" "$rootfs/etc/kubernetes/manifests"
install -m 0755 "$files"/usr/local/bin/* "$rootfs/usr/local/bin/"
install -m 0755 "$files"/kind/bin/* "$rootfs/kind/bin/"
install -m 0644 "$files"/etc/crictl.yaml "$rootfs/etc/"
install -m 0644 "$files"/etc/default/* "$rootfs/etc/default/"
install -m 0644 "$files"/etc/sysctl.d/* "$rootfs/etc/sysctl.d/"
install -m 0644 "$files"/etc/systemd/system/*.service "$files"/etc/systemd/system/*.slice "$rootfs/etc/systemd/system/"
install -m 0644 "$files"/etc/systemd/system/kubelet.service.d/* "$rootfs/etc/systemd/system/kubelet.service.d/"
# containerd: kind's configuration, with runc-capfilter as the runc binary
# (privileged pods), this version's pause image, Debian's CNI plugin
# directory, and restrict_oom_score_adj: kubelet asks -997 or -998 for
# critical pods, and lowering a process's oom_score_adj below its parent's
# takes CAP_SYS_RESOURCE, which the node does not hold ("can't get final
# child's PID from pipe" from runc), so containerd clamps it to its own.
# Debian's containerd is at /usr/bin; kind's unit runs /usr/local/bin.
install -m 0755 "$local_dir/bin/runc-capfilter" "$rootfs/usr/local/sbin/runc-capfilter"
ln -sf /usr/bin/containerd "$rootfs/usr/local/bin/containerd"
sed -e "s#sandbox_image = .*#sandbox_image = \"$pause_image\"#" \
  -e 's#restrict_oom_score_adj = false#restrict_oom_score_adj = true#' \
  -e 's#^\(\s*\)SystemdCgroup = true#&\n\1BinaryName = "/usr/local/sbin/runc-capfilter"#' \
  "$files/etc/containerd/config.toml" >"$rootfs/etc/containerd/config.toml"
cat >>"$rootfs/etc/containerd/config.toml" <<'EOF'

[plugins."io.containerd.grpc.v1.cri".cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = "/etc/cni/net.d"
EOF
ln -sfn /usr/lib/cni "$rootfs/opt/cni/bin" 2>/dev/null || { mkdir -p "$rootfs/opt/cni" && ln -sfn /usr/lib/cni "$rootfs/opt/cni/bin"; }
chroot "$rootfs" sh -c 'ctr oci spec' |
  jq '.hooks.createContainer[.hooks.createContainer | length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' |
  jq 'del(.process.rlimits)' >"$rootfs/etc/containerd/cri-base.json"
# The Dockerfile's clean-up: no services but the node's, journald not
# reading the kernel log, no documentation, /sbin/init is systemd.
find "$rootfs/lib/systemd/system/sysinit.target.wants/" -name systemd-tmpfiles-setup.service -delete
rm -f "$rootfs"/lib/systemd/system/multi-user.target.wants/* "$rootfs"/etc/systemd/system/*.wants/* \
  "$rootfs"/lib/systemd/system/local-fs.target.wants/* "$rootfs"/lib/systemd/system/sockets.target.wants/*udev* \
  "$rootfs"/lib/systemd/system/sockets.target.wants/*initctl* "$rootfs"/lib/systemd/system/basic.target.wants/*
echo "ReadKMsg=no" >>"$rootfs/etc/systemd/journald.conf"
rm -rf "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/var/cache/debconf/*-old
ln -sf /usr/lib/systemd/systemd "$rootfs/sbin/init"
chroot "$rootfs" systemctl enable kubelet.service containerd.service undo-mount-hacks.service >/dev/null 2>&1
chroot "$rootfs" systemctl mask systemd-binfmt.service >/dev/null 2>&1
# Kubernetes: the node's binaries where kind's kubelet unit runs them, its
# version, and the default CNI manifest naming its image.
install -m 0755 "$node_bins/kubelet" "$node_bins/kubeadm" "$node_bins/kubectl" "$rootfs/usr/bin/"
echo "$kube_version" >"$rootfs/kind/version"
sed "s#KIND_ROUTES_IMAGE#$routes_image#" "$here/node/cni.yaml" >"$rootfs/kind/manifests/default-cni.yaml"

# 4. The images kubeadm and the CNI manifest run, made with docker import
#    from a directory each: one static binary on PATH, and for kube-proxy
#    and the CNI DaemonSet the tools they run (copied with their libraries).
images="$work/images"
mkimage() { # mkimage <dir> <ref> [docker import --change ...]
  local dir=$1 ref=$2; shift 2
  install -d -m 1777 "$dir/tmp"
  tar -C "$dir" -c . | docker import "$@" --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - "$ref" >/dev/null
  echo "$ref" >>"$images.list"
}
with_libs() { # with_libs <image dir> <path in rootfs>...: copy files and the libraries they load
  local dir=$1; shift
  local f lib
  for f in "$@"; do
    (cd "$rootfs" && cp -a --parents ".$f" "$dir/")
    if [ ! -L "$rootfs$f" ]; then
      for lib in $(chroot "$rootfs" ldd "$f" 2>/dev/null | grep -o '/[^ ]*' | sort -u); do
        (cd "$rootfs" && cp -aL --parents ".$lib" "$dir/" 2>/dev/null) || true
      done
    fi
  done
}
: >"$images.list"
for c in kube-apiserver kube-controller-manager kube-scheduler; do
  install -D -m 0755 "$k8s_dir/$c" "$images/$c/usr/local/bin/$c"
  mkimage "$images/$c" "registry.k8s.io/$c:$kube_version"
done
install -D -m 0755 "$k8s_dir/etcd" "$images/etcd/usr/local/bin/etcd"
mkimage "$images/etcd" "registry.k8s.io/etcd:${etcd_version}"
install -D -m 0755 "$coredns_bin" "$images/coredns/coredns"
install -D -m 0644 "$rootfs/etc/ssl/certs/ca-certificates.crt" "$images/coredns/etc/ssl/certs/ca-certificates.crt"
mkimage "$images/coredns" "registry.k8s.io/coredns/coredns:$coredns_version" --change 'ENTRYPOINT ["/coredns"]'
install -D -m 0755 "$local_dir/bin/pause" "$images/pause/pause"
mkimage "$images/pause" "$pause_image" --change 'ENTRYPOINT ["/pause"]'
# kube-proxy runs iptables (and nft, conntrack); iptables here is the nft
# back end, as Docker's rules on this Debian are (kind's entrypoint picks
# the node's the same way).
install -D -m 0755 "$node_bins/kube-proxy" "$images/kube-proxy/usr/local/bin/kube-proxy"
with_libs "$images/kube-proxy" /usr/sbin/xtables-nft-multi /usr/sbin/nft /usr/sbin/conntrack
# iptables loads its matches and targets (libxt_*.so, and what they link:
# libm for statistic) at run time.
with_libs "$images/kube-proxy" $(cd "$rootfs" && find ./usr/lib/x86_64-linux-gnu/xtables -name '*.so' | sed 's#^\.##')
for t in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
  ln -sf xtables-nft-multi "$images/kube-proxy/usr/sbin/$t"
done
mkdir -p "$images/kube-proxy/run"
mkimage "$images/kube-proxy" "registry.k8s.io/kube-proxy:$kube_version"
install -D -m 0755 "$rootfs/bin/busybox" "$images/routes/bin/busybox"
for t in sh cat cp mv cmp sleep ip echo; do ln -sf busybox "$images/routes/bin/$t"; done
install -D -m 0755 "$node_bins/kubectl" "$images/routes/usr/local/bin/kubectl"
install -D -m 0755 "$here/node/kind-routes.sh" "$images/routes/kind-routes.sh"
mkimage "$images/routes" "$routes_image"
log "saving $(wc -l <"$images.list") images for the node's containerd..."
xargs docker save -o "$work/images.tar" <"$images.list"
xargs docker rmi >/dev/null <"$images.list"

# 5. The node image: the root file system imported, then run once with its
#    containerd to import the images (kind's build does the same with
#    docker run + docker commit), then committed with kind's entrypoint.
base="kind.local/node-base:${kube_version}-${inputs_hash}"
tar -C "$rootfs" --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' -c . | docker import - "$base" >/dev/null
rm -rf "$rootfs"
builder="kind-node-build-$$"
docker run -d --privileged --name "$builder" --entrypoint sleep "$base" infinity >/dev/null
trap 'docker rm -f -v "$builder" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
docker cp "$work/images.tar" "$builder:/images.tar"
docker exec "$builder" sh -euc '
  containerd >/var/log/containerd-build.log 2>&1 &
  pid=$!
  for i in $(seq 100); do ctr version >/dev/null 2>&1 && break; sleep 0.2; done
  ctr --namespace=k8s.io images import --all-platforms --no-unpack --snapshotter=overlayfs /images.tar >/dev/null
  ctr --namespace=k8s.io images ls -q
  kill $pid; wait $pid || true
  rm -f /images.tar /var/log/containerd-build.log' >&2
docker commit \
  --change 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' \
  --change 'CMD []' \
  --change 'ENV container=docker' \
  "$builder" "$image" >/dev/null
docker rm -f -v "$builder" >/dev/null
docker rmi "$base" >/dev/null
trap 'rm -rf "$work"' EXIT

docker save -o "$archive.tmp" "$image"
mv "$archive.tmp" "$archive"
# One archive is kept, the last built (each is about a gigabyte).
find "$cache" -maxdepth 1 -name 'node-*.tar' ! -name "$(basename "$archive")" -delete
rm -rf "$work"
log "built $image in $((SECONDS - start))s; archive $archive"
echo "$image"

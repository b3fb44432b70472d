package cluster

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// Addresses inside the simulator's network namespace. Pod IPs come from
// PodCIDR, which is routed to the loopback device so that every pod address
// is bindable (fake workers listen on it) and reachable from the API server
// and the operator. NodeIP is the API server's advertise address and every
// fake node's InternalIP; it is outside PodCIDR so no pod can get it.
const (
	PodCIDR     = "10.244.0.0/16"
	NodeIP      = "10.245.0.1"
	ServiceCIDR = "10.96.0.0/16"
)

// NamespaceAttr is what a child needs to start in a new network namespace of
// its own, in a session of its own (so the shell that ran `up` can exit).
// As a non-root user it also gets a user namespace mapping it to root, which
// is what `unshare -rn` does.
func NamespaceAttr() *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setsid: true, Cloneflags: syscall.CLONE_NEWNET}
	if uid := os.Getuid(); uid != 0 {
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
	}
	return attr
}

// SetupNetwork brings up loopback and routes PodCIDR and NodeIP to it. It
// refuses to run where any interface other than loopback exists: that is
// not the simulator's own namespace, and routes there would reach the host.
func SetupNetwork() error {
	ifaces, err := net.Interfaces()
	if err != nil {
		return fmt.Errorf("listing network interfaces: %w", err)
	}
	for _, i := range ifaces {
		if i.Flags&net.FlagLoopback == 0 {
			return fmt.Errorf("refusing to set up the simulator's network: interface %s exists, so this is not the simulator's own network namespace", i.Name)
		}
	}
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"route", "add", "local", PodCIDR, "dev", "lo"},
		{"addr", "add", NodeIP + "/32", "dev", "lo"},
	} {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

package kubelet

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dynamoctl/dynamo-operator/sim/cluster"
)

// startSandbox gives a pod a network namespace of its own, so that two
// replicas on one node can both bind :8081 and :9443 as they would in a
// cluster. It runs this executable in sandbox mode in a new network
// namespace, moves one end of a veth pair in as eth0 (the pod IP on it,
// default route to the simulator's namespace), and routes the pod IP to the
// other end. The simulator's namespace routes the whole pod CIDR to
// loopback (fake workers listen there); a /32 unicast route in the local
// table is more specific, so this one address goes to the veth. It
// returns the sandbox process and the path of its network namespace.
func startSandbox(ctx context.Context, self, podIP string, log *os.File) (*exec.Cmd, string, error) {
	ip := net.ParseIP(podIP).To4()
	if ip == nil {
		return nil, "", fmt.Errorf("pod IP %q is not IPv4", podIP)
	}
	podMAC := fmt.Sprintf("0a:58:%02x:%02x:%02x:%02x", ip[0], ip[1], ip[2], ip[3])
	hostMAC := fmt.Sprintf("0e:58:%02x:%02x:%02x:%02x", ip[0], ip[1], ip[2], ip[3])
	veth := fmt.Sprintf("vp%02x%02x%02x", ip[1], ip[2], ip[3])
	spec, _ := json.Marshal(sandboxSpec{IP: podIP, GatewayMAC: hostMAC})
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), reexecEnv+"=sandbox", sandboxEnv+"="+string(spec))
	cmd.Stderr = log
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("starting the pod's network namespace: %w", err)
	}
	fail := func(err error) (*exec.Cmd, string, error) {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		return nil, "", err
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	// A veth left by a pod that had this address before goes first. The
	// neighbour entry is replaced, not added: once the route exists, a
	// probe sent to the address at that instant makes the kernel create an
	// entry of its own first.
	_ = exec.Command("ip", "link", "del", veth).Run()
	for _, args := range [][]string{
		{"link", "add", veth, "address", hostMAC, "type", "veth", "peer", "name", "eth0", "address", podMAC, "netns", pid},
		{"link", "set", veth, "up"},
		{"route", "add", podIP + "/32", "dev", veth, "table", "local", "src", routeSource},
		{"neigh", "replace", podIP, "lladdr", podMAC, "dev", veth, "nud", "permanent"},
	} {
		if o, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput(); err != nil {
			return fail(fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(o))))
		}
	}
	if err := sandboxReady(ctx, out); err != nil {
		return fail(err)
	}
	return cmd, "/proc/" + pid + "/ns/net", nil
}

// sandboxReady waits for the sandbox process to say on out that it has
// configured its network namespace.
func sandboxReady(ctx context.Context, out io.Reader) error {
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(out).ReadString('\n')
		if err == nil && strings.TrimSpace(line) != "ready" {
			err = fmt.Errorf("sandbox said %q", line)
		}
		ready <- err
	}()
	select {
	case err := <-ready:
		if err != nil {
			return fmt.Errorf("configuring the pod's network namespace: %w", err)
		}
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("the pod's network namespace was not configured within 30s")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// routeSource is the source address of the simulator's packets to pods:
// the API server's advertise address, which the pod reaches through its
// default route.
const routeSource = cluster.NodeIP

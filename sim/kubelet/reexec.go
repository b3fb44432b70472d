package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dynamoctl/dynamo-operator/internal/await"
)

// The runner starts its own executable again (the re-exec pattern, as
// container runtimes do) to run code inside a pod's namespaces: one mode
// holds a pod's network namespace (the sandbox, like a pause container),
// the other enters it and a private mount namespace, mounts the volumes and
// executes the container's program. Both run before main, from init, so
// any binary that links this package (dynamo-sim, a test binary) can serve.
const (
	reexecEnv    = "DYNAMO_SIM_REEXEC"
	containerEnv = "DYNAMO_SIM_CONTAINER"
	sandboxEnv   = "DYNAMO_SIM_SANDBOX"
)

// gatewayIP is the pod's default gateway: a link-local address that
// nothing owns; a permanent neighbour entry sends it to the host's end of
// the veth pair (Calico does the same).
const gatewayIP = "169.254.1.1"

func init() {
	switch os.Getenv(reexecEnv) {
	case "sandbox":
		os.Exit(runSandbox())
	case "container":
		fmt.Fprintf(os.Stderr, "dynamo-sim kubelet: %v\n", runContainer())
		os.Exit(127)
	}
}

// sandboxSpec configures a pod's network namespace from inside.
type sandboxSpec struct {
	IP         string `json:"ip"`
	GatewayMAC string `json:"gatewayMAC"`
}

// runSandbox runs in a new network namespace: it waits for the runner to
// move eth0 in, configures loopback, the pod IP and the default route,
// says "ready" on stdout and then holds the namespace until it is killed.
func runSandbox() int {
	var spec sandboxSpec
	if err := json.Unmarshal([]byte(os.Getenv(sandboxEnv)), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox spec:", err)
		return 2
	}
	// The simulator moves the pod's end of the veth pair in once this
	// process runs.
	if err := await.Until(context.Background(), "eth0 in the sandbox", func() error {
		_, err := net.InterfaceByName("eth0")
		return err
	}, await.Within(30*time.Second), await.Every(10*time.Millisecond)); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox:", err)
		return 1
	}
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"addr", "add", spec.IP + "/32", "dev", "eth0"},
		{"link", "set", "eth0", "up"},
		{"route", "add", gatewayIP, "dev", "eth0", "scope", "link"},
		{"neigh", "replace", gatewayIP, "lladdr", spec.GatewayMAC, "dev", "eth0", "nud", "permanent"},
		{"route", "add", "default", "via", gatewayIP, "dev", "eth0"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "sandbox: ip %s: %v: %s\n", strings.Join(args, " "), err, out)
			return 1
		}
	}
	fmt.Println("ready")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	return 0
}

// containerSpec is what the container mode runs.
type containerSpec struct {
	NetNS  string    `json:"netns"`
	Mounts []mountAt `json:"mounts"`
	Dir    string    `json:"dir,omitempty"`
	Path   string    `json:"path"`
	Args   []string  `json:"args"`
	Env    []string  `json:"env"`
	// UID and GID, when set, are the securityContext's runAsUser and
	// runAsGroup: the program runs as that user, so file permissions of
	// its volumes matter as in a cluster.
	UID *int64 `json:"uid,omitempty"`
	GID *int64 `json:"gid,omitempty"`
	// Hostname is the pod's name, as a pod's hostname is (leader
	// election identities start with it); the runner starts the container
	// in a UTS namespace of its own.
	Hostname string `json:"hostname"`
}

type mountAt struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

// runContainer runs in a private mount and UTS namespace (the runner
// started it with CLONE_NEWNS|CLONE_NEWUTS): it bind-mounts the volumes, joins the pod's network
// namespace and executes the program. It returns only on failure.
func runContainer() error {
	var spec containerSpec
	if err := json.Unmarshal([]byte(os.Getenv(containerEnv)), &spec); err != nil {
		return fmt.Errorf("container spec: %w", err)
	}
	// setns and exec must happen on one OS thread: namespaces belong to
	// threads, and the thread that calls execve becomes the program.
	runtime.LockOSThread()
	if spec.Hostname != "" {
		if err := syscall.Sethostname([]byte(spec.Hostname)); err != nil {
			return fmt.Errorf("setting the hostname: %w", err)
		}
	}
	// Mounts made here must not reach the host's namespace.
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	for _, m := range spec.Mounts {
		if err := bindMount(m); err != nil {
			return err
		}
	}
	f, err := os.Open(spec.NetNS)
	if err != nil {
		return fmt.Errorf("opening the pod's network namespace: %w", err)
	}
	if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("joining the pod's network namespace: %w", err)
	}
	_ = f.Close()
	if spec.Dir != "" {
		if err := os.Chdir(spec.Dir); err != nil {
			return fmt.Errorf("workingDir %s: %w", spec.Dir, err)
		}
	}
	if spec.UID != nil {
		gid := *spec.UID
		if spec.GID != nil {
			gid = *spec.GID
		}
		if err := syscall.Setgroups(nil); err != nil {
			return fmt.Errorf("dropping groups: %w", err)
		}
		if err := syscall.Setgid(int(gid)); err != nil {
			return fmt.Errorf("runAsGroup %d: %w", gid, err)
		}
		if err := syscall.Setuid(int(*spec.UID)); err != nil {
			return fmt.Errorf("runAsUser %d: %w", *spec.UID, err)
		}
	}
	return fmt.Errorf("executing %s: %w", spec.Path, syscall.Exec(spec.Path, spec.Args, spec.Env))
}

func bindMount(m mountAt) error {
	fi, err := os.Stat(m.Source)
	if err != nil {
		return fmt.Errorf("volume source %s: %w", m.Source, err)
	}
	if fi.IsDir() {
		err = os.MkdirAll(m.Target, 0o755)
	} else {
		err = os.MkdirAll(filepath.Dir(m.Target), 0o755)
		if err == nil {
			var tf *os.File
			if tf, err = os.OpenFile(m.Target, os.O_CREATE|os.O_RDONLY, 0o644); err == nil {
				_ = tf.Close()
			}
		}
	}
	if err != nil {
		return fmt.Errorf("mount point %s: %w", m.Target, err)
	}
	if err := syscall.Mount(m.Source, m.Target, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("mounting %s at %s: %w", m.Source, m.Target, err)
	}
	if m.ReadOnly {
		if err := syscall.Mount("", m.Target, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
			return fmt.Errorf("making %s read-only: %w", m.Target, err)
		}
	}
	return nil
}

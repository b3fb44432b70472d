// Command runc-capfilter is an OCI runtime that runs runc after removing,
// from the container's configuration, every capability its own process
// cannot hold.
//
// A privileged container asks for all capabilities the runtime knows. Where
// the machine itself runs with a reduced capability bounding set (a sandbox
// whose bounding set lacks CAP_SYS_RESOURCE, say), runc cannot grant them
// and fails with "unable to apply caps: operation not permitted". Docker's
// --privileged and Kubernetes' privileged pods (kube-proxy, kind's nodes)
// then cannot start. This runtime trims the request to what can be granted,
// which is what the container would get anyway, and hands over to runc.
//
// It is registered as Docker's default runtime (dockerd --add-runtime
// capfilter=... --default-runtime capfilter) and, inside kind's node image,
// as containerd's runc binary, so the same holds for pods in the cluster.
// The runc it runs is the first of RUNC_CAPFILTER_RUNC, /usr/sbin/runc,
// /usr/bin/runc, /usr/local/sbin/runc that is not this program.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

func main() {
	args := os.Args[1:]
	var err error
	switch sub, bundle, process := command(args); {
	case sub == "create" || sub == "run":
		err = filterFile(filepath.Join(bundle, "config.json"), "process", "capabilities")
	case sub == "exec" && process != "":
		err = filterFile(process, "capabilities")
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "runc-capfilter: %v\n", err)
		os.Exit(1)
	}
	runc, err := findRunc()
	if err != nil {
		fmt.Fprintf(os.Stderr, "runc-capfilter: %v\n", err)
		os.Exit(1)
	}
	err = syscall.Exec(runc, append([]string{runc}, args...), os.Environ())
	fmt.Fprintf(os.Stderr, "runc-capfilter: exec %s: %v\n", runc, err)
	os.Exit(1)
}

// globalWithValue are runc's global flags that take a separate value.
var globalWithValue = map[string]bool{
	"--log": true, "--log-format": true, "--root": true, "--criu": true, "--rootless": true,
}

// command returns runc's subcommand, the bundle directory of a create or
// run (--bundle/-b, or the working directory, as runc reads it) and the
// process file of an exec (--process/-p; docker exec and kubectl exec).
func command(args []string) (sub, bundle, process string) {
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			break
		}
		if globalWithValue[a] {
			i++
		}
	}
	if i >= len(args) {
		return "", "", ""
	}
	sub = args[i]
	bundle = "."
	for j := i + 1; j < len(args); j++ {
		a := args[j]
		switch {
		case a == "--bundle" || a == "-b":
			if j+1 < len(args) {
				bundle = args[j+1]
			}
		case strings.HasPrefix(a, "--bundle="):
			bundle = strings.TrimPrefix(a, "--bundle=")
		case strings.HasPrefix(a, "-b="):
			bundle = strings.TrimPrefix(a, "-b=")
		case a == "--process" || a == "-p":
			if j+1 < len(args) {
				process = args[j+1]
			}
		case strings.HasPrefix(a, "--process="):
			process = strings.TrimPrefix(a, "--process=")
		}
	}
	return sub, bundle, process
}

// filterFile rewrites the JSON file at path without the capabilities outside
// this process's bounding set, in the object found by following keys (a
// bundle's config.json: process.capabilities; an exec's process file:
// capabilities). The file is left untouched when nothing is removed.
// Numbers are kept as written (json.Number): the configuration holds 64-bit
// limits that a float64 would round.
func filterFile(path string, keys ...string) error {
	bounding, err := boundingSet()
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var spec map[string]any
	if err := dec.Decode(&spec); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	caps := spec
	for _, k := range keys {
		caps, _ = caps[k].(map[string]any)
	}
	changed := false
	for set, v := range caps {
		list, ok := v.([]any)
		if !ok {
			continue
		}
		kept := make([]any, 0, len(list))
		for _, c := range list {
			name, _ := c.(string)
			if n, known := capNumbers[name]; known && bounding&(1<<n) == 0 {
				changed = true
				continue
			}
			kept = append(kept, c)
		}
		caps[set] = kept
	}
	if !changed {
		return nil
	}
	out, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, info.Mode())
}

// boundingSet reads CapBnd from /proc/self/status.
func boundingSet() (uint64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "CapBnd:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, fmt.Errorf("no CapBnd in /proc/self/status")
}

func findRunc() (string, error) {
	self, _ := os.Executable()
	self, _ = filepath.EvalSymlinks(self)
	for _, c := range []string{os.Getenv("RUNC_CAPFILTER_RUNC"), "/usr/sbin/runc", "/usr/bin/runc", "/usr/local/sbin/runc"} {
		if c == "" {
			continue
		}
		real, err := filepath.EvalSymlinks(c)
		if err != nil || real == self {
			continue
		}
		return c, nil
	}
	return "", fmt.Errorf("no runc found")
}

// capNumbers are the Linux capability numbers (linux/capability.h).
var capNumbers = map[string]uint{
	"CAP_CHOWN": 0, "CAP_DAC_OVERRIDE": 1, "CAP_DAC_READ_SEARCH": 2, "CAP_FOWNER": 3,
	"CAP_FSETID": 4, "CAP_KILL": 5, "CAP_SETGID": 6, "CAP_SETUID": 7, "CAP_SETPCAP": 8,
	"CAP_LINUX_IMMUTABLE": 9, "CAP_NET_BIND_SERVICE": 10, "CAP_NET_BROADCAST": 11,
	"CAP_NET_ADMIN": 12, "CAP_NET_RAW": 13, "CAP_IPC_LOCK": 14, "CAP_IPC_OWNER": 15,
	"CAP_SYS_MODULE": 16, "CAP_SYS_RAWIO": 17, "CAP_SYS_CHROOT": 18, "CAP_SYS_PTRACE": 19,
	"CAP_SYS_PACCT": 20, "CAP_SYS_ADMIN": 21, "CAP_SYS_BOOT": 22, "CAP_SYS_NICE": 23,
	"CAP_SYS_RESOURCE": 24, "CAP_SYS_TIME": 25, "CAP_SYS_TTY_CONFIG": 26, "CAP_MKNOD": 27,
	"CAP_LEASE": 28, "CAP_AUDIT_WRITE": 29, "CAP_AUDIT_CONTROL": 30, "CAP_SETFCAP": 31,
	"CAP_MAC_OVERRIDE": 32, "CAP_MAC_ADMIN": 33, "CAP_SYSLOG": 34, "CAP_WAKE_ALARM": 35,
	"CAP_BLOCK_SUSPEND": 36, "CAP_AUDIT_READ": 37, "CAP_PERFMON": 38, "CAP_BPF": 39,
	"CAP_CHECKPOINT_RESTORE": 40,
}

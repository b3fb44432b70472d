package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

const inNamespaceEnv = "DYNAMO_SIM_IN_NAMESPACE"

// TestMainInNamespace is a TestMain body for packages whose tests run a
// cluster: the test binary runs itself again in a new network namespace
// (so fixed ports and pod addresses are its own) and returns that run's
// exit code. The namespace disappears with the child.
func TestMainInNamespace(m *testing.M) int {
	if os.Getenv(inNamespaceEnv) == "1" {
		if err := SetupNetwork(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}
	cmd := exec.Command(os.Args[0], os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), inNamespaceEnv+"=1")
	cmd.SysProcAttr = NamespaceAttr()
	cmd.SysProcAttr.Setsid = false
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		fmt.Fprintf(os.Stderr, "running the tests in a network namespace: %v\n", err)
		return 1
	}
	return 0
}

// BinDir finds the Kubernetes binaries for tests: KUBEBUILDER_ASSETS, else
// .cache/k8s/<version> in the nearest parent directory that has one.
func BinDir() (string, error) {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		return d, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		matches, _ := filepath.Glob(filepath.Join(dir, ".cache", "k8s", "*", "kube-apiserver"))
		if len(matches) > 0 {
			return filepath.Dir(matches[len(matches)-1]), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no Kubernetes binaries: set KUBEBUILDER_ASSETS or run make k8s-bins")
		}
		dir = parent
	}
}

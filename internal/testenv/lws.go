package testenv

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// LWSCRDFile is the LeaderWorkerSet CRD of the sigs.k8s.io/lws version
// go.mod pins (the API types the operator renders), read from the module
// cache, so that tests install the API exactly as that release defines it.
func LWSCRDFile() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/lws")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating sigs.k8s.io/lws in the module cache: %w", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "bases", "leaderworkerset.x-k8s.io_leaderworkersets.yaml"), nil
}

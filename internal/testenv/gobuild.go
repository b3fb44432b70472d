package testenv

import (
	"context"
	"os"
	"os/exec"
)

// GoBuild is the command that builds pkg into out as the Makefile builds
// every binary (GOBUILD: CGO_ENABLED=0, -trimpath), run in the module
// directory dir: the packages make build compiled are then reused from the
// Go cache instead of compiled a second way (docs/dev/fresh-machine.md). ldflags may be empty; they do not change what is compiled.
func GoBuild(ctx context.Context, dir, out, pkg, ldflags string) *exec.Cmd {
	args := []string{"build", "-trimpath"}
	if ldflags != "" {
		args = append(args, "-ldflags", ldflags)
	}
	cmd := exec.CommandContext(ctx, "go", append(args, "-o", out, pkg)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	return cmd
}

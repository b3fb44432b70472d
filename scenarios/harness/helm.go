package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Helm runs the pinned helm CLI against one cluster.
type Helm struct {
	Bin, Kubeconfig string
	// Timeout bounds each --wait (default 3m).
	Timeout time.Duration
}

// ImageTagValue is the chart value that picks the operator image tag (and
// so the operator version), as chart/README.md sets it.
const ImageTagValue = "dynamo-operator.controllerManager.manager.image.tag"

// NamespaceScoped is the chart value of a namespace-scoped install.
const NamespaceScoped = "dynamo-operator.namespaceRestriction.enabled=true"

func (h *Helm) timeout() string {
	if h.Timeout == 0 {
		return "3m"
	}
	return h.Timeout.String()
}

// Run runs helm with args and returns its combined output.
func (h *Helm) Run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, h.Bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+h.Kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// Install installs r's chart as release name in namespace, as chart/README.md's
// commands do (--create-namespace), its image tag set to r's, and waits
// until it is ready. sets are further --set values; strings are
// --set-string values (a log level "2" must stay a string).
func (h *Helm) Install(ctx context.Context, name, namespace string, r *Release, sets, stringSets []string) (string, error) {
	args := []string{"install", name, r.Chart, "--namespace", namespace, "--create-namespace",
		"--wait", "--timeout", h.timeout()}
	args = append(args, imageTagArgs(r.Tag)...)
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	for _, s := range stringSets {
		args = append(args, "--set-string", s)
	}
	return h.Run(ctx, args...)
}

// Upgrade upgrades release name to r's chart, keeping the values it was
// installed with (over the new chart's defaults: --reset-then-reuse-values) but
// the image tag, and waits until it is ready.
func (h *Helm) Upgrade(ctx context.Context, name, namespace string, r *Release, sets ...string) (string, error) {
	args := []string{"upgrade", name, r.Chart, "--namespace", namespace, "--reset-then-reuse-values",
		"--wait", "--timeout", h.timeout()}
	args = append(args, imageTagArgs(r.Tag)...)
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	return h.Run(ctx, args...)
}

// imageTagArgs sets the operator's image tag as a string: a tag such as
// git describe's "3742312" (a clone with no tags, all digits) is a number
// to --set, which the chart's schema refuses.
func imageTagArgs(tag string) []string {
	return []string{"--set-string", ImageTagValue + "=" + tag}
}

// Uninstall removes release name and waits until its resources are gone.
func (h *Helm) Uninstall(ctx context.Context, name, namespace string) (string, error) {
	return h.Run(ctx, "uninstall", name, "--namespace", namespace, "--wait", "--timeout", h.timeout())
}

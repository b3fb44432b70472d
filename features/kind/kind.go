// Package kind does on a kind cluster (make kind) what the feature steps ask
// of the simulator's faults (steps.Cluster.Fault), with what a real node
// offers: its containerd, reached with ctr in the node's Docker container
// (docker exec; the node image built here has no crictl). A kind node's
// name is its container's name.
//
// Faults with no kind counterpart here are refused saying so; the feature
// suite leaves out the scenarios that need them (features/sim).
package kind

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/features/steps"
)

// Nodes are a kind cluster's nodes, listed through the API.
type Nodes struct {
	Client client.Client
	// Docker is the docker binary; empty means "docker" on PATH.
	Docker string
}

// Fault injects f:
//   - image-pull-failure: kind's nodes pull from no registry, so a pull of
//     an image not loaded into them (kind load) fails; the fault checks
//     that no node holds the image, and refuses when one does (removing a
//     loaded image could not be undone by image-pull-restore).
//   - image-pull-restore: nothing to undo.
func (n Nodes) Fault(ctx context.Context, f steps.Fault) (string, error) {
	switch f.Kind {
	case "image-pull-failure":
		if f.Image == "" {
			return "", fmt.Errorf("image-pull-failure needs an image")
		}
		holders, err := n.holding(ctx, f.Image)
		if err != nil {
			return "", err
		}
		if len(holders) > 0 {
			return "", fmt.Errorf("the image %s is loaded into the nodes %s: their pulls of it would not fail", f.Image, strings.Join(holders, ", "))
		}
		return fmt.Sprintf("pulls of %s fail: no node holds it and kind's nodes reach no registry", f.Image), nil
	case "image-pull-restore":
		return fmt.Sprintf("pulls of %s were never changed on kind", f.Image), nil
	}
	return "", fmt.Errorf("a kind cluster cannot inject %s (the simulator's fault)", f.Kind)
}

// holding lists the nodes whose container runtime holds image.
func (n Nodes) holding(ctx context.Context, image string) ([]string, error) {
	nodes := &corev1.NodeList{}
	if err := n.Client.List(ctx, nodes); err != nil {
		return nil, err
	}
	var out []string
	for _, node := range nodes.Items {
		names, err := n.ctr(ctx, node.Name, "images", "list", "--quiet")
		if err != nil {
			return nil, err
		}
		if slices.Contains(strings.Fields(names), ContainerdName(image)) {
			out = append(out, node.Name)
		}
	}
	return out, nil
}

// ContainerdName is image as containerd names it: with its registry
// (docker.io when none), library/ for Docker Hub's official images, and
// its tag (latest when none).
func ContainerdName(image string) string {
	first, _, found := strings.Cut(image, "/")
	if !found || !strings.ContainsAny(first, ".:") && first != "localhost" {
		if !found {
			image = "library/" + image
		}
		image = "docker.io/" + image
	}
	last := image[strings.LastIndex(image, "/")+1:]
	if !strings.ContainsAny(last, ":@") {
		image += ":latest"
	}
	return image
}

// ctr runs containerd's ctr with args, in the namespace the kubelet's
// containers live in, in node's container, and returns its output.
func (n Nodes) ctr(ctx context.Context, node string, args ...string) (string, error) {
	docker := n.Docker
	if docker == "" {
		docker = "docker"
	}
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, docker, append([]string{"exec", node, "ctr", "--namespace", "k8s.io"}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("docker exec %s ctr %s: %v: %s", node, strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), nil
}

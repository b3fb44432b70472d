package nodes

import (
	"context"
	"fmt"
	"sync"

	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/dynamoctl/dynamo-operator/sim/cluster"
)

// Addresses KWOK hands out, from the cluster's namespace layout.
const (
	podCIDR = cluster.PodCIDR
	nodeIP  = cluster.NodeIP
)

// CreatePools creates every node of the pools, in parallel, and the DRA
// devices of pools that have some; objects that already exist are left as
// they are (a restarted simulator keeps them).
func CreatePools(ctx context.Context, cs kubernetes.Interface, pools []Pool) error {
	type job struct {
		p Pool
		i int
	}
	jobs := make(chan job)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				_, err := cs.CoreV1().Nodes().Create(ctx, j.p.Node(j.i), metav1.CreateOptions{})
				if err != nil && !apierrors.IsAlreadyExists(err) {
					select {
					case errs <- fmt.Errorf("creating node %s: %w", j.p.NodeName(j.i), err):
					default:
					}
				}
			}
		}()
	}
	for _, p := range pools {
		for i := range p.Count {
			jobs <- job{p, i}
		}
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	if err := CreateRuntimeClass(ctx, cs, NVIDIARuntimeClass); err != nil {
		return err
	}
	return createDRA(ctx, cs, pools)
}

// NVIDIARuntimeClass is the RuntimeClass NVIDIA's GPU Operator installs on
// GPU clusters (handler nvidia, the NVIDIA container runtime). Pods that
// name it (Dynamo's snapshot-restore example: runtimeClassName: nvidia) are
// refused where it does not exist; KWOK's nodes run any handler.
const NVIDIARuntimeClass = "nvidia"

// CreateRuntimeClass creates the RuntimeClass NVIDIARuntimeClass, running
// the container runtime's handler (NVIDIA's own on the simulator's nodes;
// runc on a kind cluster's, whose containerd has no other), unless it
// exists.
func CreateRuntimeClass(ctx context.Context, cs kubernetes.Interface, handler string) error {
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: NVIDIARuntimeClass}, Handler: handler}
	if _, err := cs.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating RuntimeClass %s: %w", NVIDIARuntimeClass, err)
	}
	return nil
}

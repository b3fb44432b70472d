package kind

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/sim/command"
	"github.com/dynamoctl/dynamo-operator/sim/workers"
)

// controlPath is the fake runtime's (sim/cmd/dynamo-runtime.ControlPath):
// the paths of its system port that read and steer its worker.
const controlPath = "/sim/"

// Workers are the fake Dynamo runtimes (make runtime-image) in the pods of
// the namespaces Serve named, each its own process in its pod: read and
// steered at their system port through the API server's pod proxy, and
// restarted by killing their containers in the node's containerd.
type Workers struct {
	Client    client.Client
	Clientset kubernetes.Interface
	Nodes     Nodes

	mu         sync.Mutex
	namespaces map[string]bool
}

// Serve notes namespace: the runtimes of its pods are asked from now on
// (each pod runs its own already).
func (w *Workers) Serve(_ context.Context, namespace string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.namespaces == nil {
		w.namespaces = map[string]bool{}
	}
	w.namespaces[namespace] = true
	return nil
}

// Calls lists the calls every runtime received, oldest first, each pod
// named namespace/name.
func (w *Workers) Calls(ctx context.Context) ([]workers.Call, error) {
	var out []workers.Call
	err := w.each(ctx, func(p *corev1.Pod, port int) error {
		var calls []workers.Call
		if err := w.get(ctx, p, port, "calls", &calls); err != nil {
			return err
		}
		for _, c := range calls {
			c.Pod = p.Namespace + "/" + p.Name
			out = append(out, c)
		}
		return nil
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out, err
}

// LoRAs lists the adapters loaded on each pod's runtime.
func (w *Workers) LoRAs(ctx context.Context) (map[string][]string, error) {
	out := map[string][]string{}
	err := w.each(ctx, func(p *corev1.Pod, port int) error {
		var names []string
		if err := w.get(ctx, p, port, "loras", &names); err != nil {
			return err
		}
		out[p.Namespace+"/"+p.Name] = names
		return nil
	})
	return out, err
}

// Forget makes a pod's runtime drop its adapters without restarting.
func (w *Workers) Forget(ctx context.Context, pod string) error {
	p, port, err := w.pod(ctx, pod)
	if err != nil {
		return err
	}
	_, err = w.Clientset.CoreV1().RESTClient().Post().Namespace(p.Namespace).Resource("pods").
		Name(p.Name + ":" + strconv.Itoa(port)).SubResource("proxy").Suffix(controlPath + "forget").DoRaw(ctx)
	return err
}

// Restart kills the running containers of a pod in its node's containerd,
// as a crash does: the kubelet starts them again (restartCount+1), and the
// runtime starts afresh, without its adapters.
func (w *Workers) Restart(ctx context.Context, pod string) error {
	p, _, err := w.pod(ctx, pod)
	if err != nil {
		return err
	}
	killed := 0
	for _, cs := range p.Status.ContainerStatuses {
		id, ok := strings.CutPrefix(cs.ContainerID, "containerd://")
		if cs.State.Running == nil || !ok {
			continue
		}
		if _, err := w.Nodes.ctr(ctx, p.Spec.NodeName, "tasks", "kill", "--signal", "SIGKILL", id); err != nil {
			return err
		}
		killed++
	}
	if killed == 0 {
		return fmt.Errorf("pod %s has no running container", pod)
	}
	return nil
}

// pod reads namespace/name and its runtime's system port.
func (w *Workers) pod(ctx context.Context, pod string) (*corev1.Pod, int, error) {
	ns, name, _ := strings.Cut(pod, "/")
	p := &corev1.Pod{}
	if err := w.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, p); err != nil {
		return nil, 0, err
	}
	port, ok := systemPort(p)
	if !ok {
		return nil, 0, fmt.Errorf("pod %s serves no Dynamo system port", pod)
	}
	return p, port, nil
}

// each calls f for every running pod with a system port in the served
// namespaces; a namespace gone is forgotten.
func (w *Workers) each(ctx context.Context, f func(*corev1.Pod, int) error) error {
	w.mu.Lock()
	namespaces := slices.Sorted(maps.Keys(w.namespaces))
	w.mu.Unlock()
	for _, ns := range namespaces {
		if err := w.Client.Get(ctx, types.NamespacedName{Name: ns}, &corev1.Namespace{}); apierrors.IsNotFound(err) {
			w.mu.Lock()
			delete(w.namespaces, ns)
			w.mu.Unlock()
			continue
		}
		pods := &corev1.PodList{}
		if err := w.Client.List(ctx, pods, client.InNamespace(ns)); err != nil {
			return err
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			port, ok := systemPort(p)
			if !ok || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || !running(p) {
				continue
			}
			if err := f(p, port); err != nil {
				return err
			}
		}
	}
	return nil
}

// get reads the runtime's control path what into v.
func (w *Workers) get(ctx context.Context, p *corev1.Pod, port int, what string, v any) error {
	raw, err := w.Clientset.CoreV1().Pods(p.Namespace).ProxyGet("http", p.Name, strconv.Itoa(port), controlPath+what, nil).DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("pod %s/%s: %s: %w", p.Namespace, p.Name, what, err)
	}
	return json.Unmarshal(raw, v)
}

// running: every container of the pod runs (a container that restarts
// serves nothing yet).
func running(p *corev1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return false
		}
	}
	return len(p.Status.ContainerStatuses) > 0
}

// systemPort is the Dynamo system port of the pod's first container whose
// env asks for one, as the fake runtime reads it (literal values only).
func systemPort(p *corev1.Pod) (int, bool) {
	for _, c := range p.Spec.Containers {
		env := map[string]string{}
		for _, e := range c.Env {
			env[e.Name] = e.Value
		}
		if port, ok := command.SystemPort(env); ok {
			return port, true
		}
	}
	return 0, false
}

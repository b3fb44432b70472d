// Package workerfarm stands in, on envtest, for what a cluster does below
// the API for Dynamo workers: envtest has no ReplicaSet controller, kubelet
// or pod network. In the namespaces it is asked to serve, it keeps as many
// Running, Ready pods as each Deployment asks for (created through the API
// with the template's labels and spec, a pod IP of its own), and runs for
// each the simulator's fake Dynamo worker (sim/workers) in process.
//
// The operator reaches those workers at the pods' addresses exactly as in a
// cluster (http://<podIP>:9090/v1/loras): the farm's HTTP client dials the
// in-process server of the pod whose IP and port the URL names, and refuses
// the connection when no worker serves there, as the network would.
package workerfarm

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/sim/workers"
)

// Farm runs the pods and fake workers of the namespaces it serves.
type Farm struct {
	client   client.Client
	Recorder *workers.Recorder
	period   time.Duration

	mu         sync.Mutex
	namespaces map[string]bool
	// byPod: namespace/name -> its worker; byAddr: ip:port -> the
	// in-process server's own address.
	byPod  map[string]*served
	byAddr map[string]string
	nextIP uint32
}

type served struct {
	uid    types.UID
	addr   string // ip:port the pod serves on
	worker *workers.Worker
	srv    *httptest.Server
}

// New makes a farm writing pods through c; Run starts it.
func New(c client.Client, clk clock.Clock) *Farm {
	return &Farm{
		client: c, Recorder: workers.NewRecorder(clk), period: 200 * time.Millisecond,
		namespaces: map[string]bool{}, byPod: map[string]*served{}, byAddr: map[string]string{},
	}
}

// Serve makes the farm run the pods of namespace's Deployments.
func (f *Farm) Serve(namespace string) {
	f.mu.Lock()
	f.namespaces[namespace] = true
	f.mu.Unlock()
}

// HTTPClient reaches the farm's workers at their pods' addresses.
func (f *Farm) HTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			f.mu.Lock()
			target := f.byAddr[addr]
			f.mu.Unlock()
			if target == "" {
				return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
			}
			var d net.Dialer
			return d.DialContext(ctx, network, target)
		},
		// A worker that restarts is a new server: no connection outlives it.
		DisableKeepAlives: true,
	}}
}

// Run keeps the served namespaces' pods until ctx ends, then stops every
// worker.
func (f *Farm) Run(ctx context.Context) {
	go func() {
		t := time.NewTicker(f.period)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				f.stopAll()
				return
			case <-t.C:
			}
			f.mu.Lock()
			nss := make([]string, 0, len(f.namespaces))
			for ns := range f.namespaces {
				nss = append(nss, ns)
			}
			f.mu.Unlock()
			for _, ns := range nss {
				if err := f.sync(ctx, ns); err != nil && ctx.Err() == nil {
					// The namespace is gone (scenario over) or the API
					// refused: nothing to serve there any more.
					f.mu.Lock()
					delete(f.namespaces, ns)
					f.mu.Unlock()
					f.stopNamespace(ns)
				}
			}
		}
	}()
}

func (f *Farm) sync(ctx context.Context, ns string) error {
	var deploys appsv1.DeploymentList
	if err := f.client.List(ctx, &deploys, client.InNamespace(ns)); err != nil {
		return err
	}
	var nsObj corev1.Namespace
	if err := f.client.Get(ctx, types.NamespacedName{Name: ns}, &nsObj); err != nil || nsObj.DeletionTimestamp != nil {
		return fmt.Errorf("namespace %s is going away", ns)
	}
	for i := range deploys.Items {
		if err := f.syncDeployment(ctx, &deploys.Items[i]); err != nil {
			return err
		}
	}
	return nil
}

// syncDeployment creates or deletes pods until the Deployment's replicas
// run, and makes sure each has its worker, as a ReplicaSet controller and
// kubelets would.
func (f *Farm) syncDeployment(ctx context.Context, d *appsv1.Deployment) error {
	if d.Spec.Selector == nil {
		return nil
	}
	var pods corev1.PodList
	if err := f.client.List(ctx, &pods, client.InNamespace(d.Namespace),
		client.MatchingLabelsSelector{Selector: labels.SelectorFromSet(d.Spec.Selector.MatchLabels)}); err != nil {
		return err
	}
	var live []*corev1.Pod
	names := map[string]bool{}
	for i := range pods.Items {
		p := &pods.Items[i]
		names[p.Name] = true
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	slices.SortFunc(live, func(a, b *corev1.Pod) int { return compareNames(a.Name, b.Name) })
	want := 1
	if d.Spec.Replicas != nil {
		want = int(*d.Spec.Replicas)
	}
	for len(live) > want {
		p := live[len(live)-1]
		live = live[:len(live)-1]
		if err := f.client.Delete(ctx, p, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
			return err
		}
		f.stop(p.Namespace + "/" + p.Name)
	}
	for n := 0; len(live) < want; n++ {
		name := d.Name + "-" + strconv.Itoa(n)
		if names[name] {
			continue
		}
		p, err := f.createPod(ctx, d, name)
		if err != nil {
			return err
		}
		names[name] = true
		live = append(live, p)
	}
	for _, p := range live {
		if err := f.ensureWorker(p); err != nil {
			return err
		}
	}
	return nil
}

func compareNames(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// createPod creates a pod of d's template and writes the status a kubelet
// would once its containers run and pass their probes.
func (f *Farm) createPod(ctx context.Context, d *appsv1.Deployment, name string) (*corev1.Pod, error) {
	tmpl := d.Spec.Template
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: d.Namespace,
			Labels: tmpl.Labels, Annotations: tmpl.Annotations,
		},
		Spec: *tmpl.Spec.DeepCopy(),
	}
	// No kubelet mounts a token, and the ServiceAccount may not exist yet.
	p.Spec.AutomountServiceAccountToken = new(bool)
	if err := f.client.Create(ctx, p); err != nil {
		return nil, fmt.Errorf("creating pod %s/%s: %w", d.Namespace, name, err)
	}
	f.mu.Lock()
	f.nextIP++
	ip := fmt.Sprintf("10.%d.%d.%d", 200+f.nextIP>>16&0x3f, f.nextIP>>8&0xff, f.nextIP&0xff)
	f.mu.Unlock()
	now := metav1.Now()
	p.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, StartTime: &now,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		},
	}
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, Ready: true, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
	if err := f.client.Status().Update(ctx, p); err != nil {
		return nil, fmt.Errorf("writing the status of pod %s/%s: %w", d.Namespace, name, err)
	}
	return p, nil
}

// ensureWorker runs the pod's fake worker on its system port (as the
// simulator does, from the pod's env) and applies its annotations.
func (f *Farm) ensureWorker(p *corev1.Pod) error {
	key := p.Namespace + "/" + p.Name
	f.mu.Lock()
	s := f.byPod[key]
	f.mu.Unlock()
	if s != nil && s.uid != p.UID {
		f.stop(key)
		s = nil
	}
	if s == nil {
		port := workers.EndpointsOf(p).SystemPort
		if port == 0 || p.Status.PodIP == "" {
			return nil
		}
		addr := net.JoinHostPort(p.Status.PodIP, strconv.Itoa(port))
		s = &served{uid: p.UID, addr: addr}
		f.start(key, s)
	}
	s.worker.SetFailLoads(p.Annotations[workers.LoRALoadFailsAnnotation] == "true")
	return nil
}

func (f *Farm) start(key string, s *served) {
	s.worker = workers.NewWorker(key, s.addr, f.Recorder)
	ns, name, _ := strings.Cut(key, "/")
	// The pod's annotations are read at each call, so a step that just
	// annotated a pod meets a worker that already follows it.
	s.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		p := &corev1.Pod{}
		if err := f.client.Get(req.Context(), types.NamespacedName{Namespace: ns, Name: name}, p); err == nil {
			s.worker.SetFailLoads(p.Annotations[workers.LoRALoadFailsAnnotation] == "true")
		}
		s.worker.ServeHTTP(rw, req)
	}))
	f.mu.Lock()
	f.byPod[key] = s
	f.byAddr[s.addr] = s.srv.Listener.Addr().String()
	f.mu.Unlock()
}

func (f *Farm) stop(key string) {
	f.mu.Lock()
	s := f.byPod[key]
	delete(f.byPod, key)
	if s != nil {
		delete(f.byAddr, s.addr)
	}
	f.mu.Unlock()
	if s != nil {
		s.srv.Close()
	}
}

func (f *Farm) stopNamespace(ns string) {
	f.mu.Lock()
	var keys []string
	for k := range f.byPod {
		if strings.HasPrefix(k, ns+"/") {
			keys = append(keys, k)
		}
	}
	f.mu.Unlock()
	for _, k := range keys {
		f.stop(k)
	}
}

func (f *Farm) stopAll() {
	f.mu.Lock()
	var keys []string
	for k := range f.byPod {
		keys = append(keys, k)
	}
	f.mu.Unlock()
	for _, k := range keys {
		f.stop(k)
	}
}

// RestartWorker restarts the containers of pod (namespace/name) as a
// kubelet does after the process exits: its worker starts afresh without
// the adapters it had, and the pod's status shows restartCount+1. The
// pod stays Ready (its model loads at once here).
func (f *Farm) RestartWorker(ctx context.Context, pod string) error {
	f.mu.Lock()
	s := f.byPod[pod]
	f.mu.Unlock()
	if s == nil {
		return fmt.Errorf("pod %s has no fake worker", pod)
	}
	f.stop(pod)
	f.start(pod, &served{uid: s.uid, addr: s.addr})
	ns, name, _ := strings.Cut(pod, "/")
	p := &corev1.Pod{}
	if err := f.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, p); err != nil {
		return err
	}
	now := metav1.Now()
	for i := range p.Status.ContainerStatuses {
		cs := &p.Status.ContainerStatuses[i]
		cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 1, Reason: "Error", FinishedAt: now,
		}}
		cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
		cs.RestartCount++
	}
	return f.client.Status().Update(ctx, p)
}

// AllLoRAs lists the adapters loaded on each pod's worker.
func (f *Farm) AllLoRAs() map[string][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string][]string, len(f.byPod))
	for k, s := range f.byPod {
		out[k] = s.worker.LoRAs()
	}
	return out
}

// ForgetWorker makes the worker of pod drop its adapters, nothing else.
func (f *Farm) ForgetWorker(pod string) error {
	f.mu.Lock()
	s := f.byPod[pod]
	f.mu.Unlock()
	if s == nil {
		return fmt.Errorf("pod %s has no fake worker", pod)
	}
	s.worker.Forget()
	return nil
}

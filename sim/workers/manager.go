package workers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// ComponentLabel marks the pods of Dynamo components (operator/render's
// LabelComponent); only they get a fake worker.
const ComponentLabel = "nvidia.com/dynamo-component"

// Manager keeps one fake worker serving for every Running pod of a Dynamo
// component, and stops it when the pod stops running or goes away.
type Manager struct {
	Recorder *Recorder
	// Log receives errors binding worker addresses.
	Log func(format string, args ...any)

	mu      sync.Mutex
	servers map[string]*server // by pod namespace/name
	// down lists pods whose worker must not serve (crash-loop fault).
	down map[string]bool
}

type server struct {
	ip  string
	srv *http.Server
}

// NewManager makes a Manager recording into rec.
func NewManager(rec *Recorder) *Manager {
	return &Manager{Recorder: rec, servers: map[string]*server{}, down: map[string]bool{}, Log: func(string, ...any) {}}
}

// Run watches pods until ctx ends, then stops every worker.
func (m *Manager) Run(ctx context.Context, cs kubernetes.Interface) error {
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = ComponentLabel }))
	inf := factory.Core().V1().Pods().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { m.sync(obj) },
		UpdateFunc: func(_, obj any) { m.sync(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				m.stop(key(p))
			}
		},
	})
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	go func() {
		<-ctx.Done()
		factory.Shutdown()
		m.stopAll()
	}()
	return nil
}

// SetDown makes the worker of a pod stop answering (true) or answer again.
func (m *Manager) SetDown(pod string, down bool) {
	m.mu.Lock()
	m.down[pod] = down
	m.mu.Unlock()
	if down {
		m.stop(pod)
	}
}

// Serving lists pod -> address of the workers that serve now.
func (m *Manager) Serving() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]string, len(m.servers))
	for k, s := range m.servers {
		out[k] = net.JoinHostPort(s.ip, strconv.Itoa(Port))
	}
	return out
}

func key(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

func (m *Manager) sync(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	k := key(p)
	running := p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" && p.DeletionTimestamp == nil && !p.Spec.HostNetwork
	m.mu.Lock()
	cur := m.servers[k]
	down := m.down[k]
	m.mu.Unlock()
	switch {
	case !running || down:
		m.stop(k)
	case cur != nil && cur.ip == p.Status.PodIP:
	default:
		m.stop(k)
		if err := m.start(k, p.Status.PodIP); err != nil {
			m.Log("fake worker of %s: %v", k, err)
		}
	}
}

func (m *Manager) start(pod, ip string) error {
	addr := net.JoinHostPort(ip, strconv.Itoa(Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: NewWorker(pod, addr, m.Recorder), ReadHeaderTimeout: 5 * time.Second}
	m.mu.Lock()
	m.servers[pod] = &server{ip: ip, srv: srv}
	m.mu.Unlock()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.Log("fake worker of %s: %v", pod, err)
		}
	}()
	return nil
}

func (m *Manager) stop(pod string) {
	m.mu.Lock()
	s := m.servers[pod]
	delete(m.servers, pod)
	m.mu.Unlock()
	if s != nil {
		_ = s.srv.Close()
	}
}

func (m *Manager) stopAll() {
	m.mu.Lock()
	all := m.servers
	m.servers = map[string]*server{}
	m.mu.Unlock()
	for _, s := range all {
		_ = s.srv.Close()
	}
}

package workers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/dynamoctl/dynamo-operator/sim/command"
)

// ComponentLabel marks the pods of Dynamo components (operator/render's
// LabelComponent); only they get a fake worker.
const ComponentLabel = "nvidia.com/dynamo-component"

// ComponentTypeLabel is operator/render's LabelComponentType: frontends
// also serve the HTTP server's health endpoints.
const ComponentTypeLabel = "nvidia.com/dynamo-component-type"

// ModelLoadDelayAnnotation overrides the simulated model load time of a
// pod: a duration ("10s"), or "never" for a model that never loads.
const ModelLoadDelayAnnotation = "sim.dynamo.dev/model-load-delay"

// LoRALoadFailsAnnotation, "true" on a pod, makes its fake worker answer
// every POST /v1/loras with 500 (it is read on each pod update, so adding
// or removing it takes effect on a running worker).
const LoRALoadFailsAnnotation = "sim.dynamo.dev/lora-load-fails"

// Manager keeps one fake worker serving for every Running pod of a Dynamo
// component, and stops it when the pod stops running or goes away.
type Manager struct {
	Recorder *Recorder
	// Log receives errors binding worker addresses.
	Log func(format string, args ...any)
	// ModelLoadDelay is how long a worker's model takes to load (its
	// /health is 503 until then) unless the pod's annotation says.
	ModelLoadDelay time.Duration

	// Clock schedules the retries of a worker whose address could not be
	// bound; the real clock unless set.
	Clock clock.WithDelayedExecution

	// pods reads the latest state of a pod, for a retry (the informer's
	// store once Run has started).
	pods cache.Store

	mu      sync.Mutex
	servers map[string]*server // by pod namespace/name
	// down lists pods whose worker must not serve (crash-loop fault).
	down map[string]bool
}

type server struct {
	ip     string
	system string // the system server's address; "" without one
	worker *Worker
	srvs   []*http.Server
	grpcs  []*grpc.Server
	// pod is kept so Restart can start the same worker again.
	pod *corev1.Pod
}

// NewManager makes a Manager recording into rec.
func NewManager(rec *Recorder) *Manager {
	return &Manager{Recorder: rec, Clock: clock.RealClock{}, servers: map[string]*server{}, down: map[string]bool{}, Log: func(string, ...any) {}}
}

// Run watches pods until ctx ends, then stops every worker.
func (m *Manager) Run(ctx context.Context, cs kubernetes.Interface) error {
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = ComponentLabel }))
	inf := factory.Core().V1().Pods().Informer()
	m.mu.Lock()
	m.pods = inf.GetStore()
	m.mu.Unlock()
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
		if s.system != "" {
			out[k] = s.system
		}
	}
	return out
}

// Restart starts the worker of pod afresh, as a container restart would:
// its LoRAs are forgotten and its model loads again. It reports whether
// the pod had a worker.
func (m *Manager) Restart(pod string) bool {
	m.mu.Lock()
	s := m.servers[pod]
	m.mu.Unlock()
	if s == nil {
		return false
	}
	m.stop(pod)
	if err := m.start(s.pod); err != nil {
		m.Log("fake worker of %s: %v", pod, err)
	}
	return true
}

// LoRAs lists, per pod (namespace/name) with a worker, the adapters it has
// loaded.
func (m *Manager) LoRAs() map[string][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string][]string, len(m.servers))
	for k, s := range m.servers {
		if s.worker != nil {
			out[k] = append([]string{}, s.worker.LoRAs()...)
		}
	}
	return out
}

// Forget makes the worker of pod drop its adapters without restarting; it
// reports whether the pod had a worker.
func (m *Manager) Forget(pod string) bool {
	m.mu.Lock()
	s := m.servers[pod]
	m.mu.Unlock()
	if s == nil || s.worker == nil {
		return false
	}
	s.worker.Forget()
	return true
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
		if cur.worker != nil {
			cur.worker.SetFailLoads(p.Annotations[LoRALoadFailsAnnotation] == "true")
		}
	default:
		m.stop(k)
		if err := m.start(p); err != nil {
			// A pod's address can be the one of a pod the simulator's kubelet
			// ran until a moment ago: the /32 route to that pod's network
			// namespace lives until the kernel has destroyed the namespace,
			// and binding fails meanwhile. Nothing else would ever try again
			// (a pod that is Running sees no more events until its probes
			// pass, which need this worker), so this does, every second.
			m.stop(k)
			m.Log("fake worker of %s: %v; trying again in 1s", k, err)
			m.Clock.AfterFunc(time.Second, func() { m.retry(k) })
		}
	}
}

// retry syncs the pod k again from the informer's latest state.
func (m *Manager) retry(k string) {
	m.mu.Lock()
	store := m.pods
	m.mu.Unlock()
	if store == nil {
		return
	}
	if obj, ok, err := store.GetByKey(k); err == nil && ok {
		m.sync(obj)
	}
}

// Endpoints is what Dynamo's programs in a pod would listen on.
type Endpoints struct {
	// SystemPort is the runtime's system server (health, LoRAs).
	SystemPort int
	// HTTPPort is a frontend's OpenAI HTTP server.
	HTTPPort int
	// MetricsPort is a planner's Prometheus metrics server
	// (--prometheus-port).
	MetricsPort int
	// StandbySystemPorts are the system servers of the pod's further
	// engines, each its container's own DYN_SYSTEM_PORT (failover's
	// standby engine: /health answers once its model is loaded, as a
	// standby's does while it waits for the lock).
	StandbySystemPorts []int
	// ListenPorts are the other ports the containers' TCP socket probes
	// check (a multinode TRT-LLM worker's sshd, which its leader's mpirun
	// reaches): the program would listen there, so the fake does too.
	ListenPorts []int
	// GRPCHealthPorts are the ports the containers' gRPC probes call: the
	// program serves the gRPC health service there (the endpoint picker),
	// and the fake answers SERVING.
	GRPCHealthPorts []int
}

// addSystemPort records a program's system server: the pod's first is
// SystemPort, another one a standby engine's.
func (e *Endpoints) addSystemPort(port int) {
	switch {
	case e.SystemPort == 0:
		e.SystemPort = port
	case port != e.SystemPort && !slices.Contains(e.StandbySystemPorts, port):
		e.StandbySystemPorts = append(e.StandbySystemPorts, port)
	}
}

// taken reports whether the fake serves port already.
func (e *Endpoints) taken(port int) bool {
	return port == e.SystemPort || port == e.HTTPPort || port == e.MetricsPort || slices.Contains(e.StandbySystemPorts, port) ||
		slices.Contains(e.ListenPorts, port) || slices.Contains(e.GRPCHealthPorts, port)
}

// EndpointsOf reads a pod's containers as Dynamo's runtime images would run
// them. A container's command and args say which programs start
// (command.Processes): `python3 -m dynamo.frontend` serves its HTTP port
// (--http-port, DYN_HTTP_PORT, 8000) whatever the pod's labels, and every
// Dynamo program (frontend, engine worker, planner) its system server when
// its env asks for one (command.SystemPort); a planner with
// --prometheus-port serves its metrics there. A container whose command
// starts no Python module (none given, the image's own entrypoint) is read
// from its env and the pod's component type label, as before: the system
// server from env, the HTTP port for frontends. Only literal env values
// count (the operator renders these as values).
func EndpointsOf(p *corev1.Pod) Endpoints {
	var e Endpoints
	for _, c := range p.Spec.Containers {
		env := map[string]string{}
		for _, v := range c.Env {
			env[v.Name] = v.Value
		}
		// The kubelet substitutes $(VAR) in command and args before it
		// runs them (multinode pods name their leader so).
		var argv []string
		for _, a := range append(append([]string{}, c.Command...), c.Args...) {
			argv = append(argv, command.Expand(a, env))
		}
		procs := command.Processes(argv, env)
		if len(procs) == 0 {
			if port, ok := command.SystemPort(env); ok {
				e.addSystemPort(port)
			}
			if e.HTTPPort == 0 && p.Labels[ComponentTypeLabel] == "frontend" {
				e.HTTPPort = FrontendPort
				if n, err := strconv.Atoi(env["DYN_HTTP_PORT"]); err == nil && n > 0 {
					e.HTTPPort = n
				}
			}
			continue
		}
		for _, proc := range procs {
			if port, ok := command.SystemPort(proc.Env); ok {
				e.addSystemPort(port)
			}
			if proc.Kind == command.Frontend && e.HTTPPort == 0 {
				e.HTTPPort = proc.HTTPPort
			}
			if proc.MetricsPort != 0 && e.MetricsPort == 0 {
				e.MetricsPort = proc.MetricsPort
			}
		}
	}
	for _, c := range p.Spec.Containers {
		for _, probe := range []*corev1.Probe{c.StartupProbe, c.ReadinessProbe, c.LivenessProbe} {
			switch {
			case probe == nil:
			case probe.GRPC != nil:
				if port := int(probe.GRPC.Port); port > 0 && !e.taken(port) {
					e.GRPCHealthPorts = append(e.GRPCHealthPorts, port)
				}
			case probe.TCPSocket != nil:
				port := probe.TCPSocket.Port.IntValue()
				for _, cp := range c.Ports {
					if probe.TCPSocket.Port.StrVal != "" && cp.Name == probe.TCPSocket.Port.StrVal {
						port = int(cp.ContainerPort)
					}
				}
				if port > 0 && !e.taken(port) {
					e.ListenPorts = append(e.ListenPorts, port)
				}
			}
		}
	}
	return e
}

// loadDelay is the pod's simulated model load time, and whether the model
// never loads.
func (m *Manager) loadDelay(p *corev1.Pod) (time.Duration, bool) {
	v, ok := p.Annotations[ModelLoadDelayAnnotation]
	if !ok {
		return m.ModelLoadDelay, false
	}
	if v == "never" {
		return 0, true
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		m.Log("pod %s: annotation %s=%q is not a duration or \"never\"; using %s", key(p), ModelLoadDelayAnnotation, v, m.ModelLoadDelay)
		return m.ModelLoadDelay, false
	}
	return d, false
}

func (m *Manager) start(p *corev1.Pod) error {
	k, ip := key(p), p.Status.PodIP
	e := EndpointsOf(p)
	s := &server{ip: ip, pod: p}
	serve := func(port int, h http.Handler) error {
		addr := net.JoinHostPort(ip, strconv.Itoa(port))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("listening on %s: %w", addr, err)
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
		s.srvs = append(s.srvs, srv)
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				m.Log("fake worker of %s: %v", k, err)
			}
		}()
		return nil
	}
	var err error
	if e.SystemPort != 0 {
		s.system = net.JoinHostPort(ip, strconv.Itoa(e.SystemPort))
		delay, never := m.loadDelay(p)
		s.worker = NewLoadingWorker(k, s.system, m.Recorder, delay, never)
		s.worker.SetFailLoads(p.Annotations[LoRALoadFailsAnnotation] == "true")
		err = serve(e.SystemPort, s.worker)
	}
	if err == nil && e.HTTPPort != 0 && e.HTTPPort != e.SystemPort {
		err = serve(e.HTTPPort, NewFrontend(k, net.JoinHostPort(ip, strconv.Itoa(e.HTTPPort)), m.Recorder))
	}
	if err == nil && e.MetricsPort != 0 && e.MetricsPort != e.SystemPort && e.MetricsPort != e.HTTPPort {
		err = serve(e.MetricsPort, NewMetrics(k, net.JoinHostPort(ip, strconv.Itoa(e.MetricsPort)), m.Recorder))
	}
	for _, port := range e.StandbySystemPorts {
		if err == nil {
			// A worker of its own: the standby's LoRAs and calls are its own.
			addr := net.JoinHostPort(ip, strconv.Itoa(port))
			delay, never := m.loadDelay(p)
			err = serve(port, NewLoadingWorker(k, addr, m.Recorder, delay, never))
		}
	}
	for _, port := range e.ListenPorts {
		if err == nil {
			err = serve(port, http.NotFoundHandler())
		}
	}
	for _, port := range e.GRPCHealthPorts {
		if err == nil {
			err = s.serveGRPCHealth(net.JoinHostPort(ip, strconv.Itoa(port)), func(err error) { m.Log("fake worker of %s: %v", k, err) })
		}
	}
	m.mu.Lock()
	m.servers[k] = s
	m.mu.Unlock()
	return err
}

func (m *Manager) stop(pod string) {
	m.mu.Lock()
	s := m.servers[pod]
	delete(m.servers, pod)
	m.mu.Unlock()
	if s != nil {
		s.close()
	}
}

func (m *Manager) stopAll() {
	m.mu.Lock()
	all := m.servers
	m.servers = map[string]*server{}
	m.mu.Unlock()
	for _, s := range all {
		s.close()
	}
}

// close stops every server of the pod's fake.
func (s *server) close() {
	for _, srv := range s.srvs {
		_ = srv.Close()
	}
	for _, g := range s.grpcs {
		g.Stop()
	}
}

// serveGRPCHealth serves the gRPC health service at addr, SERVING for every
// service name (a program's probe names its own: the endpoint picker's
// inference-extension).
func (s *server) serveGRPCHealth(addr string, logErr func(error)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	g := grpc.NewServer()
	healthpb.RegisterHealthServer(g, servingHealth{})
	s.grpcs = append(s.grpcs, g)
	go func() {
		if err := g.Serve(ln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			logErr(err)
		}
	}()
	return nil
}

// servingHealth answers every health check SERVING.
type servingHealth struct {
	healthpb.UnimplementedHealthServer
}

func (servingHealth) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

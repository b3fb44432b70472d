// Package kubelet runs the pods whose container image maps to a program
// on this machine (the operator's image maps to bin/dynamo-operator) as a
// kubelet would: the real program with the container's command, args and
// env, the pod's ServiceAccount token from the TokenRequest API, its
// Secret, ConfigMap, projected and emptyDir volumes at their mount paths
// (a private mount namespace per container), in a network namespace of
// its own per pod with the pod IP on a veth pair into the simulator's
// namespace; restarts with back-off, SIGTERM then SIGKILL after the grace
// period when the pod is deleted, logs under logs/pods/. Readiness and
// liveness are the prober's (sim/probes); this package restarts the
// process when the prober asks.
package kubelet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"

	"github.com/dynamoctl/dynamo-operator/sim/command"
	"github.com/dynamoctl/dynamo-operator/sim/probes"
)

// ImageMapping maps an image repository (and, when Tag is set, only that
// tag) to a program on this machine.
type ImageMapping struct {
	Repo, Tag, Path string
}

// ParseImageMapping reads REPO[:TAG]=PATH.
func ParseImageMapping(s string) (ImageMapping, error) {
	img, path, ok := strings.Cut(s, "=")
	if !ok || img == "" || path == "" {
		return ImageMapping{}, fmt.Errorf("image mapping %q: want REPO[:TAG]=PATH", s)
	}
	repo, tag := SplitImage(img)
	abs, err := filepath.Abs(path)
	if err != nil {
		return ImageMapping{}, err
	}
	return ImageMapping{Repo: repo, Tag: tag, Path: abs}, nil
}

// SplitImage splits an image reference into repository and tag (digest
// dropped; no tag is "").
func SplitImage(image string) (repo, tag string) {
	image, _, _ = strings.Cut(image, "@")
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return image[:i], image[i+1:]
	}
	return image, ""
}

// Config configures a Runner.
type Config struct {
	// Client acts as the kubelet (an administrator in the simulator).
	Client kubernetes.Interface
	Clock  clock.Clock
	// Images are the mappings; the first that matches a container wins.
	Images []ImageMapping
	// Dir holds pods/<ns>_<name>/ (volumes) and logs/pods/.
	Dir string
	// APIServerHost and APIServerPort are what pods get as
	// KUBERNETES_SERVICE_HOST/PORT.
	APIServerHost string
	APIServerPort int
	// Log receives what a kubelet would report in events.
	Log func(format string, args ...any)
}

// Runner is the kubelet for mapped images.
type Runner struct {
	Config
	client  kubernetes.Interface
	clock   clock.Clock
	objects Objects
	self    string

	mu   sync.Mutex
	pods map[types.UID]*podRun
	// lost are the pods of lost nodes (LoseNode), never run again.
	lost map[types.UID]bool
	wg   sync.WaitGroup
}

// New makes a Runner.
func New(c Config) (*Runner, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Log == nil {
		c.Log = func(string, ...any) {}
	}
	return &Runner{Config: c, client: c.Client, clock: c.Clock, objects: apiObjects{c.Client}, self: self, pods: map[types.UID]*podRun{}, lost: map[types.UID]bool{}}, nil
}

// apiObjects reads Secrets and ConfigMaps from the API server.
type apiObjects struct{ c kubernetes.Interface }

func (a apiObjects) Secret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	return a.c.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
}

func (a apiObjects) ConfigMap(ctx context.Context, ns, name string) (*corev1.ConfigMap, error) {
	return a.c.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
}

// Match returns the program for image, or "".
func (r *Runner) Match(image string) string {
	repo, tag := SplitImage(image)
	for _, m := range r.Images {
		if m.Repo == repo && (m.Tag == "" || m.Tag == tag) {
			return m.Path
		}
	}
	return ""
}

// Runs reports whether the runner runs a container of pod.
func (r *Runner) Runs(pod *corev1.Pod) bool {
	for _, c := range pod.Spec.Containers {
		if r.Match(c.Image) != "" {
			return true
		}
	}
	return false
}

// Run watches pods until ctx ends; then it stops every pod it runs and
// returns from Wait.
func (r *Runner) Run(ctx context.Context) error {
	if err := os.MkdirAll(filepath.Join(r.Dir, "logs", "pods"), 0o755); err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactory(r.client, 0)
	inf := factory.Core().V1().Pods().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.sync(ctx, obj, false) },
		UpdateFunc: func(_, obj any) { r.sync(ctx, obj, false) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			r.sync(ctx, obj, true)
		},
	})
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	go func() {
		<-ctx.Done()
		factory.Shutdown()
		r.mu.Lock()
		all := r.pods
		r.pods = map[types.UID]*podRun{}
		r.mu.Unlock()
		for _, p := range all {
			p.stop(5 * time.Second)
		}
	}()
	return nil
}

// Wait returns once every pod the runner started has stopped.
func (r *Runner) Wait() { r.wg.Wait() }

// Restart restarts a container the runner runs (a failed liveness probe);
// false when the runner does not run it.
func (r *Runner) Restart(pod *corev1.Pod, container string) bool {
	r.mu.Lock()
	p := r.pods[pod.UID]
	r.mu.Unlock()
	if p == nil {
		return false
	}
	p.mu.Lock()
	c := p.containers[container]
	p.mu.Unlock()
	if c == nil {
		return false
	}
	r.Log("kubelet: %s/%s container %s failed its liveness probe; restarting it", pod.Namespace, pod.Name, container)
	c.kill(gracePeriod(pod))
	return true
}

// Running lists the pods the runner runs, namespace/name.
func (r *Runner) Running() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.pods))
	for _, p := range r.pods {
		out = append(out, p.key())
	}
	return out
}

// Kill sends SIGKILL to the process group of each running container of a
// pod, with no SIGTERM first: a crash, not a deletion. The supervisor sees
// the exit (code 137) and restarts the container after its back-off. It
// returns the pids killed; an error when the pod runs no process.
func (r *Runner) Kill(namespace, name string) ([]int, error) {
	r.mu.Lock()
	var p *podRun
	for _, q := range r.pods {
		if q.pod.Namespace == namespace && q.pod.Name == name {
			p = q
		}
	}
	r.mu.Unlock()
	if p == nil {
		return nil, fmt.Errorf("the simulator's kubelet runs no pod %s/%s", namespace, name)
	}
	p.mu.Lock()
	containers := make([]*containerRun, 0, len(p.containers))
	for _, c := range p.containers {
		containers = append(containers, c)
	}
	p.mu.Unlock()
	var pids []int
	for _, c := range containers {
		c.mu.Lock()
		cmd := c.cmd
		c.mu.Unlock()
		if cmd == nil {
			continue // between runs (back-off)
		}
		if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err == nil {
			pids = append(pids, cmd.Process.Pid)
		}
	}
	if len(pids) == 0 {
		return nil, fmt.Errorf("pod %s/%s has no running container process (starting, or in back-off)", namespace, name)
	}
	r.Log("kubelet: %s/%s: SIGKILL to pids %v", namespace, name, pids)
	return pids, nil
}

// LoseNode is the machine under node going dark: every pod the runner
// runs there has its processes SIGKILLed, with no SIGTERM and no status
// written (no kubelet is left to write it), its sandbox and so its pod IP
// go, and nothing restarts it. The pod objects stay as they were until the
// node lifecycle controller notices the node is gone. It returns the pods
// stopped, namespace/name.
func (r *Runner) LoseNode(node string) []string {
	r.mu.Lock()
	var lost []*podRun
	for uid, p := range r.pods {
		if p.pod.Spec.NodeName == node {
			lost = append(lost, p)
			delete(r.pods, uid)
			r.lost[uid] = true
		}
	}
	r.mu.Unlock()
	out := make([]string, 0, len(lost))
	for _, p := range lost {
		p.mu.Lock()
		p.lost = true
		p.mu.Unlock()
		p.stop(0)
		out = append(out, p.key())
		r.Log("kubelet: %s: its node %s is lost; its processes are gone", p.key(), node)
	}
	return out
}

func gracePeriod(pod *corev1.Pod) time.Duration {
	if pod.DeletionGracePeriodSeconds != nil {
		return time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return 30 * time.Second
}

func (r *Runner) sync(ctx context.Context, obj any, deleted bool) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || !r.Runs(pod) {
		return
	}
	r.mu.Lock()
	if r.lost[pod.UID] {
		// Its node is lost (LoseNode): no kubelet runs it again.
		if deleted {
			delete(r.lost, pod.UID)
		}
		r.mu.Unlock()
		return
	}
	p := r.pods[pod.UID]
	if deleted || pod.DeletionTimestamp != nil {
		delete(r.pods, pod.UID)
		r.mu.Unlock()
		if p != nil {
			go p.stop(gracePeriod(pod))
		}
		return
	}
	if p != nil || pod.Status.PodIP == "" || pod.Status.Phase != corev1.PodRunning || ctx.Err() != nil {
		r.mu.Unlock()
		return
	}
	pctx, cancel := context.WithCancel(ctx)
	p = &podRun{r: r, pod: pod, cancel: cancel, done: make(chan struct{}), containers: map[string]*containerRun{}}
	r.pods[pod.UID] = p
	r.wg.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.wg.Done()
		p.run(pctx)
	}()
}

// podRun is one pod the runner runs.
type podRun struct {
	r      *Runner
	pod    *corev1.Pod
	cancel context.CancelFunc
	done   chan struct{}

	sandbox  *exec.Cmd
	vols     *volumes
	stopOnce sync.Once

	mu         sync.Mutex
	containers map[string]*containerRun
	// grace is the deletion's grace period; graceSet is false when the
	// runner itself is stopping (the simulator goes down).
	grace    time.Duration
	graceSet bool
	// lost: its node is lost; its processes are SIGKILLed, not terminated.
	lost bool
}

func (p *podRun) key() string { return p.pod.Namespace + "/" + p.pod.Name }

// stop ends the pod's containers: SIGTERM, SIGKILL after grace.
func (p *podRun) stop(grace time.Duration) {
	p.mu.Lock()
	if !p.graceSet {
		p.grace, p.graceSet = grace, true
	}
	p.mu.Unlock()
	p.stopOnce.Do(p.cancel)
	<-p.done
}

func (p *podRun) run(ctx context.Context) {
	defer close(p.done)
	log := p.r.Log
	dir := filepath.Join(p.r.Dir, "pods", p.pod.Namespace+"_"+p.pod.Name)
	defer func() { _ = os.RemoveAll(dir) }()
	p.vols = &volumes{r: p.r, pod: p.pod, dir: filepath.Join(dir, "volumes"), tokens: map[string]time.Time{}}
	logPath := filepath.Join(p.r.Dir, "logs", "pods", p.pod.Namespace+"_"+p.pod.Name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		log("kubelet: %s: %v", p.key(), err)
		return
	}
	defer func() { _ = logFile.Close() }()

	sb, netns, err := startSandbox(ctx, p.r.self, p.pod.Status.PodIP, logFile)
	if err != nil {
		log("kubelet: %s: network: %v", p.key(), err)
		return
	}
	p.sandbox = sb
	defer func() {
		_ = syscall.Kill(-sb.Process.Pid, syscall.SIGKILL)
		_ = sb.Wait()
	}()

	if !p.syncVolumes(ctx) {
		return
	}
	go p.resyncVolumes(ctx)
	if !p.runInitContainers(ctx, netns, logFile) {
		return
	}
	p.runContainers(ctx, netns, logFile)
}

// syncVolumes sets up the pod's volumes before any container starts: a
// container starts only with all of them (missing Secrets are retried, as
// a kubelet waits in ContainerCreating). It is false when ctx ended first.
func (p *podRun) syncVolumes(ctx context.Context) bool {
	for {
		err := p.vols.sync(ctx)
		if err == nil {
			return true
		}
		p.r.Log("kubelet: %s: %v; retrying", p.key(), err)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(2 * time.Second):
		}
	}
}

// runInitContainers runs the init containers of mapped images to
// completion first, in order (retried with back-off on failure); others
// are KWOK's (Completed at once). Sidecar init containers (restartPolicy
// Always) are not run. It is false when the pod stops first.
func (p *podRun) runInitContainers(ctx context.Context, netns string, logFile *os.File) bool {
	for i := range p.pod.Spec.InitContainers {
		c := &p.pod.Spec.InitContainers[i]
		bin := p.r.Match(c.Image)
		if bin == "" || (c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways) {
			continue
		}
		cr := &containerRun{p: p, c: c, bin: bin, netns: netns, log: logFile, init: true}
		if !cr.supervise(ctx) {
			return false
		}
	}
	return true
}

// runContainers runs the containers of mapped images, each supervised,
// until the pod stops.
func (p *podRun) runContainers(ctx context.Context, netns string, logFile *os.File) {
	var wg sync.WaitGroup
	for i := range p.pod.Spec.Containers {
		c := &p.pod.Spec.Containers[i]
		bin := p.r.Match(c.Image)
		if bin == "" {
			continue
		}
		cr := &containerRun{p: p, c: c, bin: bin, netns: netns, log: logFile}
		p.mu.Lock()
		p.containers[c.Name] = cr
		p.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			cr.supervise(ctx)
		}()
	}
	wg.Wait()
}

func (p *podRun) resyncVolumes(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.r.clock.After(2 * time.Second):
			if err := p.vols.sync(ctx); err != nil && ctx.Err() == nil {
				p.r.Log("kubelet: %s: %v", p.key(), err)
			}
		}
	}
}

// containerRun supervises one container's process.
type containerRun struct {
	p     *podRun
	c     *corev1.Container
	bin   string
	netns string
	log   *os.File

	// init is an init container: it runs until it succeeds once.
	init bool

	mu       sync.Mutex
	cmd      *exec.Cmd
	restarts int32
}

// Back-off between restarts of a container that exits: the kubelet's
// 10 s doubling to 5 min, shortened for a simulator.
const (
	backoffStart = time.Second
	backoffMax   = 30 * time.Second
	// backoffReset: a run this long resets the back-off.
	backoffReset = time.Minute
)

// supervise runs the container again whenever it exits (restartPolicy
// Always), until ctx ends; an init container until it succeeds once, which
// returns true.
func (cr *containerRun) supervise(ctx context.Context) bool {
	backoff := backoffStart
	for {
		started := cr.p.r.clock.Now()
		exit, err := cr.runOnce(ctx)
		if ctx.Err() != nil {
			return false
		}
		if cr.init && err == nil && exit.ExitCode == 0 {
			cr.p.r.Log("kubelet: %s init container %s completed", cr.p.key(), cr.c.Name)
			cr.writeStatus(ctx, func(st *corev1.ContainerStatus) {
				st.State = corev1.ContainerState{Terminated: exit}
				st.Ready, st.Started = true, ptrBool(false)
			})
			return true
		}
		if err != nil {
			cr.p.r.Log("kubelet: %s container %s: %v", cr.p.key(), cr.c.Name, err)
		}
		if cr.p.r.clock.Since(started) > backoffReset {
			backoff = backoffStart
		}
		cr.mu.Lock()
		cr.restarts++
		restarts := cr.restarts
		cr.mu.Unlock()
		cr.p.r.Log("kubelet: %s container %s exited (%s); restarting in %s", cr.p.key(), cr.c.Name, exit.Reason, backoff)
		cr.writeStatus(ctx, func(st *corev1.ContainerStatus) {
			st.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
				Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", backoff, cr.c.Name, cr.p.pod.Name)}}
			st.LastTerminationState = corev1.ContainerState{Terminated: exit}
			st.RestartCount = restarts
			st.Ready, st.Started = false, ptrBool(false)
		})
		select {
		case <-ctx.Done():
			return false
		case <-cr.p.r.clock.After(backoff):
		}
		backoff = min(2*backoff, backoffMax)
	}
}

// runOnce starts the process and waits for it; when ctx ends it stops it
// with the pod's grace period.
func (cr *containerRun) runOnce(ctx context.Context) (*corev1.ContainerStateTerminated, error) {
	p := cr.p
	started := metav1.NewTime(p.r.clock.Now())
	env, err := ResolveEnv(ctx, p.r.objects, p.pod, cr.c, cr.baseEnv())
	if err != nil {
		return &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "CreateContainerConfigError", Message: err.Error(), StartedAt: started, FinishedAt: started}, err
	}
	path, args := cr.commandLine(EnvMap(env))
	uid, gid := runAs(p.pod, cr.c)
	spec, err := json.Marshal(containerSpec{NetNS: cr.netns, Mounts: cr.mounts(), Dir: cr.c.WorkingDir, Path: path, Args: append([]string{path}, args...), Env: env, UID: uid, GID: gid, Hostname: hostname(p.pod)})
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(p.r.self)
	cmd.Env = []string{reexecEnv + "=container", containerEnv + "=" + string(spec)}
	cmd.Stdout, cmd.Stderr = cr.log, cr.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return &corev1.ContainerStateTerminated{ExitCode: 128, Reason: "StartError", Message: err.Error(), StartedAt: started, FinishedAt: started}, err
	}
	cr.mu.Lock()
	cr.cmd = cmd
	restarts := cr.restarts
	cr.mu.Unlock()
	p.r.Log("kubelet: %s container %s started (pid %d)", p.key(), cr.c.Name, cmd.Process.Pid)
	cr.writeStatus(ctx, func(st *corev1.ContainerStatus) {
		st.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}
		st.ContainerID = "sim://" + strconv.Itoa(cmd.Process.Pid)
		st.RestartCount = restarts
		// The prober decides readiness from here (it sees the new run by
		// the restart count); without probes a running container is ready.
		st.Started = ptrBool(cr.c.StartupProbe == nil)
		st.Ready = cr.c.StartupProbe == nil && cr.c.ReadinessProbe == nil
	})
	werr := cr.wait(ctx, cmd)
	cr.mu.Lock()
	cr.cmd = nil
	cr.mu.Unlock()
	code, reason := exitOf(werr)
	return &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, StartedAt: started, FinishedAt: metav1.NewTime(p.r.clock.Now()), ContainerID: "sim://" + strconv.Itoa(cmd.Process.Pid)}, nil
}

// baseEnv is what a kubelet sets in every container: the API server's
// Service and the hostname.
func (cr *containerRun) baseEnv() []corev1.EnvVar {
	p := cr.p
	return []corev1.EnvVar{
		{Name: "KUBERNETES_SERVICE_HOST", Value: p.r.APIServerHost},
		{Name: "KUBERNETES_SERVICE_PORT", Value: strconv.Itoa(p.r.APIServerPort)},
		{Name: "KUBERNETES_SERVICE_PORT_HTTPS", Value: strconv.Itoa(p.r.APIServerPort)},
		{Name: "KUBERNETES_PORT", Value: fmt.Sprintf("tcp://%s:%d", p.r.APIServerHost, p.r.APIServerPort)},
		{Name: "HOSTNAME", Value: p.pod.Name},
	}
}

// commandLine is the program the container runs and its arguments, with
// $(VAR) references expanded from vals.
func (cr *containerRun) commandLine(vals map[string]string) (path string, args []string) {
	args = make([]string, 0, len(cr.c.Command)+len(cr.c.Args))
	path = cr.bin
	if len(cr.c.Command) > 0 {
		// The image's entrypoint is the mapped program; any other command
		// path is taken as a path on this machine.
		if cmd0 := command.Expand(cr.c.Command[0], vals); filepath.Base(cmd0) != filepath.Base(cr.bin) && !strings.HasPrefix(cmd0, "/dynamo-operator") {
			path = cmd0
		}
		for _, a := range cr.c.Command[1:] {
			args = append(args, command.Expand(a, vals))
		}
	}
	for _, a := range cr.c.Args {
		args = append(args, command.Expand(a, vals))
	}
	return path, args
}

// mounts are the container's volume mounts on the pod's volume directories.
func (cr *containerRun) mounts() []mountAt {
	var mounts []mountAt
	for _, vm := range cr.c.VolumeMounts {
		src := cr.p.vols.Path(vm.Name)
		if vm.SubPath != "" {
			src = filepath.Join(src, filepath.Clean("/"+vm.SubPath))
		}
		mounts = append(mounts, mountAt{Source: src, Target: vm.MountPath, ReadOnly: vm.ReadOnly})
	}
	return mounts
}

// wait waits for the container's process to exit; when ctx ends first it
// terminates it within the pod's grace period.
func (cr *containerRun) wait(ctx context.Context, cmd *exec.Cmd) error {
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		return err
	case <-ctx.Done():
		cr.p.mu.Lock()
		grace, set, lost := cr.p.grace, cr.p.graceSet, cr.p.lost
		cr.p.mu.Unlock()
		if lost {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			return <-waited
		}
		if !set {
			// The simulator is going down: the pod's grace period, at
			// most 5 s.
			grace = min(gracePeriod(cr.p.pod), 5*time.Second)
		}
		return terminate(cmd, grace, waited)
	}
}

// exitOf is a container's exit code (128+signal when killed by one) and
// reason, from how its process ended.
func exitOf(werr error) (int32, string) {
	code := 0
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	}
	if code != 0 {
		return int32(code), "Error"
	}
	return 0, "Completed"
}

// kill stops the running process (SIGTERM, SIGKILL after grace); the
// supervisor then starts it again.
func (cr *containerRun) kill(grace time.Duration) {
	cr.mu.Lock()
	cmd := cr.cmd
	cr.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	go func() {
		time.Sleep(grace)
		cr.mu.Lock()
		still := cr.cmd == cmd
		cr.mu.Unlock()
		if still {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}()
}

// terminate is a pod deletion: SIGTERM to the process group, SIGKILL once
// grace has passed.
func terminate(cmd *exec.Cmd, grace time.Duration, waited <-chan error) error {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case err := <-waited:
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		return err
	case <-time.After(grace):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		return <-waited
	}
}

// writeStatus changes this container's status and the pod's readiness
// conditions with it; nothing is written when nothing changes. A pod that
// is gone is left alone.
func (cr *containerRun) writeStatus(ctx context.Context, mutate func(*corev1.ContainerStatus)) {
	pods := cr.p.r.client.CoreV1().Pods(cr.p.pod.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := pods.Get(ctx, cr.p.pod.Name, metav1.GetOptions{})
		if err != nil || cur.UID != cr.p.pod.UID || cur.DeletionTimestamp != nil {
			return nil
		}
		before := cur.DeepCopy()
		list := &cur.Status.ContainerStatuses
		if cr.init {
			list = &cur.Status.InitContainerStatuses
		}
		var st *corev1.ContainerStatus
		for i := range *list {
			if (*list)[i].Name == cr.c.Name {
				st = &(*list)[i]
			}
		}
		if st == nil {
			*list = append(*list, corev1.ContainerStatus{Name: cr.c.Name, Image: cr.c.Image})
			st = &(*list)[len(*list)-1]
		}
		mutate(st)
		probes.SetReadyConditions(cur, cr.p.r.clock.Now())
		if equalStatus(before, cur) {
			return nil
		}
		_, err = pods.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil && ctx.Err() == nil {
		cr.p.r.Log("kubelet: status of %s: %v", cr.p.key(), err)
	}
}

func equalStatus(a, b *corev1.Pod) bool {
	x, _ := json.Marshal(a.Status)
	y, _ := json.Marshal(b.Status)
	return string(x) == string(y)
}

func ptrBool(b bool) *bool { return &b }

// hostname is the pod's hostname: spec.hostname, else its name (at most
// 63 characters, as the kubelet truncates it).
func hostname(pod *corev1.Pod) string {
	h := pod.Spec.Hostname
	if h == "" {
		h = pod.Name
	}
	if len(h) > 63 {
		h = strings.TrimRight(h[:63], "-.")
	}
	return h
}

// imageUser is the user (and group) of the images the simulator stands in
// for: the operator's (tools/image, the Dockerfile) runs as distroless's
// nonroot user.
const imageUser int64 = 65532

// runAs is the user and group the container runs as: its securityContext,
// else the pod's. With neither naming a user, a kubelet runs the image's
// user, and with runAsNonRoot it checks that user is not root: the
// simulator has programs rather than images, so it runs such a container
// as imageUser (the chart names no user, so that OpenShift can assign one);
// otherwise as itself.
func runAs(pod *corev1.Pod, c *corev1.Container) (uid, gid *int64) {
	nonRoot := false
	if psc := pod.Spec.SecurityContext; psc != nil {
		uid, gid = psc.RunAsUser, psc.RunAsGroup
		nonRoot = psc.RunAsNonRoot != nil && *psc.RunAsNonRoot
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			uid = sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			gid = sc.RunAsGroup
		}
		if sc.RunAsNonRoot != nil {
			nonRoot = *sc.RunAsNonRoot
		}
	}
	if uid == nil && nonRoot {
		uid = ptrInt64(imageUser)
		if gid == nil {
			gid = ptrInt64(imageUser)
		}
	}
	return uid, gid
}

func ptrInt64(i int64) *int64 { return &i }

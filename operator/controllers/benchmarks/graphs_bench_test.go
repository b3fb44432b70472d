// Package benchmarks measures the operator at scale against a real
// kube-apiserver: `make bench`. It runs the operator binary as its own
// process, so its memory and logs are its own, and reads the API server's
// audit log to count exactly which writes the operator made.
package benchmarks

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

var (
	graphs   = flag.Int("graphs", 500, "graphs to create")
	services = flag.Int("services", 4, "services per graph")
	// 0: the operator's shipped defaults, and no client-side limit for the
	// floor's writers.
	qps         = flag.Float64("qps", 0, "client QPS of the operator and of the raw-write floor; 0: shipped defaults, floor unlimited")
	burst       = flag.Int("burst", 0, "client burst of the operator and of the raw-write floor; 0: shipped default")
	workers     = flag.Int("workers", 0, "concurrent reconciles per controller; 0: shipped default")
	writers     = flag.Int("writers", 64, "parallel writers of the raw-write floor and of graph creation")
	heapProfile = flag.String("heap-profile", "", "write the operator's heap profile (go tool pprof) at the end of the steady-state window to this file")
	cpuProfile  = flag.String("cpu-profile", "", "write CPU profiles of the operator and of the API server, from the graphs' creation until every graph is Ready, to this directory")
	steady      = flag.Duration("steady", 60*time.Second, "steady-state window in which the operator should write nothing")
)

const operatorUser = "dynamo-operator"

// BenchmarkGraphs creates many graphs and reports how long the operator
// takes to create every child and bring every graph's status up to date,
// against the raw-write floor: the same children created directly by
// parallel writers with the same client QPS and burst, in the same run.
func BenchmarkGraphs(b *testing.B) {
	if b.N > 1 {
		b.Skip("run with -benchtime=1x: one run creates all graphs")
	}
	// The driver and client in this process log nothing the figures need.
	ctrl.SetLogger(logr.Discard())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := startCluster(ctx, b)
	defer env.Stop()

	// Deployments become available at once: the benchmark measures the
	// operator, not rollouts. The floor's become available the same way.
	if err := env.StartDeploymentDriver(ctx, 10*time.Millisecond); err != nil {
		b.Fatal(err)
	}
	floor := measureFloor(ctx, b, env)

	ns := mustNamespace(ctx, b, env, "bench-operator")
	statuses := newTrail()
	w, err := watchNamespace(ctx, env, ns, statuses)
	if err != nil {
		b.Fatal(err)
	}
	defer w.stop()
	op := startOperator(ctx, b, env)
	defer op.stop()
	// The operator's memory before any graph: its caches synced and empty.
	time.Sleep(5 * time.Second)
	idleRSS, _ := op.memory()

	var prof *profiler
	if *cpuProfile != "" {
		if prof, err = startProfiles(*cpuProfile, op.pprofAddr, env.Config); err != nil {
			b.Fatal(err)
		}
	}
	start := time.Now()
	if err := parallel(*graphs, *writers, func(i int) error {
		return create(ctx, env.Client, graph(ns, i))
	}); err != nil {
		b.Fatal(err)
	}
	created := time.Since(start)
	awaitBench(b).Eventually(func() (bool, error) { return childrenExist(ctx, w) }).Should(gomega.BeTrue(), "children")
	children := time.Since(start)
	svcRate, err := serviceRate(ctx, w, start)
	if err != nil {
		b.Fatal(err)
	}
	awaitBench(b).Eventually(func() (bool, error) { return childrenAndStatusCurrent(ctx, w) }).Should(gomega.BeTrue(), "children and status")
	elapsed := time.Since(start)
	awaitBench(b).Eventually(func() (bool, error) { return allReady(ctx, w) }).Should(gomega.BeTrue(), "every graph Ready")
	ready := time.Since(start)
	cpuReady := op.cpu()
	statusesReady := statuses.summary(func(kind string, key types.NamespacedName) time.Time {
		return w.created(ctx, kind, key)
	})
	if prof != nil {
		prof.stop()
	}
	converged := auditCounts(b, env)

	time.Sleep(*steady)
	after := auditCounts(b, env)
	mem := op.status()
	rss, peak, anon, file := mem["VmRSS:"], mem["VmHWM:"], mem["RssAnon:"], mem["RssFile:"]
	if *heapProfile != "" {
		if err := op.writeHeapProfile(*heapProfile); err != nil {
			b.Errorf("heap profile: %v", err)
		}
	}

	n := float64(*graphs)
	x := func(d, f time.Duration) float64 { return d.Seconds() / f.Seconds() }
	b.ReportMetric(children.Seconds(), "s-to-children")
	b.ReportMetric(x(children, floor.children), "x-children-floor")
	b.ReportMetric(elapsed.Seconds(), "s-to-converge")
	b.ReportMetric(ready.Seconds(), "s-to-ready")
	b.ReportMetric(floor.children.Seconds(), "s-floor")
	b.ReportMetric(floor.services, "svc/s-floor")
	b.ReportMetric(svcRate, "svc/s-operator")
	b.ReportMetric(x(elapsed, floor.children), "x-floor")
	b.ReportMetric(x(ready, floor.available), "x-available-floor")
	b.ReportMetric(float64(converged.writes-converged.events)/n, "writes/graph")
	b.ReportMetric(float64(converged.events)/n, "events/graph")
	b.ReportMetric(float64(converged.conflicts), "conflicts")
	b.ReportMetric(float64(after.writes-converged.writes), "steady-writes")
	b.ReportMetric(float64(rss)/(1<<20), "MiB-RSS")
	b.ReportMetric(float64(peak)/(1<<20), "MiB-peak-RSS")
	b.ReportMetric(float64(rss-idleRSS)/1024/n, "KiB/graph")
	b.ReportMetric(cpuReady.Seconds(), "s-cpu-to-ready")
	// The report is printed, not logged: the testing package keeps ten
	// lines of a benchmark's log, and cut the figures at the end (memory
	// growth per graph, steady-state writes by kind) once the simulator's
	// own line came first.
	report := func(format string, args ...any) { fmt.Printf("    "+format+"\n", args...) }
	report("%d graphs x %d services, operator flags %v; %d parallel clients create the graphs (took %s)",
		*graphs, *services, op.flags, *writers, created.Round(time.Millisecond))
	report("raw-write floor, %d writers, %d children: %s; with the minimal status writes (one per component, one per graph): %s; "+
		"raw children all available: %s", *writers, floor.objects, floor.children.Round(time.Millisecond),
		floor.withStatus.Round(time.Millisecond), floor.available.Round(time.Millisecond))
	report("operator: every child existing after %s (%.2fx the raw-write floor)", children.Round(time.Millisecond), x(children, floor.children))
	report("Services created per second, from the first write to the last Service: floor %.2f, operator %.2f "+
		"(the API server allocates their ClusterIPs one at a time: serviceRate)", floor.services, svcRate)
	report("operator: every child existing and every status current after %s (%.2fx the raw-write floor, %.2fx the floor with status); "+
		"every graph Ready after %s (%.2fx the raw children's availability)",
		elapsed.Round(time.Millisecond), x(elapsed, floor.children), x(elapsed, floor.withStatus),
		ready.Round(time.Millisecond), x(ready, floor.available))
	report("operator writes until every graph was Ready: %d (%.1f per graph, not counting events), events %d (%.1f per graph), conflicts %d",
		converged.writes-converged.events, float64(converged.writes-converged.events)/n, converged.events,
		float64(converged.events)/n, converged.conflicts)
	report("writes per graph by kind: %s", converged.perGraph(n))
	report("statuses seen until every graph was Ready, and for objects given more than one, what each said and when (since the graph's creation, or the component's Deployment's):\n%s", statusesReady)
	report("operator CPU until every graph was Ready: %s", cpuReady.Round(10*time.Millisecond))
	report("steady-state writes by kind: %s", after.minus(converged).byResource())
	report("steady state: %d writes in %s; RSS %.0f MiB (peak %.0f MiB, %.0f KiB per graph above the idle %.0f MiB); log output %d bytes",
		after.writes-converged.writes, *steady, float64(rss)/(1<<20), float64(peak)/(1<<20),
		float64(rss-idleRSS)/1024/n, float64(idleRSS)/(1<<20), op.logBytes())
	report("RSS by kind: %.0f MiB the process's own (heap, stacks), %.0f MiB mapping the binary", float64(anon)/(1<<20), float64(file)/(1<<20))
}

type floorTimes struct {
	objects int
	// children: the children written raw; withStatus: plus one status
	// write per component and per graph; available: from the first write
	// until every raw Deployment is available.
	children, withStatus, available time.Duration
	// services: Services created per second (serviceRate).
	services float64
}

// measureFloor creates, with parallel writers and the operator's client
// limits (none by default), exactly the children the operator would create
// for the graphs, then writes the least status the operator could (one
// patch per component and per graph), then waits until every Deployment is
// available. It deletes them all (and waits) so the operator never sees
// them.
func measureFloor(ctx context.Context, b *testing.B, env *benchCluster) floorTimes {
	ns := mustNamespace(ctx, b, env, "bench-floor")
	defer func() {
		env.DeleteNamespace(ctx, ns)
		await.New(b).Eventually(func() error {
			return env.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
		}).WithTimeout(10*time.Minute).WithPolling(time.Second).Should(gomega.Satisfy(apierrors.IsNotFound),
			"namespace %s of the floor is deleted", ns)
	}()
	var objs []client.Object
	var dgds []*v1alpha1.DynamoGraphDeployment
	var dcds []*v1alpha1.DynamoComponentDeployment
	for i := 0; i < *graphs; i++ {
		dgd := graph(ns, i)
		dgds = append(dgds, dgd)
		// The discovery RBAC first, as the operator writes it: a pod naming
		// a ServiceAccount that does not exist yet is refused, and the
		// ReplicaSet controller retries it with backoff.
		if rbac := render.GraphDiscoveryRBAC(dgd); rbac != nil {
			objs = append(objs, rbac.ServiceAccount, rbac.Role, rbac.RoleBinding)
		}
		comps, err := render.Components(dgd)
		if err != nil {
			b.Fatal(err)
		}
		for _, dcd := range comps {
			deploy, err := render.Deployment(dcd, nil, render.Options{})
			if err != nil {
				b.Fatal(err)
			}
			objs = append(objs, dcd, deploy, render.Service(dcd))
			dcds = append(dcds, dcd)
		}
	}
	// The floor is watched as the operator's run is.
	w, err := watchNamespace(ctx, env, ns, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer w.stop()
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = -1, 0 // client-go: no client-side limit
	if *qps > 0 {
		cfg.QPS, cfg.Burst = float32(*qps), max(*burst, 1)
	}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	// The graphs are the user's writes, not the floor's.
	if err := parallel(len(dgds), *writers, func(i int) error { return create(ctx, c, dgds[i]) }); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := parallel(len(objs), *writers, func(i int) error { return create(ctx, c, objs[i]) }); err != nil {
		b.Fatal(err)
	}
	t := floorTimes{objects: len(objs), children: time.Since(start)}
	if t.services, err = serviceRate(ctx, w, start); err != nil {
		b.Fatal(err)
	}
	status := make([]client.Object, 0, len(dcds)+len(dgds))
	for _, dcd := range dcds {
		dcd.Status.ObservedGeneration = dcd.Generation
		dcd.Status.Replicas = 1
		status = append(status, dcd)
	}
	for _, dgd := range dgds {
		dgd.Status.ObservedGeneration = dgd.Generation
		dgd.Status.State = v1alpha1.GraphStateSuccessful
		status = append(status, dgd)
	}
	if err := parallel(len(status), *writers, func(i int) error {
		return retryBusy(func() error { return c.Status().Patch(ctx, status[i], client.Merge) })
	}); err != nil {
		b.Fatal(err)
	}
	t.withStatus = time.Since(start)
	awaitBench(b).Eventually(func() (bool, error) {
		var list appsv1.DeploymentList
		if err := w.list(ctx, &list); err != nil {
			return false, err
		}
		for i := range list.Items {
			if list.Items[i].Status.AvailableReplicas < ptr.Deref(list.Items[i].Spec.Replicas, 1) {
				return false, nil
			}
		}
		return len(list.Items) == len(dcds), nil
	}).Should(gomega.BeTrue(), "every raw Deployment available")
	t.available = time.Since(start)
	return t
}

// create creates obj, again when the API server answers that it is too busy
// (a request timed out, too many requests), as any client of a loaded API
// server does: one such answer among thousands must not lose a run of many
// minutes. A retried create that finds obj is done.
func create(ctx context.Context, c client.Client, obj client.Object) error {
	err := c.Create(ctx, obj)
	if !busy(err) {
		return err
	}
	return retryBusy(func() error {
		if err := c.Create(ctx, obj); !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	})
}

// busy: the API server answered that it is too busy to take the request.
func busy(err error) bool {
	return apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsTooManyRequests(err)
}

// retryBusy calls write until it succeeds, fails otherwise than with a busy
// API server's answer, or has been tried five times.
func retryBusy(write func() error) error {
	return retry.OnError(wait.Backoff{Steps: 5, Duration: time.Second, Factor: 1}, busy, write)
}

// graph is a four-service disaggregated graph like users run.
func graph(ns string, i int) *v1alpha1.DynamoGraphDeployment {
	g := builders.MakeGraph(fmt.Sprintf("graph-%04d", i), ns).Backend(v1alpha1.BackendFrameworkVLLM)
	types := []v1alpha1.ComponentType{v1alpha1.ComponentTypeFrontend, v1alpha1.ComponentTypeWorker,
		v1alpha1.ComponentTypeWorker, v1alpha1.ComponentTypePlanner}
	for s := 0; s < *services; s++ {
		svc := builders.MakeService().Type(types[s%len(types)]).Env("DYN_LOG", "info").
			Image("nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.0").
			Command([]string{"python3", "-m", "dynamo.vllm"}, "--model", "Qwen/Qwen3-0.6B")
		if types[s%len(types)] == v1alpha1.ComponentTypeWorker {
			svc.GPUs(1)
		}
		g.Service(fmt.Sprintf("Service%d", s), svc)
	}
	return g.Obj()
}

// awaitBench polls for up to 30 minutes, every 250 ms (the resolution of
// the times measured). A failed poll is retried: a loaded API server drops
// a large list now and then, and one lost poll must not lose a run of many
// minutes.
func awaitBench(b *testing.B) gomega.Gomega {
	g := await.New(b)
	g.SetDefaultEventuallyTimeout(30 * time.Minute)
	g.SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	return g
}

// childrenExist: every component, Deployment and Service exists.
func childrenExist(ctx context.Context, w *watcher) (bool, error) {
	want := *graphs * *services
	for _, list := range []client.ObjectList{&v1alpha1.DynamoComponentDeploymentList{}, &appsv1.DeploymentList{}, &corev1.ServiceList{}} {
		if err := w.list(ctx, list); err != nil {
			return false, err
		}
		if meta.LenList(list) != want {
			return false, nil
		}
	}
	return true, nil
}

// serviceRate is how many Services per second were created from start to
// the last one. Each Service waits for its ClusterIP, which Kubernetes 1.36
// allocates one at a time (ipallocator.MetaAllocator.AllocateNextService
// holds its lock across the write of the address's IPAddress object), so
// on a loaded API server Services, not the other children, set how fast
// any writer can create a graph's children: the floor's 64 writers and the
// operator alike.
func serviceRate(ctx context.Context, w *watcher, start time.Time) (float64, error) {
	var list corev1.ServiceList
	if err := w.list(ctx, &list); err != nil {
		return 0, err
	}
	var last time.Time
	for i := range list.Items {
		if c := list.Items[i].CreationTimestamp.Time; c.After(last) {
			last = c
		}
	}
	// creationTimestamp has whole seconds: the last second counts whole.
	elapsed := last.Add(time.Second).Sub(start).Seconds()
	if len(list.Items) == 0 || elapsed <= 0 {
		return 0, nil
	}
	return float64(len(list.Items)) / elapsed, nil
}

// childrenAndStatusCurrent: every child exists and every graph's status
// describes its current generation.
func childrenAndStatusCurrent(ctx context.Context, w *watcher) (bool, error) {
	if ok, err := childrenExist(ctx, w); !ok || err != nil {
		return false, err
	}
	return allGraphs(ctx, w, func(g *v1alpha1.DynamoGraphDeployment) bool {
		return g.Status.ObservedGeneration == g.Generation
	})
}

// allReady: every graph is successful for its current generation.
func allReady(ctx context.Context, w *watcher) (bool, error) {
	return allGraphs(ctx, w, func(g *v1alpha1.DynamoGraphDeployment) bool {
		return g.Status.ObservedGeneration == g.Generation && g.Status.State == v1alpha1.GraphStateSuccessful
	})
}

func allGraphs(ctx context.Context, w *watcher, ok func(*v1alpha1.DynamoGraphDeployment) bool) (bool, error) {
	var dgds v1alpha1.DynamoGraphDeploymentList
	if err := w.list(ctx, &dgds); err != nil {
		return false, err
	}
	if len(dgds.Items) != *graphs {
		return false, nil
	}
	for i := range dgds.Items {
		if !ok(&dgds.Items[i]) {
			return false, nil
		}
	}
	return true, nil
}

type counts struct {
	writes, events, conflicts int
	resources                 map[string]int
}

func (c counts) byResource() string {
	keys := make([]string, 0, len(c.resources))
	for k := range c.resources {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, c.resources[k]))
	}
	return strings.Join(parts, " ")
}

// perGraph lists the writes by kind divided by the number of graphs.
func (c counts) perGraph(n float64) string {
	keys := make([]string, 0, len(c.resources))
	for k := range c.resources {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%.2f", k, float64(c.resources[k])/n))
	}
	return strings.Join(parts, " ")
}

// minus returns the counts that c has beyond earlier.
func (c counts) minus(earlier counts) counts {
	d := counts{writes: c.writes - earlier.writes, events: c.events - earlier.events,
		conflicts: c.conflicts - earlier.conflicts, resources: map[string]int{}}
	for k, v := range c.resources {
		if n := v - earlier.resources[k]; n != 0 {
			d.resources[k] = n
		}
	}
	return d
}

// auditCounts counts the operator's writes recorded by the API server.
func auditCounts(b *testing.B, env *benchCluster) counts {
	evs, err := env.AuditEvents()
	if err != nil {
		b.Fatal(err)
	}
	c := counts{resources: map[string]int{}}
	for _, ev := range evs {
		if ev.User.Username != operatorUser {
			continue
		}
		c.writes++
		key := ev.Verb + ":" + ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			key += "/" + ev.ObjectRef.Subresource
		}
		c.resources[key]++
		if ev.ObjectRef.Resource == "events" {
			c.events++
		}
		if ev.ResponseStatus.Code == 409 {
			c.conflicts++
		}
	}
	return c
}

type operatorProcess struct {
	cmd   *exec.Cmd
	log   *os.File
	done  chan struct{}
	flags []string // beyond the ports and webhooks: empty is the shipped defaults
	// pprofAddr serves the operator's profiles when -heap-profile is set.
	pprofAddr string
}

// writeHeapProfile saves the operator's heap profile, after a collection,
// to path, and its text form with the runtime's MemStats to path.txt.
func (p *operatorProcess) writeHeapProfile(path string) error {
	// The text form ends with the runtime's MemStats: how much of the
	// resident memory is live heap, freed heap not yet returned, stacks.
	if err := p.saveProfile(path+".txt", "/debug/pprof/heap?debug=1"); err != nil {
		return err
	}
	return p.saveProfile(path, "/debug/pprof/heap?gc=1")
}

func (p *operatorProcess) saveProfile(path, query string) error {
	return saveURL(http.DefaultClient, "http://"+p.pprofAddr+query, path)
}

// cpu is the processor time the operator used so far, user and system.
func (p *operatorProcess) cpu() time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// Fields after the parenthesised command name; utime and stime are the
	// 14th and 15th fields, in clock ticks (100 per second on Linux).
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * (time.Second / 100)
}

// startOperator builds and runs the operator binary as its own user.
func startOperator(ctx context.Context, b *testing.B, env *benchCluster) *operatorProcess {
	root, err := testenv.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	bin := filepath.Join(dir, "dynamo-operator")
	// The binary make build makes, as users run it.
	build := testenv.GoBuild(ctx, root, bin, "./operator/cmd/manager", "")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building the operator: %v\n%s", err, out)
	}
	kubeconfig, err := env.kubeconfig()
	if err != nil {
		b.Fatal(err)
	}
	kcPath := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kcPath, kubeconfig, 0o600); err != nil {
		b.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, "operator.log"))
	if err != nil {
		b.Fatal(err)
	}
	flags := []string{"--metrics-bind-address=0", "--health-probe-bind-address=0", "--enable-webhooks=false"}
	if *qps > 0 {
		flags = append(flags, "--kube-api-qps="+strconv.FormatFloat(*qps, 'f', -1, 64))
	}
	if *burst > 0 {
		flags = append(flags, "--kube-api-burst="+strconv.Itoa(*burst))
	}
	if *workers > 0 {
		flags = append(flags, "--max-concurrent-reconciles="+strconv.Itoa(*workers))
	}
	var pprofAddr string
	if *heapProfile != "" || *cpuProfile != "" {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		pprofAddr = l.Addr().String()
		_ = l.Close()
		flags = append(flags, "--pprof-bind-address="+pprofAddr)
	}
	cmd := exec.CommandContext(ctx, bin, flags...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kcPath, "LOG_LEVEL=info")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	p := &operatorProcess{cmd: cmd, log: logFile, done: make(chan struct{}), flags: flags[3:], pprofAddr: pprofAddr}
	go func() { _ = cmd.Wait(); close(p.done) }()
	return p
}

func (p *operatorProcess) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	_ = p.log.Close()
}

// memory returns the resident set size and its peak, in bytes.
func (p *operatorProcess) memory() (rss, peak int64) {
	m := p.status()
	return m["VmRSS:"], m["VmHWM:"]
}

// status reads the kB figures of /proc/PID/status, in bytes: VmRSS, its
// peak VmHWM, and its parts RssAnon (the process's own: heap, stacks) and
// RssFile (the binary's mapped pages).
func (p *operatorProcess) status() map[string]int64 {
	out := map[string]int64{}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 3 || fields[2] != "kB" {
			continue
		}
		kb, _ := strconv.ParseInt(fields[1], 10, 64)
		out[fields[0]] = kb << 10
	}
	return out
}

func (p *operatorProcess) logBytes() int64 {
	st, err := p.log.Stat()
	if err != nil {
		return -1
	}
	return st.Size()
}

func mustNamespace(ctx context.Context, b *testing.B, env *benchCluster, prefix string) string {
	ns, err := env.CreateNamespace(ctx, prefix)
	if err != nil {
		b.Fatal(err)
	}
	return ns
}

// parallel runs do(0..n-1) on the given number of goroutines and returns
// the first error.
func parallel(n, goroutines int, do func(i int) error) error {
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	next := make(chan int)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := do(i); err != nil {
					once.Do(func() { first = err })
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

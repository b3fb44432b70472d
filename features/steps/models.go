package steps

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cucumber/godog"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/sim/workers"
)

// Workers are the fake Dynamo workers behind a cluster's pods: the
// simulator's (sim/workers, in its network namespace), or on envtest the
// in-process ones of internal/workerfarm, which also plays the pods. Pods
// are named namespace/name.
type Workers interface {
	// Serve makes sure the pods of namespace's Deployments run with a
	// worker each (on a cluster they do anyway).
	Serve(ctx context.Context, namespace string) error
	// Calls lists every call the workers received, oldest first.
	Calls(ctx context.Context) ([]workers.Call, error)
	// LoRAs lists the adapters loaded on each pod's worker.
	LoRAs(ctx context.Context) (map[string][]string, error)
	// Restart restarts a pod's containers (restartCount+1): its worker
	// starts afresh without its adapters.
	Restart(ctx context.Context, pod string) error
	// Forget makes a pod's worker drop its adapters without restarting.
	Forget(ctx context.Context, pod string) error
}

// models is the scenario state of the model steps.
type models struct {
	// picked names the pod a step called "the first pod" of a component,
	// fixed once picked, so later steps speak of the same pod.
	picked map[string]string
	// restartedAt is when a pod's worker was restarted by a step.
	restartedAt map[string]time.Time
}

func registerModelSteps(sc *godog.ScenarioContext, w *world) {
	sc.Step(`^fake Dynamo workers serve the pods of this namespace$`, w.workersServe)
	sc.Step(`^the adapter `+quoted+` is eventually loaded on every Ready pod of the dcd `+quoted+`$`, unquote2(w.adapterOnEveryPod))
	sc.Step(`^the adapter `+quoted+` is eventually loaded on no pod of the dcd `+quoted+`$`, unquote2(w.adapterOnNoPod))
	sc.Step(`^the first pod of the dcd `+quoted+` fails LoRA loads$`, unquote1(w.podFailsLoads))
	sc.Step(`^the first pod of the dcd `+quoted+` loads LoRAs again$`, unquote1(w.podLoadsAgain))
	sc.Step(`^the first pod of the dcd `+quoted+` restarts$`, unquote1(w.podRestarts))
	sc.Step(`^the worker of the first pod of the dcd `+quoted+` forgets its adapters$`, unquote1(w.podForgets))
	sc.Step(`^the first pod of the dcd `+quoted+` eventually has received (\d+) (GET|POST|DELETE) calls to `+quoted+`$`, w.podReceived)
	sc.Step(`^the first pod of the dcd `+quoted+` has received a POST to "/v1/loras" since it restarted$`, unquote1(w.postSinceRestart))
	sc.Step(`^the dm `+quoted+` eventually reports the first pod of the dcd `+quoted+` failing$`, unquote2(w.modelReportsFailing))
	sc.Step(`^every Ready pod of the dcd `+quoted+` has received a DELETE of `+quoted+`$`, unquote2(w.everyPodDeleted))
	sc.Step(`^the time from each pod of the dcd `+quoted+` turning Ready to its adapter loaded is reported$`, unquote1(w.readyToLoaded))
	sc.Step(`^no pod of the dcd `+quoted+` receives a LoRA call within (\d+) seconds$`, w.noLoRACalls)
	sc.Step(`^over (\d+) check intervals the pods of the dcd `+quoted+` receive only "GET /v1/loras" calls, about one per interval, and the operator writes nothing in this namespace$`, w.steadyState)
}

func (w *world) workersOrFail() (Workers, error) {
	if w.cluster.Workers == nil {
		return nil, fmt.Errorf("this suite has no fake Dynamo workers")
	}
	return w.cluster.Workers, nil
}

func (w *world) workersServe(ctx context.Context) error {
	ws, err := w.workersOrFail()
	if err != nil {
		return err
	}
	return ws.Serve(ctx, w.namespace)
}

// componentReadyPods lists the Ready pods of a component (its selector label),
// namespace/name, sorted.
func (w *world) componentReadyPods(ctx context.Context, dcd string) ([]string, error) {
	var pods corev1.PodList
	if err := w.cluster.Client.List(ctx, &pods, client.InNamespace(w.namespace),
		client.MatchingLabels{"nvidia.com/dynamo-component": dcd}); err != nil {
		return nil, err
	}
	var out []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.PodIP != "" && podReady(&p) {
			out = append(out, p.Namespace+"/"+p.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// wantReplicas is the component's spec.replicas (1 when unset).
func (w *world) wantReplicas(ctx context.Context, dcd string) (int, error) {
	v, err := w.readField(ctx, "dcd", dcd, ".spec.replicas")
	if err != nil || v == "" {
		return 1, err
	}
	var n int
	_, err = fmt.Sscan(v, &n)
	return n, err
}

func (w *world) adapterOnEveryPod(ctx context.Context, adapter, dcd string) error {
	ws, err := w.workersOrFail()
	if err != nil {
		return err
	}
	return w.eventually(ctx, "the adapter "+adapter+" loaded on every Ready pod of "+dcd, func() error {
		want, err := w.wantReplicas(ctx, dcd)
		if err != nil {
			return err
		}
		pods, err := w.componentReadyPods(ctx, dcd)
		if err != nil {
			return err
		}
		if len(pods) < want {
			return fmt.Errorf("%d of %d pods of %s Ready", len(pods), want, dcd)
		}
		loras, err := ws.LoRAs(ctx)
		if err != nil {
			return err
		}
		for _, p := range pods {
			if !slices.Contains(loras[p], adapter) {
				return fmt.Errorf("pod %s has %v loaded, not %s", p, loras[p], adapter)
			}
		}
		return nil
	})
}

func (w *world) adapterOnNoPod(ctx context.Context, adapter, dcd string) error {
	ws, err := w.workersOrFail()
	if err != nil {
		return err
	}
	return w.eventually(ctx, "the adapter "+adapter+" loaded on no pod of "+dcd, func() error {
		pods, err := w.componentReadyPods(ctx, dcd)
		if err != nil {
			return err
		}
		loras, err := ws.LoRAs(ctx)
		if err != nil {
			return err
		}
		for _, p := range pods {
			if slices.Contains(loras[p], adapter) {
				return fmt.Errorf("pod %s still has %s loaded", p, adapter)
			}
		}
		return nil
	})
}

// firstPod is the first Ready pod of a component, fixed for the scenario
// once a step named it.
func (w *world) firstPod(ctx context.Context, dcd string) (string, error) {
	if p := w.models.picked[dcd]; p != "" {
		return p, nil
	}
	var pod string
	err := w.eventually(ctx, "a Ready pod of "+dcd, func() error {
		pods, err := w.componentReadyPods(ctx, dcd)
		if err != nil {
			return err
		}
		if len(pods) == 0 {
			return fmt.Errorf("no Ready pod of %s", dcd)
		}
		pod = pods[0]
		return nil
	})
	if err != nil {
		return "", err
	}
	if w.models.picked == nil {
		w.models.picked = map[string]string{}
	}
	w.models.picked[dcd] = pod
	return pod, nil
}

func (w *world) annotatePod(ctx context.Context, pod, value string) error {
	ns, name, _ := strings.Cut(pod, "/")
	p := &corev1.Pod{}
	if err := w.cluster.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, p); err != nil {
		return err
	}
	patch := client.MergeFrom(p.DeepCopy())
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	if value == "" {
		delete(p.Annotations, workers.LoRALoadFailsAnnotation)
	} else {
		p.Annotations[workers.LoRALoadFailsAnnotation] = value
	}
	return w.cluster.Client.Patch(ctx, p, patch, client.FieldOwner(FieldOwner))
}

func (w *world) podFailsLoads(ctx context.Context, dcd string) error {
	pod, err := w.firstPod(ctx, dcd)
	if err != nil {
		return err
	}
	return w.annotatePod(ctx, pod, "true")
}

func (w *world) podLoadsAgain(ctx context.Context, dcd string) error {
	pod, err := w.firstPod(ctx, dcd)
	if err != nil {
		return err
	}
	return w.annotatePod(ctx, pod, "")
}

func (w *world) podRestarts(ctx context.Context, dcd string) error {
	ws, err := w.workersOrFail()
	if err != nil {
		return err
	}
	pod, err := w.firstPod(ctx, dcd)
	if err != nil {
		return err
	}
	if w.models.restartedAt == nil {
		w.models.restartedAt = map[string]time.Time{}
	}
	w.models.restartedAt[pod] = time.Now()
	return ws.Restart(ctx, pod)
}

func (w *world) podForgets(ctx context.Context, dcd string) error {
	ws, err := w.workersOrFail()
	if err != nil {
		return err
	}
	pod, err := w.firstPod(ctx, dcd)
	if err != nil {
		return err
	}
	return ws.Forget(ctx, pod)
}

// callsTo counts the calls pod received with method and path since from.
func callsTo(calls []workers.Call, pod, method, path string, from time.Time) int {
	n := 0
	for _, c := range calls {
		if c.Pod == pod && c.Method == method && c.Path == path && !c.Time.Before(from) {
			n++
		}
	}
	return n
}

func (w *world) podReceived(ctx context.Context, dcd string, n int, method, path string) error {
	ws, err := w.workersOrFail()
	if err != nil {
		return err
	}
	pod, err := w.firstPod(ctx, dcd)
	if err != nil {
		return err
	}
	return w.eventually(ctx, fmt.Sprintf("%d %s calls to %s on the first pod of %s", n, method, path, dcd), func() error {
		calls, err := ws.Calls(ctx)
		if err != nil {
			return err
		}
		if got := callsTo(calls, pod, method, path, time.Time{}); got < n {
			return fmt.Errorf("pod %s received %d %s %s, want at least %d", pod, got, method, path, n)
		}
		return nil
	})
}

func (w *world) postSinceRestart(ctx context.Context, dcd string) error {
	ws, err := w.workersOrFail()
	if err != nil {
		return err
	}
	pod, err := w.firstPod(ctx, dcd)
	if err != nil {
		return err
	}
	at, ok := w.models.restartedAt[pod]
	if !ok {
		return fmt.Errorf("pod %s was not restarted in this scenario", pod)
	}
	calls, err := ws.Calls(ctx)
	if err != nil {
		return err
	}
	if callsTo(calls, pod, "POST", "/v1/loras", at) == 0 {
		return fmt.Errorf("pod %s received no POST /v1/loras since its restart at %s", pod, at.Format(time.RFC3339Nano))
	}
	return nil
}

func (w *world) modelReportsFailing(ctx context.Context, model, dcd string) error {
	pod, err := w.firstPod(ctx, dcd)
	if err != nil {
		return err
	}
	_, name, _ := strings.Cut(pod, "/")
	return w.eventually(ctx, "the dm "+model+" reporting the first pod of "+dcd+" failing", func() error {
		reason, err := w.readField(ctx, "dm", model, `.status.conditions[?(@.type=="Ready")].reason`)
		if err != nil {
			return err
		}
		msg, err := w.readField(ctx, "dm", model, `.status.conditions[?(@.type=="Ready")].message`)
		if err != nil {
			return err
		}
		ready, err := w.readField(ctx, "dm", model, `.status.endpoints[?(@.podName=="`+name+`")].ready`)
		if err != nil {
			return err
		}
		if reason != "LoadFailed" || !strings.Contains(msg, name) || ready != "false" {
			return fmt.Errorf("Ready reason %q, message %q, endpoint %s ready %q", reason, msg, name, ready)
		}
		return nil
	})
}

func (w *world) everyPodDeleted(ctx context.Context, dcd, path string) error {
	ws, err := w.workersOrFail()
	if err != nil {
		return err
	}
	pods, err := w.componentReadyPods(ctx, dcd)
	if err != nil {
		return err
	}
	calls, err := ws.Calls(ctx)
	if err != nil {
		return err
	}
	if len(pods) == 0 {
		return fmt.Errorf("no Ready pod of %s", dcd)
	}
	for _, p := range pods {
		if callsTo(calls, p, "DELETE", path, time.Time{}) == 0 {
			return fmt.Errorf("pod %s received no DELETE %s", p, path)
		}
	}
	return nil
}

// steadyState watches the component's pods for n of the operator's model
// check intervals and fails on any call but GET /v1/loras, on a pod
// checked more than n+1 or fewer than n-1 times, or on any write of the
// operator in the namespace over the same window (in which its checks show
// it acting); it prints the counts (the steady-state figure).
func (w *world) steadyState(ctx context.Context, n int, dcd string) error {
	ws, err := w.workersOrFail()
	if err != nil {
		return err
	}
	op, err := w.operator()
	if err != nil {
		return err
	}
	// The graph reported Ready a moment ago; the events of that change are
	// sent asynchronously and may still be on their way. Steady state
	// starts once the operator has been quiet here for a second.
	mark, err := w.settled(ctx, op, time.Second)
	if err != nil {
		return err
	}
	interval := w.cluster.ModelCheckInterval
	if interval <= 0 {
		return fmt.Errorf("the suite does not say the operator's --model-check-interval")
	}
	window := time.Duration(n) * interval
	pods, err := w.componentReadyPods(ctx, dcd)
	if err != nil {
		return err
	}
	from := time.Now()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(window):
	}
	calls, err := ws.Calls(ctx)
	if err != nil {
		return err
	}
	counts := map[string]int{}
	var problems []string
	for _, c := range calls {
		if c.Time.Before(from) || !slices.Contains(pods, c.Pod) || c.Path == "/health" || c.Path == "/live" {
			continue // probes are the kubelet's, not the operator's
		}
		if c.Method != "GET" || c.Path != "/v1/loras" {
			problems = append(problems, fmt.Sprintf("%s %s %s", c.Pod, c.Method, c.Path))
			continue
		}
		counts[c.Pod]++
	}
	fmt.Printf("    steady state over %s (check interval %s): GET /v1/loras per pod %v, no other call\n", window, interval, counts)
	for _, wr := range op.WritesSince(mark) {
		if strings.Contains(wr, "/namespaces/"+w.namespace+"/") {
			problems = append(problems, "operator write "+wr)
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("calls other than GET /v1/loras, or writes, in steady state: %v", problems)
	}
	for _, p := range pods {
		if counts[p] < n-1 || counts[p] > n+1 {
			return fmt.Errorf("pod %s received %d GET /v1/loras in %s, want %d±1", p, counts[p], window, n)
		}
	}
	return nil
}

// noLoRACalls fails on any call to /v1/loras by the component's pods, since
// the scenario began, up to the end of a window of seconds.
func (w *world) noLoRACalls(ctx context.Context, dcd string, seconds int) error {
	ws, err := w.workersOrFail()
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Duration(seconds) * time.Second):
	}
	pods, err := w.componentReadyPods(ctx, dcd)
	if err != nil {
		return err
	}
	if len(pods) == 0 {
		return fmt.Errorf("no Ready pod of %s", dcd)
	}
	calls, err := ws.Calls(ctx)
	if err != nil {
		return err
	}
	for _, c := range calls {
		if slices.Contains(pods, c.Pod) && strings.HasPrefix(c.Path, "/v1/loras") {
			return fmt.Errorf("pod %s received %s %s", c.Pod, c.Method, c.Path)
		}
	}
	return nil
}

// readyToLoaded prints, per pod of the component that turned Ready after
// the adapter was first loaded anywhere (a new worker), the time from its
// readiness to the first successful POST /v1/loras it received. Readiness
// is the first /health its worker answered 200 (the probe that made the
// pod Ready, to the millisecond) where the pod is probed, else the Ready
// condition's transition (whole seconds).
func (w *world) readyToLoaded(ctx context.Context, dcd string) error {
	ws, err := w.workersOrFail()
	if err != nil {
		return err
	}
	var pods corev1.PodList
	if err := w.cluster.Client.List(ctx, &pods, client.InNamespace(w.namespace),
		client.MatchingLabels{"nvidia.com/dynamo-component": dcd}); err != nil {
		return err
	}
	calls, err := ws.Calls(ctx)
	if err != nil {
		return err
	}
	var firstLoad time.Time
	for _, c := range calls {
		if strings.HasPrefix(c.Pod, w.namespace+"/") && c.Method == "POST" && c.Path == "/v1/loras" && c.Status == 200 {
			firstLoad = c.Time
			break
		}
	}
	var lines []string
	for _, p := range pods.Items {
		if !podReady(&p) {
			continue
		}
		key := p.Namespace + "/" + p.Name
		var readyAt, loadedAt time.Time
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				readyAt = c.LastTransitionTime.Time
			}
		}
		source := "Ready condition"
		for _, c := range calls {
			if c.Pod != key || c.Status != 200 {
				continue
			}
			if c.Path == "/health" && source == "Ready condition" {
				readyAt, source = c.Time, "first /health 200"
			}
			if c.Method == "POST" && c.Path == "/v1/loras" && loadedAt.IsZero() {
				loadedAt = c.Time
			}
		}
		// The Ready condition's time has whole seconds: a pod Ready in the
		// second of the first load counts as new.
		if readyAt.Before(firstLoad.Truncate(time.Second)) {
			continue // Ready before the adapter was loaded anywhere: not a new worker
		}
		if loadedAt.IsZero() {
			return fmt.Errorf("pod %s has received no successful POST /v1/loras", key)
		}
		lines = append(lines, fmt.Sprintf("%s %s (from %s)", p.Name, loadedAt.Sub(readyAt).Round(time.Millisecond), source))
	}
	if len(lines) == 0 {
		return fmt.Errorf("no pod of %s turned Ready after the adapter was first loaded", dcd)
	}
	fmt.Printf("    Ready to adapter loaded: %s\n", strings.Join(lines, "; "))
	return nil
}

// Package faults injects the simulator's faults: node loss, GPU failure,
// pod crash loops, operator kill and restart, API server restart, namespace
// lease expiry and webhook certificate expiry. Where a fault picks a
// target at random, the choice comes from a seeded source, so a seed
// replays the same fault.
package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// fault is one entry of the table: what it does, for help texts, and how.
type fault struct {
	desc   string
	inject func(ctx context.Context, env Env, rng *rand.Rand, r Request) (string, error)
}

// table holds every fault: a new fault is one entry here and nothing else.
var table = map[string]fault{
	"node-loss": {"a node goes dark: no more heartbeats (KWOK lets it go), no probes, the pod processes the simulator runs there killed; NotReady after 20 s, pods evicted 10 s later", nodeLoss},
	"node-restore": {"a lost node heartbeats again", func(ctx context.Context, env Env, _ *rand.Rand, r Request) (string, error) {
		return nodeRestore(ctx, env, r)
	}},
	"gpu-failure":        {"a node loses GPUs: nvidia.com/gpu capacity drops, a GPUHealthy=False condition and an unhealthy taint", gpuFailure},
	"crash-loop":         {"a pod's main container crash-loops: not Ready, CrashLoopBackOff, restartCount rising; its fake worker stops answering", crashLoop},
	"image-pull-failure": {"pulls of --image fail: its pods stay Pending, ErrImagePull then ImagePullBackOff, until image-pull-restore", imagePull(true)},
	"image-pull-restore": {"pulls of --image succeed again (the waiting pods start at their next retry)", imagePull(false)},
	"operator-kill": {"the operator is killed (SIGKILL) and, unless --duration=0, started again after --duration", func(ctx context.Context, env Env, _ *rand.Rand, r Request) (string, error) {
		return operatorKill(ctx, env, r)
	}},
	"worker-restart":    {"a pod's containers restart once (restartCount+1, not Ready until the probes pass again); its fake worker starts afresh, its LoRA adapters forgotten", workerRestart},
	"lora-forget":       {"a pod's fake worker drops its LoRA adapters without restarting (only GET /v1/loras shows it)", loraForget},
	"operator-restart":  {"the operator stops gracefully and starts again", operatorRestart},
	"apiserver-restart": {"kube-apiserver stops, stays down for --duration, starts again", apiserverRestart},
	"lease-expiry": {"the namespace-scope lease in --namespace is aged past its duration, as if its renewer had stopped", func(ctx context.Context, env Env, _ *rand.Rand, r Request) (string, error) {
		return leaseExpiry(ctx, env, r)
	}},
	"cert-expiry": {"the webhook serving certificate Secret (--secret, default the operator's) gets an already-expired certificate, to exercise rotation", func(ctx context.Context, env Env, _ *rand.Rand, r Request) (string, error) {
		return certExpiry(ctx, env, r)
	}},
	"pod-kill": {"the processes of a pod the simulator runs as a kubelet would (an operator pod of the chart; --pod, or chosen with --seed in --namespace) get SIGKILL with no SIGTERM, as after an OOM kill; the container restarts after its back-off", podKill},
}

// Kinds lists every fault with a one-line description, for help texts.
var Kinds = func() map[string]string {
	out := make(map[string]string, len(table))
	for k, f := range table {
		out[k] = f.desc
	}
	return out
}()

// Request says which fault to inject and, optionally, where.
type Request struct {
	Kind      string        `json:"kind"`
	Node      string        `json:"node,omitempty"`
	Pod       string        `json:"pod,omitempty"` // namespace/name
	Namespace string        `json:"namespace,omitempty"`
	Seed      uint64        `json:"seed"`
	Duration  time.Duration `json:"duration,omitempty"`
	// Count is how many GPUs fail (gpu-failure); default 1.
	Count int `json:"count,omitempty"`
	// Operator names the operator (operator-kill, operator-restart); empty
	// is the primary one.
	Operator string `json:"operator,omitempty"`
	// Secret is the webhook certificate Secret cert-expiry rewrites,
	// namespace/name; empty is the simulator's operator's (a chart release
	// names its own: <release>-dynamo-operator-webhook-cert).
	Secret string `json:"secret,omitempty"`
	// Image is the image whose pulls fail (image-pull-failure,
	// image-pull-restore), as the pods' containers write it.
	Image string `json:"image,omitempty"`
}

// Operator is the simulator's handle on the operator process.
type Operator interface {
	Kill()
	Restart() error
	Start() error
}

// Env is what faults act on.
type Env struct {
	Client kubernetes.Interface
	Clock  clock.Clock
	// Operator finds an operator process by name ("" is the primary one).
	Operator         func(name string) (Operator, error)
	RestartAPIServer func(ctx context.Context, down time.Duration) error
	// SetImagePullFailure makes pulls of an image fail (or succeed again).
	SetImagePullFailure func(image string, fail bool)
	// SetWorkerDown stops (or restores) the fake worker of a pod.
	SetWorkerDown func(pod string, down bool)
	// RestartWorker starts a pod's fake worker afresh and ForgetWorker
	// makes it drop its adapters; both report whether the pod had one.
	RestartWorker, ForgetWorker func(pod string) bool
	// OperatorNamespace holds the webhook certificate Secret.
	OperatorNamespace string
	// WebhookCertSecret is the Secret cert-expiry rewrites.
	WebhookCertSecret string
	// Kubelet reaches the pods whose processes the simulator runs (pod-kill);
	// nil where it runs none.
	Kubelet Kubelet
	// SetNodeLost stops (or resumes) what the simulator does as a node's
	// kubelet (its probes, the processes it runs), nil where it does nothing.
	SetNodeLost func(node string, lost bool) []string
}

// Kubelet is the simulator's runner of pods as processes (sim/kubelet).
type Kubelet interface {
	// Running lists the pods it runs, namespace/name.
	Running() []string
	// Kill sends SIGKILL to the pod's container processes and returns
	// their pids.
	Kill(namespace, name string) ([]int, error)
}

// Inject applies a fault and describes what it did.
func Inject(ctx context.Context, env Env, r Request) (string, error) {
	f, ok := table[r.Kind]
	if !ok {
		return "", fmt.Errorf("unknown fault %q; known: %s", r.Kind, strings.Join(KindNames(), ", "))
	}
	return f.inject(ctx, env, rand.New(rand.NewPCG(r.Seed, r.Seed^0x9e3779b97f4a7c15)), r)
}

func operatorRestart(_ context.Context, env Env, _ *rand.Rand, r Request) (string, error) {
	op, err := env.Operator(r.Operator)
	if err != nil {
		return "", err
	}
	if err := op.Restart(); err != nil {
		return "", fmt.Errorf("restarting the operator: %w", err)
	}
	return "operator restarted", nil
}

func apiserverRestart(ctx context.Context, env Env, _ *rand.Rand, r Request) (string, error) {
	down := r.Duration
	if down == 0 {
		down = 2 * time.Second
	}
	if err := env.RestartAPIServer(ctx, down); err != nil {
		return "", fmt.Errorf("restarting kube-apiserver: %w", err)
	}
	return fmt.Sprintf("kube-apiserver was down for %s and is ready again", down), nil
}

// KindNames lists the fault kinds, sorted.
func KindNames() []string {
	out := make([]string, 0, len(Kinds))
	for k := range Kinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// pick chooses one of names (sorted first, so a seed always picks the same).
func pick(rng *rand.Rand, names []string) string {
	sort.Strings(names)
	return names[rng.IntN(len(names))]
}

func operatorKill(ctx context.Context, env Env, r Request) (string, error) {
	op, err := env.Operator(r.Operator)
	if err != nil {
		return "", err
	}
	op.Kill()
	if r.Duration < 0 {
		return "operator killed; it stays down until `dynamo-sim fault operator-restart`", nil
	}
	down := r.Duration
	if down == 0 {
		down = time.Second
	}
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case <-env.Clock.After(down):
	}
	if err := op.Start(); err != nil {
		return "", fmt.Errorf("starting the operator again: %w", err)
	}
	return fmt.Sprintf("operator killed and started again after %s", down), nil
}

// imagePull makes pulls of r.Image fail or succeed again in the
// simulator's kubelet (sim/kubelet Admitter).
func imagePull(fail bool) func(context.Context, Env, *rand.Rand, Request) (string, error) {
	return func(_ context.Context, env Env, _ *rand.Rand, r Request) (string, error) {
		if r.Image == "" {
			return "", fmt.Errorf("image-pull faults need --image")
		}
		if env.SetImagePullFailure == nil {
			return "", fmt.Errorf("this simulator has no kubelet checks to fail image pulls in")
		}
		env.SetImagePullFailure(r.Image, fail)
		if fail {
			return fmt.Sprintf("pulls of %s fail: its new pods stay Pending in ErrImagePull/ImagePullBackOff", r.Image), nil
		}
		return fmt.Sprintf("pulls of %s succeed again", r.Image), nil
	}
}

func loraForget(ctx context.Context, env Env, rng *rand.Rand, r Request) (string, error) {
	ns, name, err := crashTarget(ctx, env, rng, r)
	if err != nil {
		return "", err
	}
	if env.ForgetWorker == nil || !env.ForgetWorker(ns+"/"+name) {
		return "", fmt.Errorf("pod %s/%s has no fake worker serving", ns, name)
	}
	return fmt.Sprintf("the fake worker of pod %s/%s dropped its LoRA adapters", ns, name), nil
}

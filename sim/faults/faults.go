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

// Kinds lists every fault with a one-line description, for help texts.
var Kinds = map[string]string{
	"node-loss":         "a node stops heartbeating (KWOK lets it go): NotReady after 20 s, pods evicted 10 s later",
	"node-restore":      "a lost node heartbeats again",
	"gpu-failure":       "a node loses GPUs: nvidia.com/gpu capacity drops, a GPUHealthy=False condition and an unhealthy taint",
	"crash-loop":        "a pod's main container crash-loops: not Ready, CrashLoopBackOff, restartCount rising; its fake worker stops answering",
	"worker-restart":    "a pod's containers restart once (restartCount+1, not Ready until the probes pass again); its fake worker starts afresh, its LoRA adapters forgotten",
	"lora-forget":       "a pod's fake worker drops its LoRA adapters without restarting (only GET /v1/loras shows it)",
	"operator-kill":     "the operator is killed (SIGKILL) and, unless --duration=0, started again after --duration",
	"operator-restart":  "the operator stops gracefully and starts again",
	"apiserver-restart": "kube-apiserver stops, stays down for --duration, starts again",
	"lease-expiry":      "the namespace-scope lease in --namespace is aged past its duration, as if its renewer had stopped",
	"cert-expiry":       "the webhook serving certificate Secret gets an already-expired certificate, to exercise rotation",
}

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
	// SetWorkerDown stops (or restores) the fake worker of a pod.
	SetWorkerDown func(pod string, down bool)
	// RestartWorker starts a pod's fake worker afresh and ForgetWorker
	// makes it drop its adapters; both report whether the pod had one.
	RestartWorker, ForgetWorker func(pod string) bool
	// OperatorNamespace holds the webhook certificate Secret.
	OperatorNamespace string
	// WebhookCertSecret is the Secret cert-expiry rewrites.
	WebhookCertSecret string
}

// Inject applies a fault and describes what it did.
func Inject(ctx context.Context, env Env, r Request) (string, error) {
	rng := rand.New(rand.NewPCG(r.Seed, r.Seed^0x9e3779b97f4a7c15))
	switch r.Kind {
	case "node-loss":
		return nodeLoss(ctx, env, rng, r)
	case "node-restore":
		return nodeRestore(ctx, env, r)
	case "gpu-failure":
		return gpuFailure(ctx, env, rng, r)
	case "crash-loop":
		return crashLoop(ctx, env, rng, r)
	case "worker-restart":
		return workerRestart(ctx, env, rng, r)
	case "lora-forget":
		ns, name, err := crashTarget(ctx, env, rng, r)
		if err != nil {
			return "", err
		}
		if env.ForgetWorker == nil || !env.ForgetWorker(ns+"/"+name) {
			return "", fmt.Errorf("pod %s/%s has no fake worker serving", ns, name)
		}
		return fmt.Sprintf("the fake worker of pod %s/%s dropped its LoRA adapters", ns, name), nil
	case "operator-kill":
		return operatorKill(ctx, env, r)
	case "operator-restart":
		op, err := env.Operator(r.Operator)
		if err != nil {
			return "", err
		}
		if err := op.Restart(); err != nil {
			return "", fmt.Errorf("restarting the operator: %w", err)
		}
		return "operator restarted", nil
	case "apiserver-restart":
		down := r.Duration
		if down == 0 {
			down = 2 * time.Second
		}
		if err := env.RestartAPIServer(ctx, down); err != nil {
			return "", fmt.Errorf("restarting kube-apiserver: %w", err)
		}
		return fmt.Sprintf("kube-apiserver was down for %s and is ready again", down), nil
	case "lease-expiry":
		return leaseExpiry(ctx, env, r)
	case "cert-expiry":
		return certExpiry(ctx, env)
	default:
		return "", fmt.Errorf("unknown fault %q; known: %s", r.Kind, strings.Join(KindNames(), ", "))
	}
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

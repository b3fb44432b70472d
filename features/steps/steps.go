// Package steps is the one step library of the feature files
// (features/*.feature, run with a Cluster) and of the upgrade and fault
// scenarios (scenarios/*.feature, run with a Suite). Steps are grouped one
// file per domain; each file has one function registering its steps, and
// register.go calls them all.
//
// The feature steps speak to any cluster through a controller-runtime
// client, so the same steps run against envtest and against the simulated
// cluster. Each feature scenario gets a namespace of its own; objects
// without a namespace in a manifest land there.
//
// The scenario steps (scenario.go and the files it names) start a
// simulator per scenario or chain of scenarios and install operator
// releases with helm; they use the feature steps' helpers (manifests,
// JSONPath, operator pods, graph states) rather than copies.
package steps

import (
	"context"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Cluster is what the steps need of a cluster.
type Cluster struct {
	// Client talks to the cluster with strict field validation.
	Client client.Client
	// Config reaches the cluster, for discovery and raw requests.
	Config *rest.Config
	// CreateNamespace makes a fresh namespace whose name starts with prefix.
	CreateNamespace func(ctx context.Context, prefix string) (string, error)
	// DeleteNamespace removes a namespace made by CreateNamespace.
	DeleteNamespace func(ctx context.Context, ns string)
	// RepoRoot resolves relative file paths in steps; ../shared/ sits beside it.
	RepoRoot string
	// EventualTimeout bounds the "eventually" steps.
	EventualTimeout time.Duration
	// Operator observes and restarts the operator; nil where the suite
	// cannot (steps that need it then fail saying so).
	Operator OperatorControl
	// ScrapeMetrics returns the operator's /metrics as a scraper allowed
	// to read them gets it; nil where the suite cannot (metrics steps fail).
	ScrapeMetrics func(context.Context) ([]byte, error)
	// Kubeconfig is the cluster's kubeconfig file and Helm the pinned helm
	// binary (make helm), for the install steps; empty where the suite has
	// no kubeconfig file (envtest).
	Kubeconfig, Helm string
	// Fault injects a simulator fault (dynamo-sim fault); nil where the
	// cluster is no simulator (the @sim-only steps that need it fail).
	Fault func(ctx context.Context, f Fault) (string, error)
	// RunsJobs: the cluster runs Jobs to their end (a Job controller, and
	// the simulator's KWOK stages for their pods); on envtest the steps
	// write a build Job's outcome into its status themselves.
	RunsJobs bool
	// WebhookCertSecret is the operator's webhook certificate Secret;
	// empty means dynamo/dynamo-operator-webhook-cert (the envtest suite's).
	WebhookCertSecret types.NamespacedName
	// Workers are the fake Dynamo workers behind the pods (models.go); nil
	// where the suite has none. ModelCheckInterval is the operator's
	// --model-check-interval.
	Workers            Workers
	ModelCheckInterval time.Duration
}

// FieldOwner is the server-side apply field manager of objects the steps apply.
const FieldOwner = "dynamo-features"

// world is the state of one scenario.
type world struct {
	cluster   *Cluster
	namespace string
	// applied are the objects of the last apply step, as written.
	applied []*unstructured.Unstructured
	// lastErr is the error of the last apply step, nil if it was accepted.
	lastErr error
	// writesMark is the operator's write count when a quiet period began.
	writesMark int64
	modes      modes
	// appliedAt is when the last apply step was made.
	appliedAt time.Time
	// metricsBaseline is the scrape taken when the scenario began.
	metricsBaseline map[string]*dto.MetricFamily
	install         install
	serving         serving
	models          models
	gang            gang
	groups          groups
	lwsAPI          lwsAPI
	topology        topology
}

// quoted matches a double-quoted step argument in which \" stands for a quote.
const quoted = `"((?:[^"\\]|\\.)*)"`

// anything matches a quoted argument that may itself hold quotes, such as a
// JSONPath filter [?(@.type=="Ready")]; it extends to the last quote that
// the rest of the step allows.
const anything = `"(.*)"`

func unescape(s string) string { return strings.ReplaceAll(s, `\"`, `"`) }

func unquote1(f func(context.Context, string) error) func(context.Context, string) error {
	return func(ctx context.Context, a string) error { return f(ctx, unescape(a)) }
}

func unquote2(f func(context.Context, string, string) error) func(context.Context, string, string) error {
	return func(ctx context.Context, a, b string) error { return f(ctx, unescape(a), unescape(b)) }
}

func unquote4(f func(context.Context, string, string, string, string) error) func(context.Context, string, string, string, string) error {
	return func(ctx context.Context, kind, a, b, c string) error {
		return f(ctx, kind, unescape(a), unescape(b), unescape(c))
	}
}

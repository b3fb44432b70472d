// Package steps is the step library of the feature files. It speaks to any
// cluster through a controller-runtime client, so the same steps run against
// envtest and against the simulated cluster. Each scenario gets a namespace
// of its own; objects without a namespace in a manifest land there.
package steps

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cucumber/godog"
	dto "github.com/prometheus/client_model/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1beta1"
	"github.com/dynamoctl/dynamo-operator/operator/apply"
	"github.com/dynamoctl/dynamo-operator/sim/prereq"
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
}

// InitializeScenario registers every step and gives each scenario a
// namespace of its own, deleted when the scenario ends.
func (c *Cluster) InitializeScenario(sc *godog.ScenarioContext) {
	w := &world{cluster: c}
	sc.Before(func(ctx context.Context, s *godog.Scenario) (context.Context, error) {
		ns, err := c.CreateNamespace(ctx, s.Name)
		if err != nil {
			return ctx, fmt.Errorf("creating the scenario's namespace: %w", err)
		}
		w.namespace = ns
		return ctx, nil
	})
	sc.After(func(ctx context.Context, _ *godog.Scenario, err error) (context.Context, error) {
		// Releases first: an operator in a namespace being deleted would
		// lose its RoleBinding before it stops.
		cleanErr := errors.Join(w.cleanUpReleases(), w.undoFaults())
		if w.namespace != "" {
			c.DeleteNamespace(context.Background(), w.namespace)
		}
		return ctx, cleanErr
	})

	registerModeSteps(sc, w)
	sc.Step(`^I apply (?:the )?manifest:$`, w.applyManifest)
	sc.Step(`^I create (?:the )?manifest:$`, w.createManifest)
	sc.Step(`^I apply the file `+quoted+`$`, unquote1(w.applyFile))
	sc.Step(`^it is accepted$`, w.accepted)
	sc.Step(`^it is rejected with a message containing `+quoted+`$`, unquote1(w.rejectedWith))
	sc.Step(`^the message also contains `+quoted+`$`, unquote1(w.messageContains))
	sc.Step(`^it reads back unchanged$`, w.readsBackUnchanged)
	sc.Step(`^every manifest under `+quoted+` is accepted and reads back unchanged( when created and when applied server-side)?(?:, and reads in `+quoted+`)?$`, w.everyManifestUnder)
	sc.Step(`^the (\S+) `+quoted+` has `+anything+` equal to `+anything+`$`, unquote4(w.fieldEquals))
	sc.Step(`^the API server serves `+quoted+` in `+quoted+` with short name `+quoted+`$`, w.servesWithShortName)
	sc.Step(`^"kubectl get (\S+)" shows the columns `+quoted+`$`, w.showsColumns)
	sc.Step(`^I scale the (\S+) `+quoted+` to (\d+)$`, w.scaleTo)
	sc.Step(`^the (\S+) `+quoted+` has `+anything+` containing `+anything+`$`, unquote4(w.fieldContains))
	sc.Step(`^the operator restarts$`, w.operatorRestarts)
	sc.Step(`^the operator makes no writes in this namespace within (\d+) seconds$`, w.noWritesFor)
	sc.Step(`^I patch the (\S+) `+quoted+` with:$`, w.patchWith)
	sc.Step(`^I delete the (\S+) `+quoted+` with (\w+) propagation$`, w.deleteWith)
	sc.Step(`^the (\S+) `+quoted+` exists$`, w.exists)
	sc.Step(`^the (\S+) `+quoted+` eventually exists$`, w.eventuallyExists)
	sc.Step(`^the (\S+) `+quoted+` is eventually gone$`, w.eventuallyGone)
	sc.Step(`^every graph under `+quoted+` runs with the images, commands, args, GPU limits and env as written$`, unquote1(w.everyGraphRunsAsWritten))
	sc.Step(`^the (\S+) `+quoted+` eventually has `+anything+` equal to `+anything+`$`, unquote4(w.fieldEventuallyEquals))
	w.registerWebhookSteps(sc)
	w.registerServingSteps(sc)
	w.registerMetricsSteps(sc)
	w.registerInstallSteps(sc)
	w.registerComponentSteps(sc)
	w.registerModelSteps(sc)
	w.registerMultinodeSteps(sc)
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

func (w *world) applyManifest(ctx context.Context, doc *godog.DocString) error {
	objs, err := ParseManifests([]byte(doc.Content))
	if err != nil {
		return fmt.Errorf("the manifest in the feature file does not parse: %w", err)
	}
	w.applied, w.lastErr, w.appliedAt = objs, w.apply(ctx, objs), time.Now()
	return nil
}

// createManifest creates the objects, as kubectl create does, rather than
// applying them: the API server's checks differ slightly between the two.
func (w *world) createManifest(ctx context.Context, doc *godog.DocString) error {
	objs, err := ParseManifests([]byte(doc.Content))
	if err != nil {
		return fmt.Errorf("the manifest in the feature file does not parse: %w", err)
	}
	w.applied, w.lastErr = objs, w.create(ctx, objs)
	return nil
}

// create creates objs in order into the scenario's namespace, as kubectl
// create and a first client-side kubectl apply do, and stops at the first
// error, which it returns.
func (w *world) create(ctx context.Context, objs []*unstructured.Unstructured) error {
	for _, obj := range objs {
		live := obj.DeepCopy()
		if live.GetNamespace() == "" {
			live.SetNamespace(w.namespace)
		}
		if err := w.cluster.Client.Create(ctx, live); err != nil {
			return err
		}
	}
	return nil
}

func (w *world) applyFile(ctx context.Context, path string) error {
	objs, err := w.readManifestFile(path)
	if err != nil {
		return err
	}
	if isUsersManifest(path) {
		// Users' manifests come with docs that have them create Secrets and
		// ConfigMaps first (kubectl create secret generic hf-token-secret
		// ...); a kubelet starts no pod without them.
		if err := w.createPrereqs(ctx, objs); err != nil {
			return err
		}
	}
	w.applied, w.lastErr = objs, w.apply(ctx, objs)
	return nil
}

// isUsersManifest reports whether path is one of the users' manifests in
// ../shared/compat, as opposed to a test's own file.
func isUsersManifest(path string) bool {
	return strings.Contains(filepath.ToSlash(path), "shared/compat/")
}

// createPrereqs creates, in the scenario's namespace, placeholders of the
// Secrets and ConfigMaps objs refer to and do not contain (sim/prereq).
func (w *world) createPrereqs(ctx context.Context, objs []*unstructured.Unstructured) error {
	for _, o := range prereq.For(objs, w.namespace) {
		kind := o.GetObjectKind().GroupVersionKind().Kind
		if err := w.cluster.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s %s: %w", kind, o.GetName(), err)
		}
	}
	return nil
}

func (w *world) readManifestFile(path string) ([]*unstructured.Unstructured, error) {
	full := w.resolve(path)
	data, err := os.ReadFile(full)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", full, err)
	}
	objs, err := ParseManifests(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return objs, nil
}

func (w *world) resolve(path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(w.cluster.RepoRoot, path)
}

// apply server-side applies objs in order into the scenario's namespace and
// stops at the first error, which it returns.
func (w *world) apply(ctx context.Context, objs []*unstructured.Unstructured) error {
	for _, obj := range objs {
		if err := w.applyOne(ctx, obj); err != nil {
			return err
		}
	}
	return nil
}

func (w *world) applyOne(ctx context.Context, obj *unstructured.Unstructured) error {
	live := obj.DeepCopy()
	if live.GetNamespace() == "" {
		live.SetNamespace(w.namespace)
	}
	return w.cluster.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(live),
		client.FieldOwner(FieldOwner), client.ForceOwnership)
}

func (w *world) accepted() error {
	if w.lastErr != nil {
		return fmt.Errorf("expected the apply to be accepted, got: %v", w.lastErr)
	}
	return nil
}

func (w *world) rejectedWith(_ context.Context, text string) error {
	if w.lastErr == nil {
		return fmt.Errorf("expected the apply to be rejected with %q, but it was accepted", text)
	}
	return w.messageContains(context.Background(), text)
}

func (w *world) messageContains(_ context.Context, text string) error {
	if w.lastErr == nil {
		return fmt.Errorf("there is no rejection message to look in for %q", text)
	}
	if !strings.Contains(w.lastErr.Error(), text) {
		return fmt.Errorf("expected the rejection to contain %q, got: %v", text, w.lastErr)
	}
	return nil
}

func (w *world) readsBackUnchanged(ctx context.Context) error {
	if err := w.accepted(); err != nil {
		return err
	}
	return w.compareWithStored(ctx, w.applied)
}

// compareWithStored reads each object back and reports every field that was
// written but is missing or different in what the API server stored.
func (w *world) compareWithStored(ctx context.Context, objs []*unstructured.Unstructured) error {
	var problems []string
	for _, want := range objs {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(want.GroupVersionKind())
		ns := want.GetNamespace()
		if ns == "" {
			ns = w.namespace
		}
		if err := w.cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: want.GetName()}, got); err != nil {
			problems = append(problems, fmt.Sprintf("%s %q: %v", want.GetKind(), want.GetName(), err))
			continue
		}
		for _, d := range apply.Diff(got.Object, stripNamespace(want.Object)) {
			problems = append(problems, fmt.Sprintf("%s %q: %s", want.GetKind(), want.GetName(), d))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("stored objects differ from what was written:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}

// stripNamespace drops metadata.namespace, which the scenario fills in.
func stripNamespace(obj map[string]any) map[string]any {
	out := unstructured.Unstructured{Object: obj}
	cp := out.DeepCopy()
	unstructured.RemoveNestedField(cp.Object, "metadata", "namespace")
	return cp.Object
}

// everyManifestUnder server-side applies each manifest file under dir into
// the scenario's namespace and reads its objects back. created: each file
// is also created, in a namespace of its own (names repeat across files).
// readsIn: the objects of the kinds the operator converts also read, in
// that API version, as the operator's conversion of what was written.
func (w *world) everyManifestUnder(ctx context.Context, dir, created, readsIn string) error {
	root := w.resolve(unescape(dir))
	files, err := manifestFiles(root)
	if err != nil {
		return err
	}
	var other *schema.GroupVersion
	if readsIn != "" {
		gv, err := schema.ParseGroupVersion(unescape(readsIn))
		if err != nil {
			return err
		}
		other = &gv
	}
	var problems []string
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		objs, err := w.readManifestFile(f)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		for _, p := range w.writtenAndRead(ctx, objs, w.apply, other) {
			problems = append(problems, rel+": "+p)
		}
		if created == "" {
			continue
		}
		for _, p := range w.inNamespaceOfItsOwn(ctx, "created", func() []string {
			return w.writtenAndRead(ctx, objs, w.create, other)
		}) {
			problems = append(problems, rel+": created: "+p)
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d problems in %d manifests:\n%s", len(problems), len(files), strings.Join(problems, "\n"))
	}
	return nil
}

// writtenAndRead writes objs with write and reports how they fail to read
// back as written and, unless other is nil, in the version other.
func (w *world) writtenAndRead(ctx context.Context, objs []*unstructured.Unstructured,
	write func(context.Context, []*unstructured.Unstructured) error, other *schema.GroupVersion) []string {
	if err := write(ctx, objs); err != nil {
		return []string{"rejected: " + err.Error()}
	}
	var problems []string
	if err := w.compareWithStored(ctx, objs); err != nil {
		problems = append(problems, err.Error())
	}
	if other == nil {
		return problems
	}
	converted, err := w.convertedTo(objs, *other)
	if err != nil {
		return append(problems, err.Error())
	}
	if err := w.compareWithStored(ctx, converted); err != nil {
		problems = append(problems, fmt.Sprintf("read in %s: %v", other, err))
	}
	return problems
}

// convertedTo converts the objects of objs written in another version of
// gv's group, of a kind gv serves, to gv as the operator converts them
// (ConvertManifest), leaving out what that conversion cannot predict: the
// status, and the conversion's own annotations (the API server converts an
// object after its schema's defaults are applied, which those may record).
func (w *world) convertedTo(objs []*unstructured.Unstructured, gv schema.GroupVersion) ([]*unstructured.Unstructured, error) {
	scheme := w.cluster.Client.Scheme()
	var out []*unstructured.Unstructured
	for _, o := range objs {
		written := o.GroupVersionKind()
		if written.Group != gv.Group || written.Version == gv.Version || !scheme.Recognizes(gv.WithKind(written.Kind)) {
			continue
		}
		c, err := ConvertManifest(scheme, o, gv)
		if err != nil {
			return nil, err
		}
		unstructured.RemoveNestedField(c.Object, "status")
		unstructured.RemoveNestedField(c.Object, "metadata", "creationTimestamp")
		for _, key := range v1beta1.ConversionAnnotations {
			unstructured.RemoveNestedField(c.Object, "metadata", "annotations", key)
		}
		out = append(out, c)
	}
	return out, nil
}

func (w *world) fieldEquals(ctx context.Context, kind, name, path, want string) error {
	got, err := w.readField(ctx, kind, name, path)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("%s %q %s: expected %q, got %q", kind, name, path, want, got)
	}
	return nil
}

func (w *world) fieldContains(ctx context.Context, kind, name, path, want string) error {
	got, err := w.readField(ctx, kind, name, path)
	if err != nil {
		return err
	}
	if !strings.Contains(got, want) {
		return fmt.Errorf("%s %q %s: expected it to contain %q, got %q", kind, name, path, want, got)
	}
	return nil
}

func (w *world) fieldEventuallyEquals(ctx context.Context, kind, name, path, want string) error {
	err := w.eventually(ctx, func() error { return w.fieldEquals(ctx, kind, name, path, want) })
	if err != nil {
		if status, serr := w.readField(ctx, kind, name, ".status"); serr == nil {
			err = fmt.Errorf("%w\nlast status: %s", err, truncate(status, 1500))
		}
	}
	return err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func (w *world) readField(ctx context.Context, kind, name, path string) (string, error) {
	obj, err := w.read(ctx, kind, name)
	if err != nil {
		return "", err
	}
	return JSONPathValue(obj.Object, path)
}

// read gets the object of a kind, named as a user writes it (ResolveKind),
// from the scenario's namespace.
func (w *world) read(ctx context.Context, kind, name string) (*unstructured.Unstructured, error) {
	obj, err := w.object(kind, name)
	if err != nil {
		return nil, err
	}
	return obj, w.cluster.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
}

package steps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cucumber/godog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1beta1"
	"github.com/dynamoctl/dynamo-operator/operator/apply"
	"github.com/dynamoctl/dynamo-operator/sim/prereq"
)

// Steps that write manifests (applied server-side or created, as a user
// does) and check how the API server took them.

func registerManifestSteps(sc *godog.ScenarioContext, w *world) {
	sc.Step(`^I apply (?:the )?manifest:$`, w.applyManifest)
	sc.Step(`^I create (?:the )?manifest:$`, w.createManifest)
	sc.Step(`^I apply the file `+quoted+`$`, unquote1(w.applyFile))
	sc.Step(`^it is accepted$`, w.accepted)
	sc.Step(`^it is rejected with a message containing `+quoted+`$`, unquote1(w.rejectedWith))
	sc.Step(`^the message also contains `+quoted+`$`, unquote1(w.messageContains))
	sc.Step(`^it reads back unchanged$`, w.readsBackUnchanged)
	sc.Step(`^every manifest under `+quoted+` is accepted and reads back unchanged( when created and when applied server-side)?(?:, and reads in `+quoted+`)?$`, w.everyManifestUnder)
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

package steps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cucumber/godog"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/render"
	"github.com/dynamoctl/dynamo-operator/sim/prereq"
)

// CompatDir holds the users' manifests, beside the repository.
const CompatDir = "../shared/compat"

// scenarioFieldOwner is the server-side apply field manager of what the
// upgrade and fault scenarios apply.
const scenarioFieldOwner = "dynamo-scenarios"

// Graph is a DynamoGraphDeployment a scenario applied.
type Graph struct {
	Namespace, Name string
	// File is the manifest it came from, relative to CompatDir.
	File string
}

func (g Graph) String() string { return g.Namespace + "/" + g.Name }

// graphs is what a scenario applied and the snapshot it compares with.
type graphs struct {
	list       []Graph
	namespaces []string
	// pods and objects are the snapshot ("I note ...").
	pods    map[types.UID]podRecord
	objects map[string]map[string]any
	notedAt time.Time
}

// podRecord is what says a pod was not restarted: its UID (a replaced pod
// has another) and each container's restart count; and whose it is, the
// graph and component its labels name (render.LabelGraphName,
// render.LabelComponent), for the steps that expect some pods to change.
type podRecord struct {
	name      string
	restarts  map[string]int32
	graph     string
	component string
}

// snapshotKinds are the kinds whose content (all but metadata and status)
// must survive an operator upgrade unchanged: the graphs, every child the
// operator writes in their namespaces, and what users keep beside them
// (graphKinds). Pods are noted on their own (UID, restart counts), and
// ReplicaSets follow their Deployments.
func snapshotKinds() []schema.GroupVersionKind {
	return slices.DeleteFunc(graphKinds(), func(gvk schema.GroupVersionKind) bool {
		return gvk.Kind == "Pod" || gvk.Kind == "ReplicaSet"
	})
}

func registerGraphSteps(sc *godog.ScenarioContext, w *simWorld) {
	sc.Step(`^I apply every compat graph the simulator can run$`, w.applyCompatGraphs)
	sc.Step(`^every graph becomes Ready$`, w.everyGraphReady)
	sc.Step(`^I note every graph's pods and objects$`, w.noteGraphs)
	sc.Step(`^no pod of any graph restarted or was replaced$`, w.noPodRestarted)
	sc.Step(`^every graph's objects are unchanged$`, w.objectsUnchanged)
}

// nsPattern keeps what a namespace name allows.
var nsPattern = regexp.MustCompile(`[^a-z0-9-]+`)

// compatNamespace names the namespace of a compat manifest after its path:
// examples/backends/vllm/deploy/agg.yaml is "vllm-agg".
func compatNamespace(rel string) string {
	rel = strings.TrimSuffix(strings.TrimSuffix(rel, ".yaml"), ".yml")
	var parts []string
	for _, p := range strings.Split(rel, "/") {
		if p != "examples" && p != "backends" && p != "deploy" {
			parts = append(parts, p)
		}
	}
	ns := strings.Trim(nsPattern.ReplaceAllString(strings.ToLower(strings.Join(parts, "-")), "-"), "-")
	if len(ns) > 63 {
		ns = strings.TrimRight(ns[:63], "-")
	}
	return ns
}

// CompatManifests lists the compat manifests that hold a graph, with their
// objects, sorted by path. Every such graph runs on the simulator (its GPU
// pools, DRA devices and multinode groups; features' graph.feature @compat
// proves it one by one).
func (w *simWorld) CompatManifests() (map[string][]*unstructured.Unstructured, []string, error) {
	root := filepath.Join(w.Suite.Root, CompatDir)
	out := map[string][]*unstructured.Unstructured{}
	var files []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		objs, err := ParseManifests(data)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		hasGraph := false
		for _, o := range objs {
			hasGraph = hasGraph || o.GetKind() == "DynamoGraphDeployment"
		}
		if hasGraph {
			rel, _ := filepath.Rel(root, path)
			out[rel] = objs
			files = append(files, rel)
		}
		return nil
	})
	sort.Strings(files)
	return out, files, err
}

// applyCompatGraphs server-side applies each compat manifest that holds a
// graph into a namespace of its own (names repeat across files).
func (w *simWorld) applyCompatGraphs(ctx context.Context) error {
	if err := w.NeedSim(); err != nil {
		return err
	}
	manifests, files, err := w.CompatManifests()
	if err != nil {
		return err
	}
	for _, rel := range files {
		ns := compatNamespace(rel)
		if err := w.ensureNamespace(ctx, ns); err != nil {
			return err
		}
		// The Secrets and ConfigMaps the graph's docs have users create
		// first (placeholders): the simulator's kubelet, as a real one,
		// starts no pod without them.
		if err := createPrereqs(ctx, w.Client, manifests[rel], ns); err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		for _, o := range manifests[rel] {
			obj := o.DeepCopy()
			obj.SetNamespace(ns)
			if err := w.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(scenarioFieldOwner), client.ForceOwnership); err != nil {
				return fmt.Errorf("%s: %s %s: %w", rel, obj.GetKind(), obj.GetName(), err)
			}
			if obj.GetKind() == "DynamoGraphDeployment" {
				w.graphs.list = append(w.graphs.list, Graph{Namespace: ns, Name: obj.GetName(), File: rel})
			}
		}
		w.graphs.namespaces = append(w.graphs.namespaces, ns)
	}
	w.Figure("graphs", len(w.graphs.list))
	return nil
}

// createPrereqs creates in ns the Secrets and ConfigMaps objs refer to and
// do not hold (sim/prereq), as their users would by hand beforehand.
func createPrereqs(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, ns string) error {
	for _, o := range prereq.For(objs, ns) {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s %s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
		}
	}
	return nil
}

func (w *simWorld) ensureNamespace(ctx context.Context, ns string) error {
	obj := &corev1.Namespace{}
	obj.Name = ns
	if err := w.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	return nil
}

// Graphs are the graphs the scenario applied.
func (w *simWorld) Graphs() []Graph { return w.graphs.list }

// GraphNamespaces are the namespaces the scenario's graphs live in.
func (w *simWorld) GraphNamespaces() []string { return w.graphs.namespaces }

// NotReady lists the scenario's graphs whose Ready condition is not True,
// with the condition's reason.
func (w *simWorld) NotReady(ctx context.Context) ([]string, error) {
	var bad []string
	for _, g := range w.graphs.list {
		dgd := &v1alpha1.DynamoGraphDeployment{}
		if err := w.Client.Get(ctx, client.ObjectKey{Namespace: g.Namespace, Name: g.Name}, dgd); err != nil {
			return nil, err
		}
		switch c := meta.FindStatusCondition(dgd.Status.Conditions, "Ready"); {
		case c == nil:
			bad = append(bad, g.String()+" (no Ready condition)")
		case c.Status != metav1.ConditionTrue:
			bad = append(bad, g.String()+" ("+c.Reason+": "+c.Message+")")
		}
	}
	return bad, nil
}

func (w *simWorld) everyGraphReady(ctx context.Context) error {
	if len(w.graphs.list) == 0 {
		return fmt.Errorf("the scenario applied no graphs")
	}
	start := time.Now()
	err := w.eventually(ctx, "every graph Ready", func() error {
		bad, err := w.NotReady(ctx)
		if err != nil {
			return err
		}
		if len(bad) > 0 {
			return fmt.Errorf("%d of %d graphs not Ready:\n  %s", len(bad), len(w.graphs.list), strings.Join(bad, "\n  "))
		}
		return nil
	})
	if err == nil {
		w.Figure("graphs Ready after (s)", fmt.Sprintf("%.1f", time.Since(start).Seconds()))
	}
	return err
}

// Pods lists the pods of the scenario's graph namespaces but operator
// pods (a namespace-scoped release runs beside its graphs).
func (w *simWorld) Pods(ctx context.Context) ([]corev1.Pod, error) {
	var out []corev1.Pod
	for _, ns := range w.graphs.namespaces {
		var pods corev1.PodList
		if err := w.Client.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		for _, p := range pods.Items {
			if p.Labels["app.kubernetes.io/name"] != "dynamo-operator" {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

func recordPod(p *corev1.Pod) podRecord {
	r := podRecord{name: p.Namespace + "/" + p.Name, restarts: map[string]int32{}, component: p.Labels[render.LabelComponent]}
	if g := p.Labels[render.LabelGraphName]; g != "" {
		r.graph = p.Namespace + "/" + g
	}
	for _, c := range p.Status.ContainerStatuses {
		r.restarts[c.Name] = c.RestartCount
	}
	return r
}

// noteGraphs records every pod (UID, restart counts) and the content of
// every object of snapshotKinds in the graphs' namespaces.
func (w *simWorld) noteGraphs(ctx context.Context) error {
	pods, err := w.Pods(ctx)
	if err != nil {
		return err
	}
	w.graphs.pods = map[types.UID]podRecord{}
	for i := range pods {
		w.graphs.pods[pods[i].UID] = recordPod(&pods[i])
	}
	if w.graphs.objects, err = w.objectContents(ctx); err != nil {
		return err
	}
	w.graphs.notedAt = time.Now()
	w.Figure("pods", len(pods))
	w.Figure("objects noted", len(w.graphs.objects))
	return nil
}

// objectContents reads every object of snapshotKinds in the graphs'
// namespaces, keyed "Kind ns/name", without metadata and status.
func (w *simWorld) objectContents(ctx context.Context) (map[string]map[string]any, error) {
	out := map[string]map[string]any{}
	for _, gvk := range snapshotKinds() {
		for _, ns := range w.graphs.namespaces {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			err := w.Client.List(ctx, list, client.InNamespace(ns))
			if meta.IsNoMatchError(err) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("listing %s in %s: %w", gvk.Kind, ns, err)
			}
			for _, o := range list.Items {
				content := o.DeepCopy().Object
				delete(content, "metadata")
				delete(content, "status")
				out[gvk.Kind+" "+ns+"/"+o.GetName()] = content
			}
		}
	}
	return out, nil
}

// PodChanges lists every pod of the snapshot that is gone (replaced) or
// whose containers restarted, and every new pod.
func (w *simWorld) PodChanges(ctx context.Context) ([]string, error) {
	changes, err := w.podChanges(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(changes))
	for i, c := range changes {
		out[i] = c.text
	}
	return out, nil
}

// podChange is one difference from the noted pods: a new pod, one gone
// or being deleted, a restarted container; of the pod record's graph and
// component.
type podChange struct {
	podRecord
	kind podChangeKind
	text string
}

type podChangeKind int

const (
	podNew podChangeKind = iota
	podGone
	podRestarted
)

// podChanges is PodChanges with each change's pod, sorted by text.
func (w *simWorld) podChanges(ctx context.Context) ([]podChange, error) {
	if w.graphs.pods == nil {
		return nil, fmt.Errorf("no pods were noted: add \"I note every graph's pods and objects\" first")
	}
	pods, err := w.Pods(ctx)
	if err != nil {
		return nil, err
	}
	var changes []podChange
	seen := map[types.UID]bool{}
	for i := range pods {
		p := &pods[i]
		seen[p.UID] = true
		now := recordPod(p)
		was, ok := w.graphs.pods[p.UID]
		if !ok {
			changes = append(changes, podChange{now, podNew, "new pod " + p.Namespace + "/" + p.Name})
			continue
		}
		if p.DeletionTimestamp != nil {
			changes = append(changes, podChange{was, podGone, "pod " + was.name + " is being deleted"})
		}
		for c, n := range now.restarts {
			if n != was.restarts[c] {
				changes = append(changes, podChange{was, podRestarted, fmt.Sprintf("pod %s container %s restarted (%d -> %d)", was.name, c, was.restarts[c], n)})
			}
		}
	}
	for uid, was := range w.graphs.pods {
		if !seen[uid] {
			changes = append(changes, podChange{was, podGone, "pod " + was.name + " is gone (replaced)"})
		}
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].text < changes[j].text })
	return changes, nil
}

func (w *simWorld) noPodRestarted(ctx context.Context) error {
	changes, err := w.PodChanges(ctx)
	if err != nil {
		return err
	}
	w.Figure("pods restarted or replaced", len(changes))
	if len(changes) > 0 {
		return fmt.Errorf("%d pod changes since %s:\n  %s", len(changes), w.graphs.notedAt.Format(time.TimeOnly), strings.Join(changes, "\n  "))
	}
	return nil
}

func (w *simWorld) objectsUnchanged(ctx context.Context) error {
	if w.graphs.objects == nil {
		return fmt.Errorf("no objects were noted: add \"I note every graph's pods and objects\" first")
	}
	now, err := w.objectContents(ctx)
	if err != nil {
		return err
	}
	var problems []string
	for key, was := range w.graphs.objects {
		got, ok := now[key]
		if !ok {
			problems = append(problems, key+" is gone")
			continue
		}
		if d := cmp.Diff(was, got); d != "" {
			problems = append(problems, key+" changed (-noted +now):\n"+d)
		}
	}
	for key := range now {
		if _, ok := w.graphs.objects[key]; !ok {
			problems = append(problems, key+" is new")
		}
	}
	sort.Strings(problems)
	w.Figure("objects changed", len(problems))
	if len(problems) > 0 {
		return fmt.Errorf("%d of %d objects differ from what was noted:\n%s", len(problems), len(w.graphs.objects), strings.Join(problems, "\n"))
	}
	return nil
}

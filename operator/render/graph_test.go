package render

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

func TestComponentName(t *testing.T) {
	cases := []struct{ graph, service, want string }{
		{"vllm-agg", "Frontend", "vllm-agg-frontend"},
		{"vllm-agg", "VllmDecodeWorker", "vllm-agg-vllmdecodeworker"},
		{"g", "prefill", "g-prefill"},
	}
	for _, tc := range cases {
		if got := ComponentName(tc.graph, tc.service); got != tc.want {
			t.Errorf("ComponentName(%q, %q) = %q, want %q", tc.graph, tc.service, got, tc.want)
		}
	}
}

func TestComponents(t *testing.T) {
	dgd := builders.MakeGraph("g", "ns").
		Service("Worker", builders.MakeEmptyService().Type(v1alpha1.ComponentTypeWorker).Replicas(3).Env("SHARED", "service").Env("ONLY_SERVICE", "s").Label("svc", "label")).
		Service("Frontend", builders.MakeEmptyService().Type(v1alpha1.ComponentTypeFrontend).ServiceName("custom-name")).
		Obj()
	dgd.Labels = map[string]string{
		"team": "meta", "from-meta": "yes",
		LabelManagedBy:                   "helm",
		"kubectl.kubernetes.io/whatever": "x",
	}
	dgd.Annotations = map[string]string{
		"kubectl.kubernetes.io/last-applied-configuration": "{}",
		"note": "meta",
	}
	dgd.Spec.Labels = map[string]string{"team": "spec", LabelComponent: "hijack"}
	dgd.Spec.Annotations = map[string]string{"note": "spec", "extra": "a"}
	dgd.Spec.Envs = []corev1.EnvVar{{Name: "SHARED", Value: "global"}, {Name: "ONLY_GLOBAL", Value: "g"}}
	dgd.Spec.BackendFramework = v1alpha1.BackendFrameworkVLLM
	dgd.Spec.DynamoComponent = "frontend:abc"
	before := dgd.DeepCopy()

	got, err := Components(dgd)
	if err != nil {
		t.Fatalf("Components: %v", err)
	}
	if diff := cmp.Diff(before, dgd); diff != "" {
		t.Errorf("Components changed its input (-before +after):\n%s", diff)
	}
	if len(got) != 2 || got[0].Name != "g-frontend" || got[1].Name != "g-worker" {
		t.Fatalf("names = %v, want [g-frontend g-worker] in order", componentNames(got))
	}
	for _, dcd := range got {
		if dcd.Namespace != "ns" {
			t.Errorf("%s: namespace %q", dcd.Name, dcd.Namespace)
		}
		if len(dcd.OwnerReferences) != 0 {
			t.Errorf("%s: owner references %v, want none", dcd.Name, dcd.OwnerReferences)
		}
		if dcd.APIVersion != "nvidia.com/v1alpha1" || dcd.Kind != "DynamoComponentDeployment" {
			t.Errorf("%s: TypeMeta %+v", dcd.Name, dcd.TypeMeta)
		}
		wantLabels := map[string]string{
			LabelGraphName: "g", LabelComponent: dcd.Name, LabelManagedBy: ManagedByValue,
			"team": "spec", "from-meta": "yes",
		}
		if dcd.Spec.ComponentType == v1alpha1.ComponentTypeWorker {
			wantLabels[LabelWorkerHash] = WorkerHash(dgd)
		}
		if diff := cmp.Diff(wantLabels, dcd.Labels); diff != "" {
			t.Errorf("%s: labels (-want +got):\n%s", dcd.Name, diff)
		}
		wantAnnotations := map[string]string{"note": "spec", "extra": "a"}
		if diff := cmp.Diff(wantAnnotations, dcd.Annotations); diff != "" {
			t.Errorf("%s: annotations (-want +got):\n%s", dcd.Name, diff)
		}
		if dcd.Spec.BackendFramework != v1alpha1.BackendFrameworkVLLM || dcd.Spec.DynamoComponent != "frontend:abc" {
			t.Errorf("%s: backend %q, dynamoComponent %q", dcd.Name, dcd.Spec.BackendFramework, dcd.Spec.DynamoComponent)
		}
	}

	frontend, worker := got[0].Spec, got[1].Spec
	if frontend.ServiceName != "custom-name" {
		t.Errorf("an explicit serviceName was replaced: %q", frontend.ServiceName)
	}
	if worker.ServiceName != "Worker" {
		t.Errorf("serviceName defaulted to %q, want the map key Worker", worker.ServiceName)
	}
	if *frontend.Replicas != 1 || *worker.Replicas != 3 {
		t.Errorf("replicas frontend %d (want default 1), worker %d (want 3)", *frontend.Replicas, *worker.Replicas)
	}
	wantEnv := []corev1.EnvVar{{Name: "SHARED", Value: "service"}, {Name: "ONLY_GLOBAL", Value: "g"}, {Name: "ONLY_SERVICE", Value: "s"}}
	if diff := cmp.Diff(wantEnv, worker.Envs); diff != "" {
		t.Errorf("worker envs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(dgd.Spec.Envs, frontend.Envs); diff != "" {
		t.Errorf("frontend envs, want the global ones (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"svc": "label"}, worker.Labels); diff != "" {
		t.Errorf("worker spec labels (-want +got):\n%s", diff)
	}

	// The rendered specs are copies: changing one leaves the graph alone.
	got[1].Spec.Labels["svc"] = "changed"
	got[1].Spec.Envs[0].Value = "changed"
	if dgd.Spec.Services["Worker"].Labels["svc"] != "label" || dgd.Spec.Services["Worker"].Envs[0].Value != "service" {
		t.Error("a rendered component shares storage with the graph")
	}
}

func TestComponentsNoLabelsOrAnnotations(t *testing.T) {
	got, err := Components(builders.MakeGraph("g", "ns").Service("a", builders.MakeEmptyService()).Obj())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{LabelGraphName: "g", LabelComponent: "g-a", LabelManagedBy: ManagedByValue}
	if diff := cmp.Diff(want, got[0].Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if got[0].Annotations != nil {
		t.Errorf("annotations %v, want nil", got[0].Annotations)
	}
	if got[0].Spec.Envs != nil {
		t.Errorf("envs %v, want nil", got[0].Spec.Envs)
	}
}

func TestComponentsErrors(t *testing.T) {
	cases := map[string]struct {
		graphName string
		services  map[string]*builders.ServiceWrapper
		wantPaths []string
		wantText  string
	}{
		"nil service": {
			services:  map[string]*builders.ServiceWrapper{"Frontend": nil},
			wantPaths: []string{"spec.services.Frontend"},
			wantText:  "Required value",
		},
		"underscore is not a DNS label": {
			services:  map[string]*builders.ServiceWrapper{"decode_worker": builders.MakeEmptyService()},
			wantPaths: []string{"spec.services.decode_worker"},
			wantText:  "DNS-1035",
		},
		"too long": {
			graphName: strings.Repeat("g", 40),
			services:  map[string]*builders.ServiceWrapper{strings.Repeat("s", 23): builders.MakeEmptyService()},
			wantPaths: []string{"spec.services." + strings.Repeat("s", 23)},
			wantText:  "63",
		},
		"graph name starting with a digit": {
			graphName: "1graph",
			services:  map[string]*builders.ServiceWrapper{"a": builders.MakeEmptyService()},
			wantPaths: []string{"spec.services.a"},
			wantText:  "DNS-1035",
		},
		"two services lowercase to one name": {
			services:  map[string]*builders.ServiceWrapper{"Worker": builders.MakeEmptyService(), "worker": builders.MakeEmptyService()},
			wantPaths: []string{"spec.services.worker"},
			wantText:  "same component name as service Worker",
		},
		"model Service name too long": {
			graphName: strings.Repeat("g", 51),
			services:  map[string]*builders.ServiceWrapper{"worker": builders.MakeEmptyService().ModelRef("m")},
			wantPaths: []string{"spec.services.worker.modelRef"},
			wantText:  "-model",
		},
		"every problem is reported at once": {
			services:  map[string]*builders.ServiceWrapper{"a_b": builders.MakeEmptyService(), "c": nil, "ok": builders.MakeEmptyService()},
			wantPaths: []string{"spec.services.a_b", "spec.services.c"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			graphName := "g"
			if tc.graphName != "" {
				graphName = tc.graphName
			}
			g := builders.MakeGraph(graphName, "ns")
			for service, s := range tc.services {
				g.Service(service, s)
			}
			dgd := g.Obj()
			got, err := Components(dgd)
			if err == nil {
				t.Fatalf("no error; rendered %v", componentNames(got))
			}
			if got != nil {
				t.Errorf("rendered %v along with an error", componentNames(got))
			}
			errs := fieldErrors(t, err)
			var paths []string
			for _, e := range errs {
				paths = append(paths, e.Field)
			}
			if diff := cmp.Diff(tc.wantPaths, paths); diff != "" {
				t.Errorf("paths (-want +got):\n%s\nerror: %v", diff, err)
			}
			if tc.wantText != "" && !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("error %q does not mention %q", err, tc.wantText)
			}
		})
	}
}

func TestComponentsLongestValidName(t *testing.T) {
	dgd := builders.MakeGraph("g", "ns").Service(strings.Repeat("s", 22), builders.MakeEmptyService()).Obj()
	dgd.Name = strings.Repeat("g", 40)
	got, err := Components(dgd)
	if err != nil {
		t.Fatalf("a 63-character name was refused: %v", err)
	}
	if len(got[0].Name) != 63 {
		t.Errorf("name length %d", len(got[0].Name))
	}
}

func TestMergeEnv(t *testing.T) {
	secret := &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k",
	}}
	cases := map[string]struct {
		base      []corev1.EnvVar
		overrides [][]corev1.EnvVar
		want      []corev1.EnvVar
	}{
		"all empty is nil":        {want: nil},
		"empty overrides are nil": {overrides: [][]corev1.EnvVar{nil, {}}, want: nil},
		"base alone is copied": {
			base: []corev1.EnvVar{{Name: "A", Value: "1"}},
			want: []corev1.EnvVar{{Name: "A", Value: "1"}},
		},
		"override replaces in place and new ones append": {
			base:      []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "1"}, {Name: "C", Value: "1"}},
			overrides: [][]corev1.EnvVar{{{Name: "D", Value: "2"}, {Name: "B", Value: "2"}}},
			want:      []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}, {Name: "C", Value: "1"}, {Name: "D", Value: "2"}},
		},
		"later overrides win": {
			base:      []corev1.EnvVar{{Name: "A", Value: "runtime"}},
			overrides: [][]corev1.EnvVar{{{Name: "A", Value: "global"}}, {{Name: "A", Value: "service"}}, {{Name: "A", Value: "main"}}},
			want:      []corev1.EnvVar{{Name: "A", Value: "main"}},
		},
		"valueFrom replaces value entirely": {
			base:      []corev1.EnvVar{{Name: "A", Value: "1"}},
			overrides: [][]corev1.EnvVar{{{Name: "A", ValueFrom: secret}}},
			want:      []corev1.EnvVar{{Name: "A", ValueFrom: secret}},
		},
		"a repeated name is kept once, last value, first position": {
			base: []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "1"}, {Name: "A", Value: "2"}},
			want: []corev1.EnvVar{{Name: "A", Value: "2"}, {Name: "B", Value: "1"}},
		},
		"nil base with overrides": {
			overrides: [][]corev1.EnvVar{{{Name: "A", Value: "1"}}},
			want:      []corev1.EnvVar{{Name: "A", Value: "1"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := MergeEnv(tc.base, tc.overrides...)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("MergeEnv (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMergeEnvCopies(t *testing.T) {
	base := []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"},
	}}}
	got := MergeEnv(base)
	got[0].ValueFrom.FieldRef.FieldPath = "changed"
	got[0].Name = "changed"
	if base[0].Name != "A" || base[0].ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Error("MergeEnv's result shares storage with its input")
	}
}

func componentNames(dcds []*v1alpha1.DynamoComponentDeployment) []string {
	var names []string
	for _, d := range dcds {
		names = append(names, d.Name)
	}
	return names
}

// The components tests build stand for the ones Components renders: same
// name and labels.
func TestBuildersMakeGraphComponentLabelsAsRendered(t *testing.T) {
	got, err := Components(builders.MakeGraph("g", "ns").Service("Worker", builders.MakeService()).Obj())
	if err != nil {
		t.Fatal(err)
	}
	built := builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService()).Obj()
	if diff := cmp.Diff(got[0].ObjectMeta, built.ObjectMeta, cmpopts.IgnoreFields(metav1.ObjectMeta{}, "OwnerReferences")); diff != "" {
		t.Errorf("builders.MakeGraphComponent metadata (-rendered +built):\n%s", diff)
	}
}

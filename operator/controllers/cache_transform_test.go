package controllers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// Trimming a component keeps exactly the answer of replicasOwnedByOther, so
// scaling by another manager is still yielded to, and drops the rest.
func TestTrimForCacheKeepsWhoScaledComponents(t *testing.T) {
	entry := func(manager, subresource, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate,
			Subresource: subresource, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
	}
	ours := entry(FieldOwner, "", `{"f:spec":{"f:replicas":{},"f:envs":{}},"f:metadata":{"f:labels":{}}}`)
	kubectlScale := entry("kubectl", "scale", `{"f:spec":{"f:replicas":{}}}`)
	hpaAndMore := entry("horizontal-pod-autoscaler", "", `{"f:spec":{"f:replicas":{},"f:image":{}}}`)
	labels := entry("kubectl-edit", "", `{"f:metadata":{"f:labels":{"f:team":{}}}}`)
	cases := []struct {
		name    string
		managed []metav1.ManagedFieldsEntry
		want    []metav1.ManagedFieldsEntry
	}{
		{"only ours", []metav1.ManagedFieldsEntry{ours}, nil},
		{"ours and another's labels", []metav1.ManagedFieldsEntry{ours, labels}, nil},
		{"scaled by kubectl", []metav1.ManagedFieldsEntry{ours, kubectlScale, labels},
			[]metav1.ManagedFieldsEntry{kubectlScale}},
		{"an HPA owning more than replicas", []metav1.ManagedFieldsEntry{hpaAndMore},
			[]metav1.ManagedFieldsEntry{entry("horizontal-pod-autoscaler", "", `{"f:spec":{"f:replicas":{}}}`)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dcd := builders.MakeComponent("llm-worker", "ns", builders.MakeService().Replicas(2)).Obj()
			dcd.ManagedFields = tc.managed
			before := replicasOwnedByOther(dcd, FieldOwner)
			out, err := trimForCache(dcd)
			if err != nil {
				t.Fatal(err)
			}
			trimmed := out.(*v1alpha1.DynamoComponentDeployment)
			if diff := cmp.Diff(tc.want, trimmed.ManagedFields); diff != "" {
				t.Errorf("managed fields kept (-want +got):\n%s", diff)
			}
			if after := replicasOwnedByOther(trimmed, FieldOwner); after != before {
				t.Errorf("replicas owned by another manager: %v before trimming, %v after", before, after)
			}
		})
	}
}

// Graphs lose kubectl's last-applied copy and managedFields, nothing else;
// pods keep metadata and status, which explain a stuck rollout, and lose
// their spec.
func TestTrimForCacheDropsWhatNothingReads(t *testing.T) {
	graph := builders.MakeGraph("llm", "ns").Service("Worker", builders.MakeService().GPUs(1)).
		Annotation(lastAppliedAnnotation, `{"big":"copy"}`).Annotation("team", "a").Obj()
	graph.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	want := graph.DeepCopy()
	want.ManagedFields = nil
	delete(want.Annotations, lastAppliedAnnotation)
	if _, err := trimForCache(graph); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, graph); diff != "" {
		t.Errorf("trimmed graph (-want +got):\n%s", diff)
	}

	pod := builders.MakePod("llm-worker-0", "ns").Labels(map[string]string{"a": "b"}).Unschedulable("0/4 nodes").Obj()
	pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}
	wantPod := pod.DeepCopy()
	wantPod.ManagedFields = nil
	wantPod.Spec = corev1.PodSpec{}
	if _, err := trimForCache(pod); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantPod, pod); diff != "" {
		t.Errorf("trimmed pod (-want +got):\n%s", diff)
	}
}

// A Deployment is cached with its pod template packed, a Service with its
// spec, and a copy read through getOptional has it back whole, without the
// packing annotation.
func TestCachedChildrenKeepTheirLargeFieldsPacked(t *testing.T) {
	graph := builders.MakeGraph("llm", "ns").Service("Worker", builders.MakeService().GPUs(1)).Obj()
	comps, err := render.Components(graph)
	if err != nil {
		t.Fatal(err)
	}
	deploy, err := render.Deployment(comps[0], nil, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	deploy.Annotations = map[string]string{"team": "a"}
	want := deploy.DeepCopy()

	out, err := trimForCache(deploy)
	if err != nil {
		t.Fatal(err)
	}
	cached := out.(*appsv1.Deployment)
	if diff := cmp.Diff(corev1.PodTemplateSpec{}, cached.Spec.Template); diff != "" {
		t.Errorf("the cached copy still holds its template (-want +got):\n%s", diff)
	}
	if len(cached.Annotations[packedAnnotation]) == 0 {
		t.Fatalf("the cached copy has no packed template: %v", cached.Annotations)
	}
	// The key is not one the API server accepts, so a cached copy written
	// back by mistake is refused.
	if errs := validation.IsQualifiedName(packedAnnotation); len(errs) == 0 {
		t.Errorf("%q is a valid annotation key", packedAnnotation)
	}

	// The informer may transform what it holds again: nothing changes.
	again, err := trimForCache(cached.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(cached, again); diff != "" {
		t.Errorf("transforming a cached copy again changed it (-once +twice):\n%s", diff)
	}

	read := cached.DeepCopy()
	if err := unpack(read); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, read); diff != "" {
		t.Errorf("unpacked Deployment (-want +got):\n%s", diff)
	}
	// A Service's spec is packed the same way.
	svc := render.Service(comps[0])
	wantSvc := svc.DeepCopy()
	if _, err := trimForCache(svc); err != nil {
		t.Fatal(err)
	}
	if len(svc.Spec.Ports) != 0 || svc.Annotations[packedAnnotation] == "" {
		t.Errorf("the cached Service still holds its spec: %+v", svc.Spec)
	}
	if err := unpack(svc); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantSvc, svc); diff != "" {
		t.Errorf("unpacked Service (-want +got):\n%s", diff)
	}

	// An object read from the API server is left as it is.
	direct := want.DeepCopy()
	if err := unpack(direct); err != nil || !cmp.Equal(want, direct) {
		t.Errorf("unpacking an object that was never packed changed it: %v\n%s", err, cmp.Diff(want, direct))
	}
}

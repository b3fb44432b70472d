package controllers

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
// pods keep their metadata and what explains a stuck rollout or locates a
// model's endpoint, and lose the rest of their spec and status.
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

	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
	}{
		{"unschedulable", builders.MakePod("llm-worker-0", "ns").Labels(map[string]string{"a": "b"}).Unschedulable("0/4 nodes").Obj()},
		{"crash-looping", builders.MakePod("llm-worker-1", "ns").CrashLooping(3, 137).Obj()},
		{"ready", builders.MakePod("llm-worker-2", "ns").Ready().Obj()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := tc.pod
			pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}
			// What the kubelet reports besides, and nothing reads.
			pod.Status.HostIP, pod.Status.PodIP, pod.Status.Phase = "10.0.0.1", "10.1.0.7", corev1.PodRunning
			pod.Status.PodIPs = []corev1.PodIP{{IP: "10.1.0.7"}}
			pod.Status.StartTime = &metav1.Time{}
			pod.Status.QOSClass = corev1.PodQOSBurstable
			pod.Spec.Containers = []corev1.Container{
				{Name: "main", Image: "worker:1", Ports: []corev1.ContainerPort{
					{Name: "http", ContainerPort: 8000}, {Name: render.SystemPortName, ContainerPort: 9345}}},
				{Name: "sidecar", Image: "proxy:1"},
			}
			for i := range pod.Status.ContainerStatuses {
				cs := &pod.Status.ContainerStatuses[i]
				cs.Image, cs.ImageID, cs.ContainerID = "worker:1", "sha256:abc", "containerd://abc"
			}
			wantPod := pod.DeepCopy()
			wantPod.ManagedFields = nil
			wantPod.Spec = corev1.PodSpec{Containers: []corev1.Container{
				{Name: "main", Ports: []corev1.ContainerPort{{Name: render.SystemPortName, ContainerPort: 9345}}}}}
			wantPod.Status.HostIP, wantPod.Status.PodIPs, wantPod.Status.StartTime, wantPod.Status.QOSClass = "", nil, nil, ""
			for i := range wantPod.Status.ContainerStatuses {
				cs := &wantPod.Status.ContainerStatuses[i]
				cs.Image, cs.ImageID, cs.ContainerID = "", "", ""
			}
			// What stuck.go and the model controller read of it.
			before, _, _ := crashLooping(pod)
			address := systemAddress(pod)
			if _, err := trimForCache(pod); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantPod, pod); diff != "" {
				t.Errorf("trimmed pod (-want +got):\n%s", diff)
			}
			if after, _, _ := crashLooping(pod); after != before {
				t.Errorf("crash loop seen before trimming: %q, after: %q", before, after)
			}
			if got := systemAddress(pod); got != address || got != "http://10.1.0.7:9345" {
				t.Errorf("system address %q after trimming, %q before, want http://10.1.0.7:9345", got, address)
			}
		})
	}
}

// A Deployment is cached with its pod template packed, a Service with its
// spec, and an unpacked copy has it back whole, without the packing
// annotation.
func TestCachedChildrenKeepTheirLargeFieldsPacked(t *testing.T) {
	_, comp, deploy := renderedWorker(t)
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
	svc := render.Service(comp)
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

// The controllers' client unpacks what it reads, one object or a list, and
// leaves an object that was never packed (our kinds, one read from the API
// server) as it is.
func TestUnpackingClientReadsWholeObjects(t *testing.T) {
	graph, comp, deploy := renderedWorker(t)
	plain := render.Service(comp) // as read from the API server: never packed
	want := []client.Object{graph.DeepCopy(), comp.DeepCopy(), deploy.DeepCopy(), plain.DeepCopy()}
	var stored []client.Object
	for _, obj := range []client.Object{graph, comp, deploy} {
		out, err := trimForCache(obj)
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, out.(client.Object))
	}
	stored = append(stored, plain)
	c := unpackingClient{cacheLike{objs: stored}}
	ctx := context.Background()
	for i, w := range want {
		got := w.DeepCopyObject().(client.Object)
		if err := c.Get(ctx, client.ObjectKeyFromObject(w), got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(w, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("object %d read through the client (-want +got):\n%s", i, diff)
		}
	}
	var list appsv1.DeploymentList
	if err := c.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("listed %d Deployments, want 1", len(list.Items))
	}
	if diff := cmp.Diff(want[2], &list.Items[0], cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("listed Deployment (-want +got):\n%s", diff)
	}
}

// cacheLike hands out deep copies of what it holds, as the cache's reader
// does: the real cache cannot be filled with packed objects through an API
// server (the packed key is refused), and a fake client's JSON round trip
// would mangle the packed protobuf bytes the cache keeps as they are.
type cacheLike struct {
	client.Client // nil: only Get and List are called
	objs          []client.Object
}

func (c cacheLike) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	for _, o := range c.objs {
		if client.ObjectKeyFromObject(o) == key && reflect.TypeOf(o) == reflect.TypeOf(obj) {
			reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(o.DeepCopyObject()).Elem())
			return nil
		}
	}
	return apierrors.NewNotFound(schema.GroupResource{}, key.Name)
}

func (c cacheLike) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	l, ok := list.(*appsv1.DeploymentList)
	if !ok {
		return fmt.Errorf("cacheLike lists only Deployments, not %T", list)
	}
	for _, o := range c.objs {
		if d, ok := o.(*appsv1.Deployment); ok {
			l.Items = append(l.Items, *d.DeepCopy())
		}
	}
	return nil
}

// renderedWorker is graph "llm" of one one-GPU worker, its component and
// the component's Deployment, as the operator renders them.
func renderedWorker(t *testing.T) (*v1alpha1.DynamoGraphDeployment, *v1alpha1.DynamoComponentDeployment, *appsv1.Deployment) {
	t.Helper()
	graph := builders.MakeGraph("llm", "ns").Service("Worker", builders.MakeService().GPUs(1)).Obj()
	comps, err := render.Components(graph)
	if err != nil {
		t.Fatal(err)
	}
	deploy, err := render.Deployment(comps[0], nil, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return graph, comps[0], deploy
}

package controllers

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"

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
	cases := map[string]struct {
		managed []metav1.ManagedFieldsEntry
		want    []metav1.ManagedFieldsEntry
	}{
		"only ours":                 {[]metav1.ManagedFieldsEntry{ours}, nil},
		"ours and another's labels": {[]metav1.ManagedFieldsEntry{ours, labels}, nil},
		"scaled by kubectl": {[]metav1.ManagedFieldsEntry{ours, kubectlScale, labels},
			[]metav1.ManagedFieldsEntry{kubectlScale}},
		"an HPA owning more than replicas": {[]metav1.ManagedFieldsEntry{hpaAndMore},
			[]metav1.ManagedFieldsEntry{entry("horizontal-pod-autoscaler", "", `{"f:spec":{"f:replicas":{}}}`)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
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

	for name, tc := range map[string]struct {
		pod *corev1.Pod
	}{
		"unschedulable": {builders.MakePod("llm-worker-0", "ns").Labels(map[string]string{"a": "b"}).Unschedulable("0/4 nodes").Obj()},
		"crash-looping": {builders.MakePod("llm-worker-1", "ns").CrashLooping(3, 137).Obj()},
		"ready":         {builders.MakePod("llm-worker-2", "ns").Ready().Obj()},
	} {
		t.Run(name, func(t *testing.T) {
			pod := tc.pod
			pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}
			// What the ReplicaSet controller and the API server set, and
			// nothing reads: pods are found by their labels.
			pod.GenerateName = "llm-worker-"
			pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "llm-worker-5d8f", UID: "rs-uid"}}
			pod.Annotations = map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-11-26T10:00:00Z"}
			pod.Finalizers = []string{"example.com/keep"}
			// The kubelet's other conditions and every condition's times.
			at := metav1.Now()
			for i := range pod.Status.Conditions {
				pod.Status.Conditions[i].LastTransitionTime, pod.Status.Conditions[i].LastProbeTime = at, at
			}
			pod.Status.Conditions = append(pod.Status.Conditions,
				corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: at},
				corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady",
					Message: "containers with unready status: [main]", LastTransitionTime: at})
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
			// Of a running container, only when it started is read.
			for i := range pod.Status.ContainerStatuses {
				if cs := &pod.Status.ContainerStatuses[i]; cs.State.Waiting == nil {
					cs.State.Running = &corev1.ContainerStateRunning{StartedAt: at}
					wantPod.Status.ContainerStatuses[i].State.Running = &corev1.ContainerStateRunning{StartedAt: at}
				}
			}
			wantPod.ManagedFields = nil
			wantPod.GenerateName, wantPod.OwnerReferences, wantPod.Annotations, wantPod.Finalizers = "", nil, nil, nil
			wantPod.Status.Conditions = nil
			for _, c := range pod.Status.Conditions {
				switch {
				case c.Type == corev1.PodReady:
					wantPod.Status.Conditions = append(wantPod.Status.Conditions, corev1.PodCondition{Type: c.Type, Status: c.Status})
				case c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse:
					wantPod.Status.Conditions = append(wantPod.Status.Conditions,
						corev1.PodCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message})
				}
			}
			wantPod.Spec = corev1.PodSpec{Containers: []corev1.Container{
				{Name: "main", Ports: []corev1.ContainerPort{{Name: render.SystemPortName, ContainerPort: 9345}}}}}
			wantPod.Status.HostIP, wantPod.Status.PodIPs, wantPod.Status.StartTime, wantPod.Status.QOSClass = "", nil, nil, ""
			for i := range wantPod.Status.ContainerStatuses {
				cs := &wantPod.Status.ContainerStatuses[i]
				cs.Image, cs.ImageID, cs.ContainerID = "", "", ""
			}
			// What stuck.go and the model controller read of it.
			before, _, _ := crashLooping(pod)
			_, verdict, _ := unschedulable(pod)
			ready := podReady(pod)
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
			if _, after, _ := unschedulable(pod); after != verdict {
				t.Errorf("scheduler's verdict before trimming: %q, after: %q", verdict, after)
			}
			if after := podReady(pod); after != ready {
				t.Errorf("pod ready before trimming: %v, after: %v", ready, after)
			}
			if got := systemAddress(pod); got != address || got != "http://10.1.0.7:9345" {
				t.Errorf("system address %q after trimming, %q before, want http://10.1.0.7:9345", got, address)
			}
		})
	}
}

// A Deployment is cached with its spec packed, a Service with its
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
	if diff := cmp.Diff(appsv1.DeploymentSpec{}, cached.Spec); diff != "" {
		t.Errorf("the cached copy still holds its spec (-want +got):\n%s", diff)
	}
	if len(cached.Annotations[packedAnnotation]) == 0 {
		t.Fatalf("the cached copy has no packed spec: %v", cached.Annotations)
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
func renderedWorker(t testing.TB) (*v1alpha1.DynamoGraphDeployment, *v1alpha1.DynamoComponentDeployment, *appsv1.Deployment) {
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

// A Deployment keeps of its conditions those that explain a stuck rollout,
// so rolloutBlocker says the same before and after trimming, and drops a
// healthy one's Available and Progressing.
func TestTrimForCacheKeepsWhatExplainsARollout(t *testing.T) {
	at := metav1.Now()
	available := appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue,
		Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability."}
	progressed := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue,
		Reason: "NewReplicaSetAvailable", Message: `ReplicaSet "llm-worker-5d8f" has successfully progressed.`}
	const quota = `pods "x" is forbidden: exceeded quota`
	for name, tc := range map[string]struct {
		conditions []appsv1.DeploymentCondition
		want       []appsv1.DeploymentCondition
	}{
		"healthy": {[]appsv1.DeploymentCondition{available, progressed}, nil},
		"past its deadline": {builders.DeploymentConditions{available}.DeadlineExceeded("llm-worker-5d8f"),
			builders.DeploymentConditions{}.DeadlineExceeded("llm-worker-5d8f")},
		"cannot create pods": {builders.DeploymentConditions{available, progressed}.ReplicaFailure(quota),
			builders.DeploymentConditions{}.ReplicaFailure(quota)},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, deploy := renderedWorker(t)
			deploy.Status.Conditions = tc.conditions
			for i := range deploy.Status.Conditions {
				deploy.Status.Conditions[i].LastUpdateTime, deploy.Status.Conditions[i].LastTransitionTime = at, at
			}
			before := rolloutBlocker(deploy, nil)
			if (before != nil) != (tc.want != nil) {
				t.Fatalf("rollout blocker before trimming: %+v", before)
			}
			if _, err := trimForCache(deploy); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, deploy.Status.Conditions); diff != "" {
				t.Errorf("cached conditions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, rolloutBlocker(deploy, nil)); diff != "" {
				t.Errorf("rollout blocker before and after trimming (-before +after):\n%s", diff)
			}
		})
	}
}

// Two cached objects of one graph hold one copy of the strings they share
// (namespace, label keys and values, owner), and read the same as before.
func TestTrimForCacheSharesCommonStrings(t *testing.T) {
	_, _, first := renderedWorker(t)
	_, _, second := renderedWorker(t)
	// Decoded objects own their strings; the builders' share constants.
	for _, d := range []*appsv1.Deployment{first, second} {
		d.Namespace = strings.Clone(d.Namespace)
		labels := map[string]string{}
		for k, v := range d.Labels {
			labels[strings.Clone(k)] = strings.Clone(v)
		}
		d.Labels = labels
		d.OwnerReferences = []metav1.OwnerReference{{APIVersion: strings.Clone("nvidia.com/v1alpha1"),
			Kind: strings.Clone("DynamoComponentDeployment"), Name: strings.Clone(d.Name), UID: "c-uid"}}
	}
	want := first.DeepCopy()
	for _, d := range []*appsv1.Deployment{first, second} {
		if _, err := trimForCache(d); err != nil {
			t.Fatal(err)
		}
	}
	same := func(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }
	if !same(first.Namespace, second.Namespace) {
		t.Error("the namespace is held twice")
	}
	if len(first.Labels) == 0 {
		t.Fatal("a rendered Deployment without labels")
	}
	for k, v := range first.Labels {
		for k2, v2 := range second.Labels {
			if k == k2 && (!same(k, k2) || !same(v, v2)) {
				t.Errorf("label %s=%s is held twice", k, v)
			}
		}
	}
	o1, o2 := first.OwnerReferences[0], second.OwnerReferences[0]
	if !same(o1.APIVersion, o2.APIVersion) || !same(o1.Kind, o2.Kind) || !same(o1.Name, o2.Name) {
		t.Errorf("the owner is held twice: %+v", o1)
	}
	got := first.DeepCopy()
	if err := unpack(got); err != nil {
		t.Fatal(err)
	}
	want.Status.Conditions = nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the cached copy read back (-want +got):\n%s", diff)
	}
}

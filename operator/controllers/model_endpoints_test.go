package controllers

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

func servingPodObj(name, ip string, restarts int32) corev1.Pod {
	p := builders.MakePod(name, "ns").Ready().Obj()
	p.UID = types.UID("uid-" + name)
	p.Status.PodIP = ip
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", RestartCount: restarts}}
	p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "system", ContainerPort: 9090}}
	return *p
}

func TestServingPodsAreReadyPodsWithAnAddress(t *testing.T) {
	notReady := *builders.MakePod("c", "ns").Waiting("ContainerCreating", "").Obj()
	notReady.Status.PodIP = "10.0.0.3"
	noIP := *builders.MakePod("d", "ns").Ready().Obj()
	deleting := servingPodObj("e", "10.0.0.5", 0)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	got := servingPods([]corev1.Pod{servingPodObj("b", "10.0.0.2", 3), notReady, noIP, deleting, servingPodObj("a", "10.0.0.1", 0)})
	want := []servingPod{
		{Name: "a", Address: "http://10.0.0.1:9090", UID: "uid-a"},
		{Name: "b", Address: "http://10.0.0.2:9090", UID: "uid-b", Restarts: 3},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("servingPods (-want +got):\n%s", diff)
	}
}

func TestEndpointStateLoadsChecksAndBacksOff(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	want := loraSpec{Name: "org/a", URI: "s3://b/a"}
	interval := 30 * time.Second
	s := &endpointState{uid: "u"}
	s.observe(servingPod{UID: "u"})
	if !s.due(want, t0, interval) {
		t.Fatal("a new endpoint is not due at once")
	}
	s.failed(errors.New("POST /v1/loras answered 500"), t0)
	s.failed(errors.New("POST /v1/loras answered 500"), t0)
	if s.due(want, t0.Add(1999*time.Millisecond), interval) || !s.due(want, t0.Add(2*time.Second), interval) {
		t.Errorf("after two failures the retry is due at +2s; retryAt %v", s.retryAt.Sub(t0))
	}
	s.succeeded(want, t0)
	if s.lastErr != "" || s.failures != 0 {
		t.Errorf("a success keeps the failure: %+v", s)
	}
	if s.due(want, t0.Add(29*time.Second), interval) || !s.due(want, t0.Add(interval), interval) {
		t.Error("a loaded endpoint is due exactly at its check interval")
	}
	if !s.due(loraSpec{Name: "org/a", URI: "s3://b/a-v2"}, t0, interval) {
		t.Error("a changed source is due at once")
	}
	s.observe(servingPod{UID: "u", Restarts: 1})
	if s.loaded != nil || !s.due(want, t0, interval) {
		t.Error("a restarted worker is not known to have the adapter and is due at once")
	}
	s.succeeded(want, t0)
	s.observe(servingPod{UID: "other"})
	if s.loaded != nil {
		t.Error("a new pod under the same name is not known to have the adapter")
	}
}

func TestLoadBackoff(t *testing.T) {
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 4: 8 * time.Second, 7: time.Minute, 50: time.Minute} {
		if got := loadBackoff(n); got != want {
			t.Errorf("loadBackoff(%d) = %s, want %s", n, got, want)
		}
	}
}

func TestModelStatus(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	lora := builders.MakeModel("m", "ns", "org/a", "Qwen/Qwen3-0.6B").LoRA("s3://b/a").Generation(3).Obj()
	want := loraSpecOf(lora)
	pods := []servingPod{{Name: "p0", Address: "http://10.0.0.1:9090"}, {Name: "p1", Address: "http://10.0.0.2:9090"}}
	loaded := &endpointState{}
	loaded.succeeded(want, now.Time)
	failing := &endpointState{}
	failing.failed(errors.New("POST /v1/loras answered 500: no such bucket"), now.Time)

	st := modelStatus(lora, pods, map[string]*endpointState{"p0": loaded, "p1": failing}, now)
	wantEndpoints := []v1alpha1.ModelEndpoint{
		{Address: "http://10.0.0.1:9090", PodName: "p0", Ready: true},
		{Address: "http://10.0.0.2:9090", PodName: "p1", Ready: false},
	}
	if diff := cmp.Diff(wantEndpoints, st.Endpoints); diff != "" {
		t.Errorf("endpoints (-want +got):\n%s", diff)
	}
	if st.ReadyEndpoints != 1 || st.TotalEndpoints != 2 || st.ObservedGeneration != 3 {
		t.Errorf("counts %d/%d, observedGeneration %d", st.ReadyEndpoints, st.TotalEndpoints, st.ObservedGeneration)
	}
	c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
	wantMsg := "adapter org/a loaded on 1 of 2 endpoints; failing, retried with backoff: p1 (http://10.0.0.2:9090): POST /v1/loras answered 500: no such bucket"
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonModelLoadFailed || c.Message != wantMsg || c.ObservedGeneration != 3 {
		t.Errorf("Ready condition %+v", c)
	}

	// The same failure again changes nothing, not even the transition time.
	lora.Status = st
	later := metav1.NewTime(now.Add(time.Minute))
	again := modelStatus(lora, pods, map[string]*endpointState{"p0": loaded, "p1": failing}, later)
	if diff := cmp.Diff(st, again); diff != "" {
		t.Errorf("a retry with the same failure changed the status (-before +after):\n%s", diff)
	}

	failing.succeeded(want, later.Time)
	lora.Status = again
	done := modelStatus(lora, pods, map[string]*endpointState{"p0": loaded, "p1": failing}, later)
	c = meta.FindStatusCondition(done.Conditions, v1alpha1.ConditionReady)
	if c.Status != metav1.ConditionTrue || c.Reason != ReasonModelLoaded || !c.LastTransitionTime.Equal(&later) {
		t.Errorf("all loaded: %+v", c)
	}

	base := lora.DeepCopy()
	base.Spec.ModelType, base.Status = v1alpha1.ModelTypeBase, v1alpha1.DynamoModelStatus{}
	st = modelStatus(base, pods, nil, now)
	if st.ReadyEndpoints != 2 || meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady).Reason != ReasonModelServing {
		t.Errorf("base model: %+v", st)
	}
	st = modelStatus(base, nil, nil, now)
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); c.Reason != ReasonModelNoEndpoints || st.TotalEndpoints != 0 {
		t.Errorf("no endpoints: %+v", c)
	}
}

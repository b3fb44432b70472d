package controllers

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// Reasons of a DynamoModel's Ready condition.
const (
	ReasonModelLoaded      = "Loaded"
	ReasonModelLoading     = "Loading"
	ReasonModelLoadFailed  = "LoadFailed"
	ReasonModelNoEndpoints = "NoEndpoints"
	ReasonModelServing     = "EndpointsDiscovered"
)

// servingPod is a pod that serves a model's base model and can take calls:
// Ready, with an address, not being deleted. Only these are endpoints, as
// only these are in the EndpointSlices of the headless model Service.
type servingPod struct {
	Name, Address string
	UID           types.UID
	// Restarts sums the containers' restart counts: a restarted worker
	// process has forgotten the adapters it had.
	Restarts int32
}

// servingPods picks the endpoints among the pods labelled with the base
// model's hash, sorted by name.
func servingPods(pods []corev1.Pod) []servingPod {
	var out []servingPod
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil || p.Status.PodIP == "" || !podReady(p) {
			continue
		}
		var restarts int32
		for _, cs := range p.Status.ContainerStatuses {
			restarts += cs.RestartCount
		}
		out = append(out, servingPod{Name: p.Name, UID: p.UID, Address: systemAddress(p), Restarts: restarts})
	}
	slices.SortFunc(out, func(a, b servingPod) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// systemAddress is the base URL of the runtime's system server in pod: the
// container port named "system" (the render names it so) or 9090.
func systemAddress(p *corev1.Pod) string {
	port := int32(render.SystemPort)
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.Name == render.SystemPortName {
				port = cp.ContainerPort
			}
		}
	}
	return "http://" + net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(port)))
}

// loraSpec identifies what an endpoint must have loaded; a change of either
// field means loading again.
type loraSpec struct{ Name, URI string }

func loraSpecOf(m *v1alpha1.DynamoModel) loraSpec {
	s := loraSpec{Name: m.Spec.ModelName}
	if m.Spec.Source != nil {
		s.URI = m.Spec.Source.URI
	}
	return s
}

// endpointState is what the controller knows of one endpoint of a lora
// model. It lives in memory: after an operator restart every endpoint is
// checked once (GET) before anything is loaded again.
type endpointState struct {
	uid      types.UID
	restarts int32
	// loaded is the spec confirmed on the endpoint (by a load or a check);
	// nil when not known to be loaded.
	loaded    *loraSpec
	checkedAt time.Time
	failures  int
	retryAt   time.Time
	// lastErr is the last failure, stable across retries of the same
	// failure so the status does not change with each attempt.
	lastErr string
}

// observe brings the state in line with the pod: a new pod (another UID)
// or a restarted one has nothing loaded and is checked at once.
func (s *endpointState) observe(p servingPod) {
	if s.uid != p.UID || s.restarts != p.Restarts {
		*s = endpointState{uid: p.UID, restarts: p.Restarts}
	}
}

// due reports whether the endpoint needs a call now: it is not known to
// have want (and its backoff has passed), or its last check is interval old.
func (s *endpointState) due(want loraSpec, now time.Time, interval time.Duration) bool {
	if s.loaded == nil || *s.loaded != want {
		return !now.Before(s.retryAt)
	}
	return !now.Before(s.checkedAt.Add(interval))
}

// next is when the endpoint next needs a call.
func (s *endpointState) next(want loraSpec, interval time.Duration) time.Time {
	if s.loaded == nil || *s.loaded != want {
		return s.retryAt
	}
	return s.checkedAt.Add(interval)
}

// succeeded records want as loaded at now.
func (s *endpointState) succeeded(want loraSpec, now time.Time) {
	s.loaded, s.checkedAt, s.failures, s.retryAt, s.lastErr = &want, now, 0, time.Time{}, ""
}

// failed records a failed call and schedules the next attempt with
// exponential backoff.
func (s *endpointState) failed(err error, now time.Time) {
	s.loaded = nil
	s.failures++
	s.retryAt = now.Add(loadBackoff(s.failures))
	s.lastErr = err.Error()
}

// loadBackoff is the wait after the n-th consecutive failure of an
// endpoint: 1 s, doubling, at most a minute. Per endpoint, so one broken
// worker slows nobody else.
func loadBackoff(n int) time.Duration {
	const first, most = time.Second, time.Minute
	d := first
	for i := 1; i < n && d < most; i++ {
		d *= 2
	}
	return min(d, most)
}

// modelStatus is the status of a model whose endpoints are pods: for a lora
// model an endpoint is ready when the adapter is loaded there (states by
// pod name); for base and adapter models when the pod is. ready pods only
// count as endpoints.
func modelStatus(m *v1alpha1.DynamoModel, pods []servingPod, states map[string]*endpointState, now metav1.Time) v1alpha1.DynamoModelStatus {
	st := *m.Status.DeepCopy()
	st.ObservedGeneration = m.Generation
	st.Endpoints = nil
	lora := m.Spec.ModelType == v1alpha1.ModelTypeLoRA
	want := loraSpecOf(m)
	var failing []string
	for _, p := range pods {
		ready := true
		if lora {
			s := states[p.Name]
			ready = s != nil && s.loaded != nil && *s.loaded == want
			if s != nil && s.lastErr != "" {
				failing = append(failing, fmt.Sprintf("%s (%s): %s", p.Name, p.Address, s.lastErr))
			}
		}
		st.Endpoints = append(st.Endpoints, v1alpha1.ModelEndpoint{Address: p.Address, PodName: p.Name, Ready: ready})
	}
	st.ReadyEndpoints = 0
	for _, e := range st.Endpoints {
		if e.Ready {
			st.ReadyEndpoints++
		}
	}
	st.TotalEndpoints = int32(len(st.Endpoints))

	cond := metav1.Condition{Type: v1alpha1.ConditionReady, ObservedGeneration: m.Generation, LastTransitionTime: now}
	total, ready := st.TotalEndpoints, st.ReadyEndpoints
	switch {
	case total == 0:
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonModelNoEndpoints
		cond.Message = fmt.Sprintf("no Ready pod serves the base model %s: a service with modelRef.name %q in namespace %s has none",
			m.Spec.BaseModelName, m.Spec.BaseModelName, m.Namespace)
	case !lora:
		cond.Status, cond.Reason = metav1.ConditionTrue, ReasonModelServing
		cond.Message = fmt.Sprintf("%d endpoints serve the base model %s", total, m.Spec.BaseModelName)
	case len(failing) > 0:
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonModelLoadFailed
		cond.Message = fmt.Sprintf("adapter %s loaded on %d of %d endpoints; failing, retried with backoff: %s",
			want.Name, ready, total, strings.Join(failing, "; "))
	case ready < total:
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonModelLoading
		cond.Message = fmt.Sprintf("adapter %s loaded on %d of %d endpoints", want.Name, ready, total)
	default:
		cond.Status, cond.Reason = metav1.ConditionTrue, ReasonModelLoaded
		cond.Message = fmt.Sprintf("adapter %s loaded on all %d endpoints", want.Name, total)
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	return st
}

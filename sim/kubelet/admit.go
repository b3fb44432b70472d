package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/dynamoctl/dynamo-operator/sim/nodes"
	"github.com/dynamoctl/dynamo-operator/sim/workers"
)

// Admitter does, for the pods of Dynamo components, what a kubelet does
// between a pod's binding and its containers' start, and reports a failure
// the way a kubelet does, in the pod's status: it mounts the volumes (a
// Secret or ConfigMap volume that does not exist keeps the pod Pending in
// ContainerCreating, with a FailedMount event), pulls each container's
// image (an image the image-pull-failure fault marks keeps the container
// waiting in ErrImagePull, then ImagePullBackOff) and builds each
// container's env (a missing Secret, ConfigMap or key: waiting in
// CreateContainerConfigError with the kubelet's message). Every check is
// retried (RetryInterval), as the kubelet retries; once all pass, the pod
// gets nodes.AdmittedAnnotation and KWOK's pod-ready stage starts it.
type Admitter struct {
	Client kubernetes.Interface
	Clock  clock.Clock
	Log    func(format string, args ...any)
	// RetryInterval is how often a held pod is checked again; 2 s if 0.
	RetryInterval time.Duration

	mu sync.Mutex
	// failing are the images whose pull fails, by reference as written.
	failing map[string]bool
	// pulls counts failed pulls per pod: the first reports ErrImagePull,
	// the next ones ImagePullBackOff, as the kubelet's back-off does.
	pulls map[types.UID]int
	// mountEvents: pods a FailedMount event was recorded for.
	mountEvents map[types.UID]bool

	queue workqueue.TypedRateLimitingInterface[string]
	pods  listerscorev1.PodLister
}

// SetImagePullFailure makes pulls of image fail (fail true) or succeed.
func (a *Admitter) SetImagePullFailure(image string, fail bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.failing == nil {
		a.failing = map[string]bool{}
	}
	if fail {
		a.failing[image] = true
	} else {
		delete(a.failing, image)
	}
}

func (a *Admitter) pullFails(image string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.failing[image]
}

// Run watches the pods of Dynamo components until ctx ends.
func (a *Admitter) Run(ctx context.Context) error {
	if a.Clock == nil {
		a.Clock = clock.RealClock{}
	}
	if a.Log == nil {
		a.Log = func(string, ...any) {}
	}
	if a.RetryInterval == 0 {
		a.RetryInterval = 2 * time.Second
	}
	a.mu.Lock()
	a.pulls, a.mountEvents = map[types.UID]int{}, map[types.UID]bool{}
	a.mu.Unlock()
	factory := informers.NewSharedInformerFactoryWithOptions(a.Client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = workers.ComponentLabel
	}))
	inf := factory.Core().V1().Pods()
	a.pods = inf.Lister()
	a.queue = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	enqueue := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok && waitsForAdmission(p) {
			a.queue.Add(p.Namespace + "/" + p.Name)
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	go func() {
		<-ctx.Done()
		a.queue.ShutDown()
		factory.Shutdown()
	}()
	go func() {
		for a.next(ctx) {
		}
	}()
	return nil
}

// waitsForAdmission: bound, not yet admitted, not going away.
func waitsForAdmission(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" && p.DeletionTimestamp == nil && p.Annotations[nodes.AdmittedAnnotation] == "" &&
		p.Status.Phase == corev1.PodPending
}

func (a *Admitter) next(ctx context.Context) bool {
	key, quit := a.queue.Get()
	if quit {
		return false
	}
	defer a.queue.Done(key)
	ns, name, _ := strings.Cut(key, "/")
	pod, err := a.pods.Pods(ns).Get(name)
	if err != nil || !waitsForAdmission(pod) {
		a.queue.Forget(key)
		return true
	}
	held, err := a.admit(ctx, pod)
	switch {
	case err != nil && ctx.Err() == nil:
		a.Log("kubelet: admitting %s: %v", key, err)
		a.queue.AddRateLimited(key)
	case held:
		a.queue.Forget(key)
		a.queue.AddAfter(key, a.RetryInterval)
	default:
		a.queue.Forget(key)
	}
	return true
}

// admit checks pod as the kubelet would before starting its containers;
// held is true when a check failed and the pod's status now says why.
func (a *Admitter) admit(ctx context.Context, pod *corev1.Pod) (held bool, err error) {
	if vol, msg, err := a.missingVolume(ctx, pod); err != nil {
		return false, err
	} else if msg != "" {
		a.mountEvent(ctx, pod, vol, msg)
		return true, a.hold(ctx, pod, func(*corev1.Container) *corev1.ContainerStateWaiting {
			return &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
		})
	}
	waiting := map[string]*corev1.ContainerStateWaiting{}
	pulls := a.countPull(pod, false)
	for _, c := range pod.Spec.Containers {
		if a.pullFails(c.Image) {
			if pulls == 0 {
				waiting[c.Name] = &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: fmt.Sprintf(
					"failed to pull and unpack image %q: failed to resolve reference %q: %s: not found", c.Image, c.Image, c.Image)}
			} else {
				waiting[c.Name] = &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: fmt.Sprintf("Back-off pulling image %q", c.Image)}
			}
			continue
		}
		msg, err := a.configError(ctx, pod, &c)
		if err != nil {
			return false, err
		}
		if msg != "" {
			waiting[c.Name] = &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: msg}
		}
	}
	if len(waiting) > 0 {
		for _, w := range waiting {
			if w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff" {
				a.countPull(pod, true)
				break
			}
		}
		return true, a.hold(ctx, pod, func(c *corev1.Container) *corev1.ContainerStateWaiting {
			if w := waiting[c.Name]; w != nil {
				return w
			}
			return &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
		})
	}
	a.forget(pod)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, nodes.AdmittedAnnotation)
	_, err = a.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return false, err
}

func (a *Admitter) countPull(pod *corev1.Pod, inc bool) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.pulls[pod.UID]
	if inc {
		a.pulls[pod.UID] = n + 1
	}
	return n
}

func (a *Admitter) forget(pod *corev1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.pulls, pod.UID)
	delete(a.mountEvents, pod.UID)
}

// missingVolume names the first Secret or ConfigMap volume whose source
// does not exist (and is not optional), with the kubelet's FailedMount
// message.
func (a *Admitter) missingVolume(ctx context.Context, pod *corev1.Pod) (volume, message string, err error) {
	for _, v := range pod.Spec.Volumes {
		var kind, name string
		switch {
		case v.Secret != nil && !isTrue(v.Secret.Optional):
			kind, name = "secret", v.Secret.SecretName
			_, err = a.Client.CoreV1().Secrets(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
		case v.ConfigMap != nil && !isTrue(v.ConfigMap.Optional):
			kind, name = "configmap", v.ConfigMap.Name
			_, err = a.Client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
		default:
			continue
		}
		if apierrors.IsNotFound(err) {
			return v.Name, fmt.Sprintf("MountVolume.SetUp failed for volume %q : %s %q not found", v.Name, kind, name), nil
		}
		if err != nil {
			return "", "", err
		}
	}
	return "", "", nil
}

// mountEvent records the kubelet's FailedMount event, once per pod.
func (a *Admitter) mountEvent(ctx context.Context, pod *corev1.Pod, volume, msg string) {
	a.mu.Lock()
	done := a.mountEvents[pod.UID]
	a.mountEvents[pod.UID] = true
	a.mu.Unlock()
	if done {
		return
	}
	now := metav1.NewTime(a.Clock.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: pod.Name + ".", Namespace: pod.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name,
			UID: pod.UID, ResourceVersion: pod.ResourceVersion},
		Reason: "FailedMount", Message: msg, Type: corev1.EventTypeWarning, Count: 1,
		FirstTimestamp: now, LastTimestamp: now,
		Source: corev1.EventSource{Component: "kubelet", Host: pod.Spec.NodeName},
	}
	if _, err := a.Client.CoreV1().Events(pod.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		a.Log("kubelet: FailedMount event of %s/%s (volume %s): %v", pod.Namespace, pod.Name, volume, err)
	}
}

// configError is the kubelet's error building container c's env from
// Secrets and ConfigMaps that do not exist (or lack the key), "" if none.
func (a *Admitter) configError(ctx context.Context, pod *corev1.Pod, c *corev1.Container) (string, error) {
	for _, r := range envSourceRefs(c) {
		if isTrue(r.optional) {
			continue
		}
		keys, missing, err := a.sourceKeys(ctx, pod.Namespace, r)
		if missing != "" || err != nil {
			return missing, err
		}
		if r.key != "" && !slices.Contains(keys, r.key) {
			kind := map[string]string{"secret": "Secret", "configmap": "ConfigMap"}[r.kind]
			return fmt.Sprintf("couldn't find key %s in %s %s/%s", r.key, kind, pod.Namespace, r.name), nil
		}
	}
	return "", nil
}

// envSourceRef is a Secret or ConfigMap a container's environment reads,
// whole (no key) or one key of it.
type envSourceRef struct {
	kind, name, key string
	optional        *bool
}

// envSourceRefs lists the Secrets and ConfigMaps c's envFrom and env read.
func envSourceRefs(c *corev1.Container) []envSourceRef {
	var refs []envSourceRef
	for _, from := range c.EnvFrom {
		switch {
		case from.SecretRef != nil:
			refs = append(refs, envSourceRef{"secret", from.SecretRef.Name, "", from.SecretRef.Optional})
		case from.ConfigMapRef != nil:
			refs = append(refs, envSourceRef{"configmap", from.ConfigMapRef.Name, "", from.ConfigMapRef.Optional})
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
		case e.ValueFrom.SecretKeyRef != nil:
			r := e.ValueFrom.SecretKeyRef
			refs = append(refs, envSourceRef{"secret", r.Name, r.Key, r.Optional})
		case e.ValueFrom.ConfigMapKeyRef != nil:
			r := e.ValueFrom.ConfigMapKeyRef
			refs = append(refs, envSourceRef{"configmap", r.Name, r.Key, r.Optional})
		}
	}
	return refs
}

// sourceKeys reads the keys of r's Secret or ConfigMap in namespace; when
// it does not exist, missing says so as the kubelet does.
func (a *Admitter) sourceKeys(ctx context.Context, namespace string, r envSourceRef) (keys []string, missing string, err error) {
	if r.kind == "secret" {
		s, err := a.Client.CoreV1().Secrets(namespace).Get(ctx, r.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, fmt.Sprintf("secret %q not found", r.name), nil
		} else if err != nil {
			return nil, "", err
		}
		for k := range s.Data {
			keys = append(keys, k)
		}
		for k := range s.StringData {
			keys = append(keys, k)
		}
		return keys, "", nil
	}
	cm, err := a.Client.CoreV1().ConfigMaps(namespace).Get(ctx, r.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Sprintf("configmap %q not found", r.name), nil
	} else if err != nil {
		return nil, "", err
	}
	for k := range cm.Data {
		keys = append(keys, k)
	}
	return keys, "", nil
}

// hold writes the pod's status as a kubelet does for a pod whose
// containers cannot start: Pending, not ready, each container waiting as
// state says. Nothing is written when the status already says so.
func (a *Admitter) hold(ctx context.Context, pod *corev1.Pod, state func(*corev1.Container) *corev1.ContainerStateWaiting) error {
	current := map[string]*corev1.ContainerStateWaiting{}
	for _, cs := range pod.Status.ContainerStatuses {
		current[cs.Name] = cs.State.Waiting
	}
	same := len(current) == len(pod.Spec.Containers)
	var statuses []corev1.ContainerStatus
	var names []string
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		w := state(c)
		if cur := current[c.Name]; cur == nil || cur.Reason != w.Reason || cur.Message != w.Message {
			same = false
		}
		names = append(names, c.Name)
		statuses = append(statuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, Started: new(bool),
			State: corev1.ContainerState{Waiting: w},
		})
	}
	if same {
		return nil
	}
	now := metav1.NewTime(a.Clock.Now())
	unready := "containers with unready status: [" + strings.Join(names, " ") + "]"
	conds := []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: unready, LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: unready, LastTransitionTime: now},
	}
	for _, c := range pod.Status.Conditions {
		// Keep a condition's transition time when its status stays.
		for i := range conds {
			if conds[i].Type == c.Type && conds[i].Status == c.Status {
				conds[i].LastTransitionTime = c.LastTransitionTime
			}
		}
	}
	body, err := json.Marshal(map[string]any{"status": map[string]any{
		"phase": corev1.PodPending, "conditions": conds, "containerStatuses": statuses,
	}})
	if err != nil {
		return err
	}
	_, err = a.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

package controllers

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"maps"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// ReasonMissingAPI: the cluster lacks an API the component's workload
// needs (LeaderWorkerSet for a multinode service).
const ReasonMissingAPI = "MissingAPI"

// lwsInstall is what a user must do on a cluster without LeaderWorkerSet.
const lwsInstall = "install LeaderWorkerSet (https://lws.sigs.k8s.io/docs/installation/: " +
	"kubectl apply --server-side -f https://github.com/kubernetes-sigs/lws/releases/download/v0.9.0/manifests.yaml); " +
	"the component is picked up once its API is served, without restarting the operator"

// missingAPIRecheck is how often a component waiting for the
// LeaderWorkerSet API looks for it again. Discovery is not watchable, and
// one cached lookup per period per waiting component is cheap.
const missingAPIRecheck = 10 * time.Second

var lwsGroupKind = lwsv1.SchemeGroupVersion.WithKind("LeaderWorkerSet").GroupKind()

// lazyWatch starts the watch of a child kind whose API a cluster may lack
// (LeaderWorkerSets, gang PodGroups) the first time the API is found: a
// watch started at operator start on a cluster without the API would fail
// the whole manager, and the API may be installed at any time.
type lazyWatch struct {
	mu      sync.Mutex
	started bool
	ctrl    controller.Controller
	cache   cache.Cache
	// object is an empty object of the kind (unstructured with its kind
	// set for a kind the scheme lacks); owner one of its owner's kind.
	object, owner func() client.Object
}

// watchOnceServed is the watch of the owned kind gk, whose API a cluster may
// lack; one that watches nothing when the controller was not set up.
func (r *ComponentReconciler) watchOnceServed(gk schema.GroupKind) *lazyWatch {
	return onceServedWatch(r.onceServed, gk)
}

func (w *lazyWatch) ensure(c client.Client) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started || w.ctrl == nil {
		return nil
	}
	src := source.Kind(w.cache, w.object(),
		handler.EnqueueRequestForOwner(c.Scheme(), c.RESTMapper(), w.owner(), handler.OnlyControllerOwner()))
	if err := w.ctrl.Watch(src); err != nil {
		return err
	}
	w.started = true
	return nil
}

// multinodeState is what one reconcile of a multinode component learns,
// step by step.
type multinodeState struct {
	dcd       *v1alpha1.DynamoComponentDeployment
	graphPVCs []v1alpha1.GraphPVC
	// lws is the desired LeaderWorkerSet, live the stored one (nil when
	// there is none).
	lws, live *lwsv1.LeaderWorkerSet
	// gang is the GangScheduling condition; gangRecheck says the PodGroup
	// API is to be looked for again (applyPodGroups).
	gang        metav1.Condition
	gangRecheck bool
	// virtualService and virtualServiceRecheck: see componentState.
	virtualService        *metav1.Condition
	virtualServiceRecheck bool
	changes               changeSet
}

// reconcileMultinode is reconcile for a multinode component: its workload
// is a LeaderWorkerSet, whose status counts groups (a component of 2
// replicas of 4 nodes is 2 desired), and whose leaders are what its
// Services and its scale subresource's selector select.
func (r *ComponentReconciler) reconcileMultinode(ctx context.Context, dcd *v1alpha1.DynamoComponentDeployment, graphPVCs []v1alpha1.GraphPVC) (reconcile.Result, error) {
	return runSteps(ctx, &multinodeState{dcd: dcd, graphPVCs: graphPVCs},
		r.desiredLeaderWorkerSet,
		r.applyMultinodePrerequisites,
		r.applyMultinodeChildren,
		r.reportMultinodeStatus,
	)
}

// desiredLeaderWorkerSet renders the LeaderWorkerSet, once the cluster
// serves its API (a component waits for it otherwise), and reads the
// stored one.
func (r *ComponentReconciler) desiredLeaderWorkerSet(ctx context.Context, s *multinodeState) (reconcile.Result, bool, error) {
	lws, err := render.LeaderWorkerSet(s.dcd, s.graphPVCs, r.Render)
	if err != nil {
		return stop(reconcile.Result{}, r.fail(ctx, s.dcd, err))
	}
	if _, err := r.Client.RESTMapper().RESTMapping(lwsGroupKind, lwsv1.SchemeGroupVersion.Version); meta.IsNoMatchError(err) {
		return stop(reconcile.Result{RequeueAfter: missingAPIRecheck}, r.failWith(ctx, s.dcd, ReasonMissingAPI, fmt.Errorf(
			"spec.multinode: a multinode service runs as a LeaderWorkerSet, and this cluster serves no %s API: %s",
			lwsv1.SchemeGroupVersion, lwsInstall)))
	} else if err != nil {
		return stop(reconcile.Result{}, err)
	}
	if err := r.watchOnceServed(lwsGroupKind).ensure(r.Client); err != nil {
		return stop(reconcile.Result{}, err)
	}
	live, err := getOptional(ctx, r.Client, client.ObjectKeyFromObject(lws), &lwsv1.LeaderWorkerSet{})
	if err != nil {
		return stop(reconcile.Result{}, err)
	}
	stamp(lws, asObject(live), r.Renderer, workloadInput(s.dcd, s.graphPVCs), false)
	s.lws, s.live = lws, live
	return proceed()
}

// applyMultinodePrerequisites makes what the groups' pods need before they
// start exist: the SSH key pair of a TRT-LLM component, the discovery
// objects, the GPU memory service's claim template and the gang PodGroups.
func (r *ComponentReconciler) applyMultinodePrerequisites(ctx context.Context, s *multinodeState) (reconcile.Result, bool, error) {
	if render.NeedsMPISSHSecret(s.dcd) {
		if err := r.ensureSSHSecret(ctx, s.dcd, &s.changes); err != nil {
			return stop(reconcile.Result{}, err)
		}
	}
	if err := applyDiscovery(ctx, r.Client, r.Applier, s.dcd, render.ComponentDiscoveryRBAC(s.dcd), &s.changes); err != nil {
		return stop(reconcile.Result{}, err)
	}
	if err := r.applyGMSClaimTemplate(ctx, s.dcd, &s.changes); err != nil {
		return stop(reconcile.Result{}, err)
	}
	if err := r.applyEPPConfigMap(ctx, s.dcd, &s.changes); err != nil {
		return stop(reconcile.Result{}, err)
	}
	// The PodGroups go before the LeaderWorkerSet, so that its first pods
	// find theirs (the scheduler holds a pod whose PodGroup is missing).
	var err error
	if s.gang, s.gangRecheck, err = r.applyPodGroups(ctx, s.dcd, &s.changes); err != nil {
		return stop(reconcile.Result{}, err)
	}
	return proceed()
}

// applyMultinodeChildren applies the LeaderWorkerSet, the Services and the
// Ingress, and deletes the Deployment an earlier version rendered.
func (r *ComponentReconciler) applyMultinodeChildren(ctx context.Context, s *multinodeState) (reconcile.Result, bool, error) {
	dcd, changes := s.dcd, &s.changes
	if err := r.applyChildOver(ctx, dcd, s.lws, asObject(s.live), false, changes); err != nil {
		if isUserError(err) {
			return stop(reconcile.Result{}, r.fail(ctx, dcd, err))
		}
		return stop(reconcile.Result{}, err)
	}
	// A Deployment an earlier version rendered for this component (replicas
	// × nodeCount pods without a leader) would hold the same GPUs.
	if err := r.applyOrDelete(ctx, dcd, nil, dcd.Name, &appsv1.Deployment{}, changes); err != nil {
		return stop(reconcile.Result{}, err)
	}
	if err := r.applyChild(ctx, dcd, render.Service(dcd), &corev1.Service{}, changes); err != nil {
		return stop(reconcile.Result{}, err)
	}
	if err := r.applyOrDelete(ctx, dcd, render.ModelService(dcd), render.ModelServiceName(dcd.Name), &corev1.Service{}, changes); err != nil {
		return stop(reconcile.Result{}, err)
	}
	var err error
	if s.virtualService, s.virtualServiceRecheck, err = r.applyExposure(ctx, dcd, false, changes); err != nil {
		return stop(reconcile.Result{}, err)
	}
	changes.emit(r.Recorder, dcd)
	logChanges(ctx, dcd, *changes)
	return proceed()
}

// reportMultinodeStatus writes the component's status, read from its
// LeaderWorkerSet's as a Deployment's (lwsView).
func (r *ComponentReconciler) reportMultinodeStatus(ctx context.Context, s *multinodeState) (reconcile.Result, bool, error) {
	dcd := s.dcd
	view := lwsView(s.lws, dcd)
	// Blockers are looked for in every pod of the groups (a worker waiting
	// for GPUs holds its group back), not only in the leaders.
	all := view.DeepCopy()
	all.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{render.LabelComponent: dcd.Name}}
	why, _, _, err := r.explain(ctx, all)
	if err != nil {
		return stop(reconcile.Result{}, err)
	}
	if deploymentAvailability(all).Status != metav1.ConditionTrue {
		why = r.topologyBlocker(ctx, dcd, why)
	}
	now := metav1.NewTime(r.Clock.Now())
	wrote, err := patchStatus(ctx, r.Client, dcd, func(c *v1alpha1.DynamoComponentDeployment) {
		c.Status = componentStatus(c, view, why, now)
		c.Status.Service.ComponentKind = v1alpha1.ComponentKindLeaderWorkerSet
		setWorkloadPending(&c.Status, nil, c.Generation, now)
		meta.SetStatusCondition(&c.Status.Conditions, s.gang)
		setVirtualServiceCondition(&c.Status, s.virtualService)
	})
	res, err := afterComponentStatus(ctx, dcd, s.changes, wrote, err)
	if (s.gangRecheck || s.virtualServiceRecheck) && err == nil {
		// Discovery is not watchable: look for the PodGroup API again.
		res = soonest(res, gangAPIRecheck)
	}
	return stop(res, err)
}

// lwsView reads a LeaderWorkerSet's status as a Deployment's, one replica
// per group, so that a multinode component's status, conditions and scale
// subresource say what a single-node one's say, counted in instances: a
// group is ready (and available) when every pod of it is. The selector is
// the leaders': one pod per group, which an HPA counts and whose metrics
// it reads.
func lwsView(lws *lwsv1.LeaderWorkerSet, dcd *v1alpha1.DynamoComponentDeployment) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: lws.Name, Namespace: lws.Namespace, Generation: lws.Generation},
		Spec: appsv1.DeploymentSpec{
			Replicas: lws.Spec.Replicas,
			Selector: &metav1.LabelSelector{MatchLabels: render.MultinodeSelector(dcd)},
		},
		Status: appsv1.DeploymentStatus{
			ObservedGeneration: lws.Status.ObservedGeneration,
			Replicas:           lws.Status.Replicas,
			UpdatedReplicas:    lws.Status.UpdatedReplicas,
			ReadyReplicas:      lws.Status.ReadyReplicas,
			AvailableReplicas:  lws.Status.ReadyReplicas,
		},
	}
}

// ensureSSHSecret creates the key pair a TRT-LLM leader reaches its workers
// with, once: a key that changed under running groups would lock their
// leaders out. It is read from the API server (Secrets are not cached:
// the operator has no business holding a cluster's Secrets in memory).
func (r *ComponentReconciler) ensureSSHSecret(ctx context.Context, dcd *v1alpha1.DynamoComponentDeployment, changes *changeSet) error {
	name := render.MPISSHSecretName(dcd)
	err := r.Reader.Get(ctx, client.ObjectKey{Namespace: dcd.Namespace, Name: name}, &corev1.Secret{})
	if !apierrors.IsNotFound(err) {
		return err
	}
	private, public, err := sshKeyPair()
	if err != nil {
		return err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: dcd.Namespace, Labels: map[string]string{
			render.LabelComponent: dcd.Name, render.LabelManagedBy: render.ManagedByValue,
		}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{render.MPISSHSecretKeys[0]: private, render.MPISSHSecretKeys[1]: public},
	}
	if err := controllerutil.SetControllerReference(dcd, secret, r.Client.Scheme()); err != nil {
		return err
	}
	if err := r.Client.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	ctrl.LoggerFrom(ctx).V(1).Info("created the SSH key pair of a multinode TRT-LLM component",
		"secret", klog.KObj(secret))
	changes.created = append(changes.created, "Secret/"+name)
	return nil
}

// sshKeyPair is a new ed25519 key: the private key in OpenSSH's format and
// the public key as an authorized_keys line.
func sshKeyPair() (private, public []byte, err error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	block, err := ssh.MarshalPrivateKey(priv, "dynamo-operator")
	if err != nil {
		return nil, nil, err
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(block), ssh.MarshalAuthorizedKey(sshPub), nil
}

// ReasonLeaderWorkerSetAtNextChange: a multinode service still runs as the
// Deployment an earlier version rendered, until its spec changes.
const ReasonLeaderWorkerSetAtNextChange = "LeaderWorkerSetAtNextSpecChange"

// previousMultinodeDeployment returns the Deployment an earlier version of
// this operator rendered for a multinode service (before v0.3, replicas ×
// nodeCount pods without leader or ranks), when it is to be kept: the
// component controls it and its content was rendered (or adopted) for the
// current input by another renderer. The upgrade policy (adoption.go,
// render/doc.go) is that a rendering change reaches a workload at its
// service's next spec change, not at the upgrade: replacing it by a
// LeaderWorkerSet would restart every pod of the service. Once the input
// changes it is no longer kept, and reconcileMultinode creates the
// LeaderWorkerSet and deletes it. nil when there is none to keep.
func (r *ComponentReconciler) previousMultinodeDeployment(ctx context.Context, dcd *v1alpha1.DynamoComponentDeployment, input string) (*appsv1.Deployment, error) {
	live, err := lookup(ctx, r.Client, r.Reader, client.ObjectKey{Namespace: dcd.Namespace, Name: dcd.Name}, &appsv1.Deployment{})
	if err != nil || live == nil {
		return nil, err
	}
	if !metav1.IsControlledBy(live, dcd) || !keepContent(live, r.Renderer, input) {
		return nil, nil
	}
	return live, nil
}

// keptMultinodeDeployment is the desired state of a kept earlier multinode
// Deployment: its content as it is, with replicas × nodeCount pods as that
// rendering scaled it (scaling never waits for a spec change), and the
// condition saying what happens at the next spec change.
func keptMultinodeDeployment(dcd *v1alpha1.DynamoComponentDeployment, live *appsv1.Deployment, now time.Time) (*appsv1.Deployment, *metav1.Condition) {
	replicas := int32(1)
	if dcd.Spec.Replicas != nil {
		replicas = *dcd.Spec.Replicas
	}
	nodes := int32(1)
	if m := dcd.Spec.Multinode; m != nil {
		nodes = m.NodeCount
	}
	deploy := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: live.Name, Namespace: live.Namespace, Labels: maps.Clone(live.Labels)},
		Spec:       *live.Spec.DeepCopy(),
	}
	deploy.Spec.Replicas = ptr.To(replicas * nodes)
	renderer := live.Annotations[AnnotationRenderer]
	if renderer == "" {
		renderer = "an earlier version"
	}
	return deploy, &metav1.Condition{
		Type:               v1alpha1.ConditionWorkloadPending,
		Status:             metav1.ConditionTrue,
		Reason:             ReasonLeaderWorkerSetAtNextChange,
		ObservedGeneration: dcd.Generation,
		LastTransitionTime: metav1.NewTime(now),
		Message: fmt.Sprintf("runs as the Deployment %s that %s rendered (replicas × nodeCount pods, without leader or ranks; "+
			"status counts its pods), kept so that the upgrade restarts nothing; at the service's next spec change a "+
			"LeaderWorkerSet (one group of nodeCount pods per replica) replaces it and the Deployment is removed", live.Name, renderer),
	}
}

// ReasonWorkloadCurrent: the WorkloadPending condition is False, the
// component's workload runs what its spec sets (this version's rendering,
// or a kept one that lacks nothing).
const ReasonWorkloadCurrent = "WorkloadCurrent"

// setWorkloadPending sets the WorkloadPending condition: cond, or False
// for generation gen when cond is nil. It is set on every report, so that
// its absence from a status tells the graph that no report of this version
// covers the workload yet: the status is an earlier version's, as just
// after an upgrade (setIgnoredFieldsCondition). Its transition time stays
// while its status does.
func setWorkloadPending(st *v1alpha1.DynamoComponentDeploymentStatus, cond *metav1.Condition, gen int64, now metav1.Time) {
	if cond == nil {
		cond = &metav1.Condition{
			Type: v1alpha1.ConditionWorkloadPending, Status: metav1.ConditionFalse, Reason: ReasonWorkloadCurrent,
			Message: "the workload runs what the spec sets", ObservedGeneration: gen, LastTransitionTime: now,
		}
	}
	meta.SetStatusCondition(&st.Conditions, *cond)
}

package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/render"
)

// ConditionGangScheduling says whether a multinode component's groups are
// placed all-or-nothing: True when the cluster serves the PodGroup API and
// every group has its PodGroup, False (ReasonAPINotServed) when it does not,
// in which case the groups are placed pod by pod as before. Never a failure:
// the component runs either way.
const ConditionGangScheduling = "GangScheduling"

// Reasons of ConditionGangScheduling.
const (
	ReasonAPINotServed = "APINotServed"
	ReasonPodGroups    = "PodGroups"
)

// gangEnable is what an administrator does for all-or-nothing placement.
const gangEnable = "enable Kubernetes' gang scheduling (1.36+): kube-apiserver --runtime-config=scheduling.k8s.io/v1alpha2=true " +
	"and --feature-gates=GenericWorkload=true,GangScheduling=true on kube-apiserver and kube-scheduler; " +
	"the operator picks it up within a minute, without a restart"

// gangAPIRecheck is how often a multinode component on a cluster without
// the PodGroup API looks for it again. Unlike a missing LeaderWorkerSet API
// this is the normal state of most clusters (the API is alpha), so the
// lookup is shared (apiProbe) and rare: enabling the API takes effect within
// a minute, without a restart.
const gangAPIRecheck = time.Minute

// apiProbe remembers for a while whether the cluster serves an API: on a
// cluster without it every lookup would be a discovery request, one per
// multinode component per recheck.
type apiProbe struct {
	mu      sync.Mutex
	at      time.Time
	served  bool
	checked bool
}

// served says whether gvk is served, asking the REST mapper at most once
// per gangAPIRecheck while it is not (once served, an API stays).
func (p *apiProbe) lookup(mapper meta.RESTMapper, gvk schema.GroupVersionKind, now time.Time) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.checked && (p.served || now.Sub(p.at) < gangAPIRecheck) {
		return p.served, nil
	}
	_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil && !meta.IsNoMatchError(err) {
		return false, err
	}
	p.served, p.at, p.checked = err == nil, now, true
	return p.served, nil
}

// applyPodGroups makes the gang PodGroups of a multinode component's groups
// exist, one per group index below its replicas (render.PodGroups), and
// deletes the component's PodGroups of indexes past them (scale-down): the
// owner reference to the component removes them all only with it. A
// PodGroup's minCount is immutable, so one whose minCount is not the
// nodeCount is deleted, and its watch event brings it back with the new
// one. It returns the GangScheduling condition; on a cluster that does not
// serve the PodGroup API it renders nothing and says what to enable, and
// recheck is true (discovery is not watchable): gangAPIRecheck.
func (r *ComponentReconciler) applyPodGroups(ctx context.Context, dcd *v1alpha1.DynamoComponentDeployment, changes *changeSet) (cond metav1.Condition, recheck bool, err error) {
	cond = metav1.Condition{
		Type:               ConditionGangScheduling,
		ObservedGeneration: dcd.Generation,
		LastTransitionTime: metav1.NewTime(r.Clock.Now()),
	}
	gvk := render.PodGroupGVK
	served, err := r.podGroupAPI.lookup(r.Client.RESTMapper(), gvk, r.Clock.Now())
	if err != nil {
		return cond, false, err
	}
	if !served {
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonAPINotServed
		cond.Message = fmt.Sprintf("the cluster serves no %s PodGroup API, so a group's pods are placed one by one "+
			"and a group that does not fit whole holds GPUs while it waits: %s", gvk.GroupVersion(), gangEnable)
		return cond, true, nil
	}
	live, err := r.livePodGroups(ctx, dcd)
	if err != nil {
		return cond, false, err
	}
	desired := render.PodGroups(dcd)
	for _, pg := range desired {
		current := live[pg.GetName()]
		delete(live, pg.GetName())
		if current != nil && render.PodGroupMinCount(current) != render.PodGroupMinCount(pg) {
			if err := r.deletePodGroup(ctx, dcd, current, "its minCount is not the nodeCount and cannot change", changes); err != nil {
				return cond, false, err
			}
			continue
		}
		var cur client.Object
		if current != nil {
			cur = current
		}
		if err := r.applyChildOver(ctx, dcd, pg, cur, false, changes); err != nil {
			return cond, false, err
		}
	}
	for _, extra := range live {
		if err := r.deletePodGroup(ctx, dcd, extra, "its group is past the replicas and the rollout's surge group", changes); err != nil {
			return cond, false, err
		}
	}
	cond.Status, cond.Reason = metav1.ConditionTrue, ReasonPodGroups
	cond.Message = fmt.Sprintf("each group's %d pods are placed all together or not at all: "+
		"a PodGroup %s per group index, gang minCount %d",
		dcd.Spec.Multinode.NodeCount, dcd.Name+"-<index>", dcd.Spec.Multinode.NodeCount)
	return cond, false, nil
}

// livePodGroups are the PodGroups dcd controls, by name, from the cache of
// their watch (started here the first time).
func (r *ComponentReconciler) livePodGroups(ctx context.Context, dcd *v1alpha1.DynamoComponentDeployment) (map[string]*unstructured.Unstructured, error) {
	gvk := render.PodGroupGVK
	podGroups := r.watchOnceServed(gvk.GroupKind())
	if err := podGroups.ensure(r.Client); err != nil {
		return nil, err
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := podGroups.cache.List(ctx, list, client.InNamespace(dcd.Namespace),
		client.MatchingLabels{render.LabelComponent: dcd.Name}); err != nil {
		return nil, err
	}
	live := map[string]*unstructured.Unstructured{}
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], dcd) {
			live[list.Items[i].GetName()] = &list.Items[i]
		}
	}
	return live, nil
}

func (r *ComponentReconciler) deletePodGroup(ctx context.Context, dcd *v1alpha1.DynamoComponentDeployment,
	pg *unstructured.Unstructured, why string, changes *changeSet) error {
	if !pg.GetDeletionTimestamp().IsZero() {
		return nil // being deleted: the PodGroup protection waits for its pods to go
	}
	err := r.Client.Delete(ctx, pg, client.Preconditions{UID: ptr.To(pg.GetUID())})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone already (the cache lags)
	}
	if err != nil {
		return fmt.Errorf("deleting PodGroup %s: %w", pg.GetName(), err)
	}
	r.Applier.Forget(pg)
	ctrl.LoggerFrom(ctx).V(1).Info("deleted a gang PodGroup", "podGroup", klog.KObj(pg), "why", why)
	changes.deleted = append(changes.deleted, "PodGroup/"+pg.GetName())
	return nil
}

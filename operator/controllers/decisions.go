package controllers

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// Decision logs. The logger comes from the reconcile's context, which
// already names the controller, the object and the reconcile ID. Levels
// (LOG_LEVEL):
//
//	V(0) what users must see: a spec refused, a graph's state changing,
//	     work handed over to another operator;
//	V(1) each child created, updated or deleted, and why;
//	V(2) a reconcile with nothing to do.
//
// Errors returned to controller-runtime are not logged here: it logs them
// once, where it handles them (the retry).
const (
	levelChild   = 1
	levelNothing = 2
)

// logChanges logs each child written by one reconcile of owner.
func logChanges(ctx context.Context, owner client.Object, c changeSet) {
	log := ctrl.LoggerFrom(ctx).V(levelChild)
	if !log.Enabled() {
		return
	}
	for _, e := range []struct {
		msg, why string
		names    []string
	}{
		{"created child", "it did not exist", c.created},
		{"updated child", "it differed from what the spec renders", c.updated},
		{"deleted child", "the spec no longer asks for it", c.deleted},
	} {
		for _, kindName := range e.names {
			kind, name, _ := strings.Cut(kindName, "/")
			log.Info(e.msg, "kind", kind, "child", klog.KRef(owner.GetNamespace(), name), "why", e.why)
		}
	}
}

// empty reports whether the reconcile wrote no child.
func (c changeSet) empty() bool {
	return len(c.created) == 0 && len(c.updated) == 0 && len(c.deleted) == 0 && !c.assumed
}

// logNothingToDo logs a reconcile that found everything as it should be.
func logNothingToDo(ctx context.Context, obj client.Object) {
	ctrl.LoggerFrom(ctx).V(levelNothing).Info("nothing to do", "object", klog.KObj(obj))
}

// logRefused logs a spec the user must fix, the first time it is recorded.
func logRefused(ctx context.Context, obj client.Object, cause error, firstTime bool) {
	if !firstTime {
		ctrl.LoggerFrom(ctx).V(levelNothing).Info("spec still invalid; nothing to do", "object", klog.KObj(obj))
		return
	}
	ctrl.LoggerFrom(ctx).Info("spec refused; the user must fix it", "object", klog.KObj(obj), "reason", cause.Error())
}

// readyMessage is the Ready condition's message: what a graph waits for or
// what must be fixed.
func readyMessage(conds []metav1.Condition) string {
	if c := meta.FindStatusCondition(conds, v1alpha1.ConditionReady); c != nil {
		return c.Message
	}
	return ""
}

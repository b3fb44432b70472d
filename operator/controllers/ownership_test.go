package controllers

import (
	"context"
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// The API server's words when it cannot reach a webhook (here: the operator's
// own, before its pod joins the Service's endpoints) and when a webhook
// answers with a denial. Only the first is retried quietly.
var (
	errNoEndpoints = apierrors.NewInternalError(errors.New(`failed calling webhook "vdynamographdeployment.nvidia.com": ` +
		`failed to call webhook: Post "https://dynamo-operator-webhook.dynamo-system.svc:443/validate": ` +
		`no endpoints available for service "dynamo-operator-webhook"`))
	errDenied = apierrors.NewInvalid(schema.GroupKind{Group: "nvidia.com", Kind: "DynamoComponentDeployment"}, "x", nil)
	errEtcd   = apierrors.NewInternalError(errors.New("etcdserver: request timed out"))
)

func TestWebhookUnreachable(t *testing.T) {
	for name, tc := range map[string]struct {
		err  error
		want bool
	}{
		"nil":                    {nil, false},
		"no endpoints":           {errNoEndpoints, true},
		"wrapped":                {fmt.Errorf("applying Deployment: %w", errNoEndpoints), true},
		"denied by the webhook":  {errDenied, false},
		"another internal error": {errEtcd, false},
		"not an API error":       {errors.New("failed calling webhook"), false},
	} {
		if got := webhookUnreachable(tc.err); got != tc.want {
			t.Errorf("%s: webhookUnreachable(%v) = %v, want %v", name, tc.err, got, tc.want)
		}
	}
}

type reconcileFunc func(context.Context, reconcile.Request) (reconcile.Result, error)

func (f reconcileFunc) Reconcile(ctx context.Context, r reconcile.Request) (reconcile.Result, error) {
	return f(ctx, r)
}

func TestOwnedRetriesUnreachableWebhookQuietly(t *testing.T) {
	for name, tc := range map[string]struct {
		err     error
		want    reconcile.Result
		wantErr bool
	}{
		"unreachable webhook": {errNoEndpoints, reconcile.Result{RequeueAfter: webhookRetry}, false},
		"denied":              {errDenied, reconcile.Result{}, true},
		"success":             {nil, reconcile.Result{}, false},
	} {
		o := owned{next: reconcileFunc(func(context.Context, reconcile.Request) (reconcile.Result, error) {
			return reconcile.Result{}, tc.err
		})}
		got, err := o.Reconcile(context.Background(), reconcile.Request{})
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%s: Reconcile = %+v, %v; want %+v, error %v", name, got, err, tc.want, tc.wantErr)
		}
	}
}

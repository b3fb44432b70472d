package steps

import (
	"context"
	"fmt"
	"time"

	"github.com/cucumber/godog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/sim/metricsapi"
)

// Autoscaling through scaling adapters: the value of an external metric
// (served by the simulator, sim/metricsapi), how long an HPA takes to scale
// a component, and a window in which nothing reverts it.
func registerAutoscalingSteps(sc *godog.ScenarioContext, w *world) {
	sc.Step(`^the external metric `+quoted+` in this namespace is `+quoted+`$`, w.setExternalMetric)
	sc.Step(`^the dcd `+quoted+` eventually has (\d+) replicas, and the time since the last apply is reported$`, w.replicasTimeReported)
	sc.Step(`^for (\d+) minutes? the dcd `+quoted+` and the dgdsa `+quoted+` keep (\d+) replicas, and the writes to them are reported$`, w.keepReplicasFor)
}

// setExternalMetric sets the metric's value where the simulator's external
// metrics API reads it.
func (w *world) setExternalMetric(ctx context.Context, metric, value string) error {
	return SetExternalMetric(ctx, w.cluster.Client, w.namespace, unescape(metric), unescape(value))
}

// SetExternalMetric sets an external metric's value in namespace ns where
// the simulator's external metrics API reads it (sim/metricsapi), as the
// metrics pipeline of a real cluster would report it.
func SetExternalMetric(ctx context.Context, c client.Client, ns, metric, value string) error {
	cm := &corev1.ConfigMap{}
	key := client.ObjectKey{Namespace: ns, Name: metricsapi.ConfigMapName}
	err := c.Get(ctx, key, cm)
	if apierrors.IsNotFound(err) {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}, Data: map[string]string{metric: value}}
		return c.Create(ctx, cm)
	}
	if err != nil {
		return err
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[metric] = value
	return c.Update(ctx, cm)
}

func (w *world) replicasTimeReported(ctx context.Context, name string, n int) error {
	name = unescape(name)
	want := fmt.Sprint(n)
	if err := w.eventually(ctx, "the dcd "+name+" at "+want+" replicas", func() error {
		return w.fieldEquals(ctx, "dcd", name, ".spec.replicas", want)
	}); err != nil {
		return err
	}
	fmt.Printf("    dcd %s at %d replicas %.1fs after the last apply\n", name, n, time.Since(w.appliedAt).Seconds())
	return nil
}

// keepReplicasFor watches the component and its adapter for the window:
// any spec.replicas other than n fails the step; every update of either is
// counted and reported.
func (w *world) keepReplicasFor(ctx context.Context, minutes int, component, adapter string, n int) error {
	component, adapter = unescape(component), unescape(adapter)
	wc, err := client.NewWithWatch(w.cluster.Config, client.Options{Scheme: w.cluster.Client.Scheme(), Mapper: w.cluster.Client.RESTMapper()})
	if err != nil {
		return err
	}
	watchCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	updates := map[string]int{}
	events := make(chan watch.Event)
	for _, target := range []struct{ kind, name string }{{"dcd", component}, {"dgdsa", adapter}} {
		obj, err := w.object(target.kind, target.name)
		if err != nil {
			return err
		}
		if err := w.cluster.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(obj.GroupVersionKind().GroupVersion().WithKind(obj.GetKind() + "List"))
		watcher, err := wc.Watch(watchCtx, list, client.InNamespace(w.namespace), &client.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("metadata.name", target.name), Raw: &metav1.ListOptions{ResourceVersion: obj.GetResourceVersion()},
		})
		if err != nil {
			return err
		}
		defer watcher.Stop()
		go func() {
			for ev := range watcher.ResultChan() {
				select {
				case events <- ev:
				case <-watchCtx.Done():
					return
				}
			}
		}()
	}
	window := time.Duration(minutes) * time.Minute
	end := time.After(window)
	for {
		select {
		case <-end:
			fmt.Printf("    over %s: %d updates of dcd %s, %d of dgdsa %s, spec.replicas %d throughout\n",
				window, updates["DynamoComponentDeployment"], component, updates["DynamoGraphDeploymentScalingAdapter"], adapter, n)
			return nil
		case ev := <-events:
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			updates[u.GetKind()]++
			got, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
			if got != int64(n) {
				return fmt.Errorf("%s %s had spec.replicas %d at resourceVersion %s: reverted", u.GetKind(), u.GetName(), got, u.GetResourceVersion())
			}
		}
	}
}

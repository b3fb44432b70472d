// Package scalingtest runs the operator's graph controller against a real
// API server for what DynamoGraphDeploymentScalingAdapters do: created and
// deleted with a service's opt-in, owned by the graph, their scale
// subresource carried to the service's component and never reverted.
package scalingtest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/onsi/gomega"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1beta1"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	os.Exit(testenv.Run(m, func(e *testenv.Env) { env = e }))
}

// stored is beta as the API server stores it: converted to v1alpha1, its
// v1beta1-only fields (scalingAdapter) in the conversion's annotation.
func stored(t *testing.T, beta *v1beta1.DynamoGraphDeployment) *v1alpha1.DynamoGraphDeployment {
	t.Helper()
	dgd := &v1alpha1.DynamoGraphDeployment{}
	if err := beta.ConvertTo(dgd); err != nil {
		t.Fatal(err)
	}
	return dgd
}

func worker(name string) *builders.BetaComponentWrapper {
	return builders.MakeBetaComponent(name).Type(v1beta1.ComponentTypeWorker).Image("nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.0")
}

// serverSet are the fields the API server sets on an object.
var serverSet = cmpopts.IgnoreFields(metav1.ObjectMeta{}, "UID", "ResourceVersion", "Generation", "CreationTimestamp", "ManagedFields")

// Each service that opts in gets one adapter, named as Dynamo names it,
// owned by the graph and starting at the service's replicas; the others
// get none.
func TestScalingAdaptersFollowTheOptIn(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.Namespace(t, "adapters")
	env.StartControllers(ctx, t)

	cases := map[string]struct {
		// graph is written in v1beta1, alpha in v1alpha1: one of the two.
		graph *builders.BetaGraphWrapper
		alpha *builders.GraphWrapper
		// component is one of the graph's components.
		component string
		// want are the adapters, by the graph as created.
		want func(*v1alpha1.DynamoGraphDeployment) []v1alpha1.DynamoGraphDeploymentScalingAdapter
	}{
		"no service opts in: no adapter": {
			graph:     builders.MakeBetaGraph("plain", ns).Component(worker("decode").Replicas(2)),
			component: "plain-decode",
			want:      func(*v1alpha1.DynamoGraphDeployment) []v1alpha1.DynamoGraphDeploymentScalingAdapter { return nil },
		},
		"one of two services opts in: its adapter has its replicas": {
			graph: builders.MakeBetaGraph("mixed", ns).
				Component(builders.MakeBetaComponent("Frontend").Type(v1beta1.ComponentTypeFrontend)).
				Component(worker("VllmDecodeWorker").Replicas(3).ScalingAdapter(&v1beta1.ScalingAdapter{})),
			component: "mixed-frontend",
			want: func(g *v1alpha1.DynamoGraphDeployment) []v1alpha1.DynamoGraphDeploymentScalingAdapter {
				return []v1alpha1.DynamoGraphDeploymentScalingAdapter{
					*builders.MakeScalingAdapter("mixed", "VllmDecodeWorker", ns).Replicas(3).ControlledBy(g).Obj(),
				}
			},
		},
		"v1alpha1 scalingAdapter enabled opts in; disabled does not": {
			alpha: builders.MakeGraph("alpha", ns).
				Service("decode", builders.MakeService().Replicas(2).ScalingAdapter(true)).
				Service("prefill", builders.MakeService().Replicas(2).ScalingAdapter(false)),
			component: "alpha-prefill",
			want: func(g *v1alpha1.DynamoGraphDeployment) []v1alpha1.DynamoGraphDeploymentScalingAdapter {
				return []v1alpha1.DynamoGraphDeploymentScalingAdapter{
					*builders.MakeScalingAdapter("alpha", "decode", ns).Replicas(2).ControlledBy(g).Obj(),
				}
			},
		},
		"replicas unset: starts at 1": {
			graph:     builders.MakeBetaGraph("unset", ns).Component(worker("decode").ScalingAdapter(&v1beta1.ScalingAdapter{})),
			component: "unset-decode",
			want: func(g *v1alpha1.DynamoGraphDeployment) []v1alpha1.DynamoGraphDeploymentScalingAdapter {
				return []v1alpha1.DynamoGraphDeploymentScalingAdapter{
					*builders.MakeScalingAdapter("unset", "decode", ns).ControlledBy(g).Obj(),
				}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var dgd *v1alpha1.DynamoGraphDeployment
			if tc.alpha != nil {
				dgd = tc.alpha.Obj()
			} else {
				dgd = stored(t, tc.graph.Obj())
			}
			if err := env.Client.Create(ctx, dgd); err != nil {
				t.Fatal(err)
			}
			want := tc.want(dgd)
			// A reconcile makes the adapters before it applies the
			// components: once the components exist, so do the adapters.
			await.New(t).Eventually(func() error {
				return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: tc.component}, &v1alpha1.DynamoComponentDeployment{})
			}).Should(gomega.Succeed(), "the graph's component")
			if diff := cmp.Diff(want, adaptersOf(ctx, t, dgd), serverSet, cmpopts.EquateEmpty(),
				cmpopts.IgnoreFields(v1alpha1.DynamoGraphDeploymentScalingAdapter{}, "TypeMeta", "Status")); diff != "" {
				t.Errorf("adapters (-want +got):\n%s", diff)
			}
		})
	}
}

// adaptersOf lists the adapters labelled with dgd's name.
func adaptersOf(ctx context.Context, t *testing.T, dgd *v1alpha1.DynamoGraphDeployment) []v1alpha1.DynamoGraphDeploymentScalingAdapter {
	t.Helper()
	list := &v1alpha1.DynamoGraphDeploymentScalingAdapterList{}
	if err := env.Client.List(ctx, list, client.InNamespace(dgd.Namespace),
		client.MatchingLabels{"nvidia.com/dynamo-graph-deployment-name": dgd.Name}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// scale writes the adapter's replicas through its scale subresource, as
// kubectl scale and an HPA do.
func scale(ctx context.Context, t *testing.T, key client.ObjectKey, replicas int32) {
	t.Helper()
	a := &v1alpha1.DynamoGraphDeploymentScalingAdapter{}
	if err := env.Client.Get(ctx, key, a); err != nil {
		t.Fatal(err)
	}
	s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, ResourceVersion: a.ResourceVersion},
		Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
	if err := env.Client.SubResource("scale").Update(ctx, a, client.WithSubResourceBody(s)); err != nil {
		t.Fatal(err)
	}
}

func componentReplicas(ctx context.Context, key client.ObjectKey) func() (int32, error) {
	return func() (int32, error) {
		dcd := &v1alpha1.DynamoComponentDeployment{}
		if err := env.Client.Get(ctx, key, dcd); err != nil {
			return 0, err
		}
		return ptr.Deref(dcd.Spec.Replicas, -1), nil
	}
}

// The adapter's scale subresource scales the component; its status reports
// the component's replicas and selector for an HPA; nothing the graph does
// reverts it; the graph's spec is never written; opting out deletes the
// adapter and leaves the component's replicas as they are.
func TestScalingAdapterOwnsTheReplicas(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := env.StartDeploymentDriver(ctx, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t, "adapter-owns")
	env.StartControllers(ctx, t)
	beta := builders.MakeBetaGraph("llm", ns).Component(worker("decode").Replicas(2).ScalingAdapter(&v1beta1.ScalingAdapter{}))
	dgd := stored(t, beta.Obj())
	if err := env.Client.Create(ctx, dgd); err != nil {
		t.Fatal(err)
	}
	adapterKey := client.ObjectKey{Namespace: ns, Name: "llm-decode"}
	componentKey := adapterKey
	g := await.New(t)
	g.Eventually(componentReplicas(ctx, componentKey)).Should(gomega.Equal(int32(2)), "the component at the graph's replicas")

	scale(ctx, t, adapterKey, 4)
	g.Eventually(componentReplicas(ctx, componentKey)).Should(gomega.Equal(int32(4)), "the component at the adapter's replicas")
	g.Eventually(func() string {
		a, dcd := &v1alpha1.DynamoGraphDeploymentScalingAdapter{}, &v1alpha1.DynamoComponentDeployment{}
		if err := env.Client.Get(ctx, adapterKey, a); err != nil {
			return err.Error()
		}
		if err := env.Client.Get(ctx, componentKey, dcd); err != nil {
			return err.Error()
		}
		want := v1alpha1.DynamoGraphDeploymentScalingAdapterStatus{Replicas: 4, Selector: dcd.Status.Selector}
		if dcd.Status.Selector == "" {
			return "the component has no selector yet"
		}
		return cmp.Diff(want, a.Status, cmpopts.IgnoreFields(v1alpha1.DynamoGraphDeploymentScalingAdapterStatus{}, "LastScaleTime"))
	}).Should(gomega.BeEmpty(), "the adapter's status (-want +got)")

	// A change of the graph elsewhere reconciles it: the replicas stay.
	live := &v1alpha1.DynamoGraphDeployment{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(dgd), live); err != nil {
		t.Fatal(err)
	}
	live.Labels = map[string]string{"team": "inference"}
	if err := env.Client.Update(ctx, live); err != nil {
		t.Fatal(err)
	}
	g.Eventually(func() (string, error) {
		dcd := &v1alpha1.DynamoComponentDeployment{}
		err := env.Client.Get(ctx, componentKey, dcd)
		return dcd.Labels["team"], err
	}).Should(gomega.Equal("inference"), "the graph's label on its component")
	g.Consistently(componentReplicas(ctx, componentKey)).WithTimeout(5*time.Second).Should(gomega.Equal(int32(4)), "the adapter's replicas")
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(dgd), live); err != nil {
		t.Fatal(err)
	}
	if got := ptr.Deref(live.Spec.Services["decode"].Replicas, -1); got != 2 {
		t.Errorf("the graph's replicas are %d, want 2 as the user wrote them", got)
	}

	// Opting out deletes the adapter; the component keeps its replicas.
	out := stored(t, builders.MakeBetaGraph("llm", ns).Component(worker("decode").Replicas(2)).Obj())
	live.Spec, live.Annotations = out.Spec, out.Annotations
	if err := env.Client.Update(ctx, live); err != nil {
		t.Fatal(err)
	}
	g.Eventually(func() ([]v1alpha1.DynamoGraphDeploymentScalingAdapter, error) {
		return adaptersOf(ctx, t, live), nil
	}).Should(gomega.BeEmpty(), "the adapter deleted")
	g.Consistently(componentReplicas(ctx, componentKey)).WithTimeout(5*time.Second).Should(gomega.Equal(int32(4)), "the component's replicas kept")
}

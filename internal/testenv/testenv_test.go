package testenv

import (
	"context"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/builders"
	dynamov1alpha1 "github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	dynamov1beta1 "github.com/dynamoctl/dynamo-operator/operator/api/v1beta1"
)

var env *Env

func TestMain(m *testing.M) {
	os.Exit(Run(m, func(e *Env) { env = e }))
}

func TestCRDsAreInstalledAndServed(t *testing.T) {
	ns := env.Namespace(t, t.Name())
	for _, list := range []client.ObjectList{
		&dynamov1alpha1.DynamoGraphDeploymentList{},
		&dynamov1alpha1.DynamoComponentDeploymentList{},
		&dynamov1alpha1.DynamoModelList{},
		&dynamov1alpha1.DynamoComponentList{},
	} {
		if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			t.Errorf("listing %T: %v", list, err)
		}
	}
}

// The garbage collector runs, so foreground deletion completes and takes
// dependents with it, as it does in a real cluster.
func TestForegroundDeletionCompletes(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, t.Name())
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: ns}}
	if err := env.Client.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	dependent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent", Namespace: ns,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name,
			UID: owner.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}}}
	if err := env.Client.Create(ctx, dependent); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, owner, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{dependent, owner} {
		waitGone(t, obj)
	}
}

// The namespace controller runs, so a deleted namespace really goes away.
func TestNamespaceDeletionCompletes(t *testing.T) {
	ctx := context.Background()
	ns, err := env.CreateNamespace(ctx, "gone")
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: ns}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	env.DeleteNamespace(ctx, ns)
	waitGone(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
}

func waitGone(t *testing.T, obj client.Object) {
	t.Helper()
	await.New(t).Eventually(func() error {
		return env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	}).Should(gomega.Satisfy(apierrors.IsNotFound), "%T %s is gone", obj, obj.GetName())
}

func TestSanitize(t *testing.T) {
	for in, want := range map[string]string{
		"TestFoo/Bar_baz": "testfoo-bar-baz",
		"---":             "test",
		"A very long scenario name that goes on and on": "a-very-long-scenario-name-that-goes-on-a",
	} {
		if got := NamespacePrefix(in); got != want {
			t.Errorf("NamespacePrefix(%q) = %q, want %q", in, got, want)
		}
	}
}

// The Env answers conversion reviews itself: a graph stored as v1alpha1
// reads as v1beta1, and the garbage collector, which watches the group's
// preferred version (v1beta1), completes a graph's foreground deletion.
func TestGraphsConvertAndForegroundDeletionCompletes(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, t.Name())
	graph := builders.MakeGraph("g", ns).Service("Frontend", builders.MakeEmptyService()).Obj()
	if err := env.Client.Create(ctx, graph); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(graph), &dynamov1beta1.DynamoGraphDeployment{}); err != nil {
		t.Fatalf("reading the graph as v1beta1: %v", err)
	}
	dependent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent", Namespace: ns,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: dynamov1alpha1.GroupVersion.String(), Kind: "DynamoGraphDeployment",
			Name: graph.Name, UID: graph.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}}}
	if err := env.Client.Create(ctx, dependent); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, graph, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{dependent, graph} {
		waitGone(t, obj)
	}
}

// Only a CRD converted by a webhook loses it; None and no conversion at all
// stay as they are, and the CRDs given are not changed.
func TestWithoutConversionWebhook(t *testing.T) {
	webhook := &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"}}}
	none := &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	tests := map[string]struct {
		in, want *apiextensionsv1.CustomResourceConversion
	}{
		"webhook":       {in: webhook, want: none},
		"none":          {in: none, want: none},
		"no conversion": {},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			crd := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{Conversion: tc.in}}
			before := crd.DeepCopy()
			got := WithoutConversionWebhook([]*apiextensionsv1.CustomResourceDefinition{crd})
			if diff := cmp.Diff(tc.want, got[0].Spec.Conversion); diff != "" {
				t.Errorf("conversion (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, crd); diff != "" {
				t.Errorf("the CRD given changed (-before +after):\n%s", diff)
			}
		})
	}
}

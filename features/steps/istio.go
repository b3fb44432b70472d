package steps

import (
	"context"
	"time"

	"github.com/cucumber/godog"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
)

// A cluster with Istio's VirtualService API: the steps install its CRD, as
// Istio's chart does, with a schema that keeps any spec. It stays installed
// for the scenarios after: an API an operator found served stays served.

// virtualServiceCRDName is the CustomResourceDefinition of Istio's
// VirtualService.
const virtualServiceCRDName = "virtualservices.networking.istio.io"

func registerIstioSteps(sc *godog.ScenarioContext, w *world) {
	sc.Step(`^the cluster serves Istio's VirtualService API$`, w.installVirtualServiceAPI)
	sc.Step(`^within a minute the dcd `+quoted+` is exposed through its VirtualService$`, unquote1(w.exposedThroughVirtualService))
}

func virtualServiceCRD() *unstructured.Unstructured {
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": virtualServiceCRDName},
		"spec": map[string]any{
			"group": "networking.istio.io",
			"scope": "Namespaced",
			"names": map[string]any{
				"plural": "virtualservices", "singular": "virtualservice",
				"kind": "VirtualService", "listKind": "VirtualServiceList", "shortNames": []any{"vs"},
			},
			"versions": []any{map[string]any{
				"name": "v1beta1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	}}
	return crd
}

// installVirtualServiceAPI creates the CRD unless it is there, and waits
// until it is established.
func (w *world) installVirtualServiceAPI(ctx context.Context) error {
	return testenv.InstallCRD(ctx, w.cluster.Client, virtualServiceCRD())
}

// exposedThroughVirtualService waits until the component's VirtualService
// condition is True: an operator that looked for Istio's API before it was
// installed looks again within a minute (discovery is not watchable).
func (w *world) exposedThroughVirtualService(ctx context.Context, name string) error {
	return w.eventually(ctx, "the dcd "+name+" exposed through its VirtualService", func() error {
		return w.fieldEquals(ctx, "dcd", name, `.status.conditions[?(@.type=="VirtualService")].status`, "True")
	}, await.Within(time.Minute+w.timeout()))
}

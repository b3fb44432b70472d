package crdinstall

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dynamoctl/dynamo-operator/operator/config"
)

// generated is a CRD as controller-gen writes one that converts by webhook:
// a placeholder clientConfig, here with a caBundle that must never be
// applied.
func generated() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "dynamographdeployments.nvidia.com"},
		"spec": map[string]any{"conversion": map[string]any{
			"strategy": "Webhook",
			"webhook": map[string]any{
				"clientConfig":             map[string]any{"service": map[string]any{"namespace": "system", "name": "webhook-service", "path": "/convert"}, "caBundle": "Cg=="},
				"conversionReviewVersions": []any{"v1"},
			},
		}},
	}}
}

func TestRewrite(t *testing.T) {
	service := map[string]any{"namespace": "dynamo-system", "name": "dp-dynamo-operator-webhook", "path": "/convert", "port": int64(443)}
	for name, tc := range map[string]struct {
		conv       Conversion
		wantClient map[string]any
		wantAnn    map[string]string
	}{
		"service, auto: no caBundle, the operator injects it": {
			conv:       Conversion{ServiceNamespace: "dynamo-system", ServiceName: "dp-dynamo-operator-webhook"},
			wantClient: map[string]any{"service": service},
		},
		"URL of an operator outside the cluster": {
			conv:       Conversion{URL: "https://127.0.0.1:9443"},
			wantClient: map[string]any{"url": "https://127.0.0.1:9443/convert"},
		},
		"external: the installer's bundle": {
			conv:       Conversion{ServiceNamespace: "dynamo-system", ServiceName: "dp-dynamo-operator-webhook", CABundle: []byte("PEM")},
			wantClient: map[string]any{"service": service, "caBundle": "UEVN"},
		},
		"cert-manager: the inject annotation": {
			conv:       Conversion{ServiceNamespace: "dynamo-system", ServiceName: "dp-dynamo-operator-webhook", InjectCAFrom: "dynamo-system/cert"},
			wantClient: map[string]any{"service": service},
			wantAnn:    map[string]string{"cert-manager.io/inject-ca-from": "dynamo-system/cert"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			u := generated()
			if err := tc.conv.rewrite(u); err != nil {
				t.Fatal(err)
			}
			got, _, _ := unstructured.NestedMap(u.Object, "spec", "conversion", "webhook", "clientConfig")
			if d := cmp.Diff(tc.wantClient, got); d != "" {
				t.Errorf("clientConfig (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.wantAnn, u.GetAnnotations()); d != "" {
				t.Errorf("annotations (-want +got):\n%s", d)
			}
		})
	}
}

func TestRewriteLeavesOtherCRDsAndRefusesNoTarget(t *testing.T) {
	plain := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "dynamomodels.nvidia.com"}, "spec": map[string]any{}}}
	want := plain.DeepCopy()
	if err := (Conversion{InjectCAFrom: "ns/cert"}).rewrite(plain); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want.Object, plain.Object); d != "" {
		t.Errorf("a CRD without webhook conversion changed (-want +got):\n%s", d)
	}
	if err := (Conversion{}).rewrite(generated()); err == nil {
		t.Error("no Service nor URL: want an error")
	}
}

func TestConversionFor(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		env  map[string]string
		want Conversion
	}{
		"the chart's init container, auto": {
			args: []string{"--apply-crds", "--webhook-service-name=dp-dynamo-operator-webhook"},
			env:  map[string]string{"POD_NAMESPACE": "dynamo-system"},
			want: Conversion{ServiceNamespace: "dynamo-system", ServiceName: "dp-dynamo-operator-webhook"},
		},
		"cert-manager": {
			args: []string{"--webhook-cert-mode=cert-manager", "--webhook-cert-secret=dp-cert"},
			env:  map[string]string{"POD_NAMESPACE": "dynamo-system"},
			want: Conversion{ServiceNamespace: "dynamo-system", ServiceName: "dynamo-operator-webhook", InjectCAFrom: "dynamo-system/dp-cert"},
		},
		"process mode": {
			args: []string{"--webhook-url-host=127.0.0.1", "--webhook-port=9444"},
			want: Conversion{URL: "https://127.0.0.1:9444"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			o, err := config.Parse(tc.args, func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, ConversionFor(o)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

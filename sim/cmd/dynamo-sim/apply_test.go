package main

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/sim/prereq"
)

// TestAddPlaceholderKeys: a placeholder an earlier apply made gains the
// keys a later manifest names; a user's own object is left alone.
func TestAddPlaceholderKeys(t *testing.T) {
	const name, ns = "hf-token-secret", "default"
	secret := func() *builders.SecretWrapper { return builders.MakeSecret(name, ns) }
	configMap := func() *builders.ConfigMapWrapper { return builders.MakeConfigMap(name, ns) }
	cases := map[string]struct {
		have, want client.Object
		wantAdded  []string
		wantData   map[string]string
	}{
		"placeholder secret": {
			have:      secret().DataKey("HF_TOKEN_SECRET", prereq.Placeholder).Obj(),
			want:      secret().StringDataKey("HF_TOKEN", prereq.Placeholder).Obj(),
			wantAdded: []string{"HF_TOKEN"},
			wantData:  map[string]string{"HF_TOKEN": prereq.Placeholder, "HF_TOKEN_SECRET": prereq.Placeholder},
		},
		"user's secret": {
			have:     secret().DataKey("TOKEN", "hf_abc").Obj(),
			want:     secret().StringDataKey("HF_TOKEN", prereq.Placeholder).Obj(),
			wantData: map[string]string{"TOKEN": "hf_abc"},
		},
		"placeholder config map": {
			have:      configMap().DataKey("config", prereq.Placeholder).Obj(),
			want:      configMap().DataKey("config", prereq.Placeholder).DataKey("engine.yaml", prereq.Placeholder).Obj(),
			wantAdded: []string{"engine.yaml"},
			wantData:  map[string]string{"config": prereq.Placeholder, "engine.yaml": prereq.Placeholder},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			cl := fake.NewClientBuilder().WithObjects(c.have).Build()
			added, err := addPlaceholderKeys(ctx, cl, c.want)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.wantAdded, added); diff != "" {
				t.Errorf("added (-want +got):\n%s", diff)
			}
			got := map[string]string{}
			switch c.have.(type) {
			case *corev1.Secret:
				var s corev1.Secret
				if err := cl.Get(ctx, client.ObjectKeyFromObject(c.have), &s); err != nil {
					t.Fatal(err)
				}
				for k, v := range s.Data {
					got[k] = string(v)
				}
			case *corev1.ConfigMap:
				var cm corev1.ConfigMap
				if err := cl.Get(ctx, client.ObjectKeyFromObject(c.have), &cm); err != nil {
					t.Fatal(err)
				}
				got = cm.Data
			}
			if diff := cmp.Diff(c.wantData, got); diff != "" {
				t.Errorf("data (-want +got):\n%s", diff)
			}
		})
	}
}

package certs_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/config"
	"github.com/dynamoctl/dynamo-operator/operator/crdinstall"
)

// releaseBeforeConversion is a CRD as a release before conversion (v0.2.1)
// embeds it: v1alpha1 alone, no spec.conversion.
func releaseBeforeConversion(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	all, err := crdinstall.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range all {
		if u.GetName() != name {
			continue
		}
		old := u.DeepCopy()
		versions, _, _ := unstructured.NestedSlice(old.Object, "spec", "versions")
		var kept []any
		for _, v := range versions {
			if v.(map[string]any)["name"] == "v1alpha1" {
				kept = append(kept, v)
			}
		}
		if err := unstructured.SetNestedSlice(old.Object, kept, "spec", "versions"); err != nil {
			t.Fatal(err)
		}
		unstructured.RemoveNestedField(old.Object, "spec", "conversion")
		return old
	}
	t.Fatalf("no embedded CRD %s", name)
	return nil
}

// A downgrade to a release without conversion: its init container applies
// its own CRDs (v1alpha1 only, no spec.conversion) under the installer's
// field manager, forced, after this operator installed its CRDs and
// injected its CA. Every field under spec.conversion must go with that
// apply, the bundle too: a bundle left behind (conversion: {strategy: None,
// webhook: {clientConfig: {caBundle}}}) is refused by the API server, and the
// older release's init container would fail.
func TestDowngradeToReleaseWithoutConversion(t *testing.T) {
	testenv.Long(t)
	op, port := startAuto(t, "downgrade-cert")
	env.RouteConversion(t, crdinstall.Conversion{URL: "https://127.0.0.1:" + port})
	eventuallyCRDBundles(t, "the operator's CA", func() []byte { return storedCA(t, "downgrade-cert") })
	ctx := context.Background()
	assertConversionOwnedByInstaller(t)

	// The installer runs again, as a restarted pod's init container: it
	// applies the Secret's CA with the rest, so the bundle stays and the
	// operator has nothing to write.
	o, err := config.Parse([]string{"--apply-crds", "--webhook-url-host=127.0.0.1", "--webhook-port=" + port, "--webhook-cert-secret=downgrade-cert"},
		func(k string) (string, bool) {
			if k == "POD_NAMESPACE" {
				return testenv.OperatorNamespace, true
			}
			return "", false
		})
	if err != nil {
		t.Fatal(err)
	}
	conv, err := crdinstall.InstallerConversion(ctx, env.Client, o)
	if err != nil {
		t.Fatal(err)
	}
	mark := op.Writes()
	if err := env.ApplyCRDs(ctx, conv); err != nil {
		t.Fatal(err)
	}
	eventuallyCRDBundles(t, "the operator's CA after the installer ran again", func() []byte { return storedCA(t, "downgrade-cert") })
	assertConversionOwnedByInstaller(t)
	time.Sleep(2 * time.Second)
	for _, w := range op.WritesSince(mark) {
		if strings.Contains(w, "customresourcedefinitions") {
			t.Errorf("the operator wrote a CRD after the installer kept its CA: %s", w)
		}
	}

	for _, name := range convertedCRDs(t) {
		old := releaseBeforeConversion(t, name)
		if err := env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(old),
			client.FieldOwner(crdinstall.FieldOwner), client.ForceOwnership); err != nil {
			t.Fatalf("the older release's apply of %s: %v", name, err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			t.Fatal(err)
		}
		if c := crd.Spec.Conversion; c == nil || c.Strategy != apiextensionsv1.NoneConverter || c.Webhook != nil {
			t.Errorf("%s: conversion after the downgrade is %+v, want strategy None and no webhook", name, c)
		}
		for _, v := range crd.Spec.Versions {
			if v.Name != "v1alpha1" {
				t.Errorf("%s: version %s still served after the downgrade", name, v.Name)
			}
		}
	}
}

// assertConversionOwnedByInstaller fails unless every field under the
// converted CRDs' spec.conversion is owned by the installer's field
// manager alone.
func assertConversionOwnedByInstaller(t *testing.T) {
	t.Helper()
	for _, name := range convertedCRDs(t) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
			t.Fatal(err)
		}
		for _, mf := range crd.ManagedFields {
			if mf.FieldsV1 == nil || mf.Manager == crdinstall.FieldOwner && mf.Operation == metav1.ManagedFieldsOperationApply {
				continue
			}
			var fields map[string]any
			if err := json.Unmarshal(mf.FieldsV1.Raw, &fields); err != nil {
				t.Fatal(err)
			}
			if _, ok, _ := unstructured.NestedFieldNoCopy(fields, "f:spec", "f:conversion"); ok {
				t.Errorf("%s: %s (%s) owns fields under spec.conversion", name, mf.Manager, mf.Operation)
			}
		}
	}
}

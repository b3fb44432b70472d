package storagemigration

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func crdWith(storage string, stored ...string) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Name = "widgets.example.com"
	crd.Generation = 3
	for _, v := range []string{"v1alpha1", "v1beta1"} {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true, Storage: v == storage})
	}
	crd.Status.StoredVersions = stored
	return crd
}

func TestStaleVersions(t *testing.T) {
	for name, tc := range map[string]struct {
		crd       *apiextensionsv1.CustomResourceDefinition
		wantStale []string
		wantNeeds bool
	}{
		"storage alone":                   {crd: crdWith("v1alpha1", "v1alpha1")},
		"Dynamo's v1beta1 objects":        {crd: crdWith("v1alpha1", "v1beta1", "v1alpha1"), wantStale: []string{"v1beta1"}, wantNeeds: true},
		"storage moved to v1beta1":        {crd: crdWith("v1beta1", "v1alpha1", "v1beta1"), wantStale: []string{"v1alpha1"}, wantNeeds: true},
		"storage version missing":         {crd: crdWith("v1alpha1", "v1beta1"), wantStale: []string{"v1beta1"}, wantNeeds: true},
		"no storage version (never real)": {crd: crdWith("", "v1alpha1"), wantStale: []string{"v1alpha1"}},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.wantStale, staleVersions(tc.crd)); diff != "" {
				t.Errorf("staleVersions (-want +got):\n%s", diff)
			}
			if got := needsMigration(tc.crd); got != tc.wantNeeds {
				t.Errorf("needsMigration = %v, want %v", got, tc.wantNeeds)
			}
		})
	}
}

func TestTrimPatchTestsWhatWasRead(t *testing.T) {
	patch, err := trimPatch(crdWith("v1alpha1", "v1beta1", "v1alpha1"))
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(patch, &got); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"op": "test", "path": "/spec/versions/0/name", "value": "v1alpha1"},
		{"op": "test", "path": "/spec/versions/0/storage", "value": true},
		{"op": "test", "path": "/status/storedVersions", "value": []any{"v1beta1", "v1alpha1"}},
		{"op": "replace", "path": "/status/storedVersions", "value": []any{"v1alpha1"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("trimPatch (-want +got):\n%s", diff)
	}
}

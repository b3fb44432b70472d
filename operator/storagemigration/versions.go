package storagemigration

import (
	"encoding/json"
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// storageVersion is the name of the CRD's version marked storage, "" when
// none is (the API server refuses such a CRD).
func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// staleVersions are the stored versions other than the storage version:
// objects may be held in them.
func staleVersions(crd *apiextensionsv1.CustomResourceDefinition) []string {
	storage := storageVersion(crd)
	var out []string
	for _, v := range crd.Status.StoredVersions {
		if v != storage {
			out = append(out, v)
		}
	}
	return out
}

// needsMigration says whether objects must be rewritten: a stored version
// other than the storage version is listed, or (never written by the API
// server, but harmless to repair) the storage version is missing.
func needsMigration(crd *apiextensionsv1.CustomResourceDefinition) bool {
	storage := storageVersion(crd)
	return storage != "" && !slices.Equal(crd.Status.StoredVersions, []string{storage})
}

// patchOp is one JSON patch (RFC 6902) operation.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// trimPatch is the status patch that sets storedVersions to the storage
// version, applied only while the CRD is as read before its objects were
// rewritten in what matters: the same version marked storage at the same
// place, and the same storedVersions. Otherwise the API server refuses it
// and the migration runs again. (Not the generation: an operator injecting
// its CA into the conversion webhook changes the spec too.)
func trimPatch(crd *apiextensionsv1.CustomResourceDefinition) ([]byte, error) {
	storage := storageVersion(crd)
	at := slices.IndexFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Storage })
	version := fmt.Sprintf("/spec/versions/%d", at)
	return json.Marshal([]patchOp{
		{Op: "test", Path: version + "/name", Value: storage},
		{Op: "test", Path: version + "/storage", Value: true},
		{Op: "test", Path: "/status/storedVersions", Value: crd.Status.StoredVersions},
		{Op: "replace", Path: "/status/storedVersions", Value: []string{storage}},
	})
}

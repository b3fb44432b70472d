package storagemigration

import (
	"encoding/json"
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
// rewritten: the same generation (its spec, and so its storage version,
// unchanged) and the same storedVersions. Otherwise the API server refuses
// it and the migration runs again.
func trimPatch(crd *apiextensionsv1.CustomResourceDefinition) ([]byte, error) {
	return json.Marshal([]patchOp{
		{Op: "test", Path: "/metadata/generation", Value: crd.Generation},
		{Op: "test", Path: "/status/storedVersions", Value: crd.Status.StoredVersions},
		{Op: "replace", Path: "/status/storedVersions", Value: []string{storageVersion(crd)}},
	})
}

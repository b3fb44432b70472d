// Package storagemigration rewrites the stored objects of the operator's
// CRDs in each CRD's storage version, then trims the CRD's
// status.storedVersions to that version alone.
//
// The API server keeps every object in etcd in the version it was written
// in, and lists in status.storedVersions every version that was ever the
// storage version. Objects are not re-encoded when the storage version
// changes: a CRD that Dynamo's current operator stored in nvidia.com/v1beta1
// and ours installs with v1alpha1 as the storage version still holds
// v1beta1 objects, and so does a cluster after a release of ours changes the
// storage version. A version may be dropped from a CRD only once no object
// is stored in it, which the API server enforces through storedVersions.
//
// The Migrator lists every object of such a CRD (paged, whole objects: an
// update must send the object) and writes each back unchanged; the API
// server decodes it, converts it (through the CRD's conversion webhook, the
// operator's own) and encodes it in the storage version. An object already
// stored in the storage version is not written again by the API server: its
// resourceVersion stays. Only when every object was rewritten without error
// is storedVersions patched to [storage version], guarded by JSON patch
// tests on what was read (the storage version, storedVersions), so a
// storage version changed meanwhile is not trimmed away.
//
// It runs once per leadership in the cluster-wide operator of the release
// that installs the CRDs (--migrate-storage, set by the chart with
// crds.install): a namespace-scoped operator can neither list cluster-wide
// nor patch CRDs. It waits for the operator's webhook server, since reading
// an object stored in another version calls the conversion webhook, and it
// writes nothing where storedVersions already is just the storage version.
// It writes in every namespace, those a namespace-scoped operator owns
// included: the write changes nothing in the object, and storedVersions is
// the cluster's, which only a pass over all of them may trim.
// Errors are retried with backoff; transient ones (timeouts, conflicts,
// server errors, a conversion webhook not reachable yet) are only logged,
// others (an update refused as invalid or forbidden) are reported as
// failures in an event and the metrics.
package storagemigration

package storagemigration

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Results of one object's rewrite (objectsTotal).
const (
	// resultRewritten: the API server wrote the object again (its
	// resourceVersion changed): it was held in another version.
	resultRewritten = "rewritten"
	// resultCurrent: the update changed nothing in etcd, the object was
	// already held in the storage version.
	resultCurrent = "current"
	// resultGone: deleted between the list and the update.
	resultGone = "gone"
	// resultRetried: a transient error (a conversion webhook not trusted
	// yet, a timeout) ended the pass at this object; the next pass writes
	// it again. Not a failure.
	resultRetried = "retried"
	// resultFailed: refused for good (invalid, forbidden); someone must act.
	resultFailed = "failed"
)

// Results of one migration pass of a CRD (passesTotal).
const (
	passMigrated = "migrated"
	// passCurrent: storedVersions already is the storage version alone.
	passCurrent = "current"
	passRetried = "retried"
	passFailed  = "failed"
)

var (
	objectsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dynamo_operator_storage_migration_objects_total",
		Help: "Objects the storage migration wrote back, by crd and result: rewritten (held in another version, " +
			"now in the storage version), current (already in the storage version), gone (deleted meanwhile), " +
			"retried (a transient error ended the pass here; the next pass writes it), failed (refused for good).",
	}, []string{"crd", "result"})
	passesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dynamo_operator_storage_migration_passes_total",
		Help: "Storage migration passes over a CRD, by crd and result: migrated (objects rewritten, storedVersions trimmed), " +
			"current (storedVersions already the storage version alone: nothing written), " +
			"retried (a transient error, tried again with backoff), failed (an error that needs someone to act; tried again too).",
	}, []string{"crd", "result"})
	staleVersionsGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dynamo_operator_storage_migration_stale_versions",
		Help: "Versions besides the storage version that a CRD's status.storedVersions lists, as the storage " +
			"migration last read it: 0 once every object is held in the storage version.",
	}, []string{"crd"})
)

func init() {
	metrics.Registry.MustRegister(objectsTotal, passesTotal, staleVersionsGauge)
}

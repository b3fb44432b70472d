// Package metrics holds the operator's own Prometheus metrics, served on
// /metrics beside controller-runtime's (workqueue, client, controller) and
// the admission webhooks' (operator/webhooks):
//
//   - dynamo_operator_reconcile_total and _duration_seconds by resource_type
//     and result, and dynamo_operator_reconcile_errors_total by resource_type
//     and error_type, classified from the API error a reconcile returned
//     (Instrument);
//   - dynamo_operator_resources_total{resource_type,namespace,state}, kept
//     from the informers' events rather than by listing (Inventory): a
//     series exists only while an object of its kind, namespace and state
//     does, and namespaces another operator owns are left out;
//   - dynamo_operator_webhook_certificate_expiry_timestamp_seconds, read from
//     the serving certificate on disk at scrape time (CertificateExpiry).
//
// Everything registers with controller-runtime's metrics.Registry, which the
// manager's metrics server exposes.
package metrics

package storagemigration

import (
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// transient says whether err is expected to pass by itself (or is marked
// retryable), so it is retried
// without being reported as a failure: the API server or a webhook not
// answering yet (the conversion webhook before its CA is injected or its
// endpoints are ready reads as a 500), timeouts, throttling, a conflict that
// outlived its re-reads, or a list continuation that expired. An error the
// API server did not answer with a status (a connection refused) is
// transient too. The rest, an update refused as invalid or forbidden for
// one, needs someone to act.
func transient(err error) bool {
	if r := (retryable{}); errors.As(err, &r) {
		return true
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true
	}
	switch {
	case apierrors.IsConflict(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err),
		apierrors.IsTooManyRequests(err), apierrors.IsServiceUnavailable(err), apierrors.IsInternalError(err),
		apierrors.IsUnexpectedServerError(err), apierrors.IsResourceExpired(err), apierrors.IsGone(err):
		return true
	}
	return status.Status().Code >= http.StatusInternalServerError
}

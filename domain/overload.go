package domain

import (
	"errors"
	"time"
)

// The reasons a delivery is refused for overload (503 with Retry-After),
// so that /metrics and the overview count the refusals by reason and an
// operator tells a tenant's real overload from a hiccup.
const (
	// OverloadQueueFull: the tenant already had the most deliveries one
	// node lets wait for its committer.
	OverloadQueueFull = "queue_full"
	// OverloadBudget: the committer, at the pace its recent groups showed,
	// would not reach the delivery within its budget.
	OverloadBudget = "budget"
	// OverloadMemory: the events waiting for the tenant's committer would
	// pass the bound on what one node holds in memory.
	OverloadMemory = "memory"
	// OverloadLookupGate: too many of the tenant's deliveries already
	// waited for their endpoint lookup.
	OverloadLookupGate = "lookup_gate"
)

// OverloadReasons are the reasons, in the order /metrics and the overview
// list them.
var OverloadReasons = []string{OverloadQueueFull, OverloadBudget, OverloadMemory, OverloadLookupGate}

// overloadError is an EUNAVAILABLE error for overload, with its reason.
type overloadError struct {
	reason string
	err    *Error
}

func (e *overloadError) Error() string { return e.err.Error() }
func (e *overloadError) Unwrap() error { return e.err }

// RefuseOverload returns the EUNAVAILABLE error of a delivery refused for
// reason.
func RefuseOverload(reason, format string, args ...any) error {
	return &overloadError{reason: reason, err: Errorf(EUNAVAILABLE, format, args...)}
}

// OverloadReason is the reason of the first overload refusal in err's
// chain, or "" when err is none.
func OverloadReason(err error) string {
	var e *overloadError
	if errors.As(err, &e) {
		return e.reason
	}
	return ""
}

// OverloadCount is how many deliveries of one tenant were refused for one
// reason (OverloadReasons) within one hour, on one node.
type OverloadCount struct {
	TenantSlug string
	Hour       time.Time // the start of the hour, UTC
	Reason     string
	N          int64
}

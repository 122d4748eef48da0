package domain

import (
	"errors"
	"fmt"
	"time"
)

// Why a delivery was refused for overload (503 with Retry-After), as
// /metrics counts the refusals: an operator tells a tenant's real
// overload from a hiccup by them.
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

// OverloadReasons are the reasons, in the order /metrics lists them.
var OverloadReasons = []string{OverloadQueueFull, OverloadBudget, OverloadMemory, OverloadLookupGate}

// overloadError is an EUNAVAILABLE error for overload, with its reason.
type overloadError struct {
	reason string
	err    *Error
}

func (e *overloadError) Error() string { return e.err.Error() }
func (e *overloadError) Unwrap() error { return e.err }

// Overloaded returns the EUNAVAILABLE error of a delivery refused for
// reason, one of the Overload constants.
func Overloaded(reason, format string, args ...any) error {
	return &overloadError{reason: reason, err: &Error{Code: EUNAVAILABLE, Message: fmt.Sprintf(format, args...)}}
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
// reason within one hour, on one node.
type OverloadCount struct {
	TenantSlug string
	Hour       time.Time // the start of the hour, UTC
	Reason     string
	N          int64
}

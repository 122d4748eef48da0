// Package overload names why a delivery was refused for overload (503
// with Retry-After), so that /metrics and the overview count the refusals
// by reason and an operator tells a tenant's real overload from a hiccup.
package overload

import (
	"errors"

	"github.com/tidemark/tidemark/domain"
)

const (
	// QueueFull: the tenant already had the most deliveries one node lets
	// wait for its committer.
	QueueFull = "queue_full"
	// Budget: the committer, at the pace its recent groups showed, would
	// not reach the delivery within its budget.
	Budget = "budget"
	// Memory: the events waiting for the tenant's committer would pass the
	// bound on what one node holds in memory.
	Memory = "memory"
	// LookupGate: too many of the tenant's deliveries already waited for
	// their endpoint lookup.
	LookupGate = "lookup_gate"
)

// Reasons are the reasons, in the order /metrics and the overview list them.
var Reasons = []string{QueueFull, Budget, Memory, LookupGate}

// refusal is an EUNAVAILABLE error for overload, with its reason.
type refusal struct {
	reason string
	err    *domain.Error
}

func (e *refusal) Error() string { return e.err.Error() }
func (e *refusal) Unwrap() error { return e.err }

// Refuse returns the EUNAVAILABLE error of a delivery refused for reason.
func Refuse(reason, format string, args ...any) error {
	return &refusal{reason: reason, err: domain.Errorf(domain.EUNAVAILABLE, format, args...)}
}

// ReasonOf is the reason of the first overload refusal in err's chain, or
// "" when err is none.
func ReasonOf(err error) string {
	var e *refusal
	if errors.As(err, &e) {
		return e.reason
	}
	return ""
}

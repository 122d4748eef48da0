package domain

import "time"

// OverloadCount is how many deliveries of one tenant were refused for one
// reason (domain/overload) within one hour, on one node.
type OverloadCount struct {
	TenantSlug string
	Hour       time.Time // the start of the hour, UTC
	Reason     string
	N          int64
}

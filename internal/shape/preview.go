package shape

import (
	"context"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
)

// Bounds of a preview.
const (
	DefaultPreviewLimit = 20
	MaxPreviewLimit     = 100
)

// Tried is what a destination with the expressions tried would make of
// one change: whether it is sent, its data when a transform made it, or
// the error it would fail with.
type Tried struct {
	Change stream.Change
	Result
	Error string
}

// Try evaluates filter and transform (compiled as Check compiles them)
// on up to limit of the tenant's changes after position after, or, when
// after is nil, on its newest limit changes; what a destination with them
// would make of each, and the cursor after the last one tried.
func Try(ctx context.Context, feed stream.ChangeFeed, tenantID int64, filter, transform string,
	after *int64, limit int) ([]Tried, int64, error) {
	switch {
	case limit == 0:
		limit = DefaultPreviewLimit
	case limit < 1 || limit > MaxPreviewLimit:
		return nil, 0, domain.Errorf(domain.EINVALID, "limit must be from 1 to %d, got %d", MaxPreviewLimit, limit)
	}
	s, err := Compile(filter, transform)
	if err != nil {
		return nil, 0, err
	}
	var from int64
	if after != nil {
		from = *after
	} else {
		head, err := feed.ChangeHead(ctx, tenantID)
		if err != nil {
			return nil, 0, err
		}
		from = max(0, head-int64(limit))
	}
	changes, err := feed.Changes(ctx, tenantID, stream.ChangeQuery{After: from, Limit: limit})
	if err != nil {
		return nil, 0, err
	}
	tried := make([]Tried, len(changes))
	next := from
	for i, c := range changes {
		tried[i].Change = c
		tried[i].Result, err = s.Change(c)
		if err != nil {
			tried[i].Error = err.Error()
		}
		next = c.Position
	}
	return tried, next, nil
}

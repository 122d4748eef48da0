package maintain

import (
	"context"
	"time"
)

// What the package's external tests reach inside.
var (
	PartitionedTables = partitionedTables
	PartitionName     = partitionName
)

const (
	App                = maintenanceApp
	DetachPartitionSQL = detachPartitionSQL
	CleanupBatch       = cleanupBatch
)

// CleanupInBatches is Cleanup with DELETEs of batch rows.
func (mt *Maintainer) CleanupInBatches(ctx context.Context, now time.Time, retention time.Duration, batch int) (Report, error) {
	return mt.cleanup(ctx, now, retention, batch)
}

var (
	Ident            = ident
	GaveUp           = gaveUp
	IsCatchAll       = isCatchAll
	PartitionPattern = partitionPattern
)

const (
	PartitionDayFormat   = partitionDayFormat
	PartitionBoundFormat = partitionBoundFormat
	CatchAllInfix        = catchAllInfix
)

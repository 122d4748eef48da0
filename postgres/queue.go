package postgres

import (
	"github.com/tidemark/tidemark/postgres/internal/pg"

	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// deliveryRecordedSQL finds one delivery by its primary key, so that only
// the partition of its receipt time is read.
const deliveryRecordedSQL = `
SELECT EXISTS (SELECT FROM deliveries WHERE tenant_id = @tenant_id AND received_at = @received_at AND id = @id)`

// DeliveryRecorded implements domain.QueueStore: a queue worker asks it
// about a message delivered again, whose delivery may have been committed
// by a worker that died before acknowledging it. Ingesting such a delivery
// again would fail on the delivery's primary key, so it is never applied
// twice either way.
func (s *queue) DeliveryRecorded(ctx context.Context, tenantID int64, id string, receivedAt time.Time) (bool, error) {
	var found bool
	err := s.pool.QueryRow(ctx, deliveryRecordedSQL,
		pgx.NamedArgs{"tenant_id": tenantID, "received_at": receivedAt, "id": id}).Scan(&found)
	return found, pg.Translate(err)
}

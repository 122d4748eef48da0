package ingest

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// moveCDCSQL moves a stream's replay id from the one the events were read
// after (migration 00059), counting them, and by minute for the rate: a
// new minute's count starts when the counted one is over, the counted one
// becoming the previous minute's when it was the last. @minute is the
// transaction's minute, computed by the caller: Citus takes no now() nor
// date_trunc in a CASE.
var moveCDCSQL = pg.Named(`
UPDATE cdc_streams SET replay_id = @to, committed_at = coalesce(@committed_at::timestamptz, committed_at), moved_at = now(),
    events = events + @events, gaps_repaired = gaps_repaired + @gaps_repaired, overflows = overflows + @overflows,
    previous_minute_events = CASE
        WHEN minute_start = @minute::timestamptz THEN previous_minute_events
        WHEN minute_start = @previous_minute::timestamptz THEN minute_events
        ELSE 0 END,
    minute_events = CASE WHEN minute_start = @minute::timestamptz THEN minute_events + @events ELSE @events END,
    minute_start = @minute::timestamptz
WHERE tenant_id = @tenant_id AND provider_id = @provider_id AND replay_id IS NOT DISTINCT FROM @from::bytea`)

// IngestCDC implements domain.CDCService: the events' delivery and the
// replay id's move commit together (ingestMoving).
func (w *Writer) IngestCDC(ctx context.Context, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event, m domain.CDCMove) ([]domain.Result, error) {
	return w.ingestMoving(ctx, d, p, events, cursorMove{stmt: moveCDCSQL, clock: true,
		args: pgx.NamedArgs{"tenant_id": m.TenantID, "provider_id": m.ProviderID, "from": m.From, "to": m.To,
			"committed_at": nullTime(m.CommittedAt), "events": m.Events, "gaps_repaired": m.GapsRepaired, "overflows": m.Overflows},
		moved: fmt.Errorf("provider %d, events after replay id %x: %w", m.ProviderID, m.From, domain.ErrCDCMoved)})
}

// nullTime is t, or NULL when zero.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

package apps

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// countUnroutedSQL adds a portal's unrouted events to its minute.
const countUnroutedSQL = `
INSERT INTO app_unrouted (app_id, portal_id, minute, n)
VALUES (@app_id, @portal_id, @minute, @n)
ON CONFLICT (app_id, portal_id, minute) DO UPDATE SET n = app_unrouted.n + EXCLUDED.n`

// keepUnroutedSampleSQL keeps the portal's last sample; an older batch
// arriving late does not replace a newer one.
const keepUnroutedSampleSQL = `
INSERT INTO app_unrouted_samples (app_id, portal_id, received_at, body)
VALUES (@app_id, @portal_id, @at, @body)
ON CONFLICT (app_id, portal_id) DO UPDATE SET received_at = EXCLUDED.received_at, body = EXCLUDED.body
WHERE app_unrouted_samples.received_at <= EXCLUDED.received_at`

// pruneUnroutedSQL drops the portal's counts past the retention, so that
// a portal counted again keeps a bounded number of rows.
const pruneUnroutedSQL = `
DELETE FROM app_unrouted
WHERE app_id = @app_id AND portal_id = @portal_id AND minute < @minute::timestamptz - make_interval(secs => @retention::float8)`

// CountUnrouted implements domain.AppRouting.
func (s *Registry) CountUnrouted(ctx context.Context, appID int64, at time.Time, portals []domain.UnroutedPortal) error {
	if len(portals) == 0 {
		return nil
	}
	minute := at.UTC().Truncate(time.Minute)
	return s.withTx(ctx, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, p := range portals {
			args := pgx.NamedArgs{"app_id": appID, "portal_id": p.PortalID, "minute": minute, "n": p.N, "at": at,
				"body": p.Sample, "retention": domain.AppUnroutedRetention.Seconds()}
			b.Queue(pruneUnroutedSQL, args)
			b.Queue(countUnroutedSQL, args)
			b.Queue(keepUnroutedSampleSQL, args)
		}
		return tx.SendBatch(ctx, b).Close()
	})
}

// appUnroutedSQL sums each portal's counts within the retention, with its
// last sample.
const appUnroutedSQL = `
SELECT u.portal_id, sum(u.n)::bigint, s.received_at, s.body
FROM app_unrouted u JOIN app_unrouted_samples s ON s.app_id = u.app_id AND s.portal_id = u.portal_id
WHERE u.app_id = @app_id AND u.minute >= now() - make_interval(secs => @retention::float8)
GROUP BY u.portal_id, s.received_at, s.body
ORDER BY u.portal_id`

// AppUnrouted implements domain.AppRouting.
func (s *Registry) AppUnrouted(ctx context.Context, appID int64) ([]domain.AppUnrouted, error) {
	rows, err := s.read.Query(ctx, appUnroutedSQL, pgx.NamedArgs{"app_id": appID, "retention": domain.AppUnroutedRetention.Seconds()})
	if err != nil {
		return nil, pg.Translate(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.AppUnrouted, error) {
		var u domain.AppUnrouted
		return u, row.Scan(&u.PortalID, &u.Count, &u.LastSeen, &u.LastSample)
	})
	return out, pg.Translate(err)
}

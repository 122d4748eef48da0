package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/deliverylog"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// previewReplaySQL lists the first deliveries a job would replay, in its
// order; %s holds the filter's conditions.
const previewReplaySQL = `
SELECT ` + deliverylog.Columns + `
FROM deliveries d JOIN providers p ON p.tenant_id = d.tenant_id AND p.id = d.provider_id
WHERE d.tenant_id = @tenant_id AND ` + replayableCond + `%s
ORDER BY d.received_at, d.id
LIMIT @limit`

// PreviewReplay implements domain.ReplayService, on the read pool.
func (q *Jobs) PreviewReplay(ctx context.Context, tenantID int64, f domain.DeliveryFilter, limit int) ([]domain.DeliveryBrief, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	args := pgx.NamedArgs{"tenant_id": tenantID, "upto": time.Now(), "limit": limit}
	rows, err := q.read.Query(ctx, fmt.Sprintf(previewReplaySQL, pg.DeliveryConds(f, args)), args)
	if err != nil {
		return nil, pg.Translate(err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.DeliveryBrief, error) {
		var (
			d        domain.DeliveryBrief
			outcomes []byte
		)
		if err := row.Scan(deliverylog.Scan(&d, &outcomes)...); err != nil {
			return d, err
		}
		return d, json.Unmarshal(outcomes, &d.Outcomes)
	})
	return list, pg.Translate(err)
}

// jobDeliveriesSQL lists the replays a job wrote: the deliveries received
// while it ran (along the primary key) that replay an original its filter
// matches (d, the filter's conditions in %[1]s), the job's page position
// in %[2]s and order in %[3]s (deliverylog.PagedList). A replay by hand of
// such an original while the job ran is listed too.
const jobDeliveriesSQL = `
SELECT ` + deliverylog.Columns + `, ` + deliverylog.ReplayColumns + `
FROM deliveries r
JOIN deliveries d ON d.tenant_id = r.tenant_id AND d.id = r.replay_of AND d.received_at < @upto
JOIN providers p ON p.tenant_id = d.tenant_id AND p.id = d.provider_id
WHERE r.tenant_id = @tenant_id AND r.replay_of IS NOT NULL
  AND r.received_at >= @started AND r.received_at <= @finished%[1]s
  AND r.received_at %[2]s= @at AND (r.received_at, r.id) %[2]s (@at, @id::uuid)
ORDER BY r.received_at %[3]s, r.id %[3]s
LIMIT @limit`

// jobOutcomeCond keeps the replays with an event of an outcome.
const jobOutcomeCond = `EXISTS (SELECT FROM events e WHERE e.tenant_id = r.tenant_id AND e.received_at = r.received_at
                       AND e.delivery_id = r.id AND e.outcome = @replay_outcome)`

// ReplayJobDeliveries implements domain.ReplayService, on the read pool.
func (q *Jobs) ReplayJobDeliveries(ctx context.Context, job domain.ReplayJob, outcome domain.Outcome, page domain.Page) ([]domain.ReplayedDelivery, string, string, error) {
	if outcome != "" && !domain.ValidOutcome(string(outcome)) {
		return nil, "", "", domain.Errorf(domain.EINVALID, "unknown outcome %q", outcome)
	}
	if job.StartedAt.IsZero() {
		return nil, "", "", nil
	}
	args := pgx.NamedArgs{"tenant_id": job.TenantID, "upto": job.Upto, "started": job.StartedAt, "finished": pg.PosInfinity()}
	if !job.FinishedAt.IsZero() {
		args["finished"] = job.FinishedAt
	}
	c := pg.NewConds(args)
	if outcome != "" {
		c.Add(jobOutcomeCond, "replay_outcome", string(outcome))
	}
	conds := pg.DeliveryConds(job.Filter, args) + c.SQL("  ")
	return deliverylog.PagedList(ctx, q.read, jobDeliveriesSQL, conds, args, page,
		func(row pgx.CollectableRow) (domain.ReplayedDelivery, error) {
			var (
				d      domain.ReplayedDelivery
				o1, o2 []byte
			)
			if err := row.Scan(append(deliverylog.Scan(&d.Original, &o1), deliverylog.Scan(&d.Replay, &o2)...)...); err != nil {
				return d, err
			}
			if err := json.Unmarshal(o1, &d.Original.Outcomes); err != nil {
				return d, err
			}
			return d, json.Unmarshal(o2, &d.Replay.Outcomes)
		},
		func(d domain.ReplayedDelivery) (time.Time, string) { return d.Replay.ReceivedAt, d.Replay.ID })
}

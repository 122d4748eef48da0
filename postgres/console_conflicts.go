package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
)

var _ domain.ConflictService = (*Store)(nil)

// queueColumns are conflictColumns without the snapshots, which the queue
// does not show; scanned by scanQueueConflict in this order.
const queueColumns = `c.id, p.name, c.object_type, c.object_id, c.revision, c.accepted_event_id,
       c.conflicting_event_id, c.status, c.note, c.resolved_by, c.resolved_at, c.detected_at`

// The window count is taken before the LIMIT, so the page learns how many
// open conflicts it does not show.
const openQueueSQL = `
SELECT ` + queueColumns + `, count(*) OVER ()
FROM conflicts c JOIN providers p ON p.tenant_id = c.tenant_id AND p.id = c.provider_id
WHERE c.tenant_id = @tenant_id AND c.status = 'open'
ORDER BY c.id
LIMIT @limit`

const resolvedQueueSQL = `
SELECT ` + queueColumns + `
FROM conflicts c JOIN providers p ON p.tenant_id = c.tenant_id AND p.id = c.provider_id
WHERE c.tenant_id = @tenant_id AND c.status IN ('kept', 'adopted')
ORDER BY c.resolved_at DESC, c.id DESC
LIMIT @limit`

func scanQueueConflict(row pgx.Row, extra ...any) (domain.Conflict, error) {
	var (
		c          domain.Conflict
		resolvedBy *string
	)
	err := row.Scan(append([]any{&c.ID, &c.Provider, &c.ObjectType, &c.ObjectID, &c.Revision, &c.AcceptedEventID,
		&c.ConflictingEventID, &c.Status, &c.Note, &resolvedBy, &c.ResolvedAt, &c.DetectedAt}, extra...)...)
	if resolvedBy != nil {
		c.ResolvedBy = *resolvedBy
	}
	return c, err
}

// ConflictQueue implements domain.ConflictService.
func (s *Store) ConflictQueue(ctx context.Context, tenantID int64, openLimit, resolvedLimit int) (domain.ConflictQueue, error) {
	var q domain.ConflictQueue
	rows, err := s.pool.Query(ctx, openQueueSQL, pgx.NamedArgs{"tenant_id": tenantID, "limit": openLimit})
	if err != nil {
		return q, translate(err)
	}
	q.Open, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Conflict, error) {
		return scanQueueConflict(row, &q.OpenTotal)
	})
	if err != nil {
		return q, translate(err)
	}
	rows, err = s.pool.Query(ctx, resolvedQueueSQL, pgx.NamedArgs{"tenant_id": tenantID, "limit": resolvedLimit})
	if err != nil {
		return q, translate(err)
	}
	q.Resolved, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Conflict, error) {
		return scanQueueConflict(row)
	})
	return q, translate(err)
}

const conflictDetailSQL = `
SELECT ` + conflictColumns + `,
       r.revision, r.snapshot, r.application_count, r.last_applied_event, r.created_at, r.updated_at
FROM conflicts c
JOIN providers p ON p.tenant_id = c.tenant_id AND p.id = c.provider_id
LEFT JOIN records r ON r.tenant_id = c.tenant_id AND r.provider_id = c.provider_id
    AND r.object_type = c.object_type AND r.object_id = c.object_id
WHERE c.tenant_id = @tenant_id AND c.id = @id`

// ConflictDetail implements domain.ConflictService.
func (s *Store) ConflictDetail(ctx context.Context, tenantID, conflictID int64) (domain.ConflictDetail, error) {
	var (
		d                domain.ConflictDetail
		revision         *int64
		snapshot         json.RawMessage
		count            *int
		lastEvent        *string
		created, updated *time.Time
	)
	row := s.pool.QueryRow(ctx, conflictDetailSQL, pgx.NamedArgs{"tenant_id": tenantID, "id": conflictID})
	c, err := scanConflict(scanSuffix{row: row, rest: []any{&revision, &snapshot, &count, &lastEvent, &created, &updated}})
	if errors.Is(err, pgx.ErrNoRows) {
		return d, notFound("conflict %d not found", conflictID)
	}
	if err != nil {
		return d, translate(err)
	}
	d.Conflict = c
	if revision != nil {
		d.Current = &domain.Record{Provider: c.Provider, ObjectType: c.ObjectType, ObjectID: c.ObjectID,
			Revision: *revision, Snapshot: snapshot, ApplicationCount: *count, LastAppliedEvent: *lastEvent,
			CreatedAt: *created, UpdatedAt: *updated}
	}
	return d, nil
}

// scanSuffix scans a row whose last columns follow the ones scanConflict
// reads.
type scanSuffix struct {
	row  pgx.Row
	rest []any
}

func (s scanSuffix) Scan(dest ...any) error {
	return s.row.Scan(append(dest, s.rest...)...)
}

// timelineRecordSQL answers one row when the provider exists, with the
// record's columns NULL when it has no record.
const timelineRecordSQL = `
SELECT p.id, r.revision, r.snapshot, r.application_count, r.last_applied_event, r.created_at, r.updated_at
FROM providers p
LEFT JOIN records r ON r.tenant_id = p.tenant_id AND r.provider_id = p.id
    AND r.object_type = @object_type AND r.object_id = @object_id
WHERE p.tenant_id = @tenant_id AND p.name = @provider`

// timelineSQL merges the latest accepted revisions (each with the snapshot
// accepted before it, by application order) and the latest events that were
// not applied, newest first. Events of one delivery keep their order by
// seq; an accepted revision finds its seq through its applied event.
const timelineSQL = `
SELECT accepted, at, outcome, revision, event_id, reason, conflict_id, snapshot, previous
FROM (
    (SELECT true AS accepted, a.applied_at AS at, a.delivery_id, e.seq, NULL::text AS outcome, a.revision,
            a.event_id, NULL::text AS reason, a.conflict_id, a.snapshot, a.previous
     FROM (
         SELECT id, applied_at, delivery_id, revision, event_id, conflict_id, snapshot,
                lag(snapshot) OVER (ORDER BY id) AS previous
         FROM accepted_revisions
         WHERE tenant_id = @tenant_id AND provider_id = @provider_id
           AND object_type = @object_type AND object_id = @object_id
         ORDER BY applied_at DESC, id DESC
         LIMIT @limit
     ) a
     LEFT JOIN LATERAL (
         SELECT seq FROM events e
         WHERE e.tenant_id = @tenant_id AND e.received_at = a.applied_at AND e.delivery_id = a.delivery_id
           AND e.event_id = a.event_id AND e.outcome = 'applied'
         LIMIT 1
     ) e ON true)
    UNION ALL
    (SELECT false, e.received_at, e.delivery_id, e.seq, e.outcome, e.revision,
            e.event_id, e.reason, e.conflict_id, NULL::jsonb, NULL::jsonb
     FROM events e
     WHERE e.tenant_id = @tenant_id AND e.provider_id = @provider_id
       AND e.object_type = @object_type AND e.object_id = @object_id AND e.outcome = ANY (@outcomes::text[])
     ORDER BY e.received_at DESC, e.delivery_id DESC, e.seq DESC
     LIMIT @limit)
) t
ORDER BY at DESC, delivery_id DESC NULLS FIRST, seq DESC NULLS FIRST
LIMIT @limit`

func timelineOutcomes() []string {
	out := make([]string, len(domain.TimelineOutcomes))
	for i, o := range domain.TimelineOutcomes {
		out[i] = string(o)
	}
	return out
}

// RecordTimeline implements domain.ConflictService.
func (s *Store) RecordTimeline(ctx context.Context, tenantID int64, ref domain.RecordRef, limit int) (domain.Timeline, error) {
	tl := domain.Timeline{Ref: ref}
	args := refArgs(tenantID, ref)
	var (
		providerID       int64
		revision         *int64
		snapshot         json.RawMessage
		count            *int
		lastEvent        *string
		created, updated *time.Time
	)
	err := s.pool.QueryRow(ctx, timelineRecordSQL, args).
		Scan(&providerID, &revision, &snapshot, &count, &lastEvent, &created, &updated)
	if errors.Is(err, pgx.ErrNoRows) {
		return tl, recordNotFound(ref)
	}
	if err != nil {
		return tl, translate(err)
	}
	if revision != nil {
		tl.Record = &domain.Record{Provider: ref.Provider, ObjectType: ref.ObjectType, ObjectID: ref.ObjectID,
			Revision: *revision, Snapshot: snapshot, ApplicationCount: *count, LastAppliedEvent: *lastEvent,
			CreatedAt: *created, UpdatedAt: *updated}
	}

	args["provider_id"], args["limit"], args["outcomes"] = providerID, limit, timelineOutcomes()
	rows, err := s.pool.Query(ctx, timelineSQL, args)
	if err != nil {
		return tl, translate(err)
	}
	tl.Entries, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.TimelineEntry, error) {
		var (
			e                  domain.TimelineEntry
			outcome, reason    *string
			conflictID         *int64
			snapshot, previous json.RawMessage
		)
		err := row.Scan(&e.Accepted, &e.At, &outcome, &e.Revision, &e.EventID, &reason, &conflictID, &snapshot, &previous)
		if outcome != nil {
			e.Outcome = domain.Outcome(*outcome)
		}
		if reason != nil {
			e.Reason = *reason
		}
		if conflictID != nil {
			e.ConflictID = *conflictID
		}
		e.Snapshot, e.Previous = snapshot, previous
		return e, err
	})
	if err != nil {
		return tl, translate(err)
	}
	if tl.Record == nil && len(tl.Entries) == 0 {
		return tl, recordNotFound(ref)
	}
	return tl, nil
}

const timelineProvidersSQL = `SELECT name FROM providers WHERE tenant_id = @tenant_id ORDER BY name`

// TimelineProviders implements domain.ConflictService.
func (s *Store) TimelineProviders(ctx context.Context, tenantID int64) ([]string, error) {
	rows, err := s.pool.Query(ctx, timelineProvidersSQL, pgx.NamedArgs{"tenant_id": tenantID})
	if err != nil {
		return nil, translate(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return names, translate(err)
}

// contactProvidersSQL checks each provider through the primary key of
// records and the events_record index.
const contactProvidersSQL = `
SELECT p.name FROM providers p
WHERE p.tenant_id = @tenant_id AND (
    EXISTS (SELECT FROM records r
            WHERE r.tenant_id = @tenant_id AND r.provider_id = p.id
              AND r.object_type = @object_type AND r.object_id = @object_id)
    OR EXISTS (SELECT FROM events e
               WHERE e.tenant_id = @tenant_id AND e.provider_id = p.id AND e.object_type = @object_type
                 AND e.object_id = @object_id AND e.outcome = ANY (@outcomes::text[])))
ORDER BY p.name`

// ContactProviders implements domain.ConflictService.
func (s *Store) ContactProviders(ctx context.Context, tenantID int64, contactID string) ([]string, error) {
	rows, err := s.pool.Query(ctx, contactProvidersSQL, pgx.NamedArgs{"tenant_id": tenantID,
		"object_type": domain.ContactType, "object_id": contactID, "outcomes": timelineOutcomes()})
	if err != nil {
		return nil, translate(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return names, translate(err)
}

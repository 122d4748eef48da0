package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// timelineRecordSQL answers one row when the provider exists, with the
// record's columns NULL when it has no record.
const timelineRecordSQL = `
SELECT p.id, r.revision, r.snapshot, r.application_count, r.last_applied_event, r.created_at, r.updated_at,
       r.deleted_revision, r.reset_at
FROM providers p
LEFT JOIN records r ON r.tenant_id = p.tenant_id AND r.provider_id = p.id
    AND r.object_type = @object_type AND r.object_id = @object_id
WHERE p.tenant_id = @tenant_id AND p.name = @provider`

// timelineSQL merges the latest accepted revisions (each with the snapshot
// accepted before it, by application order) and the latest events that were
// not applied, newest first, each with whether its delivery was a replay
// and where it came from. Events of one delivery keep their order by
// seq; an accepted revision finds its seq through its applied event.
const timelineSQL = `
SELECT t.accepted, t.at, t.outcome, t.revision, t.event_id, t.reason, t.conflict_id, t.snapshot, t.previous,
       coalesce(d.replay_of IS NOT NULL, false), coalesce(d.source, '')
FROM (
    (SELECT true AS accepted, a.applied_at AS at, a.delivery_id, e.seq, NULL::text AS outcome, a.revision,
            a.event_id, NULL::text AS reason, a.conflict_id, a.snapshot, a.previous
     FROM (
         SELECT id, applied_at, delivery_id, revision, event_id, conflict_id, snapshot,
                lag(snapshot) OVER (ORDER BY applied_at, id) AS previous
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
LEFT JOIN deliveries d ON d.tenant_id = @tenant_id AND d.received_at = t.at AND d.id = t.delivery_id
ORDER BY t.at DESC, t.delivery_id DESC NULLS FIRST, t.seq DESC NULLS FIRST
LIMIT @limit`

// timelineBadgesSQL counts the record's open conflicts and recent stale
// events, as the directory's badges do.
const timelineBadgesSQL = `
SELECT (SELECT count(*) FROM conflicts c
        WHERE c.tenant_id = @tenant_id AND c.provider_id = @provider_id AND c.object_type = @object_type
          AND c.object_id = @object_id AND c.status = 'open'),
       (SELECT count(*) FROM events e
        WHERE e.tenant_id = @tenant_id AND e.provider_id = @provider_id AND e.object_type = @object_type
          AND e.object_id = @object_id AND e.outcome = 'stale' AND e.received_at >= @stale_since)`

func timelineOutcomes() []string {
	out := make([]string, len(domain.TimelineOutcomes))
	for i, o := range domain.TimelineOutcomes {
		out[i] = string(o)
	}
	return out
}

// RecordTimeline implements domain.ConflictService.
func (s *records) RecordTimeline(ctx context.Context, tenantID int64, ref domain.RecordRef, limit int) (domain.Timeline, error) {
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
	var (
		deleted *int64
		resetAt *time.Time
	)
	err := s.read.QueryRow(ctx, timelineRecordSQL, args).
		Scan(&providerID, &revision, &snapshot, &count, &lastEvent, &created, &updated, &deleted, &resetAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return tl, recordNotFound(ref)
	}
	if err != nil {
		return tl, pg.Translate(err)
	}
	if revision != nil {
		tl.Record = &domain.Record{Provider: ref.Provider, ObjectType: ref.ObjectType, ObjectID: ref.ObjectID,
			Revision: *revision, Snapshot: snapshot, ApplicationCount: *count, LastAppliedEvent: *lastEvent,
			CreatedAt: *created, UpdatedAt: *updated, DeletedRevision: deleted, ResetAt: resetAt}
	}

	args["provider_id"], args["limit"], args["outcomes"] = providerID, limit, timelineOutcomes()
	args["stale_since"] = time.Now().Add(-domain.StaleBadgeWindow)
	if err := s.read.QueryRow(ctx, timelineBadgesSQL, args).Scan(&tl.Badges.OpenConflicts, &tl.Badges.StaleEvents); err != nil {
		return tl, pg.Translate(err)
	}
	tl.Badges.Deleted = deleted != nil
	rows, err := s.read.Query(ctx, timelineSQL, args)
	if err != nil {
		return tl, pg.Translate(err)
	}
	tl.Entries, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.TimelineEntry, error) {
		var (
			e                  domain.TimelineEntry
			outcome, reason    *string
			conflictID         *int64
			snapshot, previous json.RawMessage
		)
		err := row.Scan(&e.Accepted, &e.At, &outcome, &e.Revision, &e.EventID, &reason, &conflictID, &snapshot, &previous,
			&e.Replay, &e.Source)
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
		return tl, pg.Translate(err)
	}
	if tl.Entries, err = s.withRepairs(ctx, tenantID, ref, tl.Entries, limit); err != nil {
		return tl, err
	}
	if tl.Record == nil && len(tl.Entries) == 0 {
		return tl, recordNotFound(ref)
	}
	return tl, nil
}

// timelineRepairsSQL lists the record's resets and erasures, newest first,
// from the audit log (index audit_log_repairs).
const timelineRepairsSQL = `
SELECT at, action, actor FROM audit_log
WHERE tenant_id = @tenant_id AND target = ANY(@targets::text[]) AND action IN ('` + domain.ActionRecordReset + `', '` + domain.ActionRecordErase + `')
ORDER BY at DESC
LIMIT @limit`

// withRepairs merges the record's resets and erasures into its timeline
// entries, newest first, keeping the latest limit.
func (s *records) withRepairs(ctx context.Context, tenantID int64, ref domain.RecordRef, entries []domain.TimelineEntry, limit int) ([]domain.TimelineEntry, error) {
	h, err := s.ids.ForReading(ctx, s.read)
	if err != nil {
		return nil, err
	}
	rows, err := s.read.Query(ctx, timelineRepairsSQL, pgx.NamedArgs{"tenant_id": tenantID,
		"targets": ref.AuditTargets(h), "limit": limit})
	if err != nil {
		return nil, pg.Translate(err)
	}
	repairs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.TimelineEntry, error) {
		var e domain.TimelineEntry
		return e, row.Scan(&e.At, &e.Repair, &e.By)
	})
	if err != nil || len(repairs) == 0 {
		return entries, pg.Translate(err)
	}
	merged := make([]domain.TimelineEntry, 0, len(entries)+len(repairs))
	for len(entries) > 0 || len(repairs) > 0 {
		if len(repairs) == 0 || len(entries) > 0 && !repairs[0].At.After(entries[0].At) {
			merged, entries = append(merged, entries[0]), entries[1:]
		} else {
			merged, repairs = append(merged, repairs[0]), repairs[1:]
		}
	}
	return merged[:min(len(merged), limit)], nil
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
func (s *records) ContactProviders(ctx context.Context, tenantID int64, contactID string) ([]string, error) {
	rows, err := s.read.Query(ctx, contactProvidersSQL, pgx.NamedArgs{"tenant_id": tenantID,
		"object_type": domain.ContactType, "object_id": contactID, "outcomes": timelineOutcomes()})
	if err != nil {
		return nil, pg.Translate(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return names, pg.Translate(err)
}

const recordSQL = `
SELECT r.revision, r.snapshot, r.application_count, r.last_applied_event, r.created_at, r.updated_at,
       r.deleted_revision, r.reset_at
FROM records r JOIN providers p ON p.tenant_id = r.tenant_id AND p.id = r.provider_id
WHERE r.tenant_id = @tenant_id AND p.name = @provider AND r.object_type = @object_type AND r.object_id = @object_id`

// Record implements domain.RecordService: the current snapshot of one
// record, or an ENOTFOUND error.
func (s *records) Record(ctx context.Context, tenantID int64, ref domain.RecordRef) (domain.Record, error) {
	rec := domain.Record{Provider: ref.Provider, ObjectType: ref.ObjectType, ObjectID: ref.ObjectID}
	err := s.read.QueryRow(ctx, recordSQL, refArgs(tenantID, ref)).
		Scan(&rec.Revision, &rec.Snapshot, &rec.ApplicationCount, &rec.LastAppliedEvent, &rec.CreatedAt, &rec.UpdatedAt,
			&rec.DeletedRevision, &rec.ResetAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return rec, recordNotFound(ref)
	}
	return rec, pg.Translate(err)
}

func refArgs(tenantID int64, ref domain.RecordRef) pgx.NamedArgs {
	return pgx.NamedArgs{"tenant_id": tenantID, "provider": ref.Provider,
		"object_type": ref.ObjectType, "object_id": ref.ObjectID}
}

func recordNotFound(ref domain.RecordRef) error {
	return pg.NotFound("%s %q of provider %q not found", ref.ObjectType, ref.ObjectID, ref.Provider)
}

// revisionsSQL answers one row per revision of the page, or a single row of
// NULLs when the record exists but the page is empty; no row at all means
// there is no such record.
const revisionsSQL = `
SELECT a.id, a.revision, a.event_id, a.snapshot, a.applied_at, a.conflict_id
FROM records r
JOIN providers p ON p.tenant_id = r.tenant_id AND p.id = r.provider_id
LEFT JOIN LATERAL (
    SELECT id, revision, event_id, snapshot, applied_at, conflict_id FROM accepted_revisions a
    WHERE a.tenant_id = @tenant_id AND a.provider_id = r.provider_id
      AND a.object_type = r.object_type AND a.object_id = r.object_id
      AND (a.revision, a.id) < (@after_revision, @after_id)
    ORDER BY a.revision DESC, a.id DESC
    LIMIT @limit
) a ON true
WHERE r.tenant_id = @tenant_id AND p.name = @provider AND r.object_type = @object_type AND r.object_id = @object_id
ORDER BY a.revision DESC, a.id DESC`

type revisionCursor struct {
	Revision int64 `json:"r"`
	ID       int64 `json:"i"`
}

// Revisions implements domain.RecordService: the accepted snapshots of a
// record, newest first, and the cursor of the next page ("" on the last).
// An absent record is an ENOTFOUND error, a malformed cursor EINVALID.
func (s *records) Revisions(ctx context.Context, tenantID int64, ref domain.RecordRef, page domain.Page) ([]domain.Revision, string, error) {
	after := revisionCursor{Revision: math.MaxInt64, ID: math.MaxInt64}
	if err := pg.DecodeCursor(page.Cursor, &after); err != nil {
		return nil, "", err
	}
	limit := pg.PageLimit(page)
	args := refArgs(tenantID, ref)
	args["after_revision"], args["after_id"], args["limit"] = after.Revision, after.ID, limit+1

	rows, err := s.read.Query(ctx, revisionsSQL, args)
	if err != nil {
		return nil, "", pg.Translate(err)
	}
	found := false
	var revs []domain.Revision
	for rows.Next() {
		found = true
		var (
			id, rev, conflictID *int64
			eventID             *string
			snapshot            json.RawMessage
			appliedAt           *time.Time
		)
		if err := rows.Scan(&id, &rev, &eventID, &snapshot, &appliedAt, &conflictID); err != nil {
			return nil, "", pg.Translate(err)
		}
		if id == nil {
			continue // the record exists; the page is empty
		}
		r := domain.Revision{ID: *id, Revision: *rev, EventID: *eventID, Snapshot: snapshot, AppliedAt: *appliedAt}
		if conflictID != nil {
			r.ConflictID = *conflictID
		}
		revs = append(revs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, "", pg.Translate(err)
	}
	if !found {
		return nil, "", recordNotFound(ref)
	}
	revs, more := pg.Trim(revs, limit)
	if !more {
		return revs, "", nil
	}
	last := revs[len(revs)-1]
	return revs, pg.EncodeCursor(revisionCursor{Revision: last.Revision, ID: last.ID}), nil
}

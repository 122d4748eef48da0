package postgres

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/tidemark/tidemark/domain"
)

var _ domain.QueryService = (*Store)(nil)

// Lists are paginated by keyset: every query fetches rows strictly after the
// cursor's sort key, one row more than the page so that the caller learns
// whether another page follows. Without a cursor the key starts at a value
// above every row, so the row comparison stays usable as an index bound.

// tokenSQL resolves and touches an API token in one statement.
const tokenSQL = `
UPDATE api_tokens k SET last_used_at = now()
FROM tenants t
WHERE k.token_hash = $1 AND k.revoked_at IS NULL AND t.id = k.tenant_id
RETURNING t.id, t.slug, t.name, t.created_at`

// TenantForToken implements domain.QueryService. An unknown or revoked token
// is an EUNAUTHORIZED error.
func (s *Store) TenantForToken(ctx context.Context, token string) (domain.Tenant, error) {
	var t domain.Tenant
	err := s.pool.QueryRow(ctx, tokenSQL, tokenHash(token)).Scan(&t.ID, &t.Slug, &t.Name, &t.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, domain.Errorf(domain.EUNAUTHORIZED, "invalid or revoked API token")
	}
	return t, translate(err)
}

const recordSQL = `
SELECT r.revision, r.snapshot, r.application_count, r.last_applied_event, r.created_at, r.updated_at
FROM records r JOIN providers p ON p.tenant_id = r.tenant_id AND p.id = r.provider_id
WHERE r.tenant_id = @tenant_id AND p.name = @provider AND r.object_type = @object_type AND r.object_id = @object_id`

// Record implements domain.QueryService: the current snapshot of one
// record, or an ENOTFOUND error.
func (s *Store) Record(ctx context.Context, tenantID int64, ref domain.RecordRef) (domain.Record, error) {
	rec := domain.Record{Provider: ref.Provider, ObjectType: ref.ObjectType, ObjectID: ref.ObjectID}
	err := s.pool.QueryRow(ctx, recordSQL, refArgs(tenantID, ref)).
		Scan(&rec.Revision, &rec.Snapshot, &rec.ApplicationCount, &rec.LastAppliedEvent, &rec.CreatedAt, &rec.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return rec, recordNotFound(ref)
	}
	return rec, translate(err)
}

func refArgs(tenantID int64, ref domain.RecordRef) pgx.NamedArgs {
	return pgx.NamedArgs{"tenant_id": tenantID, "provider": ref.Provider,
		"object_type": ref.ObjectType, "object_id": ref.ObjectID}
}

func recordNotFound(ref domain.RecordRef) error {
	return notFound("%s %q of provider %q not found", ref.ObjectType, ref.ObjectID, ref.Provider)
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

// Revisions implements domain.QueryService: the accepted snapshots of a
// record, newest first, and the cursor of the next page ("" on the last).
// An absent record is an ENOTFOUND error, a malformed cursor EINVALID.
func (s *Store) Revisions(ctx context.Context, tenantID int64, ref domain.RecordRef, page domain.Page) ([]domain.Revision, string, error) {
	after := revisionCursor{Revision: math.MaxInt64, ID: math.MaxInt64}
	if err := decodeCursor(page.Cursor, &after); err != nil {
		return nil, "", err
	}
	limit := pageLimit(page)
	args := refArgs(tenantID, ref)
	args["after_revision"], args["after_id"], args["limit"] = after.Revision, after.ID, limit+1

	rows, err := s.pool.Query(ctx, revisionsSQL, args)
	if err != nil {
		return nil, "", translate(err)
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
			return nil, "", translate(err)
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
		return nil, "", translate(err)
	}
	if !found {
		return nil, "", recordNotFound(ref)
	}
	revs, more := trim(revs, limit)
	if !more {
		return revs, "", nil
	}
	last := revs[len(revs)-1]
	return revs, encodeCursor(revisionCursor{Revision: last.Revision, ID: last.ID}), nil
}

const eventsSQL = `
SELECT e.delivery_id::text, e.seq, e.event_id, p.name, e.object_type, e.action, e.object_id, e.revision,
       e.outcome, e.reason, e.received_at, e.conflict_id
FROM events e JOIN providers p ON p.tenant_id = e.tenant_id AND p.id = e.provider_id
WHERE e.tenant_id = @tenant_id
  AND (e.received_at, e.delivery_id, e.seq) < (@after_at, @after_delivery::uuid, @after_seq)
  AND (@provider::text IS NULL OR p.name = @provider)
  AND (@object_type::text IS NULL OR e.object_type = @object_type)
  AND (@object_id::text IS NULL OR e.object_id = @object_id)
  AND (@outcome::text IS NULL OR e.outcome = @outcome)
ORDER BY e.received_at DESC, e.delivery_id DESC, e.seq DESC
LIMIT @limit`

type eventCursor struct {
	ReceivedAt time.Time `json:"t"`
	DeliveryID string    `json:"d"`
	Seq        int       `json:"s"`
}

// eventPageStart reads an event-log cursor: where the page starts, newest
// first. Without a cursor the page starts above every event.
func eventPageStart(page domain.Page) (afterAt any, after eventCursor, err error) {
	after = eventCursor{DeliveryID: uuid.Max.String(), Seq: math.MaxInt32}
	if page.Cursor == "" {
		return pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true}, after, nil
	}
	if err := decodeCursor(page.Cursor, &after); err != nil {
		return nil, after, err
	}
	if _, err := uuid.Parse(after.DeliveryID); err != nil || after.ReceivedAt.IsZero() {
		return nil, after, invalidCursor()
	}
	return after.ReceivedAt, after, nil
}

// Events implements domain.QueryService: the event log, newest first,
// narrowed by f, and the cursor of the next page ("" on the last). A
// malformed cursor is an EINVALID error.
func (s *Store) Events(ctx context.Context, tenantID int64, f domain.EventFilter, page domain.Page) ([]domain.LoggedEvent, string, error) {
	afterAt, after, err := eventPageStart(page)
	if err != nil {
		return nil, "", err
	}
	limit := pageLimit(page)
	rows, err := s.pool.Query(ctx, eventsSQL, pgx.NamedArgs{
		"tenant_id": tenantID, "after_at": afterAt, "after_delivery": after.DeliveryID, "after_seq": after.Seq,
		"provider": nullString(f.Provider), "object_type": nullString(f.ObjectType),
		"object_id": nullString(f.ObjectID), "outcome": nullString(string(f.Outcome)), "limit": limit + 1,
	})
	if err != nil {
		return nil, "", translate(err)
	}
	events, err := pgx.CollectRows(rows, scanLoggedEvent)
	if err != nil {
		return nil, "", translate(err)
	}
	events, more := trim(events, limit)
	if !more {
		return events, "", nil
	}
	last := events[len(events)-1]
	return events, encodeCursor(eventCursor{ReceivedAt: last.ReceivedAt, DeliveryID: last.DeliveryID, Seq: last.Seq}), nil
}

// statsSQL answers whether the named provider exists (always true when no
// provider is named) and the all-time counts by outcome.
const statsSQL = `
WITH prov AS (
    SELECT id FROM providers WHERE tenant_id = @tenant_id AND name = @provider
)
SELECT @provider::text IS NULL OR EXISTS (SELECT FROM prov),
       coalesce((SELECT json_object_agg(outcome, n) FROM (
           SELECT outcome, sum(n)::bigint AS n FROM outcome_counters
           WHERE tenant_id = @tenant_id AND (@provider::text IS NULL OR provider_id IN (SELECT id FROM prov))
           GROUP BY outcome) c), '{}')`

// Stats implements domain.QueryService. Every outcome is present, zeros
// included; an unknown provider is an ENOTFOUND error.
func (s *Store) Stats(ctx context.Context, tenantID int64, provider string) (map[domain.Outcome]int64, error) {
	var (
		exists bool
		counts map[string]int64
	)
	err := s.pool.QueryRow(ctx, statsSQL, pgx.NamedArgs{"tenant_id": tenantID, "provider": nullString(provider)}).
		Scan(&exists, &counts)
	if err != nil {
		return nil, translate(err)
	}
	if !exists {
		return nil, notFound("provider %q not found", provider)
	}
	stats := make(map[domain.Outcome]int64, len(domain.Outcomes))
	for _, o := range domain.Outcomes {
		stats[o] = counts[string(o)]
	}
	return stats, nil
}

// conflictColumns are scanned by scanConflict, in this order.
const conflictColumns = `c.id, p.name, c.object_type, c.object_id, c.revision, c.accepted_event_id, c.accepted_snapshot,
       c.conflicting_event_id, c.conflicting_snapshot, c.status, c.note, c.resolved_by, c.resolved_at, c.detected_at`

const conflictsSQL = `
SELECT ` + conflictColumns + `
FROM conflicts c JOIN providers p ON p.tenant_id = c.tenant_id AND p.id = c.provider_id
WHERE c.tenant_id = @tenant_id AND c.id < @after_id AND (@status::text IS NULL OR c.status = @status)
ORDER BY c.id DESC
LIMIT @limit`

func scanConflict(row pgx.Row) (domain.Conflict, error) {
	var (
		c          domain.Conflict
		resolvedBy *string
	)
	err := row.Scan(&c.ID, &c.Provider, &c.ObjectType, &c.ObjectID, &c.Revision, &c.AcceptedEventID,
		&c.AcceptedSnapshot, &c.ConflictingEventID, &c.ConflictingSnapshot, &c.Status, &c.Note, &resolvedBy,
		&c.ResolvedAt, &c.DetectedAt)
	if resolvedBy != nil {
		c.ResolvedBy = *resolvedBy
	}
	return c, err
}

type conflictCursor struct {
	ID int64 `json:"i"`
}

// Conflicts implements domain.QueryService: the conflicts with that status
// ("" for all), newest first, and the cursor of the next page ("" on the
// last). A malformed cursor is an EINVALID error.
func (s *Store) Conflicts(ctx context.Context, tenantID int64, status string, page domain.Page) ([]domain.Conflict, string, error) {
	after := conflictCursor{ID: math.MaxInt64}
	if err := decodeCursor(page.Cursor, &after); err != nil {
		return nil, "", err
	}
	limit := pageLimit(page)
	rows, err := s.pool.Query(ctx, conflictsSQL, pgx.NamedArgs{"tenant_id": tenantID, "after_id": after.ID,
		"status": nullString(status), "limit": limit + 1})
	if err != nil {
		return nil, "", translate(err)
	}
	conflicts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Conflict, error) {
		return scanConflict(row)
	})
	if err != nil {
		return nil, "", translate(err)
	}
	conflicts, more := trim(conflicts, limit)
	if !more {
		return conflicts, "", nil
	}
	return conflicts, encodeCursor(conflictCursor{ID: conflicts[len(conflicts)-1].ID}), nil
}

const lockConflictSQL = `
SELECT c.provider_id, ` + conflictColumns + `
FROM conflicts c JOIN providers p ON p.tenant_id = c.tenant_id AND p.id = c.provider_id
WHERE c.tenant_id = @tenant_id AND c.id = @id
FOR UPDATE OF c`

// adoptSQL applies the conflicting snapshot only while the record is still
// at the conflict's revision, and writes the operator's decision into the
// record's timeline.
const adoptSQL = `
WITH adopted AS (
    UPDATE records r SET snapshot = c.conflicting_snapshot, application_count = r.application_count + 1,
        last_applied_event = c.conflicting_event_id, last_applied_delivery = NULL, last_applied_seq = NULL,
        updated_at = now()
    FROM conflicts c
    WHERE c.tenant_id = @tenant_id AND c.id = @id
      AND r.tenant_id = @tenant_id AND r.provider_id = c.provider_id AND r.object_type = c.object_type
      AND r.object_id = c.object_id AND r.revision = c.revision
    RETURNING r.provider_id, r.object_type, r.object_id, r.revision, r.snapshot, r.last_applied_event
)
INSERT INTO accepted_revisions (tenant_id, provider_id, object_type, object_id, revision, snapshot, event_id, conflict_id)
SELECT @tenant_id, provider_id, object_type, object_id, revision, snapshot, last_applied_event, @id FROM adopted`

const currentRevisionSQL = `
SELECT revision FROM records
WHERE tenant_id = @tenant_id AND provider_id = @provider_id AND object_type = @object_type AND object_id = @object_id`

const resolveSQL = `
WITH resolved AS (
    UPDATE conflicts SET status = @status, note = @note, resolved_by = @by, resolved_at = now()
    WHERE tenant_id = @tenant_id AND id = @id
    RETURNING *
)
SELECT ` + conflictColumns + `
FROM resolved c JOIN providers p ON p.tenant_id = c.tenant_id AND p.id = c.provider_id`

// ResolveConflict implements domain.QueryService. An unknown resolution is
// an EINVALID error, an absent conflict ENOTFOUND, and a conflict already
// resolved, or an adoption the record has moved past, ECONFLICT.
func (s *Store) ResolveConflict(ctx context.Context, tenantID, conflictID int64, resolution, note, by string) (domain.Conflict, error) {
	var status string
	switch resolution {
	case domain.ResolveKeep:
		status = domain.ConflictKept
	case domain.ResolveAdopt:
		status = domain.ConflictAdopted
	default:
		return domain.Conflict{}, domain.Errorf(domain.EINVALID, "resolution must be %q or %q, got %q",
			domain.ResolveKeep, domain.ResolveAdopt, resolution)
	}
	var resolved domain.Conflict
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		args := pgx.NamedArgs{"tenant_id": tenantID, "id": conflictID}
		var providerID int64
		row := tx.QueryRow(ctx, lockConflictSQL, args)
		c, err := scanConflict(scanPrefix{row: row, first: &providerID})
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound("conflict %d not found", conflictID)
		}
		if err != nil {
			return translate(err)
		}
		if c.Status != domain.ConflictOpen {
			return domain.Errorf(domain.ECONFLICT, "conflict %d is already %s", conflictID, c.Status)
		}
		if resolution == domain.ResolveAdopt {
			tag, err := tx.Exec(ctx, adoptSQL, args)
			if err != nil {
				return translate(err)
			}
			if tag.RowsAffected() == 0 {
				var current int64
				err := tx.QueryRow(ctx, currentRevisionSQL, pgx.NamedArgs{"tenant_id": tenantID,
					"provider_id": providerID, "object_type": c.ObjectType, "object_id": c.ObjectID}).Scan(&current)
				if err != nil {
					return translate(err)
				}
				return domain.Errorf(domain.ECONFLICT,
					"the record has moved on to revision %d; adopting the snapshot of revision %d would roll it back",
					current, c.Revision)
			}
		}
		args["status"], args["note"], args["by"] = status, note, by
		resolved, err = scanConflict(tx.QueryRow(ctx, resolveSQL, args))
		return translate(err)
	})
	return resolved, err
}

// scanPrefix scans a row whose first column precedes the ones scanConflict
// reads.
type scanPrefix struct {
	row   pgx.Row
	first any
}

func (p scanPrefix) Scan(dest ...any) error {
	return p.row.Scan(append([]any{p.first}, dest...)...)
}

func pageLimit(p domain.Page) int {
	switch {
	case p.Limit <= 0:
		return domain.DefaultPageLimit
	case p.Limit > domain.MaxPageLimit:
		return domain.MaxPageLimit
	}
	return p.Limit
}

// trim cuts a list fetched with one extra row down to the page and reports
// whether the extra row was there.
func trim[T any](rows []T, limit int) ([]T, bool) {
	if len(rows) > limit {
		return rows[:limit], true
	}
	return rows, false
}

// Cursors are opaque to callers: the base64url JSON of the last row's sort key.
func encodeCursor(key any) string {
	b, _ := json.Marshal(key)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor leaves key untouched when cursor is empty.
func decodeCursor(cursor string, key any) error {
	if cursor == "" {
		return nil
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return invalidCursor()
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(key); err != nil {
		return invalidCursor()
	}
	return nil
}

func invalidCursor() error { return domain.Errorf(domain.EINVALID, "invalid cursor") }

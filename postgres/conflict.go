package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/postgres/changefeed"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

const conflictDetailSQL = `
SELECT ` + conflictColumns + `,
       r.revision, r.snapshot, r.application_count, r.last_applied_event, r.created_at, r.updated_at
FROM conflicts c
JOIN providers p ON p.tenant_id = c.tenant_id AND p.id = c.provider_id
LEFT JOIN records r ON r.tenant_id = c.tenant_id AND r.provider_id = c.provider_id
    AND r.object_type = c.object_type AND r.object_id = c.object_id
WHERE c.tenant_id = @tenant_id AND c.id = @id`

// ConflictDetail implements domain.ConflictService.
func (s *conflicts) ConflictDetail(ctx context.Context, tenantID, conflictID int64) (domain.ConflictDetail, error) {
	var (
		d                domain.ConflictDetail
		revision         *int64
		snapshot         json.RawMessage
		count            *int
		lastEvent        *string
		created, updated *time.Time
	)
	row := s.read.QueryRow(ctx, conflictDetailSQL, pgx.NamedArgs{"tenant_id": tenantID, "id": conflictID})
	c, err := scanConflict(scanSuffix{row: row, rest: []any{&revision, &snapshot, &count, &lastEvent, &created, &updated}})
	if errors.Is(err, pgx.ErrNoRows) {
		return d, pg.NotFound("conflict %d not found", conflictID)
	}
	if err != nil {
		return d, pg.Translate(err)
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

// conflictColumns are scanned by scanConflict, in this order.
const conflictColumns = `c.id, p.name, c.object_type, c.object_id, c.revision, c.accepted_event_id, c.accepted_snapshot,
       c.conflicting_event_id, c.conflicting_snapshot, c.status, c.note, c.resolved_by, c.resolved_at, c.detected_at`

const conflictsSQL = `
SELECT ` + conflictColumns + `
FROM conflicts c JOIN providers p ON p.tenant_id = c.tenant_id AND p.id = c.provider_id
WHERE c.tenant_id = @tenant_id AND (c.detected_at, c.id) < (@after_at, @after_id)
  AND (@status::text IS NULL OR c.status = @status)
ORDER BY c.detected_at DESC, c.id DESC
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

// conflictCursor walks conflicts newest first by the time they were
// detected; the id only breaks ties (ids are not in time order once a
// sequence hands out ranges to several nodes).
type conflictCursor struct {
	At time.Time `json:"t"`
	ID int64     `json:"i"`
}

// Conflicts implements domain.ConflictService: the conflicts with that status
// ("" for all), newest first, and the cursor of the next page ("" on the
// last). A malformed cursor is an EINVALID error.
func (s *conflicts) Conflicts(ctx context.Context, tenantID int64, status string, page domain.Page) ([]domain.Conflict, string, error) {
	after := conflictCursor{At: pg.LatestRevisionTime, ID: math.MaxInt64}
	if err := pg.DecodeCursor(page.Cursor, &after); err != nil {
		return nil, "", err
	}
	limit := pg.PageLimit(page)
	rows, err := s.read.Query(ctx, conflictsSQL, pgx.NamedArgs{"tenant_id": tenantID, "after_at": after.At, "after_id": after.ID,
		"status": pg.NullString(status), "limit": limit + 1})
	if err != nil {
		return nil, "", pg.Translate(err)
	}
	conflicts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Conflict, error) {
		return scanConflict(row)
	})
	if err != nil {
		return nil, "", pg.Translate(err)
	}
	conflicts, more := pg.Trim(conflicts, limit)
	if !more {
		return conflicts, "", nil
	}
	return conflicts, pg.EncodeCursor(conflictCursor{At: conflicts[len(conflicts)-1].DetectedAt, ID: conflicts[len(conflicts)-1].ID}), nil
}

const lockConflictSQL = `
SELECT c.provider_id, ` + conflictColumns + `
FROM conflicts c JOIN providers p ON p.tenant_id = c.tenant_id AND p.id = c.provider_id
WHERE c.tenant_id = @tenant_id AND c.id = @id
FOR UPDATE OF c`

// adoptSQL applies the conflicting snapshot only while the record is still
// at the conflict's revision, and writes the operator's decision into the
// record's timeline. A HubSpot property conflict (its event names the
// property) is adopted into that property alone: the guard is the
// property's revision, and the other properties stay.
const adoptSQL = `
WITH target AS (
    SELECT c.provider_id, c.object_type, c.object_id, c.revision, c.conflicting_snapshot, c.conflicting_event_id,
           (SELECT e.property FROM events e
            WHERE e.tenant_id = @tenant_id AND e.received_at = c.detected_at AND e.conflict_id = c.id LIMIT 1) AS property
    FROM conflicts c
    WHERE c.tenant_id = @tenant_id AND c.id = @id
), adopted AS (
    UPDATE records r SET
        snapshot = CASE WHEN t.property IS NULL THEN t.conflicting_snapshot ELSE r.snapshot || t.conflicting_snapshot END,
        application_count = r.application_count + 1,
        last_applied_event = t.conflicting_event_id, last_applied_delivery = NULL, last_applied_seq = NULL,
        updated_at = now()
    FROM target t
    WHERE r.tenant_id = @tenant_id AND r.provider_id = t.provider_id AND r.object_type = t.object_type
      AND r.object_id = t.object_id
      AND CASE WHEN t.property IS NULL THEN r.revision = t.revision
               ELSE ` + pg.PropertyRevisionOfTarget + ` = t.revision END
    RETURNING r.provider_id, r.object_type, r.object_id, t.revision, r.snapshot, r.last_applied_event, t.property
)
INSERT INTO accepted_revisions (tenant_id, provider_id, object_type, object_id, revision, snapshot, property, event_id, conflict_id)
SELECT @tenant_id, provider_id, object_type, object_id, revision, snapshot, property, last_applied_event, @id FROM adopted`

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

// ResolveConflict implements domain.ConflictService. An unknown resolution is
// an EINVALID error, an absent conflict ENOTFOUND, and a conflict already
// resolved, or an adoption the record has moved past, ECONFLICT.
func (s *conflicts) ResolveConflict(ctx context.Context, tenantID, conflictID int64, resolution, note, by string) (domain.Conflict, error) {
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
	h, err := s.ids.Hasher(ctx)
	if err != nil {
		return domain.Conflict{}, err
	}
	var resolved domain.Conflict
	err = pg.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		args := pgx.NamedArgs{"tenant_id": tenantID, "id": conflictID}
		var providerID int64
		row := tx.QueryRow(ctx, lockConflictSQL, args)
		c, err := scanConflict(scanPrefix{row: row, first: &providerID})
		if errors.Is(err, pgx.ErrNoRows) {
			return pg.NotFound("conflict %d not found", conflictID)
		}
		if err != nil {
			return pg.Translate(err)
		}
		if c.Status != domain.ConflictOpen {
			return domain.Errorf(domain.ECONFLICT, "conflict %d is already %s", conflictID, c.Status)
		}
		if resolution == domain.ResolveAdopt {
			tag, err := tx.Exec(ctx, adoptSQL, args)
			if err != nil {
				return pg.Translate(err)
			}
			if tag.RowsAffected() == 0 {
				var current int64
				err := tx.QueryRow(ctx, currentRevisionSQL, pgx.NamedArgs{"tenant_id": tenantID,
					"provider_id": providerID, "object_type": c.ObjectType, "object_id": c.ObjectID}).Scan(&current)
				if err != nil {
					return pg.Translate(err)
				}
				return domain.Errorf(domain.ECONFLICT,
					"the record has moved on to revision %d; adopting the snapshot of revision %d would roll it back",
					current, c.Revision)
			}
		}
		args["status"], args["note"], args["by"] = status, note, by
		resolved, err = scanConflict(tx.QueryRow(ctx, resolveSQL, args))
		if err != nil {
			return pg.Translate(err)
		}
		target := fmt.Sprintf("conflict %d (%s %s %s, revision %d)", c.ID, c.Provider, c.ObjectType,
			h.HashedID(c.ObjectID), c.Revision)
		err = pg.Audit(ctx, tx, tenantID, domain.AuditConflictResolve, target, resolveSummary(resolution, c.Status, status, note))
		if err != nil || resolution != domain.ResolveAdopt {
			return err
		}
		return changefeed.Append(ctx, tx, tenantID, changefeed.Owned{Type: stream.ChangeApplied, ProviderID: providerID,
			ObjectType: c.ObjectType, ObjectID: c.ObjectID, Revision: &c.Revision, EventID: c.ConflictingEventID})
	})
	return resolved, err
}

// resolveSummary says how a conflict was resolved, with the start of the
// operator's note.
func resolveSummary(resolution, before, after, note string) string {
	summary := fmt.Sprintf("%s: %s → %s", resolution, before, after)
	if note = strings.TrimSpace(note); note != "" {
		if r := []rune(note); len(r) > maxSummaryNote {
			note = string(r[:maxSummaryNote]) + "…"
		}
		summary += fmt.Sprintf("; note %q", note)
	}
	return summary
}

// maxSummaryNote bounds how much of a note an audit summary repeats; the
// conflict keeps the whole note.
const maxSummaryNote = 200

// scanPrefix scans a row whose first column precedes the ones scanConflict
// reads.
type scanPrefix struct {
	row   pgx.Row
	first any
}

func (p scanPrefix) Scan(dest ...any) error {
	return p.row.Scan(append([]any{p.first}, dest...)...)
}

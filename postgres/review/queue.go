// Package review reads the conflict review queue: the open conflicts in
// the order they wait, the resolved ones latest first, each list paged both
// ways, and an open conflict's neighbours in the queue.
package review

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// Queue reads the queue on the read pool.
type Queue struct{ read *pgxpool.Pool }

// New returns the queue of pools.
func New(pools pg.Pools) *Queue { return &Queue{read: pools.ForReads()} }

// columns are a conflict without its snapshots, scanned by scan.
const columns = `c.id, p.name, c.object_type, c.object_id, c.revision, c.accepted_event_id,
       c.conflicting_event_id, c.status, c.note, c.resolved_by, c.resolved_at, c.detected_at`

// A list's order is (at, id): detection for the open queue, resolution
// for the resolved list. @dir is 1 to read forward from the cursor
// (the queue's order), -1 to read back from it; @after_at NULL is the
// start of the list.
const openSQL = `
SELECT ` + columns + `, c.detected_at
FROM conflicts c JOIN providers p ON p.tenant_id = c.tenant_id AND p.id = c.provider_id
WHERE c.tenant_id = @tenant_id AND c.status = 'open'
  AND (@at::timestamptz IS NULL
       OR (@dir = 1 AND (c.detected_at, c.id) > (@at, @id))
       OR (@dir = -1 AND (c.detected_at, c.id) < (@at, @id)))
ORDER BY CASE WHEN @dir = 1 THEN c.detected_at END, CASE WHEN @dir = 1 THEN c.id END,
         CASE WHEN @dir = -1 THEN c.detected_at END DESC, CASE WHEN @dir = -1 THEN c.id END DESC
LIMIT @limit`

const resolvedSQL = `
SELECT ` + columns + `, c.resolved_at
FROM conflicts c JOIN providers p ON p.tenant_id = c.tenant_id AND p.id = c.provider_id
WHERE c.tenant_id = @tenant_id AND c.status IN ('kept', 'adopted')
  AND (@at::timestamptz IS NULL
       OR (@dir = 1 AND (c.resolved_at, c.id) < (@at, @id))
       OR (@dir = -1 AND (c.resolved_at, c.id) > (@at, @id)))
ORDER BY CASE WHEN @dir = 1 THEN c.resolved_at END DESC, CASE WHEN @dir = 1 THEN c.id END DESC,
         CASE WHEN @dir = -1 THEN c.resolved_at END, CASE WHEN @dir = -1 THEN c.id END
LIMIT @limit`

// countsSQL counts the open conflicts, and the resolved ones up to a
// bound: the queue says "more than 10,000" rather than count them all.
const countsSQL = `
SELECT (SELECT count(*) FROM conflicts WHERE tenant_id = @tenant_id AND status = 'open'),
       (SELECT count(*) FROM (SELECT FROM conflicts WHERE tenant_id = @tenant_id AND status IN ('kept', 'adopted')
                              LIMIT @bound) r)`

// key is a row's place in its list, the cursor's content.
type key struct {
	At time.Time `json:"t"`
	ID int64     `json:"id"`
}

// ConflictQueue implements domain.ConflictService.
func (q *Queue) ConflictQueue(ctx context.Context, tenantID int64, open, resolved domain.Page) (domain.ConflictQueue, error) {
	var out domain.ConflictQueue
	var err error
	if out.Open, out.OpenPages, err = q.list(ctx, openSQL, tenantID, open); err != nil {
		return out, err
	}
	if out.Resolved, out.ResolvedPages, err = q.list(ctx, resolvedSQL, tenantID, resolved); err != nil {
		return out, err
	}
	err = q.read.QueryRow(ctx, countsSQL, pgx.NamedArgs{"tenant_id": tenantID, "bound": domain.ConflictCountBound + 1}).
		Scan(&out.OpenTotal, &out.ResolvedTotal)
	return out, pg.Translate(err)
}

// list reads one page of a list in its order, and the cursors to the
// pages on either side.
func (q *Queue) list(ctx context.Context, sql string, tenantID int64, page domain.Page) ([]domain.Conflict, domain.PageCursors, error) {
	var (
		cursors domain.PageCursors
		from    *key
		dir     = 1
	)
	cursor := page.Cursor
	if page.Before != "" {
		cursor, dir = page.Before, -1
	}
	if cursor != "" {
		from = &key{}
		if err := pg.DecodeCursor(cursor, from); err != nil {
			return nil, cursors, err
		}
	}
	limit := pg.PageLimit(page)
	args := pgx.NamedArgs{"tenant_id": tenantID, "dir": dir, "limit": limit + 1, "at": nil, "id": int64(0)}
	if from != nil {
		args["at"], args["id"] = from.At, from.ID
	}
	rows, err := q.read.Query(ctx, sql, args)
	if err != nil {
		return nil, cursors, pg.Translate(err)
	}
	var keys []key
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Conflict, error) {
		var k key
		c, err := scan(row, &k.At)
		k.ID = c.ID
		keys = append(keys, k)
		return c, err
	})
	if err != nil {
		return nil, cursors, pg.Translate(err)
	}
	list, more := pg.Trim(list, limit)
	keys = keys[:len(list)]
	if dir == -1 { // read backwards: put the page in the list's order
		for i, j := 0, len(list)-1; i < j; i, j = i+1, j-1 {
			list[i], list[j] = list[j], list[i]
			keys[i], keys[j] = keys[j], keys[i]
		}
	}
	if len(list) == 0 {
		return list, cursors, nil
	}
	// Forward from a cursor, or back with more beyond: there is a page
	// before. Forward with more, or back from a cursor: one after.
	if (dir == 1 && from != nil) || (dir == -1 && more) {
		cursors.Prev = pg.EncodeCursor(keys[0])
	}
	if (dir == 1 && more) || dir == -1 {
		cursors.Next = pg.EncodeCursor(keys[len(keys)-1])
	}
	return list, cursors, nil
}

func scan(row pgx.Row, extra ...any) (domain.Conflict, error) {
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

// neighboursSQL finds the open conflicts just before and just after one in
// the queue's order (the conflict itself need not be open any more).
const neighboursSQL = `
WITH me AS (SELECT detected_at, id FROM conflicts WHERE tenant_id = @tenant_id AND id = @id)
SELECT (SELECT c.id FROM conflicts c, me WHERE c.tenant_id = @tenant_id AND c.status = 'open'
          AND (c.detected_at, c.id) < (me.detected_at, me.id) ORDER BY c.detected_at DESC, c.id DESC LIMIT 1),
       (SELECT c.id FROM conflicts c, me WHERE c.tenant_id = @tenant_id AND c.status = 'open'
          AND (c.detected_at, c.id) > (me.detected_at, me.id) ORDER BY c.detected_at, c.id LIMIT 1)`

// OpenNeighbours implements domain.ConflictService.
func (q *Queue) OpenNeighbours(ctx context.Context, tenantID, conflictID int64) (prev, next int64, err error) {
	var p, n *int64
	err = q.read.QueryRow(ctx, neighboursSQL, pgx.NamedArgs{"tenant_id": tenantID, "id": conflictID}).Scan(&p, &n)
	if p != nil {
		prev = *p
	}
	if n != nil {
		next = *n
	}
	return prev, next, pg.Translate(err)
}

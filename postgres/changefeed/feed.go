// Package changefeed reads the change stream (stream.ChangeFeed): the
// changes that ingest (postgres/ingest/changes.go), resets, erasures and
// adoptions (Append) wrote at positions of their tenant's feed (migration
// 00034), by the rules of rules.go. Each writer takes its positions from
// the tenant's head row (change_heads) and holds its lock until commit, so
// positions are handed out in commit order and a reader lists them in
// position order without ever skipping one that commits later.
package changefeed

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// Columns are the columns of a change, in ScanChanges' order, over changes
// c joined to providers p; other packages (the destination sender) select
// them too.
const Columns = `c.tenant_id, c.position, c.type, p.name, c.object_type, c.object_id, c.revision, c.previous_revision,
       c.changed, c.snapshot, coalesce(c.event_id, ''), coalesce(c.delivery_id::text, ''), c.committed_at`

// changesSQL is one page of the feed. The filters are written so that one
// generic plan serves every combination: the primary key's order does the
// work, and a filter only skips rows. The running size stops the page
// before MaxChangePageBytes (the first change always comes); it is summed
// over the page's rows only, as the limit stops the scan.
const changesSQL = `
WITH page AS (
    SELECT c.position, row_number() OVER w AS n,
           sum(coalesce(octet_length(c.snapshot::text), 0) + coalesce(octet_length(c.changed::text), 0)) OVER w AS bytes
    FROM changes c JOIN providers p ON p.tenant_id = c.tenant_id AND p.id = c.provider_id
    WHERE c.tenant_id = @tenant_id AND c.position > @after
      AND (@provider::text IS NULL OR p.name = @provider)
      AND (@object_type::text IS NULL OR c.object_type = @object_type)
    WINDOW w AS (ORDER BY c.position ROWS UNBOUNDED PRECEDING)
    ORDER BY c.position
    LIMIT @limit
)
SELECT ` + Columns + `
FROM page
JOIN changes c ON c.tenant_id = @tenant_id AND c.position = page.position
JOIN providers p ON p.tenant_id = c.tenant_id AND p.id = c.provider_id
WHERE page.n = 1 OR page.bytes <= @max_bytes
ORDER BY c.position`

const headSQL = `SELECT coalesce((SELECT position FROM change_heads WHERE tenant_id = @tenant_id), 0)`

// Feed reads the feed on the read pool.
type Feed struct {
	read *pgxpool.Pool
}

// New returns a Feed reading on pools' read pool.
func New(pools pg.Pools) *Feed { return &Feed{read: pools.ForReads()} }

var _ stream.ChangeFeed = (*Feed)(nil)

// Changes implements stream.ChangeFeed.
func (f *Feed) Changes(ctx context.Context, tenantID int64, q stream.ChangeQuery) ([]stream.Change, error) {
	if q.Limit <= 0 || q.Limit > stream.MaxChangeLimit {
		return nil, domain.Errorf(domain.EINVALID, "limit must be between 1 and %d", stream.MaxChangeLimit)
	}
	rows, err := f.read.Query(ctx, changesSQL, pgx.NamedArgs{"tenant_id": tenantID, "after": q.After,
		"provider": pg.NullString(q.Provider), "object_type": pg.NullString(q.ObjectType), "limit": q.Limit,
		"max_bytes": stream.MaxChangePageBytes})
	if err != nil {
		return nil, pg.Translate(err)
	}
	changes, err := ScanChanges(rows)
	return changes, pg.Translate(err)
}

// ChangeHead implements stream.ChangeFeed.
func (f *Feed) ChangeHead(ctx context.Context, tenantID int64) (int64, error) {
	var head int64
	err := f.read.QueryRow(ctx, headSQL, pgx.NamedArgs{"tenant_id": tenantID}).Scan(&head)
	return head, pg.Translate(err)
}

// ScanChanges reads rows of Columns.
func ScanChanges(rows pgx.Rows) ([]stream.Change, error) {
	defer rows.Close()
	var changes []stream.Change
	for rows.Next() {
		var c stream.Change
		var snapshot []byte
		if err := rows.Scan(&c.TenantID, &c.Position, &c.Type, &c.Provider, &c.ObjectType, &c.ObjectID, &c.Revision,
			&c.PreviousRevision, &c.Changed, &snapshot, &c.EventID, &c.DeliveryID, &c.CommittedAt); err != nil {
			return nil, fmt.Errorf("change: %w", err)
		}
		if snapshot != nil {
			c.Snapshot = snapshot
		}
		if c.Changed == nil {
			c.Changed = []string{}
		}
		changes = append(changes, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return changes, nil
}

package changefeed

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// Changes made by an owner (a reset, an erasure, an adopted conflict) are
// appended one at a time by Append, in the owner's transaction. Like
// ingest's, it takes the tenant's next position from the head row, whose
// lock it holds until commit: it must be the transaction's last statement
// that waits for a lock, so that no transaction holding the head waits on
// one holding a record.

// appendSQL writes one change of a record. An applied change (an adopted
// conflict) carries the record's snapshot as it is now; a reset or an
// erasure none, and so no changed fields. Its previous revision and
// snapshot are PreviousColumns of the record's last change.
var appendSQL = pg.Named(`
WITH previous AS (
    SELECT ` + PreviousColumns + `
    FROM changes c
    WHERE c.tenant_id = @tenant_id AND c.provider_id = @provider_id AND c.object_type = @object_type
      AND c.object_id = @object_id
    ORDER BY c.position DESC LIMIT 1
), current AS (
    SELECT CASE WHEN @type::text = 'record.applied' THEN (
        SELECT r.snapshot FROM records r
        WHERE r.tenant_id = @tenant_id AND r.provider_id = @provider_id AND r.object_type = @object_type
          AND r.object_id = @object_id) END AS snapshot,
           (SELECT snapshot FROM previous) AS previous_snapshot
), head AS (
    INSERT INTO change_heads AS h (tenant_id, position) VALUES (@tenant_id, 1)
    ON CONFLICT (tenant_id) DO UPDATE SET position = h.position + 1
    RETURNING h.position
)
INSERT INTO changes (tenant_id, position, type, provider_id, object_type, object_id, revision, previous_revision,
                     changed, snapshot, event_id, delivery_id, committed_at)
SELECT @tenant_id, head.position, @type, @provider_id, @object_type, @object_id, @revision::bigint,
       (SELECT revision FROM previous),
       CASE WHEN cur.snapshot IS NULL THEN '{}'::text[] ELSE ` + ChangedFields + ` END,
       cur.snapshot, @event_id, NULL, clock_timestamp()
FROM head, current cur`)

// eraseSnapshotsSQL empties the snapshots of an erased record's earlier
// changes; their names and revisions stay, so a consumer still sees the
// sequence.
var eraseSnapshotsSQL = pg.Named(`
UPDATE changes SET snapshot = NULL
WHERE tenant_id = @tenant_id AND provider_id = @provider_id AND object_type = @object_type AND object_id = @object_id
  AND snapshot IS NOT NULL`)

// Owned is a change an owner made to a record.
type Owned struct {
	Type       stream.ChangeType
	ProviderID int64
	ObjectType string
	ObjectID   string
	Revision   *int64 // an adopted conflict's revision; nil for a reset or an erasure
	EventID    string // the adopted event
}

// Append writes c as the tenant's next change in tx; an erasure first
// empties the snapshots of the record's earlier changes.
func Append(ctx context.Context, tx pgx.Tx, tenantID int64, c Owned) error {
	args := pgx.NamedArgs{"tenant_id": tenantID, "provider_id": c.ProviderID, "object_type": c.ObjectType,
		"object_id": c.ObjectID, "type": string(c.Type), "revision": c.Revision, "event_id": pg.NullString(c.EventID)}
	if c.Type == stream.ChangeErased {
		if _, err := tx.Exec(ctx, eraseSnapshotsSQL.SQL, eraseSnapshotsSQL.Args(args)...); err != nil {
			return err
		}
	}
	_, err := tx.Exec(ctx, appendSQL.SQL, appendSQL.Args(args)...)
	return err
}

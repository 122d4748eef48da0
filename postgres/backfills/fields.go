package backfills

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// A backfill of Salesforce asks its API for exactly the fields the
// provider's snapshots of an object type carry, so that a pulled record
// equals the outbound message that brought it (redundant, not a revision
// conflict).

// newestSnapshotSQL is the snapshot of the record of the type updated last
// as far as the search index knows (record_search_kind), else of any one.
const newestSnapshotSQL = `
SELECT r.snapshot FROM records r
WHERE r.tenant_id = @tenant_id AND r.provider_id = @provider_id AND r.object_type = @object_type
  AND r.object_id = coalesce((SELECT s.object_id FROM record_search s
                              WHERE s.tenant_id = @tenant_id AND s.provider_id = @provider_id AND s.object_type = @object_type
                              ORDER BY s.updated_at DESC LIMIT 1), r.object_id)
LIMIT 1`

// SnapshotFields returns the field names of the provider's newest snapshot
// of objectType, sorted; none when it holds no record of that type.
func (k *Keeper) SnapshotFields(ctx context.Context, tenantID, providerID int64, objectType string) ([]string, error) {
	var snapshot []byte
	err := k.pool.QueryRow(ctx, newestSnapshotSQL, pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID,
		"object_type": objectType}).Scan(&snapshot)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, pg.Translate(err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(snapshot, &fields); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

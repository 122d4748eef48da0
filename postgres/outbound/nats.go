package outbound

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// natsSQL reads the sealed credentials of NATS destinations leased (one
// row each, migration 00046).
const natsSQL = `
SELECT tenant_id, destination_id, destination_id, key_id, aad_version, ciphertext FROM destination_nats_credentials
WHERE tenant_id = ANY(@tenant_ids::bigint[]) AND destination_id = ANY(@ids::bigint[])`

// withNATS gives each NATS destination of leased its credentials, and
// leaves out, logged, one whose credentials do not open: it would connect
// without them. One without stored credentials (created before they
// existed, or with --allow-private) connects without.
func (o *Outbox) withNATS(ctx context.Context, leased []stream.LeasedDestination) ([]stream.LeasedDestination, error) {
	var tenantIDs, ids []int64
	for _, d := range leased {
		if d.NATSURL != "" {
			tenantIDs, ids = append(tenantIDs, d.TenantID), append(ids, d.ID)
		}
	}
	if len(ids) == 0 {
		return leased, nil
	}
	rows, err := o.pool.Query(ctx, natsSQL, pgx.NamedArgs{"tenant_ids": tenantIDs, "ids": ids})
	if err != nil {
		return nil, pg.Translate(err)
	}
	sealed, err := pgx.CollectRows(rows, scanSealed)
	if err != nil {
		return nil, pg.Translate(err)
	}
	type key struct{ tenantID, id int64 }
	auth, failed := map[key]stream.NATSAuth{}, map[key]bool{}
	for _, s := range sealed {
		k := key{s.TenantID, s.ProviderID}
		a, err := o.keys.OpenNATS(s)
		if err != nil {
			o.log.Error("destination's NATS credentials cannot be decrypted; not sending", "key_id", s.KeyID,
				"tenant_id", s.TenantID, "destination_id", s.ProviderID, "err", err)
			failed[k] = true
			continue
		}
		auth[k] = a
	}
	out := leased[:0]
	for _, d := range leased {
		k := key{d.TenantID, d.ID}
		if failed[k] {
			continue
		}
		d.NATS = auth[k]
		out = append(out, d)
	}
	return out, nil
}

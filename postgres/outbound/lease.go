// Package outbound is the storage of the sender (stream.Outbox): leases
// of destinations, their queues filled from the change feed, and the
// attempts to deliver (migration 00034).
package outbound

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// Outbox implements stream.Outbox on a pool.
type Outbox struct {
	pool *pgxpool.Pool
	keys *pg.Keyring
	log  *slog.Logger
}

// New returns the outbox of pool, whose destination secrets keys open.
func New(pool *pgxpool.Pool, keys *pg.Keyring, log *slog.Logger) *Outbox {
	return &Outbox{pool: pool, keys: keys, log: log}
}

var _ stream.Outbox = (*Outbox)(nil)

// leaseSQL renews owner's leases of active destinations and takes free
// ones, up to limit in all. Its own are renewed even while its fill holds
// their rows (it waits the moment); free ones another node is taking now
// are skipped. The condition is repeated on the rows updated, so that a
// lease another node took meanwhile is not taken back. It is the one
// statement over every tenant's destinations. With each it returns the
// ids of the secrets that sign now.
const leaseSQL = `
WITH mine AS (
    SELECT tenant_id, id FROM destinations WHERE lease_owner = @owner AND status = 'active'
    ORDER BY lease_until LIMIT @limit
), free AS (
    SELECT tenant_id, id FROM destinations
    WHERE status = 'active' AND (lease_until IS NULL OR lease_until < now()) AND lease_owner IS DISTINCT FROM @owner
    ORDER BY lease_until NULLS FIRST
    LIMIT greatest(0, @limit - (SELECT count(*) FROM mine))
    FOR UPDATE SKIP LOCKED
)
UPDATE destinations d SET lease_owner = @owner, lease_until = now() + @ttl_ms * interval '1 millisecond'
FROM (SELECT * FROM mine UNION ALL SELECT * FROM free) t, tenants tn
WHERE d.tenant_id = t.tenant_id AND d.id = t.id AND tn.id = d.tenant_id
  AND d.status = 'active' AND (d.lease_owner = @owner OR d.lease_until IS NULL OR d.lease_until < now())
RETURNING d.tenant_id, d.id, tn.slug, coalesce(d.url, ''), coalesce(d.nats_url, ''), coalesce(d.subject, ''),
          d.allow_private, d.max_in_flight, d.format,
          ARRAY(SELECT s.id FROM destination_secrets s
                WHERE s.tenant_id = d.tenant_id AND s.destination_id = d.id AND (s.expires_at IS NULL OR s.expires_at > now())
                ORDER BY s.id DESC)`

// secretsSQL reads the sealed secrets the lease named.
const secretsSQL = `
SELECT tenant_id, destination_id, id, key_id, aad_version, ciphertext FROM destination_secrets
WHERE tenant_id = ANY(@tenant_ids::bigint[]) AND id = ANY(@ids::bigint[])`

// LeaseDestinations implements stream.Outbox. A destination none of whose
// secrets opens is left out, and logged: it cannot sign.
func (o *Outbox) LeaseDestinations(ctx context.Context, owner string, ttl time.Duration, limit int) ([]stream.LeasedDestination, error) {
	rows, err := o.pool.Query(ctx, leaseSQL, pgx.NamedArgs{"owner": owner, "ttl_ms": ttl.Milliseconds(), "limit": limit})
	if err != nil {
		return nil, pg.Translate(err)
	}
	var tenantIDs, secretIDs []int64
	leased, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (stream.LeasedDestination, error) {
		var d stream.LeasedDestination
		var ids []int64
		err := row.Scan(&d.TenantID, &d.ID, &d.TenantSlug, &d.URL, &d.NATSURL, &d.Subject, &d.AllowPrivate, &d.MaxInFlight, &d.Format, &ids)
		tenantIDs, secretIDs = append(tenantIDs, d.TenantID), append(secretIDs, ids...)
		return d, err
	})
	if err != nil || len(leased) == 0 {
		return nil, pg.Translate(err)
	}
	rows, err = o.pool.Query(ctx, secretsSQL, pgx.NamedArgs{"tenant_ids": tenantIDs, "ids": secretIDs})
	if err != nil {
		return nil, pg.Translate(err)
	}
	sealed, err := pgx.CollectRows(rows, scanSealed)
	if err != nil {
		return nil, pg.Translate(err)
	}
	type key struct{ tenantID, id int64 }
	secrets := map[key][]string{}
	for _, s := range sealed {
		plain, err := o.keys.Open(s)
		if err != nil {
			o.log.Error("destination secret cannot be decrypted; skipped", "key_id", s.KeyID, "tenant_id", s.TenantID,
				"destination_id", s.ProviderID, "secret_id", s.ID, "err", err)
			continue
		}
		k := key{s.TenantID, s.ProviderID}
		secrets[k] = append(secrets[k], plain)
	}
	out := leased[:0]
	for _, d := range leased {
		d.Secrets = secrets[key{d.TenantID, d.ID}]
		if len(d.Secrets) == 0 {
			o.log.Error("destination has no secret that opens; not sending", "tenant_id", d.TenantID, "destination_id", d.ID)
			continue
		}
		out = append(out, d)
	}
	return out, nil
}

// scanSealed reads a row of secretsSQL; the destination id goes where a
// provider's would (pg.AADDestination).
func scanSealed(row pgx.CollectableRow) (pg.SealedSecret, error) {
	var s pg.SealedSecret
	return s, row.Scan(&s.TenantID, &s.ProviderID, &s.ID, &s.KeyID, &s.AADVersion, &s.Ciphertext)
}

// releaseSQL ends owner's leases of the destinations named.
const releaseSQL = `
UPDATE destinations SET lease_until = now()
WHERE (tenant_id, id) IN (SELECT * FROM unnest(@tenant_ids::bigint[], @ids::bigint[])) AND lease_owner = @owner`

// ReleaseDestinations implements stream.Outbox.
func (o *Outbox) ReleaseDestinations(ctx context.Context, owner string, ds []stream.LeasedDestination) error {
	tenantIDs, ids := make([]int64, len(ds)), make([]int64, len(ds))
	for i, d := range ds {
		tenantIDs[i], ids[i] = d.TenantID, d.ID
	}
	_, err := o.pool.Exec(ctx, releaseSQL, pgx.NamedArgs{"owner": owner, "tenant_ids": tenantIDs, "ids": ids})
	return pg.Translate(err)
}

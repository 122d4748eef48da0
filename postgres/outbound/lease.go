// Package outbound is the storage of the sender (stream.Outbox): leases
// of destinations, their queues filled from the change feed, and the
// attempts to deliver (migration 00034).
package outbound

import (
	"context"
	"log/slog"
	"maps"
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

// New returns the outbox on pools' write pool, whose destination secrets
// keys open.
func New(pools pg.Pools, keys *pg.Keyring, log *slog.Logger) *Outbox {
	return &Outbox{pool: pools.Write, keys: keys, log: log}
}

var _ stream.Outbox = (*Outbox)(nil)

// A lease is taken in statements Citus runs, none of which locks rows
// across tenants: renewSQL renews owner's leases of active destinations;
// freeSQL looks, without locking, for free ones with something to send,
// in turns by tenant (each tenant's first, then each one's second, ...)
// and at most @share of a tenant; takeSQL takes each of those in its
// tenant, skipping one another node is taking now, and repeats the
// condition on the row, so that a lease another node took meanwhile is
// not taken back. A destination with nothing to send is nobody's: its
// sender gives it back (idleSQL), and freeSQL offers it again once the
// tenant's feed or alerts move past its cursors.
const (
	renewSQL = `
UPDATE destinations SET lease_until = now() + @ttl_ms * interval '1 millisecond'
WHERE lease_owner = @owner AND status = 'active' AND tenant_id NOT IN (` + archivedTenantsSQL + `)
RETURNING ` + leasedColumns
	freeSQL = `
SELECT tenant_id, id FROM (
    SELECT d.tenant_id, d.id, d.lease_until,
           row_number() OVER (PARTITION BY d.tenant_id ORDER BY d.lease_until NULLS FIRST, d.id) AS turn
    FROM destinations d
    WHERE d.status = 'active' AND (d.lease_until IS NULL OR d.lease_until < now())
      AND d.lease_owner IS DISTINCT FROM @owner AND d.tenant_id NOT IN (` + archivedTenantsSQL + `)
      AND ` + hasWorkSQL + `) free
WHERE turn <= @share
ORDER BY turn, lease_until NULLS FIRST, tenant_id, id
LIMIT @limit`
	takeSQL = `
UPDATE destinations d SET lease_owner = @owner, lease_until = now() + @ttl_ms * interval '1 millisecond'
WHERE (d.tenant_id, d.id) IN (SELECT tenant_id, id FROM destinations
                              WHERE tenant_id = @tenant_id AND id = @id AND status = 'active'
                                AND (lease_until IS NULL OR lease_until < now())
                              FOR UPDATE SKIP LOCKED)
RETURNING ` + leasedColumns
	// idleSQL gives back owner's lease of a destination with nothing to
	// send; it returns nothing when the destination has work after all.
	idleSQL = `
UPDATE destinations d SET lease_owner = NULL, lease_until = now()
WHERE d.tenant_id = @tenant_id AND d.id = @id AND d.lease_owner = @owner AND NOT ` + hasWorkSQL + `
RETURNING d.id`
	// hasWorkSQL: the destination d has changes or alert events past its
	// cursors, or a change or event in its queue (due or waiting for its
	// retry).
	hasWorkSQL = `(d.cursor < coalesce((SELECT h.position FROM change_heads h WHERE h.tenant_id = d.tenant_id), 0)
       OR EXISTS (SELECT FROM destination_queue q WHERE q.tenant_id = d.tenant_id AND q.destination_id = d.id)
       OR (EXISTS (SELECT FROM unnest(d.types) t WHERE starts_with(t, 'alert.'))
           AND d.alert_cursor < coalesce((SELECT max(e.id) FROM alert_events e WHERE e.tenant_id = d.tenant_id), 0)))`
	// archivedTenantsSQL: an archived tenant's destinations are not sent
	// to; a sender's lease lapses at its next renewal (issue 49).
	archivedTenantsSQL = `SELECT id FROM tenants WHERE archived_at IS NOT NULL`
	leasedColumns      = `tenant_id, id, kind, coalesce(url, ''), coalesce(nats_url, ''), coalesce(subject, ''), allow_private, max_in_flight, format,
       coalesce(filter, ''), coalesce(transform, '')`
)

// secretsSQL reads the sealed secrets that sign now of the destinations
// leased, newest first, and slugsSQL their tenants' slugs.
const (
	secretsSQL = `
SELECT tenant_id, destination_id, id, key_id, aad_version, ciphertext FROM destination_secrets
WHERE tenant_id = ANY(@tenant_ids::bigint[]) AND destination_id = ANY(@ids::bigint[])
  AND (expires_at IS NULL OR expires_at > now())
ORDER BY tenant_id, destination_id, id DESC`
	slugsSQL = `SELECT id, slug FROM tenants WHERE id = ANY(@tenant_ids::bigint[])`
	// signingSQL is secretsSQL of one destination, which a Step reads.
	signingSQL = `
SELECT tenant_id, destination_id, id, key_id, aad_version, ciphertext FROM destination_secrets
WHERE tenant_id = @tenant_id AND destination_id = @id AND (expires_at IS NULL OR expires_at > now())
ORDER BY id DESC`
)

// RenewDestinations implements stream.Outbox.
func (o *Outbox) RenewDestinations(ctx context.Context, owner string, ttl time.Duration) ([]stream.LeasedDestination, error) {
	leased, err := o.leaseRows(ctx, renewSQL, pgx.NamedArgs{"owner": owner, "ttl_ms": ttl.Milliseconds()})
	if err != nil {
		return nil, err
	}
	return o.ready(ctx, leased)
}

// TakeDestinations implements stream.Outbox. A destination none of whose
// secrets opens is left out, and logged: it cannot sign.
func (o *Outbox) TakeDestinations(ctx context.Context, owner string, ttl time.Duration, limit, share int,
	held map[int64]int) ([]stream.LeasedDestination, error) {
	if limit <= 0 {
		return nil, nil
	}
	args := pgx.NamedArgs{"owner": owner, "ttl_ms": ttl.Milliseconds(), "share": share, "limit": limit + len(held)*share}
	rows, err := o.pool.Query(ctx, freeSQL, args)
	if err != nil {
		return nil, pg.Translate(err)
	}
	free, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Tenant, ID int64 }])
	if err != nil {
		return nil, pg.Translate(err)
	}
	mine := maps.Clone(held)
	if mine == nil {
		mine = map[int64]int{}
	}
	var leased []stream.LeasedDestination
	for _, f := range free {
		if len(leased) == limit {
			break
		}
		if mine[f.Tenant] >= share {
			continue
		}
		args["tenant_id"], args["id"] = f.Tenant, f.ID
		taken, err := o.leaseRows(ctx, takeSQL, args)
		if err != nil {
			return nil, err
		}
		mine[f.Tenant] += len(taken)
		leased = append(leased, taken...)
	}
	return o.ready(ctx, leased)
}

// ReleaseIdle implements stream.Outbox.
func (o *Outbox) ReleaseIdle(ctx context.Context, owner string, tenantID, id int64) (bool, error) {
	tag, err := o.pool.Exec(ctx, idleSQL, pgx.NamedArgs{"owner": owner, "tenant_id": tenantID, "id": id})
	return tag.RowsAffected() == 1, pg.Translate(err)
}

// ready names the tenants of leased and gives each its secrets.
func (o *Outbox) ready(ctx context.Context, leased []stream.LeasedDestination) ([]stream.LeasedDestination, error) {
	if len(leased) == 0 {
		return nil, nil
	}
	leased, err := o.withSlugs(ctx, leased)
	if err != nil {
		return nil, err
	}
	return o.withSecrets(ctx, leased)
}

// leaseRows runs a statement that returns leasedColumns.
func (o *Outbox) leaseRows(ctx context.Context, sql string, args pgx.NamedArgs) ([]stream.LeasedDestination, error) {
	rows, err := o.pool.Query(ctx, sql, args)
	if err != nil {
		return nil, pg.Translate(err)
	}
	leased, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (stream.LeasedDestination, error) {
		var d stream.LeasedDestination
		return d, row.Scan(&d.TenantID, &d.ID, &d.Kind, &d.URL, &d.NATSURL, &d.Subject, &d.AllowPrivate, &d.MaxInFlight, &d.Format,
			&d.Filter, &d.Transform)
	})
	return leased, pg.Translate(err)
}

// withSlugs names the tenants of leased.
func (o *Outbox) withSlugs(ctx context.Context, leased []stream.LeasedDestination) ([]stream.LeasedDestination, error) {
	tenantIDs := make([]int64, len(leased))
	for i, d := range leased {
		tenantIDs[i] = d.TenantID
	}
	rows, err := o.pool.Query(ctx, slugsSQL, pgx.NamedArgs{"tenant_ids": tenantIDs})
	if err != nil {
		return nil, pg.Translate(err)
	}
	slugs := map[int64]string{}
	var id int64
	var slug string
	if _, err := pgx.ForEachRow(rows, []any{&id, &slug}, func() error { slugs[id] = slug; return nil }); err != nil {
		return nil, pg.Translate(err)
	}
	for i := range leased {
		leased[i].TenantSlug = slugs[leased[i].TenantID]
	}
	return leased, nil
}

// withSecrets gives each of leased the secrets that open, and leaves out
// those with none; then their NATS credentials (withNATS).
func (o *Outbox) withSecrets(ctx context.Context, leased []stream.LeasedDestination) ([]stream.LeasedDestination, error) {
	tenantIDs, ids := make([]int64, len(leased)), make([]int64, len(leased))
	for i, d := range leased {
		tenantIDs[i], ids[i] = d.TenantID, d.ID
	}
	rows, err := o.pool.Query(ctx, secretsSQL, pgx.NamedArgs{"tenant_ids": tenantIDs, "ids": ids})
	if err != nil {
		return nil, pg.Translate(err)
	}
	sealed, err := pgx.CollectRows(rows, scanSealed)
	if err != nil {
		return nil, pg.Translate(err)
	}
	type key struct{ tenantID, id int64 }
	byDestination := map[key][]pg.SealedSecret{}
	for _, s := range sealed {
		k := key{s.TenantID, s.ProviderID}
		byDestination[k] = append(byDestination[k], s)
	}
	out := leased[:0]
	for _, d := range leased {
		d.Secrets = o.open(byDestination[key{d.TenantID, d.ID}])
		if len(d.Secrets) == 0 {
			o.log.Error("destination has no secret that opens; not sending", "tenant_id", d.TenantID, "destination_id", d.ID)
			continue
		}
		out = append(out, d)
	}
	return o.withNATS(ctx, out)
}

// open decrypts a destination's sealed secrets, in their order, leaving
// out (and logging) those that do not open.
func (o *Outbox) open(sealed []pg.SealedSecret) []string {
	var secrets []string
	for _, s := range sealed {
		plain, err := o.keys.Open(s)
		if err != nil {
			o.log.Error("destination secret cannot be decrypted; skipped", "key_id", s.KeyID, "tenant_id", s.TenantID,
				"destination_id", s.ProviderID, "secret_id", s.ID, "err", err)
			continue
		}
		secrets = append(secrets, plain)
	}
	return secrets
}

// scanSealed reads a row of secretsSQL; the destination id goes where a
// provider's would (pg.AADDestination).
func scanSealed(row pgx.CollectableRow) (pg.SealedSecret, error) {
	var s pg.SealedSecret
	return s, row.Scan(&s.TenantID, &s.ProviderID, &s.ID, &s.KeyID, &s.AADVersion, &s.Ciphertext)
}

// releaseSQL ends owner's lease of one destination; a release sends one
// per destination, in a batch, each in its tenant.
const releaseSQL = `UPDATE destinations SET lease_until = now() WHERE tenant_id = @tenant_id AND id = @id AND lease_owner = @owner`

// ReleaseDestinations implements stream.Outbox.
func (o *Outbox) ReleaseDestinations(ctx context.Context, owner string, ds []stream.LeasedDestination) error {
	b := &pgx.Batch{}
	for _, d := range ds {
		b.Queue(releaseSQL, pgx.NamedArgs{"owner": owner, "tenant_id": d.TenantID, "id": d.ID})
	}
	return pg.Translate(o.pool.SendBatch(ctx, b).Close())
}

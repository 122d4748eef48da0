// Package cdc keeps the providers' Change Data Capture streams (migration
// 00059, domain.CDCService but for IngestCDC, which postgres/ingest
// writes): their setup, audited as provider_update, the lease that keeps a
// stream to one subscriber across all nodes, its last error, and the reset
// of a replay id the provider refused.
package cdc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// Streams keeps the streams on pool; the console's reads use read.
type Streams struct {
	pool *pgxpool.Pool
	read *pgxpool.Pool
}

// New returns the streams of pools.
func New(pools pg.Pools) *Streams { return &Streams{pool: pools.Write, read: pools.ForReads()} }

// streamColumns are a stream's, as scan reads them.
const streamColumns = `enabled, channel, coalesce(pubsub_address, ''), allow_private, replay_id, committed_at, moved_at,
    events, gaps_repaired, overflows, corrupted_replays, minute_start, minute_events, previous_minute_events,
    coalesce(last_error, ''), last_error_at, coalesce(leased_by, ''), lease_until,
    coalesce(allocation_max, 0), coalesce(allocation_remaining, 0), allocation_at`

func scan(row pgx.Row, s *domain.CDCStream) error {
	var committed, moved, minute, errorAt, leaseUntil, allocationAt *time.Time
	err := row.Scan(&s.Enabled, &s.Channel, &s.PubSubAddress, &s.AllowPrivate, &s.ReplayID, &committed, &moved,
		&s.Events, &s.GapsRepaired, &s.Overflows, &s.CorruptedReplays, &minute, &s.MinuteEvents, &s.PreviousMinuteEvents,
		&s.LastError, &errorAt, &s.LeasedBy, &leaseUntil, &s.Allocation.Max, &s.Allocation.Remaining, &allocationAt)
	for _, t := range []struct {
		from *time.Time
		to   *time.Time
	}{{committed, &s.CommittedAt}, {moved, &s.MovedAt}, {minute, &s.MinuteStart}, {errorAt, &s.LastErrorAt}, {leaseUntil, &s.LeaseUntil},
		{allocationAt, &s.Allocation.At}} {
		if t.from != nil {
			*t.to = *t.from
		}
	}
	return err
}

const streamSQL = `SELECT ` + streamColumns + ` FROM cdc_streams WHERE tenant_id = @tenant_id AND provider_id = @provider_id`

// CDCStream implements domain.CDCService.
func (c *Streams) CDCStream(ctx context.Context, tenantID, providerID int64) (domain.CDCStream, bool, error) {
	return c.stream(ctx, c.read, tenantID, providerID)
}

func (c *Streams) stream(ctx context.Context, q pg.Querier, tenantID, providerID int64) (domain.CDCStream, bool, error) {
	s := domain.CDCStream{TenantID: tenantID, ProviderID: providerID}
	err := scan(q.QueryRow(ctx, streamSQL, pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID}), &s)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, false, nil
	}
	return s, err == nil, pg.Translate(err)
}

// connectedAppSQL finds the provider's connected app credentials (a client
// secret, not a token).
const connectedAppSQL = `
SELECT count(*) FROM provider_api_credentials
WHERE tenant_id = @tenant_id AND provider_id = @provider_id AND secret = 'client_secret'`

// setCDCSQL sets a stream up; a new channel starts from no replay id,
// since replay ids are the channel's, and no commit time, which would have
// the subscriber backfill since the old channel's last event.
const setCDCSQL = `
INSERT INTO cdc_streams AS s (tenant_id, provider_id, enabled, channel, pubsub_address, allow_private)
VALUES (@tenant_id, @provider_id, @enabled, @channel, @pubsub_address, @allow_private)
ON CONFLICT (tenant_id, provider_id) DO UPDATE SET enabled = EXCLUDED.enabled, channel = EXCLUDED.channel,
    pubsub_address = EXCLUDED.pubsub_address, allow_private = EXCLUDED.allow_private,
    replay_id = CASE WHEN s.channel = EXCLUDED.channel THEN s.replay_id END,
    committed_at = CASE WHEN s.channel = EXCLUDED.channel THEN s.committed_at END`

// SetCDC implements domain.CDCService. Whether the provider's kind has
// Change Data Capture is its callers' to check: the kinds are
// internal/provider's.
func (c *Streams) SetCDC(ctx context.Context, tenantID, providerID int64, cfg domain.CDCConfig) (domain.CDCStream, error) {
	cfg, err := cfg.Check()
	if err != nil {
		return domain.CDCStream{}, err
	}
	var after domain.CDCStream
	err = pg.WithTx(ctx, c.pool, func(tx pgx.Tx) error {
		name, err := pg.LockProvider(ctx, tx, tenantID, providerID)
		if err != nil {
			return err
		}
		if cfg.Enabled {
			var apps int
			if err := tx.QueryRow(ctx, connectedAppSQL, pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID}).Scan(&apps); err != nil {
				return err
			}
			if apps == 0 {
				return domain.Errorf(domain.EINVALID, "provider %s has no connected app credentials: set them first "+
					"(a client id and secret, as for backfill), then turn Change Data Capture on", name)
			}
		}
		before, _, err := c.stream(ctx, tx, tenantID, providerID)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, setCDCSQL, pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID,
			"enabled": cfg.Enabled, "channel": cfg.Channel, "pubsub_address": pg.NullString(cfg.PubSubAddress),
			"allow_private": cfg.AllowPrivate}); err != nil {
			return pg.Translate(err)
		}
		if after, _, err = c.stream(ctx, tx, tenantID, providerID); err != nil {
			return err
		}
		return pg.Audit(ctx, tx, tenantID, domain.AuditProviderUpdate, name, changes(before, after))
	})
	return after, err
}

// changes says what setting a stream up changed, for the audit log.
func changes(before, after domain.CDCStream) string {
	onOff := map[bool]string{true: "on", false: "off"}
	var out []string
	if before.Enabled != after.Enabled {
		out = append(out, "Change Data Capture "+onOff[before.Enabled]+" → "+onOff[after.Enabled])
	}
	if before.Channel != after.Channel {
		out = append(out, fmt.Sprintf("CDC channel %s → %s", orNone(before.Channel), after.Channel))
		if before.ReplayID != nil {
			out = append(out, "replay id cleared")
		}
	}
	if before.Address() != after.Address() {
		out = append(out, fmt.Sprintf("Pub/Sub address %s → %s", before.Address(), after.Address()))
	}
	if before.AllowPrivate != after.AllowPrivate {
		out = append(out, "private Pub/Sub addresses "+map[bool]string{true: "allowed", false: "refused"}[after.AllowPrivate])
	}
	if len(out) == 0 {
		return "Change Data Capture " + onOff[after.Enabled] + ", unchanged"
	}
	return strings.Join(out, "; ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// enabledStreamsSQL lists the streams that are on, of providers that
// exist. Across tenants, like the backfill sweeps: every node's
// subscribers share them, and the lease keeps each to one.
const enabledStreamsSQL = `
SELECT s.tenant_id, s.provider_id, t.slug, p.name FROM cdc_streams s
JOIN providers p ON p.tenant_id = s.tenant_id AND p.id = s.provider_id
JOIN tenants t ON t.id = s.tenant_id
WHERE s.enabled
ORDER BY s.tenant_id, s.provider_id`

// EnabledCDCStreams implements domain.CDCService.
func (c *Streams) EnabledCDCStreams(ctx context.Context) ([]domain.CDCStreamRef, error) {
	rows, err := c.pool.Query(ctx, enabledStreamsSQL)
	if err != nil {
		return nil, pg.Translate(err)
	}
	refs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.CDCStreamRef, error) {
		var r domain.CDCStreamRef
		return r, row.Scan(&r.TenantID, &r.ProviderID, &r.TenantSlug, &r.Provider)
	})
	return refs, pg.Translate(err)
}

// leaseCDCSQL takes a stream on when free, expired or already the
// holder's; no row otherwise. @now is the database's clock, as for the
// journals' leases (postgres/ingest/journal.go).
const leaseCDCSQL = `
UPDATE cdc_streams SET leased_by = @holder, lease_until = @now::timestamptz + make_interval(secs => @ttl_seconds::float8)
WHERE tenant_id = @tenant_id AND provider_id = @provider_id AND enabled
    AND (lease_until IS NULL OR lease_until < @now::timestamptz OR leased_by = @holder)
RETURNING ` + streamColumns

// LeaseCDC implements domain.CDCService.
func (c *Streams) LeaseCDC(ctx context.Context, tenantID, providerID int64, holder string, ttl time.Duration) (domain.CDCStream, bool, error) {
	s := domain.CDCStream{TenantID: tenantID, ProviderID: providerID}
	now, err := pg.Now(ctx, c.pool)
	if err != nil {
		return s, false, err
	}
	err = scan(c.pool.QueryRow(ctx, leaseCDCSQL, pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID,
		"holder": holder, "now": now, "ttl_seconds": ttl.Seconds()}), &s)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, false, nil
	}
	return s, err == nil, pg.Translate(err)
}

const releaseCDCSQL = `
UPDATE cdc_streams SET leased_by = NULL, lease_until = NULL
WHERE tenant_id = @tenant_id AND provider_id = @provider_id AND leased_by = @holder`

// ReleaseCDC implements domain.CDCService.
func (c *Streams) ReleaseCDC(ctx context.Context, tenantID, providerID int64, holder string) error {
	_, err := c.pool.Exec(ctx, releaseCDCSQL, pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID, "holder": holder})
	return pg.Translate(err)
}

// maxErrorLength bounds a kept error: the console shows it whole.
const maxErrorLength = 1000

const recordCDCErrorSQL = `
UPDATE cdc_streams SET last_error = @message, last_error_at = now()
WHERE tenant_id = @tenant_id AND provider_id = @provider_id`

// RecordCDCError implements domain.CDCService; a stream never set up
// keeps nothing.
func (c *Streams) RecordCDCError(ctx context.Context, tenantID, providerID int64, message string) error {
	if r := []rune(message); len(r) > maxErrorLength {
		message = string(r[:maxErrorLength]) + "…"
	}
	_, err := c.pool.Exec(ctx, recordCDCErrorSQL, pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID,
		"message": message})
	return pg.Translate(err)
}

const recordCDCAllocationSQL = `
UPDATE cdc_streams SET allocation_max = @max, allocation_remaining = @remaining, allocation_at = @at
WHERE tenant_id = @tenant_id AND provider_id = @provider_id`

// RecordCDCAllocation implements domain.CDCService.
func (c *Streams) RecordCDCAllocation(ctx context.Context, tenantID, providerID int64, a domain.CDCAllocation) error {
	_, err := c.pool.Exec(ctx, recordCDCAllocationSQL, pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID,
		"max": a.Max, "remaining": a.Remaining, "at": a.At})
	return pg.Translate(err)
}

// resetCDCSQL clears a refused replay id and counts it; the commit time
// stays, where the backfill of the gap starts.
const resetCDCSQL = `
UPDATE cdc_streams SET replay_id = NULL, moved_at = now(), corrupted_replays = corrupted_replays + 1
WHERE tenant_id = @tenant_id AND provider_id = @provider_id AND replay_id IS NOT DISTINCT FROM @from::bytea`

// ResetCDC implements domain.CDCService.
func (c *Streams) ResetCDC(ctx context.Context, r domain.CDCReset) error {
	err := pg.WithTx(ctx, c.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, resetCDCSQL, pgx.NamedArgs{"tenant_id": r.TenantID, "provider_id": r.ProviderID, "from": r.From})
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("provider %d, refused replay id %x: %w", r.ProviderID, r.From, domain.ErrCDCMoved)
		}
		return pg.Audit(ctx, tx, r.TenantID, domain.AuditCDCReplayReset, r.Target, r.Summary)
	})
	return pg.Translate(err)
}

package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// TestProviderLimits: limits change one at a time, every read of a provider
// carries them, 0 returns the body limit to the kind's default, and
// limits out of bounds or of another tenant's provider are refused.
func TestProviderLimits(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	ctx := asTest(context.Background())
	if p.MaxBody != 0 || p.MaxFutureSkew != 5*time.Minute {
		t.Fatalf("a new provider's limits: %d, %s; want 0 (the kind's) and 5m", p.MaxBody, p.MaxFutureSkew)
	}
	body, skew := int64(2<<20), 90*time.Second
	got, err := s.SetProviderLimits(ctx, p.TenantID, p.ID, domain.ProviderLimits{MaxBody: &body})
	if err != nil || got.MaxBody != body || got.MaxFutureSkew != 5*time.Minute || got.Name != "crm" || got.TenantSlug != "acme" {
		t.Fatalf("set max body: %+v, %v", got, err)
	}
	if got, err = s.SetProviderLimits(ctx, p.TenantID, p.ID, domain.ProviderLimits{MaxFutureSkew: &skew}); err != nil ||
		got.MaxBody != body || got.MaxFutureSkew != skew {
		t.Fatalf("set max future skew: %+v, %v; want the body limit kept", got, err)
	}
	sum, err := s.ProviderSummary(ctx, p.TenantID, "crm")
	if err != nil || sum.MaxBody != body || sum.MaxFutureSkew != skew {
		t.Fatalf("ProviderSummary: %d, %s, %v", sum.MaxBody, sum.MaxFutureSkew, err)
	}
	all, err := s.ProviderSummaries(ctx, p.TenantID)
	if err != nil || len(all) != 1 || all[0].MaxBody != body || all[0].MaxFutureSkew != skew {
		t.Fatalf("ProviderSummaries: %+v, %v", all, err)
	}
	ep, err := s.Endpoint(ctx, "acme", "crm")
	if err != nil || ep.MaxBody != body || ep.MaxFutureSkew != skew {
		t.Fatalf("Endpoint: %d, %s, %v", ep.MaxBody, ep.MaxFutureSkew, err)
	}
	zero := int64(0)
	if got, err = s.SetProviderLimits(ctx, p.TenantID, p.ID, domain.ProviderLimits{MaxBody: &zero}); err != nil || got.MaxBody != 0 {
		t.Fatalf("back to the kind's default: %d, %v", got.MaxBody, err)
	}

	huge, negative, fraction := int64(domain.MaxBodyCeiling+1), -time.Second, 1500*time.Millisecond
	for name, l := range map[string]domain.ProviderLimits{"body over 64 MiB": {MaxBody: &huge},
		"negative skew": {MaxFutureSkew: &negative}, "skew in fractions of a second": {MaxFutureSkew: &fraction}} {
		if _, err := s.SetProviderLimits(ctx, p.TenantID, p.ID, l); domain.ErrorCode(err) != domain.EINVALID {
			t.Errorf("%s: %v, want EINVALID", name, err)
		}
	}
	other := newProvider(t, s, "globex", "crm")
	if _, err := s.SetProviderLimits(ctx, other.TenantID, p.ID, domain.ProviderLimits{MaxBody: &body}); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("acme's provider through globex: %v, want ENOTFOUND", err)
	}
}

// readStore is a store whose reads use a pool of their own with the given
// statement timeout, as serve runs it.
func readStore(t *testing.T, timeout time.Duration) (*Store, domain.ProviderEndpoint) {
	t.Helper()
	return pgtest.Setup(t, func(pool *pgxpool.Pool, key []byte) (*Store, error) {
		reads, err := pgxpool.NewWithConfig(context.Background(), ReadPoolConfig(pool.Config(), 2, timeout))
		if err != nil {
			return nil, err
		}
		t.Cleanup(reads.Close)
		return Open(Pools{Write: pool, Read: reads}, Options{Keys: [][]byte{key}})
	})
}

// TestReadTimeout: a read stopped by the read pool's statement timeout is
// ErrReadTimeout (503, asking for a narrower filter); the ingest pool has
// no such timeout.
func TestReadTimeout(t *testing.T) {
	t.Parallel()
	s, p := readStore(t, 200*time.Millisecond)
	ctx := context.Background()
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `LOCK TABLE events, outcome_counters IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.EventLog(ctx, p.TenantID, domain.EventLogQuery{}, domain.Page{Limit: 10}); !errors.Is(err, domain.ErrReadTimeout) {
		t.Errorf("EventLog: %v, want ErrReadTimeout", err)
	}
	if _, err := s.Stats(ctx, p.TenantID, ""); !errors.Is(err, domain.ErrReadTimeout) {
		t.Errorf("Stats: %v, want ErrReadTimeout", err)
	}
	var timeout string
	if err := s.Pool().QueryRow(ctx, `SHOW statement_timeout`).Scan(&timeout); err != nil || timeout != "0" {
		t.Errorf("the ingest pool's statement_timeout: %q, %v; want 0 (none)", timeout, err)
	}
}

// TestReadPoolConfig: the read pool's settings leave the pool they are
// derived from unchanged.
func TestReadPoolConfig(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	rc := ReadPoolConfig(pool.Config(), 3, 5*time.Second)
	if rc.MaxConns != 3 || rc.ConnConfig.RuntimeParams["statement_timeout"] != "5000" {
		t.Fatalf("read pool: %d connections, statement_timeout %q", rc.MaxConns, rc.ConnConfig.RuntimeParams["statement_timeout"])
	}
	if _, ok := pool.Config().ConnConfig.RuntimeParams["statement_timeout"]; ok || pool.Config().MaxConns == 3 {
		t.Fatal("ReadPoolConfig changed the ingest pool's configuration")
	}
}

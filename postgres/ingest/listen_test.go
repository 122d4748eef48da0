package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/ingest"
)

// notifyWithin is how soon a change on one node must reach another.
const notifyWithin = time.Second

// twoNodes returns two stores on one fresh database, standing for two
// servers, each with its listener live, and the endpoint of acme/crm
// (created through a).
func twoNodes(t *testing.T) (a, b *postgres.Store, p domain.ProviderEndpoint) {
	t.Helper()
	url := testdb.NewURL(t)
	a, b = nodeStore(t, url), nodeStore(t, url)
	startListener(t, a, 0)
	startListener(t, b, 0)
	return a, b, newProvider(t, a, "acme", "crm")
}

// startListener runs s's listener until the test ends (retrying after
// retryMin when not 0) and waits until its cache is live.
func startListener(t *testing.T, s *postgres.Store, retryMin time.Duration) {
	t.Helper()
	s.SetListenRetry(retryMin)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ListenForChanges(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("listener: %v", err)
		}
		if s.EndpointCacheLive() {
			t.Error("the cache is still live after its listener stopped")
		}
	})
	pollFor(t, 5*time.Second, "the listener to go live", s.EndpointCacheLive)
}

// awaitNotification waits until s has handled a notification past the
// count it had at before: that of what.
func awaitNotification(t *testing.T, s *postgres.Store, before uint64, what string) {
	t.Helper()
	pollFor(t, notifyWithin, "the notification of "+what, func() bool {
		_, _, n := s.CacheState()
		return n > before
	})
}

func notificationsSeen(s *postgres.Store) uint64 {
	_, _, n := s.CacheState()
	return n
}

func endpointOf(t *testing.T, s *postgres.Store, tenant, provider string) domain.ProviderEndpoint {
	t.Helper()
	p, err := s.Endpoint(context.Background(), tenant, provider)
	if err != nil {
		t.Fatalf("endpoint %s/%s: %v", tenant, provider, err)
	}
	return p
}

// execUnannounced runs sql with triggers off, so that no node hears of the
// change: what a notification lost while a listener was down looks like.
func execUnannounced(t *testing.T, s *postgres.Store, sql string, args ...any) {
	t.Helper()
	ctx := context.Background()
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, sql, args...); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// setSkewSilently changes acme/crm's max_future_skew, which Endpoint
// returns, without a notification.
func setSkewSilently(t *testing.T, s *postgres.Store, p domain.ProviderEndpoint, skew time.Duration) {
	t.Helper()
	execUnannounced(t, s, `UPDATE providers SET max_future_skew_seconds = $1 WHERE tenant_id = $2 AND id = $3`,
		int64(skew/time.Second), p.TenantID, p.ID)
}

func skewOf(t *testing.T, s *postgres.Store) time.Duration {
	t.Helper()
	return endpointOf(t, s, "acme", "crm").MaxFutureSkew
}

// TestEndpointCacheServesWhileListening: with its listener live a store
// answers Endpoint from its cache (a change no one was told of is not
// seen); a second listener is refused.
func TestEndpointCacheServesWhileListening(t *testing.T) {
	t.Parallel()
	// The provider exists before b listens: a late notification of its
	// creation would empty b's cache and make the unannounced change seen.
	url := testdb.NewURL(t)
	b := nodeStore(t, url)
	p := newProvider(t, b, "acme", "crm")
	startListener(t, b, 0)
	if err := b.ListenForChanges(context.Background()); !errors.Is(err, ingest.ErrAlreadyListening) {
		t.Fatalf("second listener: %v, want ingest.ErrAlreadyListening", err)
	}
	before := skewOf(t, b)
	setSkewSilently(t, b, p, 7*time.Minute)
	if got := skewOf(t, b); got != before {
		t.Fatalf("max future skew %s after an unannounced change, want the cached %s", got, before)
	}
}

// TestEndpointWithoutListenerIsNotCached: a store whose listener is not
// running (the CLI, most tests) reads every endpoint from the database.
func TestEndpointWithoutListenerIsNotCached(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	skewOf(t, s)
	setSkewSilently(t, s, p, 7*time.Minute)
	if got := skewOf(t, s); got != 7*time.Minute {
		t.Fatalf("max future skew %s, want the stored 7m0s", got)
	}
}

// TestEndpointCacheRetiredSecret: a secret retired through one node is out
// of the other's endpoint within a second.
func TestEndpointCacheRetiredSecret(t *testing.T) {
	t.Parallel()
	ctx := asTest(context.Background())
	a, b, p := twoNodes(t)
	const newest = "whsec_bmV3ZXN0IHNlY3JldA=="
	if err := a.RotateProviderSecret(ctx, p.TenantID, p.ID, newest); err != nil {
		t.Fatal(err)
	}
	if got := endpointOf(t, b, "acme", "crm").Secrets; !slices.Equal(got, []string{newest, "whsec_dGVzdA=="}) {
		t.Fatalf("secrets during the rotation %q", got)
	}
	if _, err := a.RetireProviderSecrets(ctx, p.TenantID, p.ID); err != nil {
		t.Fatal(err)
	}
	took := pollFor(t, notifyWithin, "the retired secret to leave the other node", func() bool {
		return !slices.Contains(endpointOf(t, b, "acme", "crm").Secrets, "whsec_dGVzdA==")
	})
	if got := endpointOf(t, b, "acme", "crm").Secrets; !slices.Equal(got, []string{newest}) {
		t.Fatalf("secrets after retiring %q", got)
	}
	t.Logf("retired secret refused by the other node after %s", took)
}

// TestEndpointCacheScopeDisabled: once the notification of a scope
// disabled on one node arrives, the other's very next lookup has it
// disabled.
func TestEndpointCacheScopeDisabled(t *testing.T) {
	t.Parallel()
	ctx := asTest(context.Background())
	a, b, p := twoNodes(t)
	sc := domain.DefaultScope(domain.ScopeName{ObjectType: "contact", Action: "snapshot"})
	if err := a.SaveProviderScope(ctx, p.TenantID, p.ID, sc); err != nil {
		t.Fatal(err)
	}
	if !endpointOf(t, b, "acme", "crm").Scope(sc.ScopeName).Enabled {
		t.Fatal("scope disabled before it was")
	}
	n := notificationsSeen(b)
	sc.Enabled = false
	if err := a.SaveProviderScope(ctx, p.TenantID, p.ID, sc); err != nil {
		t.Fatal(err)
	}
	awaitNotification(t, b, n, "the disabled scope")
	if endpointOf(t, b, "acme", "crm").Scope(sc.ScopeName).Enabled {
		t.Fatal("the other node still has the scope enabled after the notification")
	}
}

// notifyByHand sends what a write path sends after a change to a tenant's
// endpoints (pg.NotifyEndpoints), as an operator editing by SQL must.
func notifyByHand(t *testing.T, s *postgres.Store, tenantID int64) {
	t.Helper()
	if _, err := s.Pool().Exec(context.Background(), `SELECT pg_notify('tidemark_endpoints', $1::bigint::text)`, tenantID); err != nil {
		t.Fatal(err)
	}
}

// TestEndpointCacheProvidersAndTenants: a provider deleted or created, and
// a tenant renamed or deleted, on one node are seen by the other after the
// notification, cached misses included.
func TestEndpointCacheProvidersAndTenants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b, p := twoNodes(t)
	change := func(what string, fn func()) {
		t.Helper()
		n := notificationsSeen(b)
		fn()
		awaitNotification(t, b, n, what)
	}
	exec := func(sql string, args ...any) func() {
		return func() {
			if _, err := a.Pool().Exec(ctx, sql, args...); err != nil {
				t.Fatal(err)
			}
			notifyByHand(t, a, p.TenantID)
		}
	}
	missing := func(tenant, provider string) {
		t.Helper()
		if _, err := b.Endpoint(ctx, tenant, provider); domain.ErrorCode(err) != domain.ENOTFOUND {
			t.Fatalf("%s/%s: %v, want ENOTFOUND", tenant, provider, err)
		}
	}

	missing("acme", "erp") // cached as a miss
	change("provider created", func() { newProvider(t, a, "acme", "erp") })
	endpointOf(t, b, "acme", "erp")

	endpointOf(t, b, "acme", "crm")
	change("provider deleted", exec(`DELETE FROM providers WHERE tenant_id = $1 AND id = $2`, p.TenantID, p.ID))
	missing("acme", "crm")

	change("tenant renamed", exec(`UPDATE tenants SET slug = 'acme-inc' WHERE id = $1`, p.TenantID))
	missing("acme", "erp")
	if got := endpointOf(t, b, "acme-inc", "erp"); got.TenantSlug != "acme-inc" || got.TenantID != p.TenantID {
		t.Fatalf("renamed tenant's endpoint %+v", got.Provider)
	}

	change("tenant deleted", exec(`DELETE FROM tenants WHERE id = $1`, p.TenantID))
	missing("acme-inc", "erp")
}

// TestEndpointCacheListenerLost: when the listener's connection is killed
// the cache is emptied and bypassed, so a change no notification announced
// is seen at once, and it comes back when the listener reconnects.
func TestEndpointCacheListenerLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.NewURL(t)
	a, b := nodeStore(t, url), nodeStore(t, url)
	p := newProvider(t, a, "acme", "crm")
	startListener(t, b, 1500*time.Millisecond) // a reconnection slow enough to watch
	skewOf(t, b)
	setSkewSilently(t, a, p, 6*time.Minute)
	if got := skewOf(t, b); got == 6*time.Minute {
		t.Fatal("the cache is not serving")
	}

	_, pid, _ := b.CacheState()
	var killed bool
	if err := a.Pool().QueryRow(ctx, `SELECT pg_terminate_backend($1::int)`, int64(pid)).Scan(&killed); err != nil || !killed {
		t.Fatalf("terminate the listener's backend %d: %v %v", pid, killed, err)
	}
	pollFor(t, notifyWithin, "the cache to turn off", func() bool { return !b.EndpointCacheLive() })
	if got := skewOf(t, b); got != 6*time.Minute {
		t.Fatalf("max future skew %s after the listener was lost, want the stored 6m0s", got)
	}
	setSkewSilently(t, a, p, 8*time.Minute)
	if got := skewOf(t, b); got != 8*time.Minute {
		t.Fatalf("max future skew %s while the listener is down, want the stored 8m0s", got)
	}

	pollFor(t, 5*time.Second, "the listener to reconnect", b.EndpointCacheLive)
	if _, newPID, _ := b.CacheState(); newPID == pid || newPID == 0 {
		t.Fatalf("listener backend %d after reconnecting, was %d", newPID, pid)
	}
	skewOf(t, b)
	setSkewSilently(t, a, p, 9*time.Minute)
	if got := skewOf(t, b); got != 8*time.Minute {
		t.Fatalf("max future skew %s, want the cached 8m0s once the listener is back", got)
	}
}

// TestEndpointCacheLogsUndecryptableOnce: a secret that fails to decrypt
// is logged once, whether its endpoint comes from the cache or is read
// again after a change.
func TestEndpointCacheLogsUndecryptableOnce(t *testing.T) {
	t.Parallel()
	ctx := asTest(context.Background())
	s, log := logStore(t, testdb.New(t))
	p := newProvider(t, s, "acme", "crm")
	startListener(t, s, 0)
	n := notificationsSeen(s)
	if _, err := s.Pool().Exec(ctx, `UPDATE provider_secrets SET ciphertext = set_byte(ciphertext, 20, get_byte(ciphertext, 20) # 1)
		WHERE tenant_id = $1 AND provider_id = $2`, p.TenantID, p.ID); err != nil {
		t.Fatal(err)
	}
	notifyByHand(t, s, p.TenantID)
	awaitNotification(t, s, n, "the damaged secret")
	for i := range 3 {
		if got := endpointOf(t, s, "acme", "crm").Secrets; len(got) != 0 {
			t.Fatalf("secrets %q, want none that decrypts", got)
		}
		if i == 1 { // a change makes the next lookup read it again
			n = notificationsSeen(s)
			if err := s.SaveProviderScope(ctx, p.TenantID, p.ID, domain.DefaultScope(domain.ScopeName{ObjectType: "deal", Action: "snapshot"})); err != nil {
				t.Fatal(err)
			}
			awaitNotification(t, s, n, "the new scope")
		}
	}
	if got := strings.Count(log.String(), "cannot be decrypted"); got != 1 {
		t.Fatalf("logged %d times, want once:\n%s", got, log)
	}
}

// BenchmarkEndpoint compares the lookup of a delivery's endpoint read from
// the database with one from the cache.
func BenchmarkEndpoint(b *testing.B) {
	for _, cached := range []bool{false, true} {
		b.Run(fmt.Sprintf("cached=%v", cached), func(b *testing.B) {
			s, err := postgres.New(testdb.New(b), testKey)
			if err != nil {
				b.Fatal(err)
			}
			ctx := asTest(context.Background())
			tn, err := s.CreateTenant(ctx, "acme", "")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.ConnectProvider(ctx, tn.ID, "crm", "standard", "whsec_dGVzdA==", nil); err != nil {
				b.Fatal(err)
			}
			if cached {
				lctx, cancel := context.WithCancel(ctx)
				defer cancel()
				go s.ListenForChanges(lctx)
				for !s.EndpointCacheLive() {
					time.Sleep(time.Millisecond)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := s.Endpoint(ctx, "acme", "crm"); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

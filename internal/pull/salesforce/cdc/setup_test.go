package cdc_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/internal/pull/salesforce/cdc"
	"github.com/tidemark/tidemark/internal/pull/salesforce/pubsub/pubsubtest"
	"github.com/tidemark/tidemark/internal/pull/salesforce/salesforcetest"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
)

// org is the fake org's id, which the Pub/Sub API's tenantid header names.
const org = "00D5e000000AbCdEAK"

// fixture is a store on a fresh database with tenant acme and its
// Salesforce provider sf, whose connected app is the fake org's and whose
// Change Data Capture stream is on, read from the fake Pub/Sub API.
type fixture struct {
	store  *postgres.Store
	ctx    context.Context
	sf     *salesforcetest.Server
	pubsub *pubsubtest.Server
	p      domain.ProviderEndpoint
}

func setup(t *testing.T) fixture {
	t.Helper()
	store, err := postgres.New(testdb.New(t), []byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := domain.WithActor(context.Background(), domain.Actor{Kind: domain.ActorCLI, Name: "test"})
	tenant, err := store.CreateTenant(ctx, "acme", "")
	if err != nil {
		t.Fatal(err)
	}
	kind, _ := provider.Lookup("salesforce")
	secret, config, err := kind.Setup("", map[string]string{"org_id": org})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.ConnectProvider(ctx, tenant.ID, "sf", "salesforce", secret, config); err != nil {
		t.Fatal(err)
	}
	p, err := store.Endpoint(ctx, "acme", "sf")
	if err != nil {
		t.Fatal(err)
	}
	sf := salesforcetest.New(t)
	if err := store.SetAPICredentials(ctx, p.TenantID, p.ID, sf.Credentials()); err != nil {
		t.Fatal(err)
	}
	fake := pubsubtest.New(t, 200*time.Millisecond)
	fake.AcceptIssued(sf.Tokens, sf.URL, org)
	if _, err := store.SetCDC(ctx, p.TenantID, p.ID, domain.CDCConfig{Enabled: true, PubSubAddress: fake.Addr(), AllowPrivate: true}); err != nil {
		t.Fatal(err)
	}
	return fixture{store: store, ctx: ctx, sf: sf, pubsub: fake, p: p}
}

// subscriber is a node's subscriber, looking for streams every 100 ms,
// with leases of lease, logging through t.
func (f fixture) subscriber(t *testing.T, lease time.Duration) *cdc.Subscriber {
	s := cdc.New(f.store, slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo})), 100*time.Millisecond)
	s.LeaseTTL = lease
	return s
}

// run runs s until the test ends or stop is called; stop waits for it to
// give its lease back.
func run(t *testing.T, s *cdc.Subscriber) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx)
	}()
	stop = func() {
		cancel()
		<-done
	}
	t.Cleanup(stop)
	return stop
}

// stream is the provider's stream as stored.
func (f fixture) stream(t *testing.T) domain.CDCStream {
	t.Helper()
	st, ok, err := f.store.CDCStream(f.ctx, f.p.TenantID, f.p.ID)
	if err != nil || !ok {
		t.Fatalf("stream: %v %v", ok, err)
	}
	return st
}

// awaitReplay waits until the stream's replay id is id.
func (f fixture) awaitReplay(t *testing.T, id []byte, what string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); string(f.stream(t).ReplayID) != string(id); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			st := f.stream(t)
			t.Fatalf("%s: the stream is at %x after 30 s, want %x (last error %q)", what, st.ReplayID, id, st.LastError)
		}
	}
}

// awaitSubscribed waits until the fake saw n subscriptions.
func (f fixture) awaitSubscribed(t *testing.T, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); f.pubsub.Counts().Subscribes < n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d subscriptions after 30 s, want %d (last error %q)", f.pubsub.Counts().Subscribes, n, f.stream(t).LastError)
		}
	}
}

// record is a record's snapshot and revision; "" when there is none.
func (f fixture) record(t *testing.T, objectType, id string) (snapshot string, revision int64) {
	t.Helper()
	err := f.store.Pool().QueryRow(f.ctx, `SELECT snapshot::text, revision FROM records WHERE tenant_id = $1 AND provider_id = $2
		AND object_type = $3 AND object_id = $4`, f.p.TenantID, f.p.ID, objectType, id).Scan(&snapshot, &revision)
	if err != nil && !strings.Contains(err.Error(), "no rows") {
		t.Fatal(err)
	}
	return snapshot, revision
}

// outcomes counts the provider's events by outcome.
func (f fixture) outcomes(t *testing.T) map[string]int {
	t.Helper()
	rows, err := f.store.Pool().Query(f.ctx, `SELECT outcome, count(*) FROM events WHERE tenant_id = $1 GROUP BY outcome`, f.p.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var o string
		var n int
		if err := rows.Scan(&o, &n); err != nil {
			t.Fatal(err)
		}
		out[o] = n
	}
	return out
}

// testWriter logs through t.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/e2e"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/internal/pull/salesforce/pubsub/pubsubtest"
	"github.com/tidemark/tidemark/internal/pull/salesforce/salesforcetest"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
)

// TestCDCCrashSafety kills `tidemark serve` with SIGKILL while its CDC
// subscriber is in the middle of a Salesforce stream (the fake Pub/Sub
// API's), starts it again on the same database and lets it read to the
// end: every change event is written exactly once, as each one's replay
// id moved in its delivery's transaction.
func TestCDCCrashSafety(t *testing.T) {
	e2e.Require(t, "the go command (the test builds tidemark and kills it mid-stream)")
	t.Parallel()
	const org, changes = "00D5e000000AbCdEAK", 600
	dbURL := testdb.NewURL(t)
	pool := checkerPool(t, dbURL)
	key, err := base64.StdEncoding.DecodeString(crashKey)
	if err != nil {
		t.Fatal(err)
	}
	store, err := postgres.New(pool, key)
	if err != nil {
		t.Fatal(err)
	}
	ctx := domain.WithActor(context.Background(), domain.Actor{Kind: domain.ActorCLI, Name: "test"})
	tenant, err := store.CreateTenant(ctx, crashTenant, "")
	if err != nil {
		t.Fatal(err)
	}
	kind, _ := provider.Lookup("salesforce")
	secret, config, err := kind.Setup("", map[string]string{"org_id": org})
	if err != nil {
		t.Fatal(err)
	}
	p, err := store.ConnectProvider(ctx, tenant.ID, "sf", "salesforce", secret, config)
	if err != nil {
		t.Fatal(err)
	}
	sf := salesforcetest.New(t)
	if err := store.SetAPICredentials(ctx, tenant.ID, p.ID, sf.Credentials()); err != nil {
		t.Fatal(err)
	}
	fake := pubsubtest.New(t, time.Second)
	fake.AcceptIssued(sf.Tokens, sf.URL, org)
	if _, err := store.SetCDC(ctx, tenant.ID, p.ID, domain.CDCConfig{Enabled: true, PubSubAddress: fake.Addr(), AllowPrivate: true}); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	start := fake.AddChange(pubsubtest.Change{Entity: "Contact", Type: "CREATE", RecordIDs: []string{"003start"}, Commit: at})
	var last []byte
	for i := range changes {
		last = fake.AddChange(pubsubtest.Change{Entity: "Contact", Type: "CREATE", RecordIDs: []string{fmt.Sprintf("003C%05d", i)},
			Commit: at.Add(time.Duration(i+1) * time.Millisecond), Fields: map[string]any{"Name.LastName": fmt.Sprintf("N%d", i)}})
	}
	// The stream was read up to its first event.
	if _, err := pool.Exec(ctx, `UPDATE cdc_streams SET replay_id = $1 WHERE tenant_id = $2`, start, tenant.ID); err != nil {
		t.Fatal(err)
	}

	exe := buildTidemark(t)
	env := serverEnv(dbURL, crashKey)
	written := `SELECT count(*) FROM deliveries WHERE tenant_id = $1 AND source = 'cdc'`
	c := startServer(t, exe, env, "--cdc-interval", "200ms")
	deadline := time.Now().Add(2 * time.Minute)
	for queryInt(t, pool, written, tenant.ID) < 20 {
		if time.Now().After(deadline) {
			t.Fatalf("no CDC delivery written within 2 minutes:\n%s", tailLines(c.stderr.String(), 20))
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.kill()
	awaitBackends(t, pool)
	before := queryInt(t, pool, written, tenant.ID)
	if before >= changes {
		t.Fatalf("%d of %d change events were written before the kill: it was not mid-stream", before, changes)
	}
	t.Logf("killed after %d of %d change events were written", before, changes)
	// The dead node's lease lapses after a minute; the test does not wait.
	if _, err := pool.Exec(ctx, `UPDATE cdc_streams SET lease_until = now() WHERE tenant_id = $1`, tenant.ID); err != nil {
		t.Fatal(err)
	}

	c = startServer(t, exe, env, "--cdc-interval", "200ms")
	deadline = time.Now().Add(2 * time.Minute)
	for queryInt(t, pool, `SELECT count(*) FROM cdc_streams WHERE tenant_id = $1 AND replay_id = $2`, tenant.ID, last) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the stream was not read to its last event within 2 minutes:\n%s", tailLines(c.stderr.String(), 20))
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.kill()
	awaitBackends(t, pool)

	if n := queryInt(t, pool, written, tenant.ID); n != changes {
		t.Errorf("%d CDC deliveries, want the %d change events once each", n, changes)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM records WHERE tenant_id = $1`, tenant.ID); n != changes {
		t.Errorf("%d records, want %d: a change event was skipped", n, changes)
	}
	// Each create is three events: the creation, Id and LastName.
	if n := queryInt(t, pool, `SELECT count(*) FROM events WHERE tenant_id = $1`, tenant.ID); n != 3*changes {
		t.Errorf("%d events, want %d: a change event was repeated or skipped", n, 3*changes)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM events WHERE tenant_id = $1 AND outcome <> 'applied'`, tenant.ID); n != 0 {
		t.Errorf("%d events not applied, want every one applied once", n)
	}
	if n := queryInt(t, pool, `SELECT events FROM cdc_streams WHERE tenant_id = $1`, tenant.ID); n != changes {
		t.Errorf("the stream counts %d events, want %d", n, changes)
	}
}

package main

import (
	"context"
	"encoding/base64"
	"strconv"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/e2e"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/internal/pull/hubspot/hubspottest"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
)

// TestJournalCrashSafety kills `tidemark serve` with SIGKILL while its
// journal reader is in the middle of a page of HubSpot's fake Webhooks
// Journal (its entries' files answered slowly), starts it again on the
// same database and lets it read to the end: every entry is applied
// exactly once. None is skipped (every record is there), none repeated
// (each entry's event decided once, applied; no page committed twice),
// because each page's offset moved in its delivery's transaction.
func TestJournalCrashSafety(t *testing.T) {
	e2e.Require(t, "the go command (the test builds tidemark and kills it mid-page)")
	t.Parallel()
	const portal, entries = 62515, 250 // three pages: 100, 100 and 50 entries
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
	hs := hubspottest.New(t)
	fake := hs.App()
	app, err := store.CreateApp(ctx, domain.NewApp{Kind: domain.AppKindHubSpot, Name: "crash-hub", ProviderAppID: fake.ID,
		ClientID: fake.ClientID, ClientSecret: fake.ClientSecret, AuthorizeURL: hs.AuthorizeURL(), APIBaseURL: hs.URL(), AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	access, refresh := hs.InstallTokens(portal)
	secret, config, err := provider.HubSpot.Setup("", nil)
	if err != nil {
		t.Fatal(err)
	}
	in, err := store.InstallByOAuth(ctx, domain.AppOAuthInstall{AppID: app.ID, TenantID: tenant.ID, PortalID: portal,
		ProviderName: domain.DefaultAppProvider, NewSecret: secret, NewConfig: config,
		Tokens: domain.AppTokens{AccessToken: access, RefreshToken: refresh, Expiry: time.Now().Add(30 * time.Minute)}})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for i := range entries {
		name := "n" + strconv.Itoa(i)
		hs.AppendEntry(portal, hubspottest.Entry{ObjectTypeID: "0-1", ObjectID: int64(5000 + i), Action: "UPDATE",
			OccurredAt: at.Add(time.Duration(i) * time.Millisecond).UnixMilli(), Properties: map[string]*string{"firstname": &name}})
	}
	last := hs.Journal(portal)[entries-1].Offset
	hs.SetFileDelay(15 * time.Millisecond)

	exe := buildTidemark(t)
	env := serverEnv(dbURL, crashKey)
	journalDeliveries := `SELECT count(*) FROM deliveries WHERE tenant_id = $1 AND source = 'journal'`
	c := startServer(t, exe, env, "--journal-interval", "200ms")
	deadline := time.Now().Add(2 * time.Minute)
	for queryInt(t, pool, journalDeliveries, tenant.ID) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no journal page written within 2 minutes:\n%s", tailLines(c.stderr.String(), 20))
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	c.kill() // while it fetches the second page's entries (1.5 s of them)
	awaitBackends(t, pool)
	pages := queryInt(t, pool, journalDeliveries, tenant.ID)
	if pages >= 3 {
		t.Fatalf("%d pages were written before the kill: it was not mid-journal", pages)
	}
	t.Logf("killed after %d of 3 pages committed, %d entries' files fetched", pages, hs.FileFetches())
	// The dead node's lease lapses after a minute; the test does not wait.
	if _, err := pool.Exec(ctx, `UPDATE app_journal_cursors SET lease_until = now() WHERE tenant_id = $1`, tenant.ID); err != nil {
		t.Fatal(err)
	}

	c = startServer(t, exe, env, "--journal-interval", "200ms")
	deadline = time.Now().Add(2 * time.Minute)
	for queryInt(t, pool, `SELECT count(*) FROM app_journal_cursors WHERE tenant_id = $1 AND install_id = $2 AND journal_offset = $3`,
		tenant.ID, in.ID, last) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the journal was not read to its last entry within 2 minutes:\n%s", tailLines(c.stderr.String(), 20))
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.kill()
	awaitBackends(t, pool)

	if n := queryInt(t, pool, journalDeliveries, tenant.ID); n != 3 {
		t.Errorf("%d journal deliveries, want the 3 pages once each", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM records WHERE tenant_id = $1`, tenant.ID); n != entries {
		t.Errorf("%d records, want %d: an entry was skipped", n, entries)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM events WHERE tenant_id = $1`, tenant.ID); n != entries {
		t.Errorf("%d events, want %d: an entry was repeated or skipped", n, entries)
	}
	if n := queryInt(t, pool, `SELECT count(DISTINCT event_id) FROM events WHERE tenant_id = $1 AND outcome = 'applied'`, tenant.ID); n != entries {
		t.Errorf("%d events applied, want each of the %d entries' once", n, entries)
	}
	if n := queryInt(t, pool, `SELECT entries_read FROM app_journal_cursors WHERE tenant_id = $1`, tenant.ID); n != entries {
		t.Errorf("the cursor counts %d entries read, want %d", n, entries)
	}
}

package backfill_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/domain"
	domainalerting "github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/backfill"
	"github.com/tidemark/tidemark/internal/pull/hubspot/hubspottest"
)

// TestJobsRunSweepsAndOperatorsJobs: what serve's backfill service does.
// An operator's job is run to its end with its counts stored; a sweep is
// queued for the provider with credentials once its interval passed (not
// twice, not for the provider without them) and finds what the webhooks
// missed; a job the provider refuses fails with the reason, without the
// token.
func TestJobsRunSweepsAndOperatorsJobs(t *testing.T) {
	t.Parallel()
	store, ctx, tenant := setup(t)
	api := hubspottest.New(t)
	var eps []domain.ProviderEndpoint
	for _, name := range []string{"hs", "other"} {
		if _, err := store.ConnectProvider(ctx, tenant.ID, name, "hubspot", "hubspot-app-secret-0123456789", nil); err != nil {
			t.Fatal(err)
		}
		ep, err := store.Endpoint(ctx, "acme", name)
		if err != nil {
			t.Fatal(err)
		}
		// A first webhook creates the contact scope.
		d := domain.Delivery{ID: uuid.Must(uuid.NewV7()).String(), TenantID: tenant.ID, ProviderID: ep.ID, ReceivedAt: time.Now(),
			Status: 200, Signature: domain.SignatureValid}
		if _, err := store.Ingest(ctx, d, ep, []domain.Event{property("1:1:1:1:0", "1", "email", "one@example.com", 1)}); err != nil {
			t.Fatal(err)
		}
		eps = append(eps, ep)
	}
	if err := store.SetAPICredentials(ctx, tenant.ID, eps[0].ID, pull.Credentials{Token: api.Token(), BaseURL: api.URL(), AllowPrivate: true}); err != nil {
		t.Fatal(err)
	}
	api.Create("contact", time.Now().Add(-30*time.Minute), map[string]string{"email": "ann@example.com"})

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	jobs := &backfill.Jobs{Store: store, Log: log, Runner: &backfill.Runner{Store: store, Sources: backfill.NewSources(store, log), Log: log}}
	runAll := func() {
		t.Helper()
		for {
			ran, err := jobs.RunNext(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !ran {
				return
			}
		}
	}

	now := time.Now()
	op, err := store.StartBackfill(ctx, tenant.ID, eps[0].ID, now.Add(-time.Hour), now, "", false)
	if err != nil {
		t.Fatal(err)
	}
	runAll()
	if op, err = store.Backfill(ctx, tenant.ID, op.ID); err != nil || op.State != pull.Done || op.Missed != 2 || op.Events != 2 {
		t.Fatalf("the operator's job: %+v, %v; want done with the contact's creation and email applied", op, err)
	}

	// The sweep: due for the provider with credentials only, queued once.
	api.Create("contact", time.Now().Add(-5*time.Minute), map[string]string{"email": "bo@example.com"})
	if n, err := jobs.Sweep(context.Background(), time.Now(), 15*time.Minute, 5*time.Minute); err != nil || n != 1 {
		t.Fatalf("sweep queued %d, %v; want 1 (the provider with credentials)", n, err)
	}
	if n, err := jobs.Sweep(context.Background(), time.Now(), 15*time.Minute, 5*time.Minute); err != nil || n != 0 {
		t.Fatalf("a second check queued %d, %v; want none while one is queued", n, err)
	}
	runAll()
	sweeps, err := store.LastSweeps(ctx, tenant.ID)
	if err != nil {
		t.Fatal(err)
	}
	if s := sweeps[eps[0].ID]; s.State != pull.Done || !s.Sweep || s.Missed != 2 {
		t.Fatalf("the sweep: %+v; want done, finding the new contact's creation and email", s)
	}

	// A token the provider refuses fails the job with the reason.
	if err := store.SetAPICredentials(ctx, tenant.ID, eps[0].ID, pull.Credentials{Token: "pat-revoked-0123456789", BaseURL: api.URL(), AllowPrivate: true}); err != nil {
		t.Fatal(err)
	}
	bad, err := store.StartBackfill(ctx, tenant.ID, eps[0].ID, now.Add(-time.Hour), now, "", false)
	if err != nil {
		t.Fatal(err)
	}
	runAll()
	bad, err = store.Backfill(ctx, tenant.ID, bad.ID)
	if err != nil || bad.State != pull.Failed || !strings.Contains(bad.Error, "token") || strings.Contains(bad.Error, "pat-revoked") {
		t.Fatalf("a refused token: %+v, %v; want failed, naming the token without it", bad, err)
	}
}

// TestSilentProviderIsSweptAtOnce: a provider_silent alert that fires for
// a provider with API credentials queues its sweep over the silent time;
// for one without credentials, or another rule, nothing is queued.
func TestSilentProviderIsSweptAtOnce(t *testing.T) {
	t.Parallel()
	store, ctx, tenant := setup(t)
	var ids []int64
	for _, name := range []string{"hs", "bare"} {
		p, err := store.ConnectProvider(ctx, tenant.ID, name, "hubspot", "hubspot-app-secret-0123456789", nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.ID)
	}
	if err := store.SetAPICredentials(ctx, tenant.ID, ids[0], pull.Credentials{Token: "pat-test-0123456789"}); err != nil {
		t.Fatal(err)
	}
	fired := backfill.SweepWhenSilent(store, slog.New(slog.NewTextHandler(io.Discard, nil)))
	started := time.Now().Add(-time.Minute)
	for _, c := range []domainalerting.Change{
		{TenantID: tenant.ID, Alert: domainalerting.Alert{Rule: domainalerting.ProviderSilent, Provider: "hs", StartedAt: started, Window: 6 * time.Hour}},
		{TenantID: tenant.ID, Alert: domainalerting.Alert{Rule: domainalerting.ProviderSilent, Provider: "bare", StartedAt: started, Window: 6 * time.Hour}},
		{TenantID: tenant.ID, Alert: domainalerting.Alert{Rule: domainalerting.Refusals, Provider: "hs", StartedAt: started, Window: time.Hour}},
	} {
		fired(ctx, c)
	}
	for i, want := range []int{1, 0} {
		jobs, err := store.Backfills(ctx, tenant.ID, ids[i], 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) != want {
			t.Fatalf("provider %d: %d jobs, want %d", i, len(jobs), want)
		}
		if want == 1 {
			j := jobs[0]
			if !j.Sweep || j.State != pull.Queued || j.From.After(started.Add(-6*time.Hour)) {
				t.Errorf("the silent provider's sweep %+v: want a queued sweep from before the silence began", j)
			}
		}
	}
}

// TestNodesRacingForASweepQueueOne: serve nodes check for due sweeps at the
// same moment; the provider gets one sweep, and the nodes that lost the
// race report no error (they would log a warning every minute).
func TestNodesRacingForASweepQueueOne(t *testing.T) {
	t.Parallel()
	store, ctx, tenant := setup(t)
	p, err := store.ConnectProvider(ctx, tenant.ID, "hs", "hubspot", "hubspot-app-secret-0123456789", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.SetAPICredentials(ctx, tenant.ID, p.ID, pull.Credentials{Token: "pat-test-0123456789"}); err != nil {
		t.Fatal(err)
	}
	// A scope to sweep: without one no sweep is due.
	if err := store.SaveProviderScope(ctx, tenant.ID, p.ID, domain.DefaultScope(domain.ScopeName{ObjectType: "contact", Action: "update"})); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	jobs := backfill.NewJobs(store, log)
	const nodes = 6
	queued, errs := make(chan int, nodes), make(chan error, nodes)
	now, start := time.Now(), make(chan struct{})
	for range nodes {
		go func() {
			<-start
			n, err := jobs.Sweep(context.Background(), now, 15*time.Minute, 5*time.Minute)
			queued <- n
			errs <- err
		}()
	}
	close(start)
	total := 0
	for range nodes {
		total += <-queued
		if err := <-errs; err != nil {
			t.Errorf("a node: %v", err)
		}
	}
	if total != 1 {
		t.Errorf("%d sweeps queued, want 1", total)
	}
}

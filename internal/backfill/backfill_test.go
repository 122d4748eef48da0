package backfill_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/backfill"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
)

// setup is a store on a fresh database with tenant acme, and the context
// of a command-line actor.
func setup(t *testing.T) (*postgres.Store, context.Context, domain.Tenant) {
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
	return store, ctx, tenant
}

// records is a provider API in memory: the events of each object type, as
// a source returns them.
type records map[string][]domain.Event

func (r records) Pull(_ context.Context, objectType string, from, to time.Time, emit func([]domain.Event) error) error {
	var page []domain.Event
	for _, e := range r[objectType] {
		if !e.RevisionTime.Before(from) && e.RevisionTime.Before(to) {
			page = append(page, e)
		}
	}
	if len(page) == 0 {
		return nil
	}
	return emit(page)
}

// withCredentials is the store with every provider's credentials set.
type withCredentials struct{ *postgres.Store }

func (withCredentials) APICredentials(context.Context, int64, int64) (pull.Credentials, bool, error) {
	return pull.Credentials{Token: "pat-test"}, true, nil
}

// property is a HubSpot property change of contact id at ms, as a webhook
// or a pull reports it; webhook events and pulled ones differ in their ids.
func property(eventID, id, name, value string, ms int64) domain.Event {
	snap, _ := json.Marshal(map[string]string{name: value})
	payload, _ := json.Marshal(map[string]any{"objectId": id, "propertyName": name, "propertyValue": value, "occurredAt": ms})
	return domain.Event{EventID: eventID, Scope: domain.ScopeName{ObjectType: "contact", Action: "propertyChange"}, ObjectID: id,
		Property: name, Snapshot: snap, Revision: &ms, RevisionTime: time.UnixMilli(ms), Payload: payload}
}

func pulled(id, name, value string, ms int64) domain.Event {
	return property(fmt.Sprintf("backfill:contact:%s:%s:%d", id, name, ms), id, name, value, ms)
}

// TestBackfillDecidesLikeWebhooks: pulled records go through the same
// guard as webhooks. A change the webhooks brought is redundant, a missed
// one applied, a contradiction at the same revision a revision conflict
// for the queue; pulled again, everything is a duplicate. The deliveries
// are marked as backfill.
func TestBackfillDecidesLikeWebhooks(t *testing.T) {
	t.Parallel()
	store, ctx, tenant := setup(t)
	if _, err := store.ConnectProvider(ctx, tenant.ID, "hs", "hubspot", "hubspot-app-secret-0123456789", nil); err != nil {
		t.Fatal(err)
	}
	ep, err := store.Endpoint(ctx, "acme", "hs")
	if err != nil {
		t.Fatal(err)
	}
	base := time.Now().Add(-2 * time.Hour).UnixMilli()
	webhook := domain.Delivery{ID: "0190a2b3-c4d5-7e6f-8a9b-0c1d2e3f4a5b", TenantID: tenant.ID, ProviderID: ep.ID, ReceivedAt: time.Now(),
		Status: 200, Signature: domain.SignatureValid}
	events := []domain.Event{
		property("1:2:3:101:0", "101", "email", "ann@example.com", base),
		property("1:2:4:103:0", "103", "email", "cy@example.com", base),
	}
	events[1].Seq = 1
	if _, err := store.Ingest(ctx, webhook, ep, events); err != nil {
		t.Fatal(err)
	}

	api := records{"contact": {
		pulled("101", "email", "ann@example.com", base),         // the webhook brought it: redundant
		pulled("101", "firstname", "Ann", base+500),             // missed: applied
		pulled("102", "email", "bo@example.com", base+700),      // a record never seen: applied
		pulled("103", "email", "cyril@example.com", base),       // same revision, other value: a revision conflict
		pulled("104", "email", "late@example.com", base+7200e3), // after the window: not pulled
	}}
	var progress []int
	r := &backfill.Runner{Store: withCredentials{store}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Sources: func(context.Context, domain.ProviderEndpoint, []string, pull.Credentials) (pull.Source, error) {
			return api, nil
		},
		Progress: func(rep backfill.Report) { progress = append(progress, rep.Events) }}
	pass := backfill.Pass{Tenant: "acme", Provider: "hs", From: time.UnixMilli(base - 1000), To: time.UnixMilli(base + 3600e3)}
	// The scope came with the webhook; the endpoint lists it.
	rep, err := r.Run(ctx, pass)
	if err != nil {
		t.Fatal(err)
	}
	want := map[domain.Outcome]int{domain.Redundant: 1, domain.Applied: 2, domain.RevisionConflict: 1}
	if fmt.Sprint(rep.Outcomes) != fmt.Sprint(want) || rep.Missed() != 2 || rep.Deliveries != 1 {
		t.Fatalf("first pass: %+v, want outcomes %v, 2 missed, 1 delivery", rep, want)
	}
	if len(progress) != 1 || progress[0] != 4 {
		t.Errorf("progress reported %v, want [4]", progress)
	}
	var backfills, conflicts int
	if err := store.Pool().QueryRow(ctx, `SELECT count(*) FROM deliveries WHERE tenant_id = $1 AND source = 'backfill'`, tenant.ID).Scan(&backfills); err != nil {
		t.Fatal(err)
	}
	if err := store.Pool().QueryRow(ctx, `SELECT count(*) FROM conflicts WHERE tenant_id = $1 AND resolved_at IS NULL`, tenant.ID).Scan(&conflicts); err != nil {
		t.Fatal(err)
	}
	if backfills != 1 || conflicts != 1 {
		t.Errorf("%d backfill deliveries and %d open conflicts, want 1 and 1", backfills, conflicts)
	}

	// The event history tells pulled events from received ones.
	logged, _, err := store.EventLog(ctx, tenant.ID, domain.EventLogQuery{}, domain.Page{Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	sources := map[string]int{}
	for _, e := range logged {
		sources[e.Source]++
	}
	if sources[domain.SourceBackfill] != 4 || sources[""] != 2 {
		t.Errorf("the event log's sources %v, want 4 backfill and 2 webhook events", sources)
	}

	rep, err = r.Run(ctx, pass)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Outcomes[domain.Duplicate] != 4 || rep.Missed() != 0 {
		t.Errorf("pulled again: %v, want 4 duplicates and nothing applied", rep.Outcomes)
	}
	if !strings.Contains(rep.String(), "duplicate") {
		t.Errorf("report %q does not count the duplicates", rep.String())
	}
}

// TestBackfillRefusesWhatItCannotPull: no credentials, an object type the
// provider has no scope of, and an empty window are clear errors.
func TestBackfillRefusesWhatItCannotPull(t *testing.T) {
	t.Parallel()
	store, ctx, tenant := setup(t)
	if _, err := store.ConnectProvider(ctx, tenant.ID, "hs", "hubspot", "hubspot-app-secret-0123456789", nil); err != nil {
		t.Fatal(err)
	}
	r := &backfill.Runner{Store: withCredentials{store}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Sources: func(context.Context, domain.ProviderEndpoint, []string, pull.Credentials) (pull.Source, error) {
			return records{}, nil
		}}
	now := time.Now()
	for _, c := range []struct {
		pass backfill.Pass
		want string
	}{
		{backfill.Pass{Tenant: "acme", Provider: "hs", From: now.Add(-time.Hour), To: now}, "no scopes yet"},
		{backfill.Pass{Tenant: "acme", Provider: "hs", From: now, To: now.Add(-time.Hour)}, "window is empty"},
		{backfill.Pass{Tenant: "acme", Provider: "nope", From: now.Add(-time.Hour), To: now}, `unknown tenant "acme" or provider "nope"`},
	} {
		if _, err := r.Run(ctx, c.pass); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error saying %q", c.pass, err, c.want)
		}
	}
}

package backfill_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/backfill"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/internal/pull/hubspot/hubspottest"
	"github.com/tidemark/tidemark/postgres"
)

// hubspotAPI is the store with the fake HubSpot account's credentials.
type hubspotAPI struct {
	*postgres.Store
	api *hubspottest.Server
}

func (h hubspotAPI) APICredentials(context.Context, int64, int64) (pull.Credentials, bool, error) {
	return pull.Credentials{Token: h.api.Token(), BaseURL: h.api.URL(), AllowPrivate: true}, true, nil
}

// change is one property change of a contact, as both HubSpot's API and
// its webhook report it.
type change struct {
	contact, property, value string
	at                       time.Time
}

// webhookBody is a HubSpot webhook batch of these changes, as HubSpot
// sends it (https://developers.hubspot.com/docs/api/webhooks: an array of
// events with objectId, propertyName, propertyValue, occurredAt).
func webhookBody(t *testing.T, changes []change) []byte {
	t.Helper()
	var events []map[string]any
	for i, c := range changes {
		id, _ := json.Number(c.contact).Int64()
		e := map[string]any{"eventId": 9000 + i, "subscriptionId": 77, "portalId": 123, "occurredAt": c.at.UnixMilli(),
			"subscriptionType": "contact.propertyChange", "attemptNumber": 0, "objectId": id, "changeSource": "CRM"}
		if c.property == domain.PropertyCreated {
			e["subscriptionType"] = "contact.creation"
		} else {
			e["propertyName"], e["propertyValue"] = c.property, c.value
		}
		events = append(events, e)
	}
	body, err := json.Marshal(events)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// TestSweepRestoresAnHourOfDroppedWebhooks: HubSpot's webhooks for an hour
// are lost (a secret rotated on one side) while the others arrive out of
// order. One sweep over the time since restores exactly the revisions that
// were missed, applies nothing twice, and the one contradiction (the API
// and a webhook disagree on a value at the same instant) lands in the
// conflict queue. A second sweep changes nothing.
func TestSweepRestoresAnHourOfDroppedWebhooks(t *testing.T) {
	t.Parallel()
	store, ctx, tenant := setup(t)
	if _, err := store.ConnectProvider(ctx, tenant.ID, "hs", "hubspot", "hubspot-app-secret-0123456789", nil); err != nil {
		t.Fatal(err)
	}
	api := hubspottest.New(t)
	api.SetSearchCap(25) // the sweep must walk windows to stay under it

	// Three hours of changes to 30 contacts, the middle hour's webhooks lost.
	start := time.Now().Add(-3 * time.Hour).Truncate(time.Second)
	lostFrom, lostTo := start.Add(time.Hour), start.Add(2*time.Hour)
	rng := rand.New(rand.NewPCG(1, 2))
	var delivered []change
	lost := 0
	ids := map[int]string{}
	newest := map[string]change{} // each contact's newest firstname
	for n := range 30 {
		at := start.Add(time.Duration(n) * time.Second)
		ids[n] = api.Create("contact", at, map[string]string{"email": fmt.Sprintf("c%d@example.com", n), "firstname": "First"})
		delivered = append(delivered, change{ids[n], domain.PropertyCreated, "", at},
			change{ids[n], "email", fmt.Sprintf("c%d@example.com", n), at}, change{ids[n], "firstname", "First", at})
		newest[ids[n]] = change{ids[n], "firstname", "First", at}
	}
	for step := range 120 {
		n := rng.IntN(30)
		at := start.Add(time.Duration(step)*80*time.Second + time.Duration(rng.IntN(60))*time.Second + time.Minute)
		value := fmt.Sprintf("name-%d", step)
		api.Set("contact", ids[n], at, map[string]string{"firstname": value})
		newest[ids[n]] = change{ids[n], "firstname", value, at}
		if !at.Before(lostFrom) && at.Before(lostTo) {
			lost++
			continue
		}
		delivered = append(delivered, change{ids[n], "firstname", value, at})
	}
	// What a sweep can restore: the API keeps each property's newest value,
	// so the contacts whose newest firstname was lost.
	missed := 0
	for _, c := range newest {
		if !c.at.Before(lostFrom) && c.at.Before(lostTo) {
			missed++
		}
	}
	// The contradiction: the webhook of one change carries another value
	// than the API keeps for the same instant.
	contradicted := delivered[len(delivered)-1]
	delivered[len(delivered)-1].value = "what the webhook said"

	rng.Shuffle(len(delivered), func(i, j int) { delivered[i], delivered[j] = delivered[j], delivered[i] })
	ep, err := store.Endpoint(ctx, "acme", "hs")
	if err != nil {
		t.Fatal(err)
	}
	for batch := range chunks(delivered, 10) {
		events, err := provider.HubSpot.Parse(nil, webhookBody(t, batch), ep)
		if err != nil {
			t.Fatal(err)
		}
		for i := range events {
			events[i].Seq = i
		}
		d := domain.Delivery{ID: uuid.Must(uuid.NewV7()).String(), TenantID: tenant.ID, ProviderID: ep.ID, ReceivedAt: time.Now(),
			Status: 200, Signature: domain.SignatureValid}
		if _, err := store.Ingest(ctx, d, ep, events); err != nil {
			t.Fatal(err)
		}
		if ep, err = store.Endpoint(ctx, "acme", "hs"); err != nil { // scopes created by the first delivery
			t.Fatal(err)
		}
	}

	r := &backfill.Runner{Store: hubspotAPI{store, api}, Sources: backfill.NewSources(store, slog.New(slog.NewTextHandler(io.Discard, nil))),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	sweep := backfill.Pass{Tenant: "acme", Provider: "hs", From: start.Add(-time.Minute), To: time.Now()}
	rep, err := r.Run(ctx, sweep)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Outcomes[domain.RevisionConflict] != 1 {
		t.Errorf("sweep outcomes %v: want the contradiction of %+v as 1 revision conflict", rep.Outcomes, contradicted)
	}
	if rep.Missed() != missed || rep.Outcomes[domain.Stale] != 0 {
		t.Errorf("sweep outcomes %v: want the %d lost newest values applied (of %d lost webhooks) and nothing stale", rep.Outcomes, missed, lost)
	}
	// Nothing applied twice: one applied event per record, property and revision.
	var appliedTwice int
	if err := store.Pool().QueryRow(ctx, `SELECT count(*) FROM (SELECT object_id, revision, snapshot FROM events
		WHERE tenant_id = $1 AND outcome = 'applied' GROUP BY 1, 2, 3 HAVING count(*) > 1) twice`, tenant.ID).Scan(&appliedTwice); err != nil {
		t.Fatal(err)
	}
	if appliedTwice != 0 {
		t.Errorf("%d changes applied twice", appliedTwice)
	}
	// Every contact now holds the API's newest firstname, but the one under
	// review, which keeps the webhook's until an operator decides.
	rows, err := store.Pool().Query(ctx, `SELECT object_id, snapshot->>'firstname' FROM records WHERE tenant_id = $1 AND object_type = 'contact'`, tenant.ID)
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]string{}
	for rows.Next() {
		var id, name string
		if err := rows.Scan(&id, &name); err != nil {
			t.Fatal(err)
		}
		held[id] = name
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for id, c := range newest {
		want := c.value
		if id == contradicted.contact {
			want = "what the webhook said"
		}
		if held[id] != want {
			t.Errorf("contact %s holds firstname %q, want %q", id, held[id], want)
		}
	}
	t.Logf("%d webhooks delivered, %d lost (%d contacts' newest); the sweep: %v", len(delivered), lost, missed, rep.Outcomes)

	again, err := r.Run(ctx, sweep)
	if err != nil {
		t.Fatal(err)
	}
	if again.Missed() != 0 || again.Outcomes[domain.Duplicate] != again.Events {
		t.Errorf("a second sweep: %v, want only duplicates", again.Outcomes)
	}
}

// chunks splits s into slices of n.
func chunks[T any](s []T, n int) func(func([]T) bool) {
	return func(yield func([]T) bool) {
		for len(s) > 0 {
			k := min(n, len(s))
			if !yield(s[:k]) {
				return
			}
			s = s[k:]
		}
	}
}

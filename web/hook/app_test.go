package hook_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/internal/pull/hubspot/hubspottest"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

const (
	appSecret     = "5b1e7c2a-0d9f-4e3b-8a6c-2f4d1e0b9c7a"
	appNextSecret = "a4c9e2f1-7b3d-4c8e-9f0a-1d2e3f4a5b6c"
)

// appEnv is a server with app "crm-sync" whose portals 101 and 202 are
// installed for tenants acme and globex (each's provider "hub"); portal
// 303 is installed for no one.
type appEnv struct {
	*webtest.Env
	app domain.App
}

func setupApp(t *testing.T) appEnv {
	t.Helper()
	e := webtest.Setup(t)
	ctx := webtest.CliContext()
	app, err := e.Store.CreateApp(ctx, domain.NewApp{Kind: domain.AppKindHubSpot, Name: "crm-sync", ProviderAppID: 4242,
		ClientID: "client-crm-sync", ClientSecret: appSecret})
	if err != nil {
		t.Fatal(err)
	}
	for portal, tenant := range map[int64]string{101: "acme", 202: "globex"} {
		tn := e.Tenant(tenant)
		p, err := e.Store.ConnectProvider(ctx, tn.ID, "hub", "hubspot", "hubspot-client-secret-0123456789", nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Store.ConnectPortal(ctx, app.Name, portal, tn.ID, p.ID); err != nil {
			t.Fatal(err)
		}
	}
	return appEnv{Env: e, app: app}
}

// change is a contact.propertyChange of portal's contact object.
func change(eventID, portal, object int64, value string, at time.Time) hubspottest.V3Event {
	return hubspottest.V3Event{EventID: eventID, SubscriptionID: 7, PortalID: portal, AppID: 4242, OccurredAt: at,
		SubscriptionType: "contact.propertyChange", ObjectID: object, PropertyName: "firstname", PropertyValue: value}
}

// post sends a batch signed with secret at signedAt to the app's URL.
func (e appEnv) post(name, secret string, signedAt time.Time, events ...hubspottest.V3Event) (int, map[string]any) {
	e.T.Helper()
	path := "/webhooks/apps/" + name
	body, h := hubspottest.SignedBatch(secret, e.Srv.URL+path, signedAt, events...)
	return e.postRaw(path, body, h)
}

func (e appEnv) postRaw(path string, body []byte, h http.Header) (int, map[string]any) {
	e.T.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.Srv.URL+path, bytes.NewReader(body))
	req.Header = h
	return e.Do(req)
}

func (e appEnv) count(sql string, args ...any) int {
	e.T.Helper()
	var n int
	if err := e.Store.Pool().QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		e.T.Fatalf("%s: %v", sql, err)
	}
	return n
}

// written counts every delivery, event and unrouted count stored.
func (e appEnv) written() string {
	return fmt.Sprint(e.count(`SELECT count(*) FROM deliveries`), e.count(`SELECT count(*) FROM events`),
		e.count(`SELECT coalesce(sum(n), 0) FROM app_unrouted`))
}

// TestAppBatchRoutedByPortal: one batch for three portals lands in each
// installed portal's tenant, each delivery holding only its own events;
// the third portal's event is applied nowhere, counted, and answered 200.
// Its redelivery is duplicate in each tenant.
func TestAppBatchRoutedByPortal(t *testing.T) {
	t.Parallel()
	e := setupApp(t)
	now := time.Now()
	events := []hubspottest.V3Event{change(1, 101, 5001, "Ada", now), change(2, 202, 5002, "Grace", now),
		change(3, 303, 5003, "Nobody", now), change(4, 101, 5004, "Alan", now)}
	status, body := e.post("crm-sync", appSecret, now, events...)
	if status != http.StatusOK || body["routed"] != 3.0 || body["unrouted"] != 1.0 || len(body["deliveries"].([]any)) != 2 {
		t.Fatalf("answered %d %v, want 200 with 3 routed, 1 unrouted in 2 deliveries", status, body)
	}
	for tenant, want := range map[string][]string{"acme": {"5001", "5004"}, "globex": {"5002"}} {
		tok := e.Token(tenant)
		st, list := e.Get("/api/v1/tenants/"+tenant+"/deliveries?provider=hub", tok)
		items := webtest.List(t, st, list, "deliveries")
		if len(items) != 1 {
			t.Fatalf("%s sees %d deliveries, want its own one", tenant, len(items))
		}
		st, d := e.Get("/api/v1/tenants/"+tenant+"/deliveries/"+items[0]["id"].(string), tok)
		raw, _ := d["body"].(string)
		if st != http.StatusOK || d["path"] != "/webhooks/apps/crm-sync" || d["event_count"] != float64(len(want)) {
			t.Fatalf("%s's delivery %d %v", tenant, st, d)
		}
		for _, other := range []string{"5001", "5002", "5003", "5004"} {
			mine := strings.Contains(strings.Join(want, ","), other)
			if strings.Contains(raw, `"objectId":`+other+",") != mine {
				t.Errorf("%s's delivery holds object %s: %v, want %v\n%s", tenant, other, !mine, mine, raw)
			}
			st, _ := e.Get("/api/v1/tenants/"+tenant+"/contacts/hub/"+other, tok)
			if (st == http.StatusOK) != mine {
				t.Errorf("%s contact %s: %d", tenant, other, st)
			}
		}
	}
	if n := e.count(`SELECT count(*) FROM events WHERE object_id = '5003'`); n != 0 {
		t.Errorf("the unrouted event was applied %d times", n)
	}
	unrouted, err := e.Store.AppUnrouted(context.Background(), e.app.ID)
	if err != nil || len(unrouted) != 1 || unrouted[0].PortalID != 303 || unrouted[0].Count != 1 ||
		!strings.Contains(string(unrouted[0].LastSample), `"objectId":5003`) || strings.Contains(string(unrouted[0].LastSample), "5001") {
		t.Fatalf("unrouted %+v, %v", unrouted, err)
	}

	// HubSpot retries the batch: each tenant's events are duplicates; the
	// unrouted one is counted again.
	if status, body := e.post("crm-sync", appSecret, now, events...); status != http.StatusOK || body["routed"] != 3.0 {
		t.Fatalf("redelivery answered %d %v", status, body)
	}
	if n := e.count(`SELECT count(*) FROM events WHERE outcome = 'duplicate'`); n != 3 {
		t.Errorf("%d duplicate events after the redelivery, want 3", n)
	}
	if unrouted, _ := e.Store.AppUnrouted(context.Background(), e.app.ID); len(unrouted) != 1 || unrouted[0].Count != 2 {
		t.Errorf("unrouted after the redelivery %+v", unrouted)
	}
}

// TestAppBatchRefused: a bad or stale signature is 401 and writes
// nothing; an unknown app is 404; a body that is not a batch is 400.
func TestAppBatchRefused(t *testing.T) {
	t.Parallel()
	e := setupApp(t)
	now := time.Now()
	before := e.written()
	ev := change(1, 101, 5001, "Ada", now)
	if status, body := e.post("crm-sync", "not-the-secret-at-all", now, ev); status != http.StatusUnauthorized {
		t.Errorf("bad signature answered %d %v", status, body)
	}
	if status, body := e.post("crm-sync", appSecret, now.Add(-10*time.Minute), ev); status != http.StatusUnauthorized {
		t.Errorf("stale timestamp answered %d %v", status, body)
	}
	body, h := hubspottest.SignedBatch(appSecret, e.Srv.URL+"/webhooks/apps/crm-sync", now, ev)
	h.Del("X-HubSpot-Signature-v3")
	if status, _ := e.postRaw("/webhooks/apps/crm-sync", body, h); status != http.StatusUnauthorized {
		t.Errorf("missing signature answered %d", status)
	}
	if got := e.written(); got != before {
		t.Errorf("refused deliveries wrote %s, was %s", got, before)
	}
	if status, body := e.post("other-app", appSecret, now, ev); status != http.StatusNotFound {
		t.Errorf("unknown app answered %d %v", status, body)
	}
	// An address past its budget for unknown names is answered 429 for
	// them, while a valid delivery for an app it used still passes.
	limited := false
	for range 60 {
		if status, _ := e.post("made-up", appSecret, now, ev); status == http.StatusTooManyRequests {
			limited = true
		}
	}
	if !limited {
		t.Error("made-up app names were never answered 429")
	}
	if status, body := e.post("crm-sync", appSecret, now, change(9, 101, 5009, "Ada", now)); status != http.StatusOK {
		t.Errorf("a valid delivery past the budget answered %d %v", status, body)
	}
	notBatch := []byte(`{"eventId":1}`)
	ts := fmt.Sprint(now.UnixMilli())
	h = http.Header{}
	h.Set("X-HubSpot-Request-Timestamp", ts)
	h.Set("X-HubSpot-Signature-v3", provider.SignHubSpotV3(appSecret, http.MethodPost, e.Srv.URL+"/webhooks/apps/crm-sync", notBatch, ts))
	if status, body := e.postRaw("/webhooks/apps/crm-sync", notBatch, h); status != http.StatusBadRequest {
		t.Errorf("a body that is not a batch answered %d %v", status, body)
	}
}

// TestAppSecretRotationOverlap: after a rotation a batch signed with the
// previous secret verifies during the overlap, and not after it.
func TestAppSecretRotationOverlap(t *testing.T) {
	t.Parallel()
	e := setupApp(t)
	if _, err := e.Store.RotateAppSecret(webtest.CliContext(), "crm-sync", appNextSecret); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if status, body := e.post("crm-sync", appNextSecret, now, change(1, 101, 5001, "Ada", now)); status != http.StatusOK {
		t.Fatalf("new secret answered %d %v", status, body)
	}
	if status, body := e.post("crm-sync", appSecret, now, change(2, 101, 5001, "Ada2", now)); status != http.StatusOK {
		t.Fatalf("previous secret within the overlap answered %d %v", status, body)
	}
	if _, err := e.Store.Pool().Exec(context.Background(),
		`UPDATE app_secrets SET expires_at = now() - interval '1 second' WHERE expires_at IS NOT NULL`); err != nil {
		t.Fatal(err)
	}
	if status, body := e.post("crm-sync", appSecret, now, change(3, 101, 5001, "Ada3", now)); status != http.StatusUnauthorized {
		t.Fatalf("previous secret after the overlap answered %d %v", status, body)
	}
}

// TestAppsIsNoTenant: no tenant can be named apps, so none can take the
// app endpoint's URL; the route is the app endpoint's regardless.
func TestAppsIsNoTenant(t *testing.T) {
	t.Parallel()
	e := setupApp(t)
	_, err := e.Store.CreateTenant(context.Background(), "apps", "")
	if domain.ErrorCode(err) != domain.EINVALID || !strings.Contains(domain.ErrorMessage(err), "reserved") {
		t.Fatalf("creating tenant apps: %v, want EINVALID naming it reserved", err)
	}
	// Even a tenant apps made before the rule, with a provider named as
	// the app, cannot shadow it: the static segment wins.
	var id int64
	if err := e.Store.Pool().QueryRow(context.Background(), `INSERT INTO tenants (slug, name) VALUES ('apps', 'apps') RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if status, body := e.post("crm-sync", appSecret, now, change(1, 101, 5001, "Ada", now)); status != http.StatusOK || body["routed"] != 1.0 {
		t.Fatalf("app endpoint answered %d %v", status, body)
	}
}

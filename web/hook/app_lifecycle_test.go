package hook_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/pull/hubspot/hubspottest"
)

// HubSpot's app lifecycle events (subscriptionType APP_LIFECYCLE_EVENT,
// action APP_UNINSTALL or APP_INSTALL, as the Webhooks Journal's
// subscriptions name them: https://developers.hubspot.com/docs/api-reference/latest/webhooks-journal/subscriptions/create-subscription)
// arrive at the app's target URL with the portal's other events.

// installed is the app's installs, portal → tenant.
func (e appEnv) installed() map[int64]string {
	e.T.Helper()
	list, err := e.Store.AppInstalls(context.Background(), e.app.Name)
	if err != nil {
		e.T.Fatal(err)
	}
	out := map[int64]string{}
	for _, in := range list {
		out[in.PortalID] = in.TenantSlug
	}
	return out
}

// TestAppUninstallEvent: a signed batch holding portal 101's uninstall
// and portal 202's changes disconnects 101 (audited in acme's log, its
// provider kept) and lands 202's changes in globex; the lifecycle event
// is applied nowhere, and 101's next events are unrouted. Its redelivery
// changes nothing more.
func TestAppUninstallEvent(t *testing.T) {
	t.Parallel()
	e := setupApp(t)
	now := time.Now()
	batch := []hubspottest.V3Event{hubspottest.LifecycleEvent(900, 101, "APP_UNINSTALL", now),
		change(1, 202, 5002, "Grace", now), change(2, 202, 5003, "Hedy", now)}
	status, body := e.post("crm-sync", appSecret, now, batch...)
	if status != http.StatusOK || body["uninstalled"] != 1.0 || body["routed"] != 2.0 || body["unrouted"] != 0.0 {
		t.Fatalf("answered %d %v, want 200 with 1 uninstalled, 2 routed, 0 unrouted", status, body)
	}
	if got := e.installed(); got[101] != "" || got[202] != "globex" {
		t.Fatalf("installs after the uninstall: %v, want 202 alone", got)
	}
	if n := e.count(`SELECT count(*) FROM events`); n != 2 {
		t.Errorf("%d events stored, want globex's 2: the lifecycle event is no record's change", n)
	}
	tok := e.Token("globex")
	if st, _ := e.Get("/api/v1/tenants/globex/contacts/hub/5003", tok); st != http.StatusOK {
		t.Errorf("globex's contact 5003: %d", st)
	}
	acme := e.Tenant("acme")
	entries, _, err := e.Store.AuditLog(context.Background(), domain.AuditQuery{TenantID: acme.ID, Action: domain.AuditAppDisconnect}, domain.Page{Limit: 10})
	if err != nil || len(entries) != 1 || entries[0].Target != "crm-sync portal 101" ||
		!strings.HasPrefix(entries[0].Summary, "uninstalled at HubSpot") || !strings.Contains(entries[0].Summary, "provider hub kept") {
		t.Fatalf("acme's audit %+v, %v", entries, err)
	}
	if _, err := e.Store.ProviderSummary(context.Background(), acme.ID, "hub"); err != nil {
		t.Errorf("acme's provider after the uninstall: %v", err)
	}

	// Portal 101's next events are unrouted; the uninstall again is ignored.
	status, body = e.post("crm-sync", appSecret, now, change(3, 101, 5001, "Ada", now),
		hubspottest.LifecycleEvent(900, 101, "APP_UNINSTALL", now))
	if status != http.StatusOK || body["routed"] != 0.0 || body["unrouted"] != 1.0 || body["uninstalled"] != 0.0 {
		t.Fatalf("101's next batch answered %d %v, want its event unrouted", status, body)
	}
	if n := e.count(`SELECT count(*) FROM events WHERE object_id = '5001'`); n != 0 {
		t.Errorf("101's event after the uninstall was applied %d times", n)
	}
}

// TestAppLifecycleChangesNothingElse: a bad signature uninstalls nothing;
// an APP_INSTALL changes nothing (installs come by OAuth); an uninstall
// older than the portal's install (a retried batch) keeps it; and an
// uninstall of a portal installed for no one is ignored, not counted.
func TestAppLifecycleChangesNothingElse(t *testing.T) {
	t.Parallel()
	e := setupApp(t)
	now := time.Now()
	want := map[int64]string{101: "acme", 202: "globex"}
	check := func(when string) {
		t.Helper()
		if got := e.installed(); len(got) != 2 || got[101] != want[101] || got[202] != want[202] {
			t.Fatalf("%s: installs %v, want %v", when, got, want)
		}
	}
	if status, _ := e.post("crm-sync", "not-the-secret-at-all", now, hubspottest.LifecycleEvent(1, 202, "APP_UNINSTALL", now)); status != http.StatusUnauthorized {
		t.Fatalf("bad signature answered %d", status)
	}
	check("after a badly signed uninstall")
	status, body := e.post("crm-sync", appSecret, now, hubspottest.LifecycleEvent(2, 303, "APP_INSTALL", now),
		hubspottest.LifecycleEvent(3, 404, "APP_UNINSTALL", now), hubspottest.LifecycleEvent(4, 202, "APP_UNINSTALL", now.Add(-time.Hour)))
	if status != http.StatusOK || body["uninstalled"] != 0.0 || body["unrouted"] != 0.0 || body["routed"] != 0.0 {
		t.Fatalf("answered %d %v, want 200 changing nothing", status, body)
	}
	check("after an install, an unknown portal's uninstall and an uninstall older than the install")
	if got := e.written(); got != "0 0 0" {
		t.Errorf("lifecycle events wrote deliveries, events, unrouted: %s", got)
	}
}

package apps_test

import (
	"bytes"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/pull/hubspot/hubspottest"
)

// TestInstallsThenAppBatch is issue 44's install end to end: two owners
// of two tenants install the app by OAuth (authorize, consent, callback,
// token, portal mapped); then one batch HubSpot signs for the app's URL,
// with events of both portals and of a third installed nowhere, lands in
// each tenant as its own delivery, and the third portal's event is
// unrouted: applied nowhere.
func TestInstallsThenAppBatch(t *testing.T) {
	t.Parallel()
	f := setup(t)
	const globexPortal, strayPortal = 777, 999
	for _, in := range []struct {
		tenant string
		portal int64
	}{{"acme", portal}, {"globex", globexPortal}} {
		f.hs.SetConsentPortal(in.portal)
		b := f.e.Operator(in.tenant+"-owner@example.com", false, in.tenant)
		if status, loc := b.RedirectOf(f.consent(t, f.connect(t, b, in.tenant, "hubspot"))); status != http.StatusSeeOther ||
			loc != "/t/"+in.tenant+"/providers/hubspot" {
			t.Fatalf("%s's install: callback answered %d to %q", in.tenant, status, loc)
		}
	}
	if list := f.installs(t); len(list) != 2 {
		t.Fatalf("installs %+v, want acme's and globex's", list)
	}

	now := time.Now()
	event := func(id, portal, object int64, name string) hubspottest.V3Event {
		return hubspottest.V3Event{EventID: id, SubscriptionID: 7, PortalID: portal, OccurredAt: now,
			SubscriptionType: "contact.propertyChange", ObjectID: object, PropertyName: "firstname", PropertyValue: name}
	}
	const path = "/webhooks/apps/tidemark-hub"
	body, h := f.hs.AppBatch(f.e.Srv.URL+path, now, event(1, portal, 5001, "Ada"), event(2, globexPortal, 5002, "Grace"),
		event(3, strayPortal, 5003, "Nobody"))
	req, _ := http.NewRequest(http.MethodPost, f.e.Srv.URL+path, bytes.NewReader(body))
	req.Header = h
	if status, answer := f.e.Do(req); status != http.StatusOK || answer["routed"] != 2.0 || answer["unrouted"] != 1.0 {
		t.Fatalf("the app batch answered %d %v, want 200 with 2 routed and 1 unrouted", status, answer)
	}
	for tenant, mine := range map[string]int64{"acme": 5001, "globex": 5002} {
		tok := f.e.Token(tenant)
		for _, object := range []int64{5001, 5002, 5003} {
			status, _ := f.e.Get("/api/v1/tenants/"+tenant+"/contacts/hubspot/"+strconv.FormatInt(object, 10), tok)
			if (status == http.StatusOK) != (object == mine) {
				t.Errorf("%s's contact %d answered %d; only %d is %s's", tenant, object, status, mine, tenant)
			}
		}
	}
	if n := f.e.Count(`SELECT count(*) FROM events WHERE object_id = '5003'`); n != 0 {
		t.Errorf("the event of a portal installed nowhere was written %d times", n)
	}
	unrouted, err := f.e.Store.AppUnrouted(t.Context(), f.app.ID)
	if err != nil || len(unrouted) != 1 || unrouted[0].PortalID != strayPortal || unrouted[0].Count != 1 {
		t.Fatalf("unrouted %+v (%v), want portal %d once", unrouted, err, strayPortal)
	}
}

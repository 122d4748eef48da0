package providers_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// cdcState is the Change Data Capture section's state, "term: definition"
// a line.
func cdcState(doc *goquery.Document) string {
	var lines []string
	doc.Find("#cdc dl.cdc-state dt").Each(func(_ int, dt *goquery.Selection) {
		lines = append(lines, dt.Text()+": "+strings.Join(strings.Fields(dt.Next().Text()), " "))
	})
	return strings.Join(lines, "\n")
}

// TestOwnerSwitchesCDC: a Salesforce provider's page has the section, a
// HubSpot one's not; without a connected app the switch is disabled and a
// forced POST refused with a message; with one, an owner turns it on and
// off, each audited; the state shows the subscriber, the position's age
// and the counts the storage holds.
func TestOwnerSwitchesCDC(t *testing.T) {
	t.Parallel()
	e, b, _ := apiSetup(t)
	acme := e.Tenant("acme").ID
	if _, doc := b.Get("/t/acme/providers/hub"); doc.Find("#cdc").Length() != 0 {
		t.Fatal("a HubSpot provider's page has a Change Data Capture section")
	}
	_, doc := b.Get("/t/acme/providers/sf")
	if webtest.Text(doc, "#cdc h2") != "Change Data Capture" || !strings.Contains(cdcState(doc), "Status: Off") {
		t.Fatalf("section %q", cdcState(doc))
	}
	if _, ok := doc.Find("#cdc form.cdc-switch button").Attr("disabled"); !ok {
		t.Fatal("the switch is enabled without a connected app")
	}
	status, _, loc := b.Post("/t/acme/providers/sf/cdc", url.Values{"enabled": {"true"}})
	if _, doc = b.Get(loc); status != http.StatusSeeOther || !strings.Contains(webtest.ShownFlash(doc), "no connected app credentials") {
		t.Fatalf("on without a connected app: %d, %q", status, webtest.ShownFlash(doc))
	}
	sf, err := e.Store.ProviderSummary(context.Background(), acme, "sf")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Store.SetAPICredentials(webtest.CliContext(), acme, sf.ID, pull.Credentials{ClientID: "3MVG9abc",
		ClientSecret: consoleSecret, LoginURL: "https://acme.my.salesforce.com"}); err != nil {
		t.Fatal(err)
	}
	if _, _, loc = b.Post("/t/acme/providers/sf/cdc", url.Values{"enabled": {"true"}}); loc != "/t/acme/providers/sf#cdc" {
		t.Fatalf("on: redirected to %q", loc)
	}
	if _, ok, err := e.Store.LeaseCDC(context.Background(), acme, sf.ID, "node-7", time.Minute); err != nil || !ok {
		t.Fatalf("lease: %v, %v", ok, err)
	}
	if err := e.Store.RecordCDCError(context.Background(), acme, sf.ID, "connection reset"); err != nil {
		t.Fatal(err)
	}
	_, doc = b.Get(loc)
	if !strings.Contains(cdcState(doc), "Delivery allocation: not read yet") {
		t.Errorf("before its reading, the allocation: %s", cdcState(doc))
	}
	if err := e.Store.RecordCDCAllocation(context.Background(), acme, sf.ID, domain.CDCAllocation{Max: 50_000, Remaining: 37_500,
		At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	_, doc = b.Get(loc)
	state := cdcState(doc)
	for _, want := range []string{"Status: On", "Channel: /data/ChangeEvents", "Pub/Sub API: api.pubsub.salesforce.com:7443",
		"Subscriber: Subscribed by node node-7", "Replay position: no event written yet", "Events: 0 in all",
		"Repairs: 0 gaps, 0 overflows, 0 replay ids refused", "Delivery allocation: 12500 of 50000 used over the last 24 hours (25%)",
		"Last error: connection reset"} {
		if !strings.Contains(state, want) {
			t.Errorf("state lacks %q:\n%s", want, state)
		}
	}
	if got := webtest.Text(doc, "#cdc form.cdc-switch button"); got != "Turn Change Data Capture off" {
		t.Errorf("switch %q", got)
	}
	if _, _, loc = b.Post("/t/acme/providers/sf/cdc", url.Values{"enabled": {"false"}}); loc == "" {
		t.Fatal("off: no redirect")
	}
	if _, doc = b.Get(loc); !strings.Contains(cdcState(doc), "Status: Off") || !strings.Contains(webtest.ShownFlash(doc), "off") {
		t.Fatalf("off: %q, %q", cdcState(doc), webtest.ShownFlash(doc))
	}
	_, doc = b.Get("/t/acme/audit")
	if n := strings.Count(doc.Find("body").Text(), "Change Data Capture"); n < 2 {
		t.Errorf("the audit log names Change Data Capture %d times, want the two switches", n)
	}
}

// TestOnlyOwnersSwitchCDC: viewers and operators see the state but no
// switch, and a POST of theirs is forbidden.
func TestOnlyOwnersSwitchCDC(t *testing.T) {
	t.Parallel()
	e, _, _ := apiSetup(t)
	for _, role := range []domain.Role{domain.RoleViewer, domain.RoleOperator} {
		t.Run(string(role), func(t *testing.T) {
			email := string(role) + "@example.com"
			e.Member(email, false, role, "acme")
			b := e.SignIn(email)
			_, doc := b.Get("/t/acme/providers/sf")
			if !strings.Contains(cdcState(doc), "Status: Off") || doc.Find("#cdc form").Length() != 0 {
				t.Errorf("state %q, %d forms", cdcState(doc), doc.Find("#cdc form").Length())
			}
			if status, _, _ := b.Post("/t/acme/providers/sf/cdc", url.Values{"enabled": {"true"}}); status != http.StatusForbidden {
				t.Errorf("switch: %d, want 403", status)
			}
		})
	}
}

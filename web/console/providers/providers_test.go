package providers_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// inputNames lists the names of the inputs, selects and text areas of sel.
func inputNames(sel *goquery.Selection) []string {
	var out []string
	sel.Find("input, select, textarea").Each(func(_ int, s *goquery.Selection) {
		out = append(out, s.AttrOr("name", ""))
	})
	return out
}

// TestConnectFormKindChoice: the connect form first offers the kinds as
// links; ?kind=hubspot shows HubSpot's fields only; the post is the same
// as ever, and a refusal shows the chosen kind's form again with what was
// entered.
func TestConnectFormKindChoice(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("ops@example.com", false, "acme")

	status, doc := b.Get("/t/acme/providers")
	if status != http.StatusOK || doc.Find(".provider-connect form").Length() != 0 {
		t.Fatalf("choice step: %d, with a form %v", status, doc.Find(".provider-connect form").Length() != 0)
	}
	var hrefs []string
	doc.Find("a.kind-choice").Each(func(_ int, a *goquery.Selection) { hrefs = append(hrefs, a.AttrOr("href", "")) })
	if len(hrefs) != len(provider.Names()) || !strings.Contains(strings.Join(hrefs, " "), "/t/acme/providers?kind=hubspot#connect") {
		t.Fatalf("kind choices %q", hrefs)
	}

	status, doc = b.Get("/t/acme/providers?kind=hubspot")
	form := doc.Find(`.provider-connect form[method=post][action="/t/acme/providers"]`)
	if status != http.StatusOK || form.Length() != 1 {
		t.Fatalf("hubspot form: %d, %d forms", status, form.Length())
	}
	if got := strings.Join(inputNames(form), " "); got != "kind name hubspot_secret hubspot_allow_v1" {
		t.Errorf("hubspot form fields %q, want the kind, the name and HubSpot's fields only", got)
	}
	if got := form.Find("input[name=kind]").AttrOr("value", ""); got != "hubspot" || form.Find("input[name=kind]").AttrOr("type", "") != "hidden" {
		t.Errorf("kind field %q", got)
	}
	if legends := doc.Find("fieldset legend").Text(); legends != "For HubSpot" {
		t.Errorf("sections %q", legends)
	}
	// The checkbox sits inside its label, before the text.
	check := form.Find("label.check")
	if check.Children().First().Is(`input[type=checkbox][name=hubspot_allow_v1]`) == false ||
		strings.TrimSpace(check.Text()) != "also accept legacy v1 signatures" {
		t.Errorf("checkbox label %q", check.Text())
	}

	// A standard provider needs nothing but its name.
	_, doc = b.Get("/t/acme/providers?kind=standard")
	if got := strings.Join(inputNames(doc.Find(".provider-connect form")), " "); got != "kind name" {
		t.Errorf("standard form fields %q", got)
	}
	// An unknown kind is refused, with the choice again.
	status, doc = b.Get("/t/acme/providers?kind=telepathy")
	if status != http.StatusBadRequest || !strings.Contains(webtest.Text(doc, ".provider-connect [role=alert]"), `no provider kind "telepathy"`) ||
		doc.Find("a.kind-choice").Length() != len(provider.Names()) {
		t.Errorf("unknown kind: %d %q", status, webtest.Text(doc, ".provider-connect [role=alert]"))
	}

	// A refusal shows HubSpot's form again, as entered, the secret excepted.
	status, doc, _ = b.Post("/t/acme/providers", url.Values{"kind": {"hubspot"}, "name": {"hub"}, "hubspot_allow_v1": {"true"}})
	form = doc.Find(".provider-connect form")
	if status != http.StatusUnprocessableEntity || !strings.Contains(webtest.Text(doc, ".provider-connect [role=alert]"), "client secret") ||
		form.Find("input[name=kind]").AttrOr("value", "") != "hubspot" || form.Find("input[name=name]").AttrOr("value", "") != "hub" ||
		form.Find("input[name=hubspot_allow_v1][checked]").Length() != 1 || form.Find("input[name=org_id]").Length() != 0 {
		t.Fatalf("refused hubspot form: %d %q fields %q", status, webtest.Text(doc, "[role=alert]"), inputNames(form))
	}
	// The same fields connect it.
	status, doc, _ = b.Post("/t/acme/providers", url.Values{"kind": {"hubspot"}, "name": {"hub"},
		"hubspot_secret": {"0123456789abcdef-client-secret"}})
	if status != http.StatusOK || !strings.Contains(webtest.Text(doc, "h1"), "Provider hub connected") {
		t.Fatalf("connect hubspot: %d %q %q", status, webtest.Text(doc, "h1"), webtest.Text(doc, "[role=alert]"))
	}
}

// TestNewSecretHeading: the page that shows a new secret once names it with
// a capital ("Signing secret").
func TestNewSecretHeading(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("ops@example.com", false, "acme")
	status, doc, _ := b.Post("/t/acme/providers", url.Values{"kind": {"standard"}, "name": {"billing"}})
	if status != http.StatusOK {
		t.Fatalf("connect: %d", status)
	}
	var headings []string
	doc.Find(".prov-card h2").Each(func(_ int, h *goquery.Selection) { headings = append(headings, h.Text()) })
	if !strings.Contains(strings.Join(headings, "|"), "|Signing secret|") {
		t.Errorf("headings %q, want Signing secret", headings)
	}
}

// TestProviderPageScopeSavedAndDeliveriesLink: saving a scope confirms it
// (a flash, and the row marked on the page it returns to); the breadcrumb
// names the provider; recent deliveries link to all of the provider's.
func TestProviderPageScopeSavedAndDeliveriesLink(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("ops@example.com", false, "acme")
	status, _, loc := b.Post("/t/acme/providers/crm/scopes", url.Values{"object_type": {"deal"}, "action": {"snapshot"},
		"ttl": {"36"}, "ttl_unit": {"hours"}, "identifier_rule": {"event_id"}, "new": {"1"}})
	if status != http.StatusSeeOther || loc != "/t/acme/providers/crm?saved=deal.snapshot#scope-row-deal.snapshot" {
		t.Fatalf("save: %d to %q", status, loc)
	}
	_, doc := b.Get(loc)
	if got := webtest.ShownFlash(doc); got != "Saved scope deal.snapshot: TTL 36 hours, identifier event_id, disabled." {
		t.Errorf("flash %q", got)
	}
	row := doc.Find("tr#scope-row-deal\\.snapshot")
	if !row.HasClass("scope-saved") || webtest.Text(doc, "tr.scope-saved .scope-saved-note") != "Saved" || doc.Find("tr.scope-saved").Length() != 1 {
		t.Errorf("saved row: classes %q, note %q", row.AttrOr("class", ""), webtest.Text(doc, "tr.scope-saved .scope-saved-note"))
	}
	// Reading the page again marks nothing and says nothing.
	_, doc = b.Get("/t/acme/providers/crm")
	if doc.Find("tr.scope-saved").Length() != 0 || webtest.ShownFlash(doc) != "" {
		t.Error("the confirmation stays")
	}
	if got := regexp.MustCompile(`\s+`).ReplaceAllString(webtest.Text(doc, "nav.breadcrumb"), " "); got != "Providers › crm" {
		t.Errorf("breadcrumb %q", got)
	}
	link := doc.Find("a.all-deliveries")
	if link.AttrOr("href", "") != "/t/acme/deliveries?provider=crm" || link.Text() != "All deliveries of this provider" {
		t.Errorf("deliveries link %q to %q", link.Text(), link.AttrOr("href", ""))
	}
}

// TestProviderTestEventFlash: "Send test event" says the outcome in words.
func TestProviderTestEventFlash(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("ops@example.com", false, "acme")
	status, _, loc := b.Post("/t/acme/providers/crm/test", nil)
	if status != http.StatusSeeOther {
		t.Fatalf("test event: %d", status)
	}
	_, doc := b.Get(loc)
	flash := webtest.ShownFlash(doc)
	if !regexp.MustCompile(`^Test event sent: applied \(contact tidemark-test, revision \d+\)\.$`).MatchString(flash) || strings.Contains(flash, "{") {
		t.Errorf("flash %q", flash)
	}
	// Without an active secret it cannot be signed.
	e.Exec(`UPDATE provider_secrets SET retired_at = now()`)
	_, _, loc = b.Post("/t/acme/providers/crm/test", nil)
	if _, doc := b.Get(loc); !strings.Contains(webtest.ShownFlash(doc), "no active secret") {
		t.Errorf("without a secret: %q", webtest.ShownFlash(doc))
	}
}

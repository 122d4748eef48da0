package alerts_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

var base = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)

// summaries are the summaries of a table's alert rows, top to bottom.
func summaries(doc *goquery.Document, table string) []string {
	var out []string
	doc.Find(table + " tr.alert-row .alert-summary").Each(func(_ int, s *goquery.Selection) {
		out = append(out, strings.TrimSpace(s.Text()))
	})
	return out
}

// text is the whitespace-collapsed text of selector's first match in s.
func text(s *goquery.Selection, selector string) string {
	return strings.Join(strings.Fields(s.Find(selector).First().Text()), " ")
}

// ruleRow is a rule's row of the rules table.
func ruleRow(doc *goquery.Document, rule alerting.Rule) *goquery.Selection {
	return doc.Find(`tr.alert-rule[data-rule="` + string(rule) + `"]`)
}

// TestAlertsPage: a viewer sees the firing alerts, the history newest
// first (filtered by state, paged both ways) and the rules read-only,
// without a form; nothing of another workspace.
func TestAlertsPage(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.Provider("globex", "crm")
	viewer := e.WithRole("viewer@example.com", domain.RoleViewer)
	var all []string // newest first
	for i := range 30 {
		var resolved *time.Time
		if i != 29 {
			r := base.Add(time.Duration(i)*time.Minute + 30*time.Second)
			resolved = &r
		}
		s := fmt.Sprintf("crm alert %d.", i)
		webtest.FireAlert(e, "acme", alerting.Refusals, "crm", s, base.Add(time.Duration(i)*time.Minute), resolved)
		all = append([]string{s}, all...)
	}
	webtest.FireAlert(e, "globex", alerting.ProviderSilent, "crm", "globex is silent.", base, nil)

	status, doc := viewer.Get("/t/acme/alerts")
	if status != http.StatusOK || webtest.Text(doc, "header a.active") != "Alerts" || webtest.Text(doc, "h1") != "Alerts" {
		t.Fatalf("page: %d, nav %q", status, webtest.Text(doc, "header a.active"))
	}
	if got := summaries(doc, ".alerts-firing"); !slices.Equal(got, []string{"crm alert 29."}) {
		t.Errorf("firing %q", got)
	}
	if got := summaries(doc, ".alert-history"); !slices.Equal(got, all[:25]) {
		t.Errorf("history first page %q, want %q", got, all[:25])
	}
	if strings.Contains(doc.Text(), "globex is silent") {
		t.Error("another workspace's alert is shown")
	}
	older, ok := doc.Find(`.alerts-history a[rel="next"]`).First().Attr("href")
	if !ok || doc.Find(`.alerts-history a[rel="prev"]`).Length() != 0 {
		t.Fatalf("first page's pager: older %q", older)
	}
	status, doc = viewer.Get(older)
	if got := summaries(doc, ".alert-history"); status != http.StatusOK || !slices.Equal(got, all[25:]) {
		t.Errorf("older page: %d %q, want %q", status, got, all[25:])
	}
	newer, ok := doc.Find(`.alerts-history a[rel="prev"]`).First().Attr("href")
	if !ok {
		t.Fatal("the older page has no way back")
	}
	if _, doc = viewer.Get(newer); !slices.Equal(summaries(doc, ".alert-history"), all[:25]) {
		t.Errorf("back to newer: %q", summaries(doc, ".alert-history"))
	}

	_, doc = viewer.Get("/t/acme/alerts?state=firing")
	if got := summaries(doc, ".alert-history"); !slices.Equal(got, []string{"crm alert 29."}) {
		t.Errorf("state=firing: %q", got)
	}
	if v, _ := doc.Find(`select[name="state"] option[selected]`).Attr("value"); v != "firing" {
		t.Errorf("the filter shows %q", v)
	}
	_, doc = viewer.Get("/t/acme/alerts?state=resolved")
	if got := summaries(doc, ".alert-history"); len(got) != 25 || got[0] != "crm alert 28." {
		t.Errorf("state=resolved: %q", got)
	}
	if status, _ := viewer.Get("/t/acme/alerts?state=open"); status != http.StatusBadRequest {
		t.Errorf("a bad state: %d", status)
	}

	// The rules, read-only for a viewer.
	if n := doc.Find("tr.alert-rule").Length(); n != len(alerting.Rules) {
		t.Errorf("%d rules shown, want %d", n, len(alerting.Rules))
	}
	row := ruleRow(doc, alerting.ProviderSilent)
	if got := strings.Join(strings.Fields(row.Find(".alert-rule-enabled").Text()+" "+row.Find(".alert-rule-threshold").Text()+" "+
		row.Find(".alert-rule-window").Text()), " "); got != "enabled 1 6h" {
		t.Errorf("provider_silent shown as %q", got)
	}
	if doc.Find(".alert-rules form, .alert-rules input").Length() != 0 {
		t.Error("a viewer is shown a rule form")
	}
	status, doc, _ = viewer.Post("/t/acme/alerts/rules/refusals", url.Values{"threshold": {"1"}, "window": {"1m"}})
	if status != http.StatusForbidden || !strings.Contains(webtest.Text(doc, "main p"), "needs the owner role") {
		t.Errorf("a viewer's change: %d %q", status, webtest.Text(doc, "main p"))
	}
	if n := len(e.Strings(`SELECT action FROM audit_log WHERE action = 'alert_rule_set'`)); n != 0 {
		t.Errorf("%d rule changes audited after a viewer's post", n)
	}
}

// TestOwnerSetsAlertRule: an owner's form per rule saves the setting with
// a flash and an audit entry; a bad window or threshold is refused in the
// rule's row, keeping what was typed; an operator or viewer gets 403 and
// changes nothing.
func TestOwnerSetsAlertRule(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	owner := e.Operator("owner@example.com", false, "acme")
	operator := e.WithRole("operator@example.com", domain.RoleOperator)

	_, doc := owner.Get("/t/acme/alerts")
	form := doc.Find(`form#alert-rule-refusals`)
	if action, _ := form.Attr("action"); action != "/t/acme/alerts/rules/refusals" {
		t.Fatalf("the refusals form posts to %q", action)
	}
	row := ruleRow(doc, alerting.Refusals)
	threshold, _ := row.Find(`input[name="threshold"][form="alert-rule-refusals"]`).Attr("value")
	window, _ := row.Find(`input[name="window"][form="alert-rule-refusals"]`).Attr("value")
	_, checked := row.Find(`input[name="enabled"][form="alert-rule-refusals"]`).Attr("checked")
	if threshold != "20" || window != "5m" || !checked {
		t.Errorf("refusals' form: threshold %q, window %q, enabled %v", threshold, window, checked)
	}

	status, _, loc := owner.Post("/t/acme/alerts/rules/refusals", url.Values{"threshold": {"50"}, "window": {"10m"}})
	if status != http.StatusSeeOther || loc != "/t/acme/alerts#rules" {
		t.Fatalf("save: %d to %q", status, loc)
	}
	_, doc = owner.Get("/t/acme/alerts")
	if got := webtest.ShownFlash(doc); got != "Rule refusals saved: disabled, threshold 50, window 10m." {
		t.Errorf("flash %q", got)
	}
	row = ruleRow(doc, alerting.Refusals)
	threshold, _ = row.Find(`input[name="threshold"]`).Attr("value")
	_, checked = row.Find(`input[name="enabled"]`).Attr("checked")
	if threshold != "50" || checked {
		t.Errorf("after saving: threshold %q, enabled %v", threshold, checked)
	}
	audit := e.AuditLog("acme")
	if last := audit[len(audit)-1]; last != "owner@example.com alert_rule_set alert rule refusals: "+
		"disabled, threshold 50, window 10m0s (was enabled, threshold 20, window 5m0s)" {
		t.Errorf("audit %q", last)
	}

	for _, c := range []struct{ threshold, window, says string }{
		{"0", "5m", "threshold must be at least 1"},
		{"many", "5m", "threshold must be a whole number"},
		{"5", "soon", "window must be a duration"},
		{"5", "10s", "window must be from 1m0s"},
	} {
		status, doc, _ := owner.Post("/t/acme/alerts/rules/refusals", url.Values{"enabled": {"on"}, "threshold": {c.threshold}, "window": {c.window}})
		row := ruleRow(doc, alerting.Refusals)
		typed, _ := row.Find(`input[name="window"]`).Attr("value")
		if status != http.StatusUnprocessableEntity || !strings.Contains(text(row, ".error"), c.says) || typed != c.window {
			t.Errorf("%v: %d, error %q, window shown %q", c, status, text(row, ".error"), typed)
		}
	}
	if status, _, _ := owner.Post("/t/acme/alerts/rules/nope", url.Values{"threshold": {"5"}, "window": {"5m"}}); status != http.StatusNotFound {
		t.Errorf("an unknown rule: %d", status)
	}

	status, doc, _ = operator.Post("/t/acme/alerts/rules/refusals", url.Values{"enabled": {"on"}, "threshold": {"1"}, "window": {"1m"}})
	if status != http.StatusForbidden || !strings.Contains(webtest.Text(doc, "main p"), "needs the owner role") {
		t.Errorf("an operator's change: %d %q", status, webtest.Text(doc, "main p"))
	}
	_, doc = operator.Get("/t/acme/alerts")
	if doc.Find(".alert-rules form").Length() != 0 || text(ruleRow(doc, alerting.Refusals), ".alert-rule-threshold") != "50" {
		t.Errorf("an operator sees a form, or the threshold changed: %q", text(ruleRow(doc, alerting.Refusals), ".alert-rule-threshold"))
	}
	if n := len(e.Strings(`SELECT action FROM audit_log WHERE action = 'alert_rule_set'`)); n != 1 {
		t.Errorf("%d rule changes audited, want 1", n)
	}
}

// TestFiringBanner: every page of a workspace with alerts firing shows
// them above its content, linked to the alerts page; not once they
// resolve, and not in another workspace.
func TestFiringBanner(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.Provider("globex", "crm")
	owner := e.Operator("owner@example.com", false, "acme", "globex")
	webtest.FireAlert(e, "acme", alerting.ProviderSilent, "crm", "crm has sent no authenticated delivery for 6h.", base, nil)
	webtest.FireAlert(e, "acme", alerting.ConflictsOpen, "", "2 revision conflicts are open.", base.Add(time.Minute), nil)
	resolved := base.Add(time.Hour)
	webtest.FireAlert(e, "acme", alerting.Refusals, "crm", "crm had 21 refused deliveries.", base, &resolved)

	for _, path := range []string{"/t/acme", "/t/acme/events", "/t/acme/providers", "/t/acme/alerts"} {
		status, doc := owner.Get(path)
		banner := doc.Find(".content > .alerts-banner")
		if status != http.StatusOK || webtest.Text(doc, ".content > .alerts-banner") !=
			"2 alerts firing: 2 revision conflicts are open. · crm has sent no authenticated delivery for 6h." {
			t.Errorf("%s: %d, banner %q", path, status, webtest.Text(doc, ".content > .alerts-banner"))
		}
		if href, _ := banner.Find("a").Attr("href"); href != "/t/acme/alerts" {
			t.Errorf("%s: the banner links to %q", path, href)
		}
		if banner.NextAll().Filter("main").Length() != 1 {
			t.Errorf("%s: the banner is not above the content", path)
		}
	}
	for _, path := range []string{"/t/globex", "/t/globex/alerts", "/"} {
		if _, doc := owner.Get(path); doc.Find(".alerts-banner").Length() != 0 {
			t.Errorf("%s shows acme's banner: %q", path, webtest.Text(doc, ".alerts-banner"))
		}
	}
	e.Strings(`UPDATE alerts SET resolved_at = now() WHERE resolved_at IS NULL RETURNING summary`)
	if _, doc := owner.Get("/t/acme/events"); doc.Find(".alerts-banner").Length() != 0 {
		t.Errorf("a banner once every alert resolved: %q", webtest.Text(doc, ".alerts-banner"))
	}
}

// TestBannerReadFails: a page whose banner cannot be read is shown
// without it.
func TestBannerReadFails(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	owner := e.Operator("owner@example.com", false, "acme")
	webtest.FireAlert(e, "acme", alerting.ProviderSilent, "crm", "crm is silent.", base, nil)
	if _, err := e.Store.Pool().Exec(t.Context(), `ALTER TABLE alerts RENAME TO alerts_gone`); err != nil {
		t.Fatal(err)
	}
	status, doc := owner.Get("/t/acme/events")
	if status != http.StatusOK || doc.Find(".alerts-banner").Length() != 0 || webtest.Text(doc, "h1") == "" {
		t.Errorf("events page without alerts: %d, banner %d, h1 %q", status, doc.Find(".alerts-banner").Length(), webtest.Text(doc, "h1"))
	}
}

package destinations_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// publicURL is TEST-NET-3: public as far as the egress check can tell,
// without a DNS lookup, and never reached (nothing sends in these tests).
const publicURL = "https://203.0.113.10/hook"

// destinations lists tenant's destinations through the service.
func destinations(t *testing.T, e *webtest.Env, tenant string) []stream.Destination {
	t.Helper()
	ds, err := e.Store.Destinations(context.Background(), e.Tenant(tenant).ID)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// destination reads one destination of acme through the service.
func destination(t *testing.T, e *webtest.Env, id int64) stream.Destination {
	t.Helper()
	d, err := e.Store.Destination(context.Background(), e.Tenant("acme").ID, id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// create adds a destination to tenant as the CLI would.
func create(t *testing.T, e *webtest.Env, tenant string) stream.Destination {
	t.Helper()
	d, _, err := e.Store.CreateDestination(webtest.CliContext(), e.Tenant(tenant).ID, stream.NewDestination{URL: publicURL})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// changes makes n accepted changes in acme's feed.
func changes(e *webtest.Env, n int) {
	e.T.Helper()
	for i := range n {
		if got := e.Outcome("acme", "crm", e.Secret, fmt.Sprintf("ev-%d", i), webtest.SnapshotBody(fmt.Sprintf("c-%d", i), 1, `{"a":1}`)); got != "applied" {
			e.T.Fatalf("change %d: %s", i, got)
		}
	}
}

func TestOwnerCreatesDestination(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	owner := e.Operator("owner@example.com", false, "acme")

	status, doc := owner.Get("/t/acme/destinations")
	if status != http.StatusOK || webtest.Text(doc, "header a.active") != "Destinations" ||
		!strings.Contains(webtest.Text(doc, ".empty"), "No destinations yet") {
		t.Fatalf("empty list: %d, nav %q, %q", status, webtest.Text(doc, "header a.active"), webtest.Text(doc, ".empty"))
	}

	// Private and internal addresses are refused in the form, naming why.
	for _, tc := range []struct{ url, says string }{
		{"http://127.0.0.1/hook", "127.0.0.1 is a loopback address"},
		{"http://169.254.169.254/", "169.254.169.254 is a link-local address"},
		{"http://10.1.2.3:8080/x", "10.1.2.3 is a private address"},
		{"ftp://203.0.113.10/", "scheme must be http or https"},
	} {
		status, doc, _ := owner.Post("/t/acme/destinations", url.Values{"url": {tc.url}, "max_in_flight": {"8"}})
		alert := webtest.Text(doc, ".dest-new [role=alert]")
		if status != http.StatusUnprocessableEntity || !strings.Contains(alert, tc.says) {
			t.Errorf("create %s: %d %q, want 422 saying %q", tc.url, status, alert, tc.says)
		}
		if got := doc.Find(`.dest-new input[name=url]`).AttrOr("value", ""); got != tc.url {
			t.Errorf("the refused form lost its URL: %q", got)
		}
		if doc.Find("#destination-secret").Length() != 0 {
			t.Errorf("create %s showed a secret", tc.url)
		}
	}
	if ds := destinations(t, e, "acme"); len(ds) != 0 {
		t.Fatalf("refused creates stored %d destinations", len(ds))
	}

	// A public address is stored, and its secret shown this once.
	req, _ := http.NewRequest(http.MethodPost, e.Srv.URL+"/t/acme/destinations", strings.NewReader(url.Values{
		"url": {publicURL}, "provider": {"crm"}, "types": {"record.applied", "record.deleted"}, "max_in_flight": {"4"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", e.Srv.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := owner.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("create: %d, Cache-Control %q", resp.StatusCode, resp.Header.Get("Cache-Control"))
	}
	ds := destinations(t, e, "acme")
	if len(ds) != 1 || ds[0].URL != publicURL || ds[0].Provider != "crm" || ds[0].MaxInFlight != 4 ||
		strings.Join(ds[0].Types, ",") != "record.applied,record.deleted" || ds[0].AllowPrivate {
		t.Fatalf("stored %+v", ds)
	}

	status, doc, _ = owner.Post("/t/acme/destinations", url.Values{"url": {"https://203.0.113.11/other"}})
	secret := webtest.Text(doc, "#destination-secret")
	if status != http.StatusOK || !strings.HasPrefix(secret, "whsec_") || doc.Find(`button[data-copy="destination-secret"]`).Length() != 1 {
		t.Fatalf("second create: %d, secret %q", status, secret)
	}
	if rows := doc.Find("table.destinations tbody tr").Length(); rows != 2 {
		t.Fatalf("the list after create has %d rows", rows)
	}
	_, doc = owner.Get("/t/acme/destinations")
	if html, _ := doc.Html(); strings.Contains(html, secret) {
		t.Fatal("the list shows the secret again")
	}
	row := webtest.Text(doc, "table.destinations tbody tr")
	for _, want := range []string{publicURL, "record.applied, record.deleted; provider crm", "active", "up to date", "none yet"} {
		if !strings.Contains(row, want) {
			t.Errorf("row %q does not say %q", row, want)
		}
	}
}

func TestOwnerPausesRewindsRotatesDeletes(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	owner := e.Operator("owner@example.com", false, "acme")
	changes(e, 3)
	d := create(t, e, "acme")
	if d.Cursor != 3 {
		t.Fatalf("a new destination starts at the head, 3; got %d", d.Cursor)
	}
	page := fmt.Sprintf("/t/acme/destinations/%d", d.ID)

	// Pause from the list, resume from the destination's page.
	status, _, loc := owner.Post(page+"/pause", url.Values{"back": {"list"}})
	if status != http.StatusSeeOther || loc != "/t/acme/destinations" || destination(t, e, d.ID).Status != stream.DestinationPaused {
		t.Fatalf("pause: %d to %q, status %s", status, loc, destination(t, e, d.ID).Status)
	}
	_, doc := owner.Get(loc)
	if !strings.Contains(webtest.Text(doc, ".flash-ok"), "paused") || doc.Find(`form[action="`+page+`/resume"]`).Length() != 1 {
		t.Fatalf("after pause: flash %q, resume forms %d", webtest.Text(doc, ".flash-ok"), doc.Find(`form[action="`+page+`/resume"]`).Length())
	}
	status, _, loc = owner.Post(page+"/resume", nil)
	if status != http.StatusSeeOther || loc != page || destination(t, e, d.ID).Status != stream.DestinationActive {
		t.Fatalf("resume: %d to %q, status %s", status, loc, destination(t, e, d.ID).Status)
	}

	// Rewind: a cursor that is none, or past the newest change, is refused
	// in the form; "" sends every change kept.
	for _, tc := range []struct{ after, says string }{
		{"yesterday", `"yesterday" is not a cursor of the change feed`},
		{stream.FormatCursor(99), "past the newest change"},
	} {
		status, doc, _ := owner.Post(page+"/rewind", url.Values{"after": {tc.after}})
		if alert := webtest.Text(doc, ".dest-actions [role=alert]"); status != http.StatusUnprocessableEntity || !strings.Contains(alert, tc.says) ||
			doc.Find(`input[name=after]`).AttrOr("value", "") != tc.after {
			t.Errorf("rewind %q: %d %q, want 422 saying %q", tc.after, status, alert, tc.says)
		}
	}
	if got := destination(t, e, d.ID).Cursor; got != 3 {
		t.Fatalf("refused rewinds moved the cursor to %d", got)
	}
	if status, _, loc := owner.Post(page+"/rewind", url.Values{"after": {stream.FormatCursor(2)}}); status != http.StatusSeeOther || loc != page ||
		destination(t, e, d.ID).Cursor != 2 {
		t.Fatalf("rewind to c1_2: %d to %q, cursor %d", status, loc, destination(t, e, d.ID).Cursor)
	}
	owner.Post(page+"/rewind", url.Values{"after": {""}})
	if got := destination(t, e, d.ID); got.Cursor != 0 || got.Oldest == nil {
		t.Fatalf("rewind to the start: cursor %d, oldest %v", got.Cursor, got.Oldest)
	}
	_, doc = owner.Get(page)
	if flash, lag := webtest.Text(doc, ".flash-ok"), webtest.Text(doc, "td.dest-lag"); !strings.Contains(flash, "every change still kept is sent again") ||
		!strings.Contains(lag, "behind") || webtest.Text(doc, "td.dest-cursor") != "c1_0" {
		t.Fatalf("after rewinding: flash %q, lag %q, cursor %q", flash, lag, webtest.Text(doc, "td.dest-cursor"))
	}
	if kind := webtest.Text(doc, "td.dest-kind"); kind != "webhook" {
		t.Errorf("the destination's page shows kind %q, want webhook", kind)
	}

	// Rotate: a new secret, shown once, with the 24 h note.
	req, _ := http.NewRequest(http.MethodPost, e.Srv.URL+page+"/rotate", nil)
	req.Header.Set("Origin", e.Srv.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	status, doc = owner.Do(req)
	secret := webtest.Text(doc, "#destination-secret")
	if status != http.StatusOK || !strings.HasPrefix(secret, "whsec_") ||
		!strings.Contains(webtest.Text(doc, ".dest-secret"), "previous secret keeps signing for 24 hours") {
		t.Fatalf("rotate: %d, secret %q, card %q", status, secret, webtest.Text(doc, ".dest-secret"))
	}
	if _, doc := owner.Get(page); doc.Find("#destination-secret").Length() != 0 {
		t.Fatal("the destination's page shows the secret again")
	}

	// Delete.
	status, _, loc = owner.Post(page+"/delete", nil)
	if status != http.StatusSeeOther || loc != "/t/acme/destinations" {
		t.Fatalf("delete: %d to %q", status, loc)
	}
	if _, err := e.Store.Destination(context.Background(), e.Tenant("acme").ID, d.ID); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("after delete: %v", err)
	}
	_, doc = owner.Get(loc)
	if !strings.Contains(webtest.Text(doc, ".flash-ok"), fmt.Sprintf("Destination %d (%s) deleted", d.ID, publicURL)) {
		t.Fatalf("after delete: flash %q", webtest.Text(doc, ".flash-ok"))
	}
	if status, _ := owner.Get(page); status != http.StatusNotFound {
		t.Fatalf("a deleted destination's page answered %d", status)
	}
}

// TestDestinationAttempts: the page lists attempts newest first with their
// status, error and duration, 20 at a time, and pages to older ones.
func TestDestinationAttempts(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	owner := e.Operator("owner@example.com", false, "acme")
	d := create(t, e, "acme")
	// 25 attempts, as the sender records them: the newest delivered, the
	// oldest unanswered.
	e.Exec(fmt.Sprintf(`INSERT INTO destination_attempts (tenant_id, destination_id, position, attempted_at, status, error, duration_ms)
		SELECT %d, %d, i, now() - (25 - i) * interval '1 minute',
		       CASE WHEN i = 25 THEN 200 WHEN i = 1 THEN 0 ELSE 503 END,
		       CASE WHEN i = 25 THEN NULL WHEN i = 1 THEN 'dial tcp 203.0.113.10:443: connect: connection refused' ELSE 'answered 503' END,
		       40 + i
		FROM generate_series(1, 25) i`, e.Tenant("acme").ID, d.ID))
	page := fmt.Sprintf("/t/acme/destinations/%d", d.ID)

	_, doc := owner.Get(page)
	rows := doc.Find("table.dest-attempts tbody tr")
	first := cells(rows.First())
	if rows.Length() != 20 || !strings.Contains(first, fmt.Sprintf("chg_%d_25 | 200 | 65 ms | ", e.Tenant("acme").ID)) {
		t.Fatalf("first page: %d rows, newest %q", rows.Length(), first)
	}
	if second := cells(rows.Eq(1)); !strings.Contains(second, "503 | 64 ms | answered 503") {
		t.Fatalf("second row %q", second)
	}
	older := doc.Find(`nav.pager a[rel=next]`).AttrOr("href", "")
	if webtest.Text(doc, `nav.pager a[rel=next]`) != "Older" || doc.Find(`nav.pager a[rel=first]`).Length() != 0 {
		t.Fatalf("pager of the first page: %q", webtest.Text(doc, "nav.pager"))
	}
	_, doc = owner.Get(older)
	rows = doc.Find("table.dest-attempts tbody tr")
	last := cells(rows.Last())
	if rows.Length() != 5 || !strings.Contains(last, "no answer | 41 ms | dial tcp 203.0.113.10:443: connect: connection refused") {
		t.Fatalf("older page: %d rows, oldest %q", rows.Length(), last)
	}
	if doc.Find(`nav.pager a[rel=next]`).Length() != 0 || doc.Find(`nav.pager a[rel=first]`).AttrOr("href", "") != page+"#attempts" {
		t.Fatalf("pager of the last page: %q", webtest.Text(doc, "nav.pager"))
	}

	// The list shows each destination's newest attempt.
	_, doc = owner.Get("/t/acme/destinations")
	if last := webtest.Text(doc, "td.dest-last"); !strings.HasPrefix(last, "200 ") {
		t.Fatalf("last attempt on the list: %q", last)
	}
}

// cells is the text of a table row, its cells apart.
func cells(row *goquery.Selection) string {
	var out []string
	row.Find("td").Each(func(_ int, td *goquery.Selection) { out = append(out, strings.Join(strings.Fields(td.Text()), " ")) })
	return strings.Join(out, " | ")
}

// TestDestinationsOwnersOnly: viewers and operators neither see the pages
// nor change anything; the nav offers them no link.
func TestDestinationsOwnersOnly(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	d := create(t, e, "acme")
	page := fmt.Sprintf("/t/acme/destinations/%d", d.ID)
	for _, role := range []domain.Role{domain.RoleViewer, domain.RoleOperator} {
		b := e.WithRole(string(role)+"@example.com", role)
		if _, doc := b.Get("/t/acme"); doc.Find(`nav.sections a[href="/t/acme/destinations"]`).Length() != 0 {
			t.Errorf("a %s is offered the destinations page", role)
		}
		for _, path := range []string{"/t/acme/destinations", page} {
			if status, doc := b.Get(path); status != http.StatusForbidden || !strings.Contains(webtest.Text(doc, "main p"), "needs the owner role") {
				t.Errorf("%s opening %s: %d %q", role, path, status, webtest.Text(doc, "main p"))
			}
		}
		for _, action := range []string{"/pause", "/rotate", "/delete", "/rewind"} {
			if status, _, _ := b.Post(page+action, url.Values{"after": {""}}); status != http.StatusForbidden {
				t.Errorf("%s posting %s: %d, want 403", role, action, status)
			}
		}
		if status, _, _ := b.Post("/t/acme/destinations", url.Values{"url": {"https://203.0.113.12/x"}}); status != http.StatusForbidden {
			t.Errorf("%s creating: %d, want 403", role, status)
		}
	}
	if ds := destinations(t, e, "acme"); len(ds) != 1 || ds[0].Status != stream.DestinationActive {
		t.Fatalf("after the refused actions: %+v", ds)
	}
}

// TestDestinationsStayInTheirTenant: an owner of acme gets 404 for every
// page and action of globex's destination, which stays as it was; a
// cross-site post is refused even from its own owner.
func TestDestinationsStayInTheirTenant(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	acme := e.Operator("owner@example.com", false, "acme")
	e.Tenant("globex")
	theirs := create(t, e, "globex")
	page := fmt.Sprintf("/t/acme/destinations/%d", theirs.ID)
	if status, _ := acme.Get(page); status != http.StatusNotFound {
		t.Errorf("another tenant's destination answered %d", status)
	}
	for _, action := range []string{"/pause", "/resume", "/rotate", "/delete", "/rewind"} {
		if status, _, _ := acme.Post(page+action, url.Values{"after": {""}}); status != http.StatusNotFound {
			t.Errorf("%s of another tenant's destination answered %d", action, status)
		}
	}
	if _, doc := acme.Get("/t/acme/destinations"); doc.Find("table.destinations").Length() != 0 {
		t.Error("acme's list shows globex's destination")
	}
	if ds := destinations(t, e, "globex"); len(ds) != 1 || ds[0].Status != stream.DestinationActive {
		t.Fatalf("globex's destination after acme's attempts: %+v", ds)
	}

	// Cross-site form posts (no same-origin proof) change nothing.
	ours := create(t, e, "acme")
	for _, path := range []string{"/t/acme/destinations", fmt.Sprintf("/t/acme/destinations/%d/pause", ours.ID),
		fmt.Sprintf("/t/acme/destinations/%d/delete", ours.ID)} {
		req, _ := http.NewRequest(http.MethodPost, e.Srv.URL+path, strings.NewReader("url="+url.QueryEscape(publicURL)))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "https://evil.example")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		if status, _ := acme.Do(req); status != http.StatusForbidden {
			t.Errorf("cross-site POST %s answered %d", path, status)
		}
	}
	if ds := destinations(t, e, "acme"); len(ds) != 1 || ds[0].Status != stream.DestinationActive {
		t.Fatalf("after cross-site posts: %+v", ds)
	}
}

// TestOwnerCreatesAlertDestination: the form offers the alert types and
// the format; a slack destination of alerts is stored and listed as such;
// slack with a record type is refused in the form, which keeps what was
// chosen; the attempts name an alert event's type.
func TestOwnerCreatesAlertDestination(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	owner := e.Operator("owner@example.com", false, "acme")
	_, doc := owner.Get("/t/acme/destinations")
	for _, sel := range []string{`.dest-new input[name=types][value="alert.fired"]`, `.dest-new input[name=types][value="alert.resolved"]`,
		`.dest-new select[name=format] option[value=standard][selected]`, `.dest-new select[name=format] option[value=slack]`} {
		if doc.Find(sel).Length() != 1 {
			t.Errorf("the form lacks %s", sel)
		}
	}

	status, doc, _ := owner.Post("/t/acme/destinations", url.Values{"url": {publicURL}, "format": {"slack"},
		"types": {"record.applied", "alert.fired"}})
	alert := webtest.Text(doc, ".dest-new [role=alert]")
	if status != http.StatusUnprocessableEntity || !strings.Contains(alert, "format slack takes alert types only") {
		t.Fatalf("slack with a record type: %d %q", status, alert)
	}
	if doc.Find(`.dest-new select[name=format] option[value=slack][selected]`).Length() != 1 ||
		doc.Find(`.dest-new input[name=types][value="alert.fired"][checked]`).Length() != 1 {
		t.Error("the refused form lost its format or its alert type")
	}

	status, doc, _ = owner.Post("/t/acme/destinations", url.Values{"url": {publicURL}, "format": {"slack"}})
	if status != http.StatusOK || !strings.HasPrefix(webtest.Text(doc, "#destination-secret"), "whsec_") {
		t.Fatalf("create slack: %d", status)
	}
	ds := destinations(t, e, "acme")
	if len(ds) != 1 || ds[0].Format != stream.FormatSlack || strings.Join(ds[0].Types, ",") != "alert.*" {
		t.Fatalf("stored %+v; want slack with alert.*", ds)
	}
	if row := webtest.Text(doc, "table.destinations tbody tr"); !strings.Contains(row, "alert.*; Slack format") {
		t.Errorf("row %q does not say alert.*; Slack format", row)
	}
	if kind := webtest.Text(doc, "table.destinations tbody tr .dest-kind"); ds[0].Kind != "slack" || kind != "slack" {
		t.Errorf("kind stored %q, shown %q; want slack", ds[0].Kind, kind)
	}

	tenant := e.Tenant("acme").ID
	e.Exec(fmt.Sprintf(`
		WITH a AS (INSERT INTO alerts (tenant_id, rule, summary, value, threshold, window_seconds, started_at)
		           VALUES (%[1]d, 'refusals', 's', 1, 1, 300, now()) RETURNING id),
		     ev AS (INSERT INTO alert_events (tenant_id, alert_id, type, at) SELECT %[1]d, id, 'alert.fired', now() FROM a RETURNING id)
		INSERT INTO destination_attempts (tenant_id, destination_id, position, status, duration_ms)
		SELECT %[1]d, %[2]d, id + %[3]d, 200, 12 FROM ev`, tenant, ds[0].ID, (0 + stream.AlertQueueBase)))
	_, doc = owner.Get(fmt.Sprintf("/t/acme/destinations/%d", ds[0].ID))
	if cell := webtest.Text(doc, "table.dest-attempts tbody td[data-label=Message]"); !strings.HasPrefix(cell, fmt.Sprintf("alert_%d_", tenant)) ||
		!strings.HasSuffix(cell, "alert.fired") {
		t.Errorf("attempt cell %q; want the alert event's id and type", cell)
	}
}

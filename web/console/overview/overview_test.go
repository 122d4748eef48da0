package overview_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/tidemark/tidemark/web/internal/webtest"
)

// overviewCell is the count of outcome in the row of provider (or "total")
// of the window table (0: 24 hours, 1: 7 days, 2: 30 days).
func overviewCell(t *testing.T, doc *goquery.Document, window int, provider, outcome string) int {
	t.Helper()
	row := `table.outcome-counts[data-window="` + strconv.Itoa(window) + `"] `
	if provider == "total" {
		row += "tr.total"
	} else {
		row += `tr[data-provider="` + provider + `"]`
	}
	cell := doc.Find(row + ` td[data-outcome="` + outcome + `"]`)
	if cell.Length() != 1 {
		t.Fatalf("window %d, %s, %s: %d cells", window, provider, outcome, cell.Length())
	}
	n, err := strconv.Atoi(strings.TrimSpace(cell.Text()))
	if err != nil {
		t.Fatalf("window %d, %s, %s: %q is not a count", window, provider, outcome, cell.Text())
	}
	return n
}

// TestOverviewCountsRealDeliveries: after real deliveries the overview
// counts each outcome per provider and in total for every window, counts
// the refused delivery apart, links the open conflict, and lists the
// deliveries newest first.
func TestOverviewCountsRealDeliveries(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.Provider("acme", "erp")
	b := e.Operator("ops@example.com", false, "acme")

	_, doc := b.Get("/t/acme")
	if got := overviewCell(t, doc, 0, "total", "events"); got != 0 {
		t.Fatalf("before any delivery the total is %d", got)
	}
	if doc.Find(".latest-deliveries").Length() != 0 || !strings.Contains(doc.Find(".empty").Text(), "No deliveries yet") {
		t.Fatal("an empty tenant should say that no deliveries arrived yet")
	}

	for _, d := range []struct{ id, contact, want, snapshot string }{
		{"e1", "c-1", "applied", `{"a":1}`},
		{"e2", "c-2", "applied", `{"a":1}`},
		{"e1", "c-1", "duplicate", `{"a":1}`},
	} {
		if got := e.Outcome("acme", "crm", e.Secret, d.id, webtest.SnapshotBody(d.contact, 5, d.snapshot)); got != d.want {
			t.Fatalf("%s: %s, want %s", d.id, got, d.want)
		}
	}
	if got := e.Outcome("acme", "crm", e.Secret, "e3", webtest.SnapshotBody("c-1", 4, `{"a":0}`)); got != "stale" {
		t.Fatalf("e3: %s, want stale", got)
	}
	if got := e.Outcome("acme", "crm", e.Secret, "e4", webtest.SnapshotBody("c-2", 5, `{"a":2}`)); got != "revision_conflict" {
		t.Fatalf("e4: %s, want revision_conflict", got)
	}
	status, _ := e.Post("/webhooks/acme/crm", webtest.SnapshotBody("c-3", 1, `{}`), map[string]string{
		"webhook-id": "bad", "webhook-timestamp": strconv.FormatInt(time.Now().Unix(), 10),
		"webhook-signature": "v1,bm90IHRoZSByaWdodCBzaWduYXR1cmU="})
	if status != http.StatusUnauthorized {
		t.Fatalf("badly signed delivery answered %d", status)
	}
	e.FlushRefusals()

	status, doc = b.Get("/t/acme")
	if status != http.StatusOK {
		t.Fatalf("overview answered %d", status)
	}
	if got := webtest.Text(doc, "h1"); !strings.HasPrefix(got, "Overview") {
		t.Fatalf("heading %q", got)
	}
	want := map[string]int{"applied": 2, "duplicate": 1, "stale": 1, "redundant": 0, "revision_conflict": 1,
		"event_conflict": 0, "unversioned": 0, "rejected": 0, "delivery_rejected": 1, "events": 5}
	for window, period := range []string{"24h", "7d", "30d"} {
		status, doc := b.Get("/t/acme?period=" + period)
		if status != http.StatusOK || doc.Find("table.outcome-counts").Length() != 1 {
			t.Fatalf("period %s: %d with %d tables, want one", period, status, doc.Find("table.outcome-counts").Length())
		}
		for outcome, n := range want {
			if got := overviewCell(t, doc, window, "crm", outcome); got != n {
				t.Errorf("window %d crm %s = %d, want %d", window, outcome, got, n)
			}
			if got := overviewCell(t, doc, window, "total", outcome); got != n {
				t.Errorf("window %d total %s = %d, want %d", window, outcome, got, n)
			}
			if got := overviewCell(t, doc, window, "erp", outcome); got != 0 {
				t.Errorf("window %d erp %s = %d, want 0", window, outcome, got)
			}
		}
	}
	if got := webtest.Text(doc, ".rejected-count"); got != "1" {
		t.Errorf("rejected deliveries stat %q", got)
	}
	conflicts := doc.Find("a.open-conflicts")
	if webtest.Text(doc, "a.open-conflicts") != "1" || conflicts.AttrOr("href", "") != "/t/acme/conflicts" {
		t.Errorf("open conflicts %q linking to %q", webtest.Text(doc, "a.open-conflicts"), conflicts.AttrOr("href", ""))
	}

	// The chart shows today's stacked segments and names every outcome.
	if doc.Find("figure.chart svg rect.s-applied").Length() != 1 || doc.Find("figure.chart svg rect.s-delivery_rejected").Length() != 1 {
		t.Error("today's bar should have an applied and a rejected-deliveries segment")
	}
	if got := doc.Find("figure.chart svg g.bar").Length(); got != 14 {
		t.Errorf("chart has %d bars, want 14", got)
	}
	if legend := webtest.Text(doc, ".legend"); !strings.Contains(legend, "Applied") || !strings.Contains(legend, "Rejected deliveries") {
		t.Errorf("legend %q", legend)
	}

	// Latest deliveries, newest first: the refused one on top.
	rows := doc.Find("table.latest-deliveries tbody tr")
	if rows.Length() != 6 {
		t.Fatalf("%d latest deliveries, want 6", rows.Length())
	}
	var cells []string
	rows.First().Find("td").Each(func(_ int, td *goquery.Selection) { cells = append(cells, strings.TrimSpace(td.Text())) })
	if first := strings.Join(cells, "|"); !strings.Contains(first, "|crm|401|invalid|") {
		t.Errorf("newest delivery row %q, want the refused one with its status and verdict", cells)
	}
	if href := rows.Eq(1).Find("a").AttrOr("href", ""); !strings.HasPrefix(href, "/t/acme/events/") || !strings.HasSuffix(href, "/0") {
		t.Errorf("a delivery's event count links to %q", href)
	}
	if s, _ := b.Get(rows.Eq(1).Find("a").AttrOr("href", "")); s != http.StatusOK {
		t.Errorf("the delivery's first event answered %d", s)
	}
}

// TestOverviewPollsForItsCounts: the counts section asks htmx to poll, and
// an htmx request gets that section alone, without the page frame and
// without taking the pending flash.
func TestOverviewPollsForItsCounts(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("ops@example.com", false, "acme")
	_, doc := b.Get("/t/acme")
	live := doc.Find("#overview-live")
	if live.AttrOr("hx-get", "") != "/t/acme" || !strings.Contains(live.AttrOr("hx-trigger", ""), "every") ||
		live.AttrOr("hx-select", "") != "#overview-live" {
		t.Fatalf("live section attributes: hx-get %q hx-trigger %q hx-select %q",
			live.AttrOr("hx-get", ""), live.AttrOr("hx-trigger", ""), live.AttrOr("hx-select", ""))
	}

	e.Outcome("acme", "crm", e.Secret, "e1", webtest.SnapshotBody("c-1", 1, `{}`))
	req, _ := http.NewRequest(http.MethodGet, e.Srv.URL+"/t/acme", nil)
	req.Header.Set("HX-Request", "true")
	status, doc := b.Do(req)
	if status != http.StatusOK {
		t.Fatalf("poll answered %d", status)
	}
	if doc.Find("header.sidebar").Length() != 0 || doc.Find("h1").Length() != 0 {
		t.Fatal("the poll answer should be the live section alone")
	}
	if doc.Find("#overview-live").Length() != 1 || overviewCell(t, doc, 0, "total", "applied") != 1 {
		t.Fatal("the poll answer should hold the fresh counts")
	}
}

// TestOverviewEmptyTenant: a tenant without providers says what to do.
func TestOverviewEmptyTenant(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	if _, err := e.Store.CreateTenant(context.Background(), "initech", ""); err != nil {
		t.Fatal(err)
	}
	b := e.Operator("ops@example.com", false, "initech")
	status, doc := b.Get("/t/initech")
	if status != http.StatusOK {
		t.Fatalf("overview answered %d", status)
	}
	if msg := webtest.Text(doc, ".empty"); !strings.Contains(msg, "No providers are connected yet") {
		t.Fatalf("empty state %q", msg)
	}
	if href := doc.Find(".empty a").AttrOr("href", ""); href != "/t/initech/providers" {
		t.Fatalf("empty state links to %q", href)
	}
}

// TestOverviewOtherTenant: a member of another tenant gets 404.
func TestOverviewOtherTenant(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.Provider("globex", "crm")
	b := e.Operator("x@example.com", false, "globex")
	if status, _ := b.Get("/t/acme"); status != http.StatusNotFound {
		t.Fatalf("another tenant's overview answered %d", status)
	}
	req, _ := http.NewRequest(http.MethodGet, e.Srv.URL+"/t/acme", nil)
	req.Header.Set("HX-Request", "true")
	if status, _ := b.Do(req); status != http.StatusNotFound {
		t.Fatalf("another tenant's overview poll answered %d", status)
	}
}

// TestOverviewFoldsClosedHours: reading the overview folds the counter
// shards of closed hours into one row each without changing any count,
// and leaves the current hour's shards to ingest.
func TestOverviewFoldsClosedHours(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	ctx := context.Background()
	pool := e.Store.Pool()
	var tenantID, providerID int64
	if err := pool.QueryRow(ctx, `SELECT p.tenant_id, p.id FROM providers p JOIN tenants t ON t.id = p.tenant_id
		WHERE t.slug = 'acme' AND p.name = 'crm'`).Scan(&tenantID, &providerID); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	hour := now.Truncate(time.Hour)
	add := func(bucket time.Time, outcome string, shard, n int) {
		t.Helper()
		if _, err := pool.Exec(ctx, `INSERT INTO outcome_counters (tenant_id, provider_id, bucket, outcome, shard, n)
			VALUES ($1, $2, $3, $4, $5, $6)`, tenantID, providerID, bucket, outcome, shard, n); err != nil {
			t.Fatal(err)
		}
	}
	for shard := range 6 {
		add(hour.Add(-3*time.Hour), "applied", shard, 10+shard) // 75 in all
	}
	add(hour.Add(-10*24*time.Hour), "stale", 2, 2)
	add(hour.Add(-10*24*time.Hour), "stale", 9, 3)
	add(hour, "applied", 7, 1)

	b := e.Operator("ops@example.com", false, "acme")
	for range 2 {
		for _, c := range []struct {
			window   int
			outcome  string
			expected int
		}{{0, "applied", 76}, {1, "stale", 0}, {2, "stale", 5}, {2, "applied", 76}} {
			_, doc := b.Get("/t/acme?period=" + []string{"24h", "7d", "30d"}[c.window])
			if got := overviewCell(t, doc, c.window, "crm", c.outcome); got != c.expected {
				t.Errorf("window %d %s = %d, want %d", c.window, c.outcome, got, c.expected)
			}
		}
	}
	rows, err := pool.Query(ctx, `SELECT bucket, outcome, shard, n FROM outcome_counters WHERE tenant_id = $1 ORDER BY bucket, shard`, tenantID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var (
			bucket       time.Time
			outcome      string
			shard, count int
		)
		if err := rows.Scan(&bucket, &outcome, &shard, &count); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s %s shard %d: %d", bucket.UTC().Format("01-02T15"), outcome, shard, count))
	}
	want := []string{
		hour.Add(-10*24*time.Hour).Format("01-02T15") + " stale shard 0: 5",
		hour.Add(-3*time.Hour).Format("01-02T15") + " applied shard 0: 75",
		hour.Format("01-02T15") + " applied shard 7: 1",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("counter rows after reading:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestOverviewPeriodSwitch: the overview shows one table, of the period
// asked for (24 hours unless ?period= says otherwise); the switch marks it
// and links the others; the poll keeps it; a bad period is a 400 page.
func TestOverviewPeriodSwitch(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.Outcome("acme", "crm", e.Secret, "e1", webtest.SnapshotBody("c-1", 1, `{}`))
	b := e.Operator("ops@example.com", false, "acme")
	for path, want := range map[string]struct{ window, period, heading, poll string }{
		"/t/acme":            {"0", "24h", "Counts, last 24 hours", "/t/acme"},
		"/t/acme?period=24h": {"0", "24h", "Counts, last 24 hours", "/t/acme"},
		"/t/acme?period=7d":  {"1", "7d", "Counts, last 7 days", "/t/acme?period=7d"},
		"/t/acme?period=30D": {"2", "30d", "Counts, last 30 days", "/t/acme?period=30d"},
	} {
		status, doc := b.Get(path)
		tables := doc.Find("table.outcome-counts")
		if status != http.StatusOK || tables.Length() != 1 || tables.AttrOr("data-window", "") != want.window ||
			tables.AttrOr("data-period", "") != want.period {
			t.Errorf("%s: %d, %d tables, window %q", path, status, tables.Length(), tables.AttrOr("data-window", ""))
			continue
		}
		if got := webtest.Text(doc, ".overview-period h2"); got != want.heading {
			t.Errorf("%s: heading %q, want %q", path, got, want.heading)
		}
		current := doc.Find(`.period-switch a[aria-current="page"]`)
		if current.Length() != 1 || current.AttrOr("data-period", "") != want.period {
			t.Errorf("%s: the switch marks %q", path, current.AttrOr("data-period", ""))
		}
		var links []string
		doc.Find(".period-switch a").Each(func(_ int, a *goquery.Selection) { links = append(links, a.AttrOr("href", "")) })
		if got := strings.Join(links, " "); got != "/t/acme /t/acme?period=7d /t/acme?period=30d" {
			t.Errorf("%s: switch links %q", path, got)
		}
		if got := doc.Find("#overview-live").AttrOr("hx-get", ""); got != want.poll {
			t.Errorf("%s: polls %q, want %q", path, got, want.poll)
		}
		if got := overviewCell(t, doc, mustAtoi(t, want.window), "total", "applied"); got != 1 {
			t.Errorf("%s: %d applied", path, got)
		}
		if doc.Find("table.latest-deliveries tbody tr").Length() != 1 || doc.Find("figure.chart svg").Length() != 1 {
			t.Errorf("%s: the chart and the latest deliveries stay", path)
		}
	}
	for _, bad := range []string{"/t/acme?period=1y", "/t/acme?period=%3Cb%3E"} {
		status, doc := b.Get(bad)
		if status != http.StatusBadRequest || !strings.Contains(doc.Find("main").Text(), "24h, 7d or 30d") {
			t.Errorf("%s: %d %q, want 400 naming the periods", bad, status, doc.Find("main").Text())
		}
	}
	req, _ := http.NewRequest(http.MethodGet, e.Srv.URL+"/t/acme?period=7d", nil)
	req.Header.Set("HX-Request", "true")
	if status, doc := b.Do(req); status != http.StatusOK || doc.Find(`table.outcome-counts[data-period="7d"]`).Length() != 1 {
		t.Fatalf("a poll of 7 days: %d", status)
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

package conflicts_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/tidemark/tidemark/web/internal/webtest"
)

func TestConflictQueueEmpty(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("ops@example.com", false, "acme")
	status, doc := b.Get("/t/acme/conflicts")
	if status != http.StatusOK || !strings.Contains(webtest.Text(doc, ".empty"), "No revision conflicts") {
		t.Fatalf("empty queue: %d %q", status, webtest.Text(doc, ".empty"))
	}
	if webtest.Text(doc, "h1") != "Revision conflicts" || doc.Find("nav a.active").Text() != "Conflicts" {
		t.Fatalf("heading %q, active nav %q", webtest.Text(doc, "h1"), doc.Find("nav a.active").Text())
	}
	if doc.Find("form.contact-search select[name=provider] option[value=crm]").Length() != 1 {
		t.Fatal("the queue has no contact search listing provider crm")
	}
}

func TestConflictQueueAndKeep(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	id := e.ConflictOf("c-1", 5, `{"name":"Ada","email":"ada@example.com"}`, `{"name":"Ada L.","email":"ada@example.com","phone":"123"}`)
	_, err := e.Store.Pool().Exec(context.Background(), `UPDATE conflicts SET detected_at = now() - interval '3 hours 5 minutes' WHERE id = $1`, id)
	if err != nil {
		t.Fatal(err)
	}
	b := e.Operator("ops@example.com", false, "acme")

	status, doc := b.Get("/t/acme/conflicts")
	if status != http.StatusOK {
		t.Fatalf("queue: %d", status)
	}
	open := doc.Find("table.open tbody tr")
	if open.Length() != 1 {
		t.Fatalf("open rows %v", webtest.CellRows(doc, "table.open tbody tr"))
	}
	row := webtest.CellRows(doc, "table.open tbody tr")[0]
	if cells := strings.Split(row, " | "); len(cells) != 7 || cells[1] != "crm" || cells[2] != "contact c-1" ||
		cells[3] != "5" || cells[5] != "3 h" || cells[6] != "open" {
		t.Errorf("open row %q", row)
	}
	if href, _ := open.Find("a[href*='/contacts/']").Attr("href"); href != "/t/acme/contacts/crm/c-1" {
		t.Errorf("record link %q", href)
	}
	poll := doc.Find("#conflict-queue")
	if poll.AttrOr("hx-get", "") != "/t/acme/conflicts" || !strings.Contains(poll.AttrOr("hx-trigger", ""), "every") {
		t.Errorf("queue does not poll: hx-get %q hx-trigger %q", poll.AttrOr("hx-get", ""), poll.AttrOr("hx-trigger", ""))
	}

	// The conflict page: both sides, the differing fields, the current record.
	status, doc = b.Get(fmt.Sprintf("/t/acme/conflicts/%d", id))
	if status != http.StatusOK {
		t.Fatalf("conflict page: %d", status)
	}
	if got := webtest.AllText(doc, ".conflict-sides .event-id"); len(got) != 2 || got[0] != "c-1-a" || got[1] != "c-1-b" {
		t.Errorf("event ids %v", got)
	}
	if got := doc.Find(".conflict-sides .accepted p.muted").Text(); strings.Join(strings.Fields(got), " ") != "event c-1-a" {
		t.Errorf("the accepted side reads %q, want the word and the id apart", got)
	}
	if !strings.Contains(webtest.Text(doc, ".accepted pre"), `"Ada"`) || !strings.Contains(webtest.Text(doc, ".conflicting pre"), `"Ada L."`) {
		t.Errorf("sides %q | %q", webtest.Text(doc, ".accepted pre"), webtest.Text(doc, ".conflicting pre"))
	}
	changed := webtest.CellRows(doc, "table.field-diff tr.diff-changed")
	wantChanged := []string{`name | "Ada" | "Ada L."`, `phone | (missing) | "123"`}
	if strings.Join(changed, "|") != strings.Join(wantChanged, "|") {
		t.Errorf("changed rows %q, want %q", changed, wantChanged)
	}
	if same := webtest.CellRows(doc, "table.field-diff tbody tr:not(.diff-changed)"); len(same) != 1 || !strings.HasPrefix(same[0], "email") {
		t.Errorf("unchanged rows %q", same)
	}
	if webtest.Text(doc, ".current-record .current-revision") != "5" {
		t.Errorf("current revision %q", webtest.Text(doc, ".current-record .current-revision"))
	}
	if doc.Find("form[action$='/resolve'] button[value=keep]").Length() != 1 ||
		doc.Find("form[action$='/resolve'] button[value=adopt]:not([disabled])").Length() != 1 {
		t.Fatal("the open conflict has no keep and adopt buttons")
	}

	status, _, loc := b.Post(fmt.Sprintf("/t/acme/conflicts/%d/resolve", id),
		url.Values{"resolution": {"keep"}, "note": {"the CRM export was right"}})
	if status != http.StatusSeeOther || loc != "/t/acme/conflicts" {
		t.Fatalf("keep: %d to %q", status, loc)
	}
	_, doc = b.Get(loc)
	if got := webtest.ShownFlash(doc); got != fmt.Sprintf("Conflict %d kept.", id) {
		t.Errorf("flash %q", got)
	}
	if doc.Find("table.open").Length() != 0 || !strings.Contains(webtest.Text(doc, "#conflict-queue .empty"), "No open conflicts") {
		t.Errorf("open part after keep: %q", webtest.Text(doc, "#conflict-queue"))
	}
	resolved := webtest.CellRows(doc, "table.resolved tbody tr")
	if len(resolved) != 1 {
		t.Fatalf("resolved rows %q", resolved)
	}
	for _, want := range []string{"kept", "ops@example.com", "the CRM export was right", "Kept the accepted snapshot"} {
		if !strings.Contains(resolved[0], want) {
			t.Errorf("resolved row %q lacks %q", resolved[0], want)
		}
	}

	// The conflict now shows the decision instead of the form, and cannot
	// be resolved twice.
	_, doc = b.Get(fmt.Sprintf("/t/acme/conflicts/%d", id))
	if doc.Find("form[action$='/resolve']").Length() != 0 || webtest.Text(doc, ".decision .resolved-by") != "ops@example.com" {
		t.Errorf("resolved conflict page: form %d, decision %q", doc.Find("form[action$='/resolve']").Length(), webtest.Text(doc, ".decision"))
	}
	status, _, loc = b.Post(fmt.Sprintf("/t/acme/conflicts/%d/resolve", id), url.Values{"resolution": {"adopt"}})
	if status != http.StatusSeeOther || loc != fmt.Sprintf("/t/acme/conflicts/%d", id) {
		t.Fatalf("second resolution: %d to %q", status, loc)
	}
	if _, doc = b.Get(loc); !strings.Contains(webtest.ShownFlash(doc), "already kept") || doc.Find(".flash-error").Length() != 1 {
		t.Errorf("second resolution flash %q", webtest.ShownFlash(doc))
	}
}

func TestConflictQueuePollFragment(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.ConflictOf("c-1", 5, `{"a":1}`, `{"a":2}`)
	b := e.Operator("ops@example.com", false, "acme")
	req, _ := http.NewRequest(http.MethodGet, e.Srv.URL+"/t/acme/conflicts", nil)
	req.Header.Set("HX-Request", "true")
	status, doc := b.Do(req)
	if status != http.StatusOK || doc.Find("#conflict-queue table.open tbody tr").Length() != 1 {
		t.Fatalf("poll: %d, rows %d", status, doc.Find("#conflict-queue tbody tr").Length())
	}
	if doc.Find("header.sidebar, h1").Length() != 0 {
		t.Error("the poll answer carries the whole page, not the queue alone")
	}
}

func TestConflictAdopt(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	id := e.ConflictOf("c-2", 3, `{"name":"Bea"}`, `{"name":"Beatrice"}`)
	b := e.Operator("ops@example.com", false, "acme")
	status, _, loc := b.Post(fmt.Sprintf("/t/acme/conflicts/%d/resolve", id), url.Values{"resolution": {"adopt"}, "note": {"longer name"}})
	if status != http.StatusSeeOther || loc != "/t/acme/conflicts" {
		t.Fatalf("adopt: %d to %q", status, loc)
	}
	_, doc := b.Get(loc)
	want := fmt.Sprintf("Conflict %d adopted: the record now holds the conflicting snapshot at revision 3.", id)
	if got := webtest.ShownFlash(doc); got != want {
		t.Errorf("flash %q, want %q", got, want)
	}
	if r := webtest.CellRows(doc, "table.resolved tbody tr"); len(r) != 1 || !strings.Contains(r[0], "adopted") {
		t.Errorf("resolved rows %q", r)
	}

	_, doc = b.Get("/t/acme/contacts/crm/c-2")
	if got := webtest.Text(doc, ".record-state .snapshot"); !strings.Contains(got, `"Beatrice"`) {
		t.Errorf("record snapshot after adopt %q", got)
	}
	first := doc.Find("table.timeline tbody tr").First()
	if !first.HasClass("accepted") || !strings.Contains(first.Text(), "adopted by operator") {
		t.Fatalf("newest timeline entry %q", strings.Join(strings.Fields(first.Text()), " "))
	}
	if href := first.Find("a").AttrOr("href", ""); href != fmt.Sprintf("/t/acme/conflicts/%d", id) {
		t.Errorf("adoption links to %q", href)
	}
	if got := strings.Join(strings.Fields(first.Find(".changes").Text()), " "); got != `name: "Bea" → "Beatrice"` {
		t.Errorf("adoption changes %q", got)
	}
}

func TestConflictAdoptRefusedAfterNewerRevision(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	id := e.ConflictOf("c-3", 5, `{"stage":"lead"}`, `{"stage":"customer"}`)
	if got := e.Outcome("acme", "crm", e.Secret, "c-3-six", webtest.SnapshotBody("c-3", 6, `{"stage":"churned"}`)); got != "applied" {
		t.Fatalf("revision 6: %s", got)
	}
	b := e.Operator("ops@example.com", false, "acme")
	path := fmt.Sprintf("/t/acme/conflicts/%d", id)

	_, doc := b.Get(path)
	if got := webtest.Text(doc, ".moved-on"); !strings.Contains(got, "moved on to revision 6") || !strings.Contains(got, "no longer possible") {
		t.Errorf("moved-on explanation %q", got)
	}
	if doc.Find("button[value=adopt][disabled]").Length() != 1 {
		t.Error("adopt is offered although the record moved on")
	}

	status, _, loc := b.Post(path+"/resolve", url.Values{"resolution": {"adopt"}})
	if status != http.StatusSeeOther || loc != path {
		t.Fatalf("refused adopt: %d to %q", status, loc)
	}
	_, doc = b.Get(loc)
	if doc.Find(".flash-error").Length() != 1 || !strings.Contains(webtest.ShownFlash(doc), "moved on to revision 6") {
		t.Errorf("flash %q", webtest.ShownFlash(doc))
	}
	if webtest.Text(doc, "h1 .badge") != "open" || doc.Find("form[action$='/resolve']").Length() != 1 {
		t.Errorf("conflict after refusal: %q", webtest.Text(doc, "h1"))
	}
	_, doc = b.Get("/t/acme/contacts/crm/c-3")
	if !strings.Contains(webtest.Text(doc, ".record-state .snapshot"), "churned") {
		t.Errorf("record changed by a refused adopt: %q", webtest.Text(doc, ".record-state .snapshot"))
	}
}

func TestContactTimeline(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	deliver := func(id string, rev int, snapshot, want string) {
		t.Helper()
		if got := e.Outcome("acme", "crm", e.Secret, id, webtest.SnapshotBody("c-7", rev, snapshot)); got != want {
			t.Fatalf("%s: %s, want %s", id, got, want)
		}
	}
	deliver("e1", 1, `{"name":"Cy","stage":"lead"}`, "applied")
	deliver("e2", 2, `{"name":"Cy","stage":"customer","phone":"9"}`, "applied")
	deliver("e1b", 1, `{"name":"Cy","stage":"lead"}`, "stale")
	deliver("e2", 2, `{"name":"Cy","stage":"customer","phone":"9"}`, "duplicate")
	deliver("e3", 3, `{"name":"Cyrus","stage":"customer"}`, "applied")

	b := e.Operator("ops@example.com", false, "acme")
	status, doc := b.Get("/t/acme/contacts/crm/c-7")
	if status != http.StatusOK {
		t.Fatalf("timeline: %d", status)
	}
	if webtest.Text(doc, ".record-state .current-revision") != "3" || webtest.Text(doc, ".record-state .application-count") != "3" {
		t.Errorf("header: revision %q, applications %q", webtest.Text(doc, ".current-revision"), webtest.Text(doc, ".application-count"))
	}
	if got := webtest.Text(doc, "h1 .record-name"); got != "Cyrus" {
		t.Errorf("the title names the record %q, want its name Cyrus", got)
	}
	if !strings.Contains(webtest.Text(doc, ".record-state .snapshot"), `"name": "Cyrus"`) {
		t.Errorf("snapshot %q", webtest.Text(doc, ".record-state .snapshot"))
	}
	// A timeline belongs to the records directory, not to the event history.
	if doc.Find("nav a.active").Text() != "Records" {
		t.Errorf("active nav %q", doc.Find("nav a.active").Text())
	}
	var kinds, changes []string
	doc.Find("table.timeline tbody tr").Each(func(_ int, s *goquery.Selection) {
		kinds = append(kinds, strings.TrimSpace(s.Find(".badge").Text())+" "+strings.TrimSpace(s.Find(".event-id").Text()))
		var lines []string
		s.Find(".changes li").Each(func(_ int, li *goquery.Selection) {
			lines = append(lines, strings.Join(strings.Fields(li.Text()), " "))
		})
		changes = append(changes, strings.Join(lines, "; "))
	})
	wantKinds := []string{"accepted revision e3", "duplicate e2", "stale e1b", "accepted revision e2", "accepted revision e1"}
	if strings.Join(kinds, "|") != strings.Join(wantKinds, "|") {
		t.Fatalf("timeline %q, want %q", kinds, wantKinds)
	}
	wantChanges := []string{
		`name: "Cy" → "Cyrus"; phone: "9" → (missing)`, "", "",
		`phone: (missing) → "9"; stage: "lead" → "customer"`,
		`name: (missing) → "Cy"; stage: (missing) → "lead"`,
	}
	if strings.Join(changes, "|") != strings.Join(wantChanges, "|") {
		t.Errorf("changes %q, want %q", changes, wantChanges)
	}
	if got := webtest.AllText(doc, "table.timeline tbody tr.event .reason"); len(got) != 2 || !strings.Contains(got[0], "redelivery") ||
		!strings.Contains(got[1], "older than the stored revision 2") {
		t.Errorf("reasons %q", got)
	}
}

func TestContactTimelineWithoutRecord(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	if got := e.Outcome("acme", "crm", e.Secret, "u1", webtest.SnapshotBody("c-8", nil, `{"a":1}`)); got != "unversioned" {
		t.Fatalf("unversioned: %s", got)
	}
	b := e.Operator("ops@example.com", false, "acme")
	status, doc := b.Get("/t/acme/contacts/crm/c-8")
	if status != http.StatusOK || webtest.Text(doc, "table.timeline .badge") != "unversioned" {
		t.Fatalf("timeline without record: %d, %q", status, webtest.Text(doc, "table.timeline"))
	}
	if !strings.Contains(webtest.Text(doc, ".record-state"), "No snapshot") {
		t.Errorf("header %q", webtest.Text(doc, ".record-state"))
	}
	for _, path := range []string{"/t/acme/contacts/crm/nobody", "/t/acme/contacts/nope/c-8"} {
		if status, _ := b.Get(path); status != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, status)
		}
	}
}

func TestContactSearch(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	hub := e.Provider("acme", "hub")
	e.Outcome("acme", "crm", e.Secret, "s1", webtest.SnapshotBody("c-1", 1, `{"a":1}`))
	e.Outcome("acme", "crm", e.Secret, "s2", webtest.SnapshotBody("c/2", 1, `{"a":1}`))
	e.Outcome("acme", "hub", hub, "s3", webtest.SnapshotBody("c/2", 1, `{"a":2}`))
	b := e.Operator("ops@example.com", false, "acme")

	for q, want := range map[string]string{
		"provider=&contact_id=c-1":    "/t/acme/contacts/crm/c-1",
		"provider=hub&contact_id=c/2": "/t/acme/contacts/hub/c%2F2",
	} {
		if status, loc := b.RedirectOf("/t/acme/contacts?" + q); status != http.StatusSeeOther || loc != want {
			t.Errorf("%s: %d to %q, want %q", q, status, loc, want)
		}
	}
	// An id with a slash reaches its timeline.
	if status, doc := b.Get("/t/acme/contacts/hub/c%2F2"); status != http.StatusOK || !strings.Contains(webtest.Text(doc, "h1"), "c/2") {
		t.Errorf("escaped id: %d %q", status, webtest.Text(doc, "h1"))
	}

	_, doc := b.Get("/t/acme/contacts?provider=&contact_id=c-9")
	if got := webtest.Text(doc, ".search-message"); got != "No contact c-9 in any provider" {
		t.Errorf("unknown contact: %q", got)
	}
	if doc.Find("form.contact-search input[name=contact_id]").AttrOr("value", "") != "c-9" {
		t.Error("the form lost the id searched for")
	}
	_, doc = b.Get("/t/acme/contacts?provider=&contact_id=c%2F2")
	if got := webtest.AllText(doc, ".search-matches a"); len(got) != 2 {
		t.Errorf("ambiguous id: %q, matches %q", webtest.Text(doc, ".search-message"), got)
	}
	_, doc = b.Get("/t/acme/contacts?provider=hub&contact_id=c-1")
	if got := webtest.Text(doc, ".search-message"); got != "No contact c-1 in provider hub" {
		t.Errorf("contact in another provider: %q", got)
	}
}

func TestConflictPagesEscapePayloads(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	evil := `{"name":"<script>alert(1)</script>","title":"\"'><img src=x onerror=alert(1)>"}`
	id := e.ConflictOf("c-x", 1, `{"name":"plain"}`, evil)
	e.Outcome("acme", "crm", e.Secret, "c-x-2", webtest.SnapshotBody("c-x", 2, evil))
	b := e.Operator("ops@example.com", false, "acme")
	for _, path := range []string{fmt.Sprintf("/t/acme/conflicts/%d", id), "/t/acme/contacts/crm/c-x"} {
		status, doc := b.Get(path)
		if status != http.StatusOK {
			t.Fatalf("%s: %d", path, status)
		}
		if n := doc.Find("img").Length(); n != 0 {
			t.Errorf("%s: %d img elements", path, n)
		}
		doc.Find("script").Each(func(_ int, s *goquery.Selection) {
			if _, ok := s.Attr("src"); !ok {
				t.Errorf("%s: inline script %q", path, s.Text())
			}
		})
		body := doc.Find("main").Text()
		for _, want := range []string{"<script>alert(1)</script>", `'><img src=x onerror=alert(1)>`} {
			if !strings.Contains(body, want) {
				t.Errorf("%s: text %q not shown", path, want)
			}
		}
	}
}

func TestConflictPagesOtherTenant(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	id := e.ConflictOf("c-1", 5, `{"a":1}`, `{"a":2}`)
	e.Provider("globex", "crm")
	b := e.Operator("x@example.com", false, "globex")
	for _, path := range []string{"/t/acme/conflicts", fmt.Sprintf("/t/acme/conflicts/%d", id), "/t/acme/contacts/crm/c-1",
		"/t/acme/contacts?contact_id=c-1", fmt.Sprintf("/t/globex/conflicts/%d", id), "/t/globex/contacts/crm/c-1",
		"/t/globex/conflicts/abc"} {
		if status, _ := b.Get(path); status != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, status)
		}
	}
	for _, path := range []string{fmt.Sprintf("/t/acme/conflicts/%d/resolve", id), fmt.Sprintf("/t/globex/conflicts/%d/resolve", id)} {
		if status, _, _ := b.Post(path, url.Values{"resolution": {"keep"}}); status != http.StatusNotFound {
			t.Errorf("POST %s: %d, want 404", path, status)
		}
	}
	// Still open for acme.
	owner := e.Operator("ops@example.com", false, "acme")
	if _, doc := owner.Get(fmt.Sprintf("/t/acme/conflicts/%d", id)); webtest.Text(doc, "h1 .badge") != "open" {
		t.Errorf("conflict after foreign attempts: %q", webtest.Text(doc, "h1"))
	}
}

// TestConflictQueuePages: a queue longer than a page says how many are
// open and pages forward and back, polling the page it shows; a conflict
// links to the open ones around it.
func TestConflictQueuePages(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	var ids []int64
	for i := range 102 {
		ids = append(ids, e.ConflictOf(fmt.Sprintf("c-%d", i), 5, `{"a":1}`, `{"a":2}`))
	}
	b := e.Operator("ops@example.com", false, "acme")

	_, doc := b.Get("/t/acme/conflicts")
	if n := doc.Find("table.open tbody tr").Length(); n != 100 {
		t.Fatalf("the first page shows %d open conflicts, want 100", n)
	}
	if got := webtest.Text(doc, "#conflict-queue .pager .count"); got != "102 open" {
		t.Errorf("count %q", got)
	}
	later, ok := doc.Find(`#conflict-queue .pager a[rel=next]`).Attr("href")
	if !ok || doc.Find(`#conflict-queue .pager a[rel=prev]`).Length() != 0 {
		t.Fatalf("first page's links: later %q, earlier %d", later, doc.Find(`#conflict-queue .pager a[rel=prev]`).Length())
	}
	_, doc = b.Get(later)
	if got := webtest.CellRows(doc, "table.open tbody tr"); len(got) != 2 || !strings.Contains(got[0], "c-100") || !strings.Contains(got[1], "c-101") {
		t.Errorf("the second page shows %q", got)
	}
	if poll := doc.Find("#conflict-queue").AttrOr("hx-get", ""); poll != later {
		t.Errorf("the second page polls %q, want %q", poll, later)
	}
	earlier, _ := doc.Find(`#conflict-queue .pager a[rel=prev]`).Attr("href")
	if _, doc = b.Get(earlier); doc.Find("table.open tbody tr").Length() != 100 || !strings.Contains(webtest.CellRows(doc, "table.open tbody tr")[0], "c-0 ") {
		t.Errorf("back from the second page: %d rows, first %q", doc.Find("table.open tbody tr").Length(), webtest.CellRows(doc, "table.open tbody tr")[0])
	}
	if status, _ := b.Get("/t/acme/conflicts?open_after=garbage"); status != http.StatusBadRequest {
		t.Errorf("a bad cursor answered %d", status)
	}

	_, doc = b.Get(fmt.Sprintf("/t/acme/conflicts/%d", ids[0]))
	if doc.Find(".queue-steps a[rel=prev]").Length() != 0 || doc.Find(".queue-steps a[rel=next]").AttrOr("href", "") != fmt.Sprintf("/t/acme/conflicts/%d", ids[1]) {
		t.Errorf("the first conflict's steps: %q", webtest.Text(doc, ".queue-steps"))
	}
	_, doc = b.Get(fmt.Sprintf("/t/acme/conflicts/%d", ids[101]))
	if doc.Find(".queue-steps a[rel=next]").Length() != 0 || doc.Find(".queue-steps a[rel=prev]").AttrOr("href", "") != fmt.Sprintf("/t/acme/conflicts/%d", ids[100]) {
		t.Errorf("the last conflict's steps: %q", webtest.Text(doc, ".queue-steps"))
	}
}

// TestTimelineShowsRejectedAndReplays: "What arrived" is all of it: an
// event refused because its scope was disabled is on the record's
// timeline, and the revision its replay applied is marked as a replay.
func TestTimelineShowsRejectedAndReplays(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.SetScope(false)
	status, answer := e.Deliver1("m1", webtest.SnapshotBody("c-1", 4, `{"job_title":"CTO"}`))
	if got := webtest.Outcome(t, status, answer); got != "rejected" {
		t.Fatalf("delivery to a disabled scope: %s", got)
	}
	e.SetScope(true)
	if got := webtest.ReplayOutcome(e, e.Token("acme"), answer["delivery_id"].(string)); got != "applied" {
		t.Fatalf("replay after enabling the scope: %s, want applied", got)
	}
	_, doc := e.Operator("ops@example.com", false, "acme").Get("/t/acme/contacts/crm/c-1")
	var rows []string
	doc.Find("table.timeline tbody tr").Each(func(_ int, s *goquery.Selection) {
		rows = append(rows, strings.Join(strings.Fields(s.Find("td").Eq(1).Text()+" "+s.Find(".event-id").Text()), " "))
	})
	if want := []string{"accepted revision replayed m1", "rejected m1"}; strings.Join(rows, "|") != strings.Join(want, "|") {
		t.Errorf("timeline %q, want %q", rows, want)
	}
}

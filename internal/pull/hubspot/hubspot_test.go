package hubspot

// The fake HubSpot API these tests run against (hubspottest) is built from
// HubSpot's documentation:
//   - search: https://developers.hubspot.com/docs/api/crm/search
//     (filterGroups, sorts, limit up to 200, paging.next.after, the
//     10,000-result cap, archived records left out, the rate limit)
//   - batch read with propertiesWithHistory:
//     https://developers.hubspot.com/docs/api-reference/latest/crm/objects/objects/batch/get-objects
//   - the list with archived=true and archivedAt:
//     https://developers.hubspot.com/docs/api-reference/latest/crm/objects/companies/get-companies
//   - limits, 429 and the X-HubSpot-RateLimit-Daily(-Remaining) headers:
//     https://developers.hubspot.com/docs/api/usage-details

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/internal/pull/hubspot/hubspottest"
	"github.com/tidemark/tidemark/internal/testlog"
)

var t0 = time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)

type fixture struct {
	api  *hubspottest.Server
	src  *Source
	logs *testlog.Buffer
}

// setup starts a fake account and a source for it logging at debug level.
// fast spaces searches by 5 ms instead of the real 250 ms.
func setup(t *testing.T, fast bool) fixture {
	t.Helper()
	api := hubspottest.New(t)
	logs := &testlog.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	src, err := New(pull.Credentials{Token: api.Token(), BaseURL: api.URL(), AllowPrivate: true}, log)
	if err != nil {
		t.Fatal(err)
	}
	if fast {
		src.searchGap = 5 * time.Millisecond
	}
	return fixture{api: api, src: src, logs: logs}
}

// pullAll runs a Pull and returns every event emitted and the page sizes.
func pullAll(t *testing.T, src *Source, objectType string, from, to time.Time) ([]domain.Event, error) {
	t.Helper()
	var all []domain.Event
	err := src.Pull(context.Background(), objectType, from, to, func(page []domain.Event) error {
		if len(page) == 0 {
			t.Error("emit got an empty page")
		}
		all = append(all, page...)
		return nil
	})
	return all, err
}

// byAction counts events per action and per object id.
func countCreations(events []domain.Event) map[string]int {
	n := map[string]int{}
	for _, e := range events {
		if e.Scope.Action == "creation" {
			n[e.ObjectID]++
		}
	}
	return n
}

func TestPullPagesWithAfter(t *testing.T) {
	t.Parallel()
	f := setup(t, false)
	want := map[string]bool{}
	for i := range 250 {
		id := f.api.Create("contact", t0.Add(time.Duration(i)*time.Second), map[string]string{
			"email": fmt.Sprintf("p%d@example.com", i), "firstname": "Ada", "lastname": "Lovelace"})
		want[id] = true
	}
	f.api.Create("contact", t0.Add(-time.Hour), map[string]string{"email": "before@example.com"})
	f.api.Create("contact", t0.Add(2*time.Hour), map[string]string{"email": "after@example.com"})

	events, err := pullAll(t, f.src, "contact", t0, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	created := countCreations(events)
	if len(created) != len(want) {
		t.Fatalf("%d records emitted, want %d", len(created), len(want))
	}
	for id, n := range created {
		if !want[id] || n != 1 {
			t.Errorf("record %s emitted %d times (in the window: %v)", id, n, want[id])
		}
	}
	if got := len(events); got != 250*4 {
		t.Errorf("%d events, want 1000 (a creation and email, firstname, lastname per record)", got)
	}
	// Oldest first across pages.
	var last int64
	for _, e := range events {
		if e.Scope.Action == "creation" {
			if *e.Revision < last {
				t.Fatalf("record %s (created %d) emitted after one created %d", e.ObjectID, *e.Revision, last)
			}
			last = *e.Revision
		}
	}
	if n := f.api.Requests(hubspottest.Search); n != 3 {
		t.Errorf("%d searches, want 3 pages of 100, 100 and 50", n)
	}
	if n := f.api.Requests(hubspottest.BatchRead); n != 5 {
		t.Errorf("%d batch reads, want 5 (50 ids each)", n)
	}
	if gap := f.api.MinSearchGap(); gap < 200*time.Millisecond {
		t.Errorf("searches %s apart; the search API takes a few per second", gap)
	}
}

func TestPullSplitsWindowOverCap(t *testing.T) {
	t.Parallel()
	for _, knownCap := range []bool{false, true} {
		t.Run(fmt.Sprintf("cap known %v", knownCap), func(t *testing.T) {
			t.Parallel()
			f := setup(t, true)
			f.api.SetSearchCap(50)
			if knownCap {
				f.src.cap = 50
			}
			want := map[string]bool{}
			for i := range 130 {
				// Some records share a millisecond, as bulk imports do.
				id := f.api.Create("deal", t0.Add(time.Duration(i/3)*time.Minute), map[string]string{"dealname": fmt.Sprint("deal ", i), "amount": "100"})
				want[id] = true
			}
			events, err := pullAll(t, f.src, "deal", t0, t0.Add(24*time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			created := countCreations(events)
			changes := map[string]int{}
			for _, e := range events {
				if e.Scope.Action == "propertyChange" {
					changes[e.EventID]++
				}
			}
			if len(created) != len(want) {
				t.Fatalf("%d records emitted, want %d", len(created), len(want))
			}
			for id, n := range created {
				if n != 1 {
					t.Errorf("record %s emitted %d times", id, n)
				}
			}
			for id, n := range changes {
				if n != 1 {
					t.Errorf("event %s emitted %d times", id, n)
				}
			}
			if len(changes) != 2*len(want) {
				t.Errorf("%d property changes, want %d", len(changes), 2*len(want))
			}
			// A known cap splits windows before paging; an unknown one is
			// learnt when the search refuses to page, and the walk resumes.
			logs := f.logs.String()
			if !strings.Contains(logs, "splitting a window over the search cap") {
				t.Errorf("no window was split:\n%s", logs)
			}
			if resumed := strings.Contains(logs, "the search stopped paging"); resumed == knownCap {
				t.Errorf("resumed after a refused page: %v, with the cap known: %v", resumed, knownCap)
			}
			if f.src.searchCap() != 50 {
				t.Errorf("the source believes the cap is %d after a search refused to page past 50", f.src.searchCap())
			}
		})
	}
}

func TestPullWaitsRetryAfter(t *testing.T) {
	t.Parallel()
	f := setup(t, true)
	f.api.Create("company", t0, map[string]string{"name": "Acme", "domain": "acme.example"})
	f.api.TooManyRequestsOnce(time.Second)
	start := time.Now()
	events, err := pullAll(t, f.src, "company", t0, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < time.Second {
		t.Errorf("took %s; Retry-After asked for 1 s", took)
	}
	if n := f.api.Requests(hubspottest.Search); n != 2 {
		t.Errorf("%d searches, want the refused one and its retry", n)
	}
	if len(countCreations(events)) != 1 || len(events) != 3 {
		t.Errorf("events %v, want the company's creation, name and domain", events)
	}
	if !strings.Contains(f.logs.String(), "wait=1s") {
		t.Errorf("the wait is not logged:\n%s", f.logs)
	}
}

// Each property is revised at its own last change, as webhook
// propertyChange events are, so a property changed before the window
// keeps its earlier time and does not overwrite a newer value.
func TestPullPropertyHistory(t *testing.T) {
	t.Parallel()
	f := setup(t, true)
	t1, t2 := t0.Add(10*time.Minute), t0.Add(20*time.Minute)
	id := f.api.Create("contact", t0, map[string]string{"email": "ada@example.com", "firstname": "Ada"})
	f.api.Set("contact", id, t1, map[string]string{"firstname": "Augusta"})
	f.api.Set("contact", id, t2, map[string]string{"lastname": "King"})

	events, err := pullAll(t, f.src, "contact", t1.Add(time.Minute), t2.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]domain.Event{}
	for _, e := range events {
		got[e.Property] = e
	}
	for property, want := range map[string]struct {
		at    time.Time
		value string
	}{"email": {t0, "ada@example.com"}, "firstname": {t1, "Augusta"}, "lastname": {t2, "King"}} {
		e, ok := got[property]
		if !ok {
			t.Errorf("no event for %s in %v", property, events)
			continue
		}
		ms := want.at.UnixMilli()
		if *e.Revision != ms || !e.RevisionTime.Equal(want.at) {
			t.Errorf("%s revised at %d (%s), want %d, its own last change", property, *e.Revision, e.RevisionTime, ms)
		}
		if wantID := fmt.Sprintf("backfill:contact:%s:%s:%d", id, property, ms); e.EventID != wantID {
			t.Errorf("event id %q, want %q", e.EventID, wantID)
		}
		// The webhook parser's event for the same change.
		hook := fmt.Sprintf(`[{"eventId":1,"subscriptionId":2,"portalId":3,"occurredAt":%d,"subscriptionType":"contact.propertyChange","objectId":%s,"propertyName":%q,"propertyValue":%q}]`,
			ms, id, property, want.value)
		parsed, err := provider.HubSpot.Parse(nil, []byte(hook), domain.ProviderEndpoint{})
		if err != nil {
			t.Fatal(err)
		}
		p := parsed[0]
		if e.Scope != p.Scope || e.ObjectID != p.ObjectID || e.Property != p.Property || string(e.Snapshot) != string(p.Snapshot) ||
			*e.Revision != *p.Revision || e.Timestamp != p.Timestamp || !e.RevisionTime.Equal(p.RevisionTime) {
			t.Errorf("pulled %+v\nwebhook %+v", e, p)
		}
	}
	c := got[domain.PropertyCreated]
	if c.Scope.Action != "creation" || *c.Revision != t0.UnixMilli() || string(c.Snapshot) != "{}" {
		t.Errorf("creation event %+v", c)
	}
	if _, ok := got["lastmodifieddate"]; ok {
		t.Error("lastmodifieddate pulled as a change of its own")
	}
}

func TestPullArchivedAsDeletions(t *testing.T) {
	t.Parallel()
	f := setup(t, true)
	kept := f.api.Create("contact", t0, map[string]string{"email": "kept@example.com"})
	gone := f.api.Create("contact", t0, map[string]string{"email": "gone@example.com"})
	old := f.api.Create("contact", t0.Add(-72*time.Hour), map[string]string{"email": "old@example.com"})
	archivedAt := t0.Add(30 * time.Minute)
	f.api.Archive("contact", gone, archivedAt)
	f.api.Archive("contact", old, t0.Add(-48*time.Hour))

	events, err := pullAll(t, f.src, "contact", t0, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var deletions []domain.Event
	for _, e := range events {
		switch {
		case e.Scope.Action == "deletion":
			deletions = append(deletions, e)
		case e.ObjectID != kept:
			t.Errorf("an archived record's %s was pulled: %+v", e.Scope.Action, e)
		}
	}
	if len(deletions) != 1 {
		t.Fatalf("deletions %+v, want the one archived in the window", deletions)
	}
	d, ms := deletions[0], archivedAt.UnixMilli()
	if d.ObjectID != gone || d.Property != domain.PropertyDeleted || *d.Revision != ms || string(d.Snapshot) != "{}" ||
		d.EventID != fmt.Sprintf("backfill:contact:%s:$deleted:%d", gone, ms) || d.Scope != (domain.ScopeName{ObjectType: "contact", Action: "deletion"}) {
		t.Errorf("deletion %+v", d)
	}
}

func TestPullRefusedToken(t *testing.T) {
	t.Parallel()
	api := hubspottest.New(t)
	logs := &testlog.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	const wrong = "pat-na1-not-the-right-token"
	src, err := New(pull.Credentials{Token: wrong, BaseURL: api.URL(), AllowPrivate: true}, log)
	if err != nil {
		t.Fatal(err)
	}
	_, err = pullAll(t, src, "contact", t0, t0.Add(time.Hour))
	if err == nil || domain.ErrorCode(err) != domain.EINVALID || !strings.Contains(domain.ErrorMessage(err), "access token") || !strings.Contains(err.Error(), "invalid") {
		t.Fatalf("err = %v; want an EINVALID error naming the access token invalid", err)
	}
	if strings.Contains(err.Error(), wrong) || strings.Contains(logs.String(), wrong) {
		t.Errorf("the token appears in the error or the logs:\n%v\n%s", err, logs)
	}
	if n := api.Requests(hubspottest.Search); n != 0 {
		t.Errorf("%d searches counted past authentication", n)
	}
}

// The token appears nowhere a pull leaves a trace: logs at debug level
// (with a retry), errors, and events.
func TestPullNeverShowsToken(t *testing.T) {
	t.Parallel()
	f := setup(t, true)
	id := f.api.Create("deal", t0, map[string]string{"dealname": "Big one", "amount": "5000"})
	f.api.Archive("deal", f.api.Create("deal", t0, nil), t0.Add(time.Minute))
	f.api.TooManyRequestsOnce(0)
	events, err := pullAll(t, f.src, "deal", t0, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(countCreations(events)) != 1 || countCreations(events)[id] != 1 {
		t.Fatalf("events %v", events)
	}
	token := f.api.Token()
	for _, e := range events {
		var payload map[string]any
		if err := json.Unmarshal(e.Payload, &payload); err != nil || payload["objectId"] != e.ObjectID {
			t.Errorf("payload %s: %v", e.Payload, err)
		}
		if strings.Contains(fmt.Sprintf("%+v %s %s", e, e.Payload, e.Snapshot), token) {
			t.Errorf("event %s holds the token", e.EventID)
		}
	}
	logs := f.logs.String()
	if !strings.Contains(logs, "status=429") || !strings.Contains(logs, "/batch/read") {
		t.Fatalf("the debug log does not show the requests:\n%s", logs)
	}
	if strings.Contains(logs, token) || strings.Contains(logs, "Bearer") {
		t.Errorf("the logs hold the token:\n%s", logs)
	}
}

func TestPullStopsAtBudgetShare(t *testing.T) {
	t.Parallel()
	f := setup(t, true)
	for i := range 300 {
		f.api.Create("contact", t0.Add(time.Duration(i)*time.Second), map[string]string{"email": fmt.Sprint(i, "@example.com")})
	}
	f.api.SetDailyLimit(1000, 495)
	_, err := pullAll(t, f.src, "contact", t0, t0.Add(time.Hour))
	want := "backfill stopped: it would use more than 50% of the account's daily API budget"
	if err == nil || !strings.Contains(err.Error(), want) || domain.ErrorCode(err) != domain.EUNAVAILABLE {
		t.Fatalf("err = %v; want %q", err, want)
	}
	calls := f.api.Requests(hubspottest.Search) + f.api.Requests(hubspottest.BatchRead) + f.api.Requests(hubspottest.List)
	if used := 495 + calls; used != 500 {
		t.Errorf("the account used %d calls today; the pull should stop at 500 of 1000", used)
	}

	// A larger share lets the same pull finish.
	src, err := New(pull.Credentials{Token: f.api.Token(), BaseURL: f.api.URL(), AllowPrivate: true, BudgetShare: 0.9}, nil)
	if err != nil {
		t.Fatal(err)
	}
	src.searchGap = f.src.searchGap
	if events, err := pullAll(t, src, "contact", t0, t0.Add(time.Hour)); err != nil || len(countCreations(events)) != 300 {
		t.Errorf("with a 90%% share: %d records, err %v", len(countCreations(events)), err)
	}
}

func TestPullStopsWhenEmitFails(t *testing.T) {
	t.Parallel()
	f := setup(t, true)
	for i := range 150 {
		f.api.Create("company", t0.Add(time.Duration(i)*time.Second), map[string]string{"name": fmt.Sprint("c", i)})
	}
	stop := errors.New("the ingest is full")
	pages := 0
	err := f.src.Pull(context.Background(), "company", t0, t0.Add(time.Hour), func([]domain.Event) error {
		pages++
		return stop
	})
	if !errors.Is(err, stop) || pages != 1 {
		t.Fatalf("err = %v after %d pages; want emit's error after the first", err, pages)
	}
	if n := f.api.Requests(hubspottest.Search); n != 1 {
		t.Errorf("%d searches after emit failed", n)
	}
}

func TestNewAndPullRefuse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		c    pull.Credentials
		want string
	}{
		{"no token", pull.Credentials{}, "access token is required"},
		{"token with a space", pull.Credentials{Token: "pat na1"}, "without spaces"},
		{"not http", pull.Credentials{Token: "pat-na1-x", BaseURL: "ftp://api.example"}, "scheme must be http or https"},
		{"password in the URL", pull.Credentials{Token: "pat-na1-x", BaseURL: "https://u:p@api.example"}, "user name or password"},
		{"share above 1", pull.Credentials{Token: "pat-na1-x", BudgetShare: 1.5}, "budget share"},
	} {
		if _, err := New(tc.c, nil); err == nil || domain.ErrorCode(err) != domain.EINVALID || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want EINVALID with %q", tc.name, err, tc.want)
		}
	}

	f := setup(t, true)
	if _, err := pullAll(t, f.src, "ticket", t0, t0.Add(time.Hour)); err == nil || !strings.Contains(err.Error(), `"ticket"`) {
		t.Errorf("object type ticket: err = %v", err)
	}
	// Without AllowPrivate, the loopback fake is refused before any request.
	src, err := New(pull.Credentials{Token: f.api.Token(), BaseURL: f.api.URL()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pullAll(t, src, "contact", t0, t0.Add(time.Hour)); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("a loopback base URL without AllowPrivate: err = %v", err)
	}
	if n := f.api.Requests(hubspottest.Search) + f.api.Requests(hubspottest.List); n != 0 {
		t.Errorf("%d requests reached the fake", n)
	}
}

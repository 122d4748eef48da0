package api_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestAPIChanges: the feed lists the accepted changes of the fixtures only
// (c-1 at 10 and 12, d-1 at 1), in commit order, in the contract's shape;
// pages follow next_cursor; an empty page returns the cursor it was given.
func TestAPIChanges(t *testing.T) {
	t.Parallel()
	e, d := webtest.APISetup(t)
	status, body := e.Get(d.Base+"/changes", d.Token)
	changes := webtest.List(t, status, body, "changes")
	if len(changes) != 3 {
		t.Fatalf("changes %v, want c-1 at 10 and 12 and d-1 at 1", changes)
	}
	first := changes[0]
	webtest.AssertKeys(t, first, "id", "type", "provider", "object_type", "object_id", "revision", "previous_revision",
		"changed", "snapshot", "event_id", "delivery_id", "committed_at")
	if first["type"] != "record.applied" || first["provider"] != "crm" || first["object_id"] != "c-1" ||
		first["revision"] != 10.0 || first["previous_revision"] != nil || first["event_id"] != "evt-10" {
		t.Fatalf("first change %v", first)
	}
	if _, err := time.Parse(time.RFC3339, first["committed_at"].(string)); err != nil {
		t.Fatalf("committed_at: %v", err)
	}
	second := changes[1]
	if second["revision"] != 12.0 || second["previous_revision"] != 10.0 || len(second["changed"].([]any)) != 2 {
		t.Fatalf("second change %v", second)
	}

	status, body = e.Get(d.Base+"/changes?limit=2", d.Token)
	if page := webtest.List(t, status, body, "changes"); len(page) != 2 {
		t.Fatalf("limit 2: %v", body)
	}
	next := body["next_cursor"].(string)
	status, body = e.Get(d.Base+"/changes?limit=2&after="+url.QueryEscape(next), d.Token)
	if page := webtest.List(t, status, body, "changes"); len(page) != 1 || page[0]["object_id"] != "d-1" {
		t.Fatalf("after %s: %v", next, body)
	}
	end := body["next_cursor"].(string)
	status, body = e.Get(d.Base+"/changes?after="+url.QueryEscape(end), d.Token)
	if page := webtest.List(t, status, body, "changes"); len(page) != 0 || body["next_cursor"] != end {
		t.Fatalf("an empty page returns the cursor it was given: %v", body)
	}
	status, body = e.Get(d.Base+"/changes?object_type=deal", d.Token)
	if page := webtest.List(t, status, body, "changes"); len(page) != 1 || page[0]["object_id"] != "d-1" {
		t.Fatalf("object_type=deal: %v", body)
	}
}

// TestAPIChangesRefusesBadParameters: a bad cursor, limit or wait is a 400
// naming it.
func TestAPIChangesRefusesBadParameters(t *testing.T) {
	t.Parallel()
	e, d := webtest.APISetup(t)
	for query, contains := range map[string]string{
		"after=12":        "after",
		"after=c1_x":      "after",
		"after=c1_-1":     "after",
		"limit=0":         "limit",
		"limit=1001":      "limit",
		"limit=ten":       "limit",
		"wait=61":         "wait",
		"wait=-1":         "wait",
		"wait=soon":       "wait",
		"wait=NaN":        "wait",
		"limit=5&wait=99": "wait",
	} {
		status, body := e.Get(d.Base+"/changes?"+query, d.Token)
		webtest.AssertError(t, status, body, http.StatusBadRequest, contains)
	}
}

// TestAPIChangesTokens: a read-only token reads the feed; another tenant's
// token does not.
func TestAPIChangesTokens(t *testing.T) {
	t.Parallel()
	e, d := webtest.APISetup(t)
	readOnly := e.TokenWith("acme", domain.NewAPIToken{Name: "bi", Access: domain.TokenRead})
	status, body := e.Get(d.Base+"/changes", readOnly)
	if changes := webtest.List(t, status, body, "changes"); len(changes) != 3 {
		t.Fatalf("read-only token: %d %v", status, body)
	}
	if status, _ := e.Get(d.Base+"/changes", e.Token("globex")); status != http.StatusNotFound {
		t.Fatalf("globex's token on acme's feed: %d, want 404", status)
	}
}

// TestAPIChangesWait: with wait, a request at the tail is answered when a
// change commits (well within a second of it), and with an empty page when
// the wait ends.
func TestAPIChangesWait(t *testing.T) {
	t.Parallel()
	e, d := webtest.APISetup(t)
	status, body := e.Get(d.Base+"/changes", d.Token)
	webtest.List(t, status, body, "changes")
	tail := url.QueryEscape(body["next_cursor"].(string))

	start := time.Now()
	status, body = e.Get(d.Base+"/changes?wait=1&after="+tail, d.Token)
	if page := webtest.List(t, status, body, "changes"); len(page) != 0 || time.Since(start) < time.Second {
		t.Fatalf("wait=1 at the tail: %v after %s", body, time.Since(start))
	}

	type answer struct {
		body map[string]any
		at   time.Time
	}
	got := make(chan answer, 1)
	go func() {
		_, body := e.Get(d.Base+"/changes?wait=30&after="+tail, d.Token)
		got <- answer{body, time.Now()}
	}()
	time.Sleep(500 * time.Millisecond) // the request is waiting
	status, body = e.Deliver(d.Tenant, d.Provider, d.Secret, "evt-13", webtest.SnapshotBody("c-1", 13, `{"company":"A13"}`))
	if got := webtest.Outcome(t, status, body); got != "applied" {
		t.Fatalf("evt-13: %s", got)
	}
	committed := time.Now()
	select {
	case a := <-got:
		changes := a.body["changes"].([]any)
		if len(changes) != 1 || changes[0].(map[string]any)["event_id"] != "evt-13" {
			t.Fatalf("the waiting request answered %v", a.body)
		}
		if lag := a.at.Sub(committed); lag > time.Second {
			t.Fatalf("answered %s after the commit, want within a second", lag)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting request was not answered after the commit")
	}
}

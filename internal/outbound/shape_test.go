package outbound_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/changejson"
	"github.com/tidemark/tidemark/internal/e2e"
	"github.com/tidemark/tidemark/internal/shape"
	"github.com/tidemark/tidemark/internal/whsig"
)

// ingestSnapshot applies revision rev of contact with snapshot: one change.
func (e env) ingestSnapshot(t testing.TB, contact string, rev int64, snapshot string) {
	t.Helper()
	ev := domain.Event{EventID: fmt.Sprintf("%s-%d", contact, rev), ObjectID: contact, Revision: &rev,
		Scope: domain.ScopeName{ObjectType: "contact", Action: "snapshot"}, Snapshot: json.RawMessage(snapshot),
		Timestamp: "2026-11-29T10:00:00Z", Payload: []byte(snapshot)}
	d := domain.Delivery{ID: uuid.Must(uuid.NewV7()).String(), TenantID: e.p.TenantID, ProviderID: e.p.ID,
		ReceivedAt: time.Now(), Status: 200, Signature: domain.SignatureValid}
	r, err := e.store.Ingest(context.Background(), d, e.p, []domain.Event{ev})
	if err != nil || r[0].Outcome != domain.Applied {
		t.Fatalf("ingest %s: %v %+v", ev.EventID, err, r)
	}
}

// dataOf reads a message's body as a consumer would: its type, timestamp
// and data.
func dataOf(t testing.TB, body []byte) (typ, timestamp string, data map[string]any) {
	t.Helper()
	var m struct {
		Type      string         `json:"type"`
		Timestamp string         `json:"timestamp"`
		Data      map[string]any `json:"data"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("message %s: %v", body, err)
	}
	return m.Type, m.Timestamp, m.Data
}

func (e env) reload(t testing.TB, id int64) stream.Destination {
	t.Helper()
	d, err := e.store.Destination(context.Background(), e.p.TenantID, id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestFilterOnChanged: a filter on changed sends only the changes that
// changed lifecyclestage, a record's in revision order; the others are
// passed over, counted as filtered, with no attempt, and the cursor passes
// them all.
func TestFilterOnChanged(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t)
	d := e.httpDestination(t, rc, 4)
	filter := `"lifecyclestage" in change.changed`
	if _, err := e.store.UpdateDestination(asCLI, e.p.TenantID, d.ID, stream.DestinationUpdate{Filter: &filter}); err != nil {
		t.Fatal(err)
	}
	e.ingestSnapshot(t, "c1", 1, `{"name":"a","lifecyclestage":"lead"}`)     // sent: a first change changes every field
	e.ingestSnapshot(t, "c1", 2, `{"name":"b","lifecyclestage":"lead"}`)     // filtered
	e.ingestSnapshot(t, "c2", 1, `{"name":"x"}`)                             // filtered
	e.ingestSnapshot(t, "c1", 3, `{"name":"b","lifecyclestage":"customer"}`) // sent
	e.ingestSnapshot(t, "c2", 2, `{"name":"x","lifecyclestage":"customer"}`) // sent
	e.ingestSnapshot(t, "c1", 4, `{"name":"c","lifecyclestage":"customer"}`) // filtered
	e.run(t, fast())
	waitFor(t, 15*time.Second, "3 filtered", func() bool {
		got := e.reload(t, d.ID)
		return got.Filtered == 3 && got.Pending == 0
	})
	_, delivered, _ := rc.got()
	var got []string
	for _, a := range delivered {
		got = append(got, fmt.Sprintf("%s r%d", a.record, a.revision))
	}
	want := map[string][]string{"c1": {"c1 r1", "c1 r3"}, "c2": {"c2 r2"}}
	for record, revs := range want {
		var of []string
		for _, g := range got {
			if strings.HasPrefix(g, record+" ") {
				of = append(of, g)
			}
		}
		if !slices.Equal(of, revs) {
			t.Errorf("%s: delivered %v, want %v (all: %v)", record, of, revs, got)
		}
	}
	if len(got) != 3 {
		t.Errorf("delivered %v, want 3 changes", got)
	}
	after := e.reload(t, d.ID)
	if after.Cursor != 6 {
		t.Errorf("cursor %d, want 6: past every change, filtered ones included", after.Cursor)
	}
	if as := e.attempts(t, d.ID); len(as) != 3 {
		t.Errorf("%d attempts, want 3: a filtered change is not attempted", len(as))
	}
}

// TestTransformMessage: a transform's map is the message's data, with the
// change's type and timestamp, the change's id as webhook-id, signed as
// every message; the Standard Webhooks reference library verifies it.
func TestTransformMessage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newAlertReceiver(t)
	e.alertDestination(t, e.p.TenantID, rc, stream.NewDestination{
		Transform: `{"email": change.snapshot.email, "stage": change.snapshot.lifecyclestage, "was": change.previous_revision}`})
	e.ingestSnapshot(t, "c1", 1, `{"email":"ana@example.com","lifecyclestage":"lead","phone":"555"}`)
	e.ingestSnapshot(t, "c1", 2, `{"email":"ana@example.com","lifecyclestage":"customer","phone":"555"}`)
	e.run(t, fast())
	waitFor(t, 15*time.Second, "2 messages", func() bool { return len(rc.delivered()) == 2 })
	changes, err := e.store.Changes(context.Background(), e.p.TenantID, stream.ChangeQuery{Limit: 10})
	if err != nil || len(changes) != 2 {
		t.Fatalf("changes: %v %d", err, len(changes))
	}
	want := []string{`{"email":"ana@example.com","stage":"lead","was":null}`, `{"email":"ana@example.com","stage":"customer","was":1}`}
	rc.mu.Lock()
	secret := rc.secret
	rc.mu.Unlock()
	for i, m := range rc.delivered() {
		c := changes[i]
		if id := m.header.Get("webhook-id"); id != c.ID() {
			t.Errorf("webhook-id %q, want the change's %q", id, c.ID())
		}
		if err := whsig.Verify(secret, m.header, m.body, time.Now(), 5*time.Minute); err != nil {
			t.Errorf("signature: %v", err)
		}
		wantBody := fmt.Sprintf(`{"type":"record.applied","timestamp":%q,"data":%s}`, changejson.Time(c.CommittedAt), want[i])
		if string(m.body) != wantBody {
			t.Errorf("message %d:\n got %s\nwant %s", i, m.body, wantBody)
		}
	}
	t.Run("standardwebhooks", func(t *testing.T) {
		e2e.Require(t, "node and standardwebhooks")
		for _, m := range rc.delivered() {
			if err := verifyWithNode(t, secret, m.header, m.body); err != nil {
				t.Errorf("the library refused a transformed message: %v", err)
			}
		}
	})
}

// TestExpressionFailureKeepsTheChange: a filter that fails on a change
// (a missing key) makes the destination failing, naming the filter and
// the change, without sending it or the record's next change; after the
// filter is fixed and the destination resumed, both arrive, once each.
func TestExpressionFailureKeepsTheChange(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t)
	d := e.httpDestination(t, rc, 4)
	filter := `change.snapshot.amount > 10`
	if _, err := e.store.UpdateDestination(asCLI, e.p.TenantID, d.ID, stream.DestinationUpdate{Filter: &filter}); err != nil {
		t.Fatal(err)
	}
	e.ingestSnapshot(t, "c1", 1, `{"amount":5}`)         // filtered
	e.ingestSnapshot(t, "c1", 2, `{"name":"no amount"}`) // the filter fails
	e.ingestSnapshot(t, "c1", 3, `{"amount":50}`)        // waits behind it
	e.run(t, fast())
	waitFor(t, 15*time.Second, "failing", func() bool { return e.reload(t, d.ID).Status == stream.DestinationFailing })
	failing := e.reload(t, d.ID)
	failed := stream.Change{TenantID: e.p.TenantID, Position: 2}
	if !strings.Contains(failing.StatusReason, "filter failed on "+failed.ID()) || !strings.Contains(failing.StatusReason, "no such key: amount") {
		t.Errorf("status_reason %q: want the filter, the change %s and why", failing.StatusReason, failed.ID())
	}
	if failing.Pending != 2 || failing.Filtered != 1 || failing.Cursor != 3 {
		t.Errorf("pending %d, filtered %d, cursor %d; want 2 kept, 1 filtered, cursor 3", failing.Pending, failing.Filtered, failing.Cursor)
	}
	as := e.attempts(t, d.ID)
	if len(as) != 1 || as[0].ChangeID != failed.ID() || as[0].Status != 0 || !strings.Contains(as[0].Error, "filter failed on "+failed.ID()) {
		t.Errorf("attempts %+v: want one, of %s, with the filter's error", as, failed.ID())
	}
	time.Sleep(300 * time.Millisecond) // a sender that went on would have sent by now
	if _, delivered, _ := rc.got(); len(delivered) != 0 {
		t.Fatalf("delivered %v while failing", delivered)
	}

	fixed := `!has(change.snapshot.amount) || change.snapshot.amount > 10`
	if _, err := e.store.UpdateDestination(asCLI, e.p.TenantID, d.ID, stream.DestinationUpdate{Filter: &fixed}); err != nil {
		t.Fatal(err)
	}
	if err := e.store.ResumeDestination(asCLI, e.p.TenantID, d.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "both sent", func() bool { return e.reload(t, d.ID).Pending == 0 })
	time.Sleep(300 * time.Millisecond)
	_, delivered, _ := rc.got()
	var revs []int64
	for _, a := range delivered {
		revs = append(revs, a.revision)
	}
	if !slices.Equal(revs, []int64{2, 3}) {
		t.Errorf("delivered revisions %v, want [2 3]: the kept change once, then the next", revs)
	}
}

// TestPreviewAgreesWithSending: what shape.Try (the API's test-expression
// and the console's preview) says of the newest changes is what a
// destination with the same expressions then sends: the same changes,
// with the same data.
func TestPreviewAgreesWithSending(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for i, s := range []string{`{"amount":5000,"email":"a@x"}`, `{"amount":20000,"email":"b@x"}`, `{"amount":12000.5,"email":"c@x"}`, `{"email":"d@x"}`} {
		e.ingestSnapshot(t, fmt.Sprintf("c%d", i), 1, s)
	}
	filter, transform := `has(change.snapshot.amount) && change.snapshot.amount > 10000`, `{"email": change.snapshot.email, "amount": change.snapshot.amount}`
	tried, _, err := shape.Try(context.Background(), e.store, e.p.TenantID, filter, transform, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	preview := map[string]string{}
	for _, tr := range tried {
		if tr.Error != "" {
			t.Fatalf("preview of %s: %s", tr.Change.ID(), tr.Error)
		}
		if tr.Matched {
			preview[tr.Change.ID()] = string(tr.Data)
		}
	}
	if len(tried) != 4 || len(preview) != 2 {
		t.Fatalf("preview %v of %d changes: want 2 of 4 matched", preview, len(tried))
	}
	rc := newAlertReceiver(t)
	d := e.alertDestination(t, e.p.TenantID, rc, stream.NewDestination{Filter: filter, Transform: transform})
	if err := e.store.RewindDestination(asCLI, e.p.TenantID, d.ID, 0); err != nil {
		t.Fatal(err)
	}
	e.run(t, fast())
	waitFor(t, 15*time.Second, "2 filtered", func() bool { return e.reload(t, d.ID).Filtered == 2 })
	waitFor(t, 15*time.Second, "2 sent", func() bool { return len(rc.delivered()) == 2 })
	sent := map[string]string{}
	for _, m := range rc.delivered() {
		var body struct {
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(m.body, &body); err != nil {
			t.Fatal(err)
		}
		sent[m.header.Get("webhook-id")] = string(body.Data)
	}
	if fmt.Sprint(sent) != fmt.Sprint(preview) {
		t.Errorf("sent %v\npreview %v", sent, preview)
	}
}

// TestFilterOnAlerts: a destination taking changes and alerts applies its
// filter to the messages whose variable it names: one over alert alone
// passes the alerts it is false for over and lets every change through.
func TestFilterOnAlerts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newAlertReceiver(t)
	d := e.alertDestination(t, e.p.TenantID, rc, stream.NewDestination{Types: []string{"record.*", "alert.*"},
		Filter: `alert.rule == "provider_silent"`})
	e.fire(t, e.p.TenantID, "dead_letters", "", "2 dead letters in 1h0m0s.", 2)
	e.fire(t, e.p.TenantID, "provider_silent", "crm", "crm has sent no authenticated delivery for 6h0m0s.", 21600)
	e.ingestSnapshot(t, "c1", 1, `{"name":"a"}`)
	e.run(t, fast())
	waitFor(t, 15*time.Second, "2 sent, 1 filtered", func() bool {
		return len(rc.delivered()) == 2 && e.reload(t, d.ID).Filtered == 1
	})
	var got []string
	for _, m := range rc.delivered() {
		typ, _, data := dataOf(t, m.body)
		got = append(got, fmt.Sprint(typ, " ", data["rule"], data["object_id"]))
	}
	slices.Sort(got)
	if want := []string{"alert.fired provider_silent<nil>", "record.applied <nil>c1"}; !slices.Equal(got, want) {
		t.Errorf("sent %q, want %q", got, want)
	}
}

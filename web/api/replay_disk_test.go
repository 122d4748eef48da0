package api_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/web/internal/webtest"
)

// replayDiskBudget is what 20 replays of one large delivery may add to the
// database, indexes and TOAST included (issue 42, finding 5).
const replayDiskBudget = 5 << 20

// TestReplaysOfLargeDeliveryGrowDatabaseLittle (issue 42, 5): 20 replays of
// a delivery of about 850 KB, whose events all come out duplicates, grow
// the database by less than 5 MB: a replay stores no copy of the body, nor
// of its duplicate events' payloads and snapshots. Measured with
// pg_total_relation_size over every table before and after; the body is
// random text, which PostgreSQL cannot compress.
func TestReplaysOfLargeDeliveryGrowDatabaseLittle(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		deliver func(e *webtest.Env) (id string, events int)
	}{
		{"standard snapshot with a large property", func(e *webtest.Env) (string, int) {
			body := webtest.SnapshotBody("c-1", 1, `{"notes":"`+replayNoise(850<<10)+`"}`)
			status, answer := webtest.Retry503(e.T, func() (int, map[string]any) { return e.Deliver1("m1", body) })
			webtest.Outcome(e.T, status, answer)
			return answer["delivery_id"].(string), 1
		}},
		{"hubspot batch of 100 changes", func(e *webtest.Env) (string, int) {
			webtest.HubspotProvider(e, nil)
			sent := time.Now()
			var changes []map[string]any
			for i := range 100 {
				changes = append(changes, map[string]any{"eventId": 1000 + i, "subscriptionId": 1, "portalId": 1,
					"occurredAt": sent.Add(-time.Minute).UnixMilli(), "subscriptionType": "contact.propertyChange",
					"attemptNumber": 0, "objectId": 7000 + i, "propertyName": "notes",
					"propertyValue": replayNoise(8500), "changeSource": "CRM_UI"})
			}
			body, err := json.Marshal(changes)
			if err != nil {
				e.T.Fatal(err)
			}
			status, answer := webtest.Retry503(e.T, func() (int, map[string]any) { return webtest.HubspotPost(e, body, nil, sent) })
			if n := len(e.HubspotResults(status, answer)); n != 100 {
				e.T.Fatalf("%d results, want 100", n)
			}
			return answer["delivery_id"].(string), 100
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := webtest.Setup(t)
			token := e.Token("acme")
			orig, events := c.deliver(e)
			o, _ := e.DeliveryJSON(token, orig)
			before := tableSizes(t, e)
			var ids []string
			for i := range 20 {
				status, replayed := webtest.ReplayAPI(e, token, orig)
				if status != http.StatusOK {
					t.Fatalf("replay %d: %d %v", i+1, status, replayed)
				}
				results, _ := replayed["results"].([]any)
				if len(results) != events {
					t.Fatalf("replay %d: %d results, want %d", i+1, len(results), events)
				}
				for _, r := range results {
					if got := r.(map[string]any)["outcome"]; got != "duplicate" {
						t.Fatalf("replay %d: outcome %v, want duplicate", i+1, got)
					}
				}
				ids = append(ids, replayed["delivery_id"].(string))
			}
			after := tableSizes(t, e)
			grown := growth(before, after)
			t.Logf("20 replays of a delivery of %d KB grew the database by %.2f MB: %s",
				len(o["body"].(string))>>10, float64(grown.total)/(1<<20), grown.tables)
			if grown.total >= replayDiskBudget {
				t.Errorf("20 replays grew the database by %.2f MB, want under %d MB", float64(grown.total)/(1<<20), replayDiskBudget>>20)
			}
			// What the API shows of a replay is the original's content.
			d, _ := e.DeliveryJSON(token, ids[len(ids)-1])
			if d["body"] != o["body"] || d["replay_of"] != orig {
				t.Fatalf("replay shows body of %d bytes, want the original's", len(d["body"].(string)))
			}
		})
	}
}

// TestReplayEventsReferToTheirOriginal (issue 42, 5): a replayed event that
// changed nothing (duplicate, redundant, or stale like its original) stores
// no payload or snapshot of its own, one that did something (applied) or
// that is stale where its original was not keeps its own; either way its
// detail shows what the original received.
func TestReplayEventsReferToTheirOriginal(t *testing.T) {
	t.Parallel()
	forget := func(e *webtest.Env) { e.Exec(`DELETE FROM idempotency_keys`) } // as their TTL would
	deliver := func(e *webtest.Env, id string, revision int, title string) string {
		status, answer := e.Deliver1(id, webtest.SnapshotBody("c-1", revision, `{"job_title":"`+title+`"}`))
		webtest.Outcome(e.T, status, answer)
		return answer["delivery_id"].(string)
	}
	for _, c := range []struct {
		name    string
		setup   func(e *webtest.Env) (original string)
		outcome string
		own     bool // the replay's event stores its own payload and snapshot
	}{
		{"duplicate", func(e *webtest.Env) string { return deliver(e, "m1", 1, "CTO") }, "duplicate", false},
		{"redundant", func(e *webtest.Env) string {
			orig := deliver(e, "m1", 1, "CTO")
			forget(e)
			return orig
		}, "redundant", false},
		{"stale like its original", func(e *webtest.Env) string {
			deliver(e, "m2", 2, "CEO")
			orig := deliver(e, "m1", 1, "CTO")
			forget(e)
			return orig
		}, "stale", false},
		{"stale where its original applied", func(e *webtest.Env) string {
			orig := deliver(e, "m1", 1, "CTO")
			deliver(e, "m2", 2, "CEO")
			forget(e)
			return orig
		}, "stale", true},
		{"applied", func(e *webtest.Env) string {
			e.SetScope(false)
			orig := deliver(e, "m1", 1, "CTO")
			e.SetScope(true)
			return orig
		}, "applied", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := webtest.Setup(t)
			orig := c.setup(e)
			status, replayed := webtest.ReplayAPI(e, e.Token("acme"), orig)
			if got := webtest.Outcome(t, status, replayed); got != c.outcome {
				t.Fatalf("replay outcome %s, want %s", got, c.outcome)
			}
			replay := replayed["delivery_id"].(string)
			var own bool
			if err := e.Store.Pool().QueryRow(context.Background(), `SELECT payload IS NOT NULL AND snapshot IS NOT NULL
				FROM events WHERE delivery_id = $1`, replay).Scan(&own); err != nil {
				t.Fatal(err)
			}
			if own != c.own {
				t.Errorf("the replay's event stores its own payload and snapshot: %v, want %v", own, c.own)
			}
			ctx, tenant := context.Background(), e.Tenant("acme").ID
			want, err := e.Store.EventDetail(ctx, tenant, orig, 0)
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.Store.EventDetail(ctx, tenant, replay, 0)
			if err != nil {
				t.Fatal(err)
			}
			if string(got.Payload) != string(want.Payload) || string(got.Snapshot) != string(want.Snapshot) || len(got.Payload) == 0 {
				t.Fatalf("the replay's event shows payload %s and snapshot %s, want its original's %s and %s",
					got.Payload, got.Snapshot, want.Payload, want.Snapshot)
			}
		})
	}
}

// replayNoise is n random letters and digits.
func replayNoise(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)[:n]
}

// tableSizes is pg_total_relation_size of every table of the test's
// database (each partition on its own: a partitioned table has no storage
// of its own), with its indexes and TOAST.
func tableSizes(t *testing.T, e *webtest.Env) map[string]int64 {
	t.Helper()
	rows, err := e.Store.Pool().Query(context.Background(), `
SELECT c.oid::regclass::text, pg_total_relation_size(c.oid)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'm') AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	sizes := map[string]int64{}
	for rows.Next() {
		var name string
		var size int64
		if err := rows.Scan(&name, &size); err != nil {
			t.Fatal(err)
		}
		sizes[name] = size
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return sizes
}

// grown is how much the database grew, in all and by table (the tables
// that grew, largest first).
type grown struct {
	total  int64
	tables string
}

func growth(before, after map[string]int64) grown {
	var g grown
	type table struct {
		name string
		n    int64
	}
	var tables []table
	for name, size := range after {
		if d := size - before[name]; d != 0 {
			g.total += d
			tables = append(tables, table{name, d})
		}
	}
	sort.Slice(tables, func(i, j int) bool { return tables[i].n > tables[j].n })
	var parts []string
	for _, tb := range tables {
		parts = append(parts, fmt.Sprintf("%s %+d KB", tb.name, tb.n>>10))
	}
	g.tables = strings.Join(parts, ", ")
	return g
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/internal/e2e"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/internal/testdb"
)

// TestTwoNodesOneDatabase runs two `tidemark serve` processes on one
// database, as a deployment behind a load balancer does, and splits each
// load across them at once: the guarantees hold across nodes because they
// are decided in PostgreSQL, not in either process.
func TestTwoNodesOneDatabase(t *testing.T) {
	e2e.Require(t, "the go command (the test builds tidemark and runs two servers)")
	t.Parallel()
	dbURL := testdb.NewURL(t)
	const key = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	env := map[string]string{"DATABASE_URL": dbURL, "TIDEMARK_ENCRYPTION_KEY": key}
	secret := crashProviders(t, env, map[string]string{crashStandard: provider.Standard.Name()})[crashStandard]
	pool, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)

	// Both nodes start at once: migrations, the token backfill and the
	// first cleanup pass run under their advisory locks.
	exe := buildTidemark(t)
	childEnv := serverEnv(dbURL, key)
	nodes := make([]*child, 2)
	var started sync.WaitGroup
	for i := range nodes {
		started.Go(func() { nodes[i] = startServer(t, exe, childEnv) })
	}
	started.Wait()
	send := func(node int, id string, body []byte) map[string]any {
		t.Helper()
		return postStandard(t, nodes[node].base, secret, id, body)
	}

	t.Run("the same deliveries on both nodes apply once", func(t *testing.T) {
		var wg sync.WaitGroup
		outcomes := make([][2]string, 16)
		for i := range 16 {
			body := snapshotBody("same-"+strconv.Itoa(i), 1, `{"n":1}`)
			for node := range 2 {
				wg.Go(func() { outcomes[i][node] = firstOutcome(send(node, "same-delivery-"+strconv.Itoa(i), body)) })
			}
		}
		wg.Wait()
		for i, o := range outcomes {
			applied := 0
			for _, x := range o {
				if x == "applied" {
					applied++
				} else if x != "duplicate" {
					t.Errorf("delivery %d: outcome %q, want applied or duplicate", i, x)
				}
			}
			if applied != 1 {
				t.Errorf("delivery %d sent to both nodes: outcomes %v, want exactly one applied", i, o)
			}
		}
		if n := queryInt(t, pool, `SELECT count(*) FROM records WHERE object_id LIKE 'same-%'`); n != 16 {
			t.Errorf("%d records, want 16", n)
		}
	})

	t.Run("revisions split across nodes end at the highest", func(t *testing.T) {
		order := rand.Perm(32)
		var wg sync.WaitGroup
		applied := make([]bool, 32)
		for i, r := range order {
			rev := r + 1
			wg.Go(func() {
				body := snapshotBody("split", rev, fmt.Sprintf(`{"rev":%d}`, rev))
				applied[rev-1] = firstOutcome(send(i%2, "split-"+strconv.Itoa(rev), body)) == "applied"
			})
		}
		wg.Wait()
		if rev := queryInt(t, pool, `SELECT revision FROM records WHERE object_id = 'split'`); rev != 32 {
			t.Errorf("record ends at revision %d, want 32", rev)
		}
		answered := 0
		for _, a := range applied {
			if a {
				answered++
			}
		}
		logged := queryInt(t, pool, `SELECT count(*) FROM events WHERE object_id = 'split' AND outcome = 'applied'`)
		accepted := queryInt(t, pool, `SELECT count(*) FROM accepted_revisions WHERE object_id = 'split'`)
		count := queryInt(t, pool, `SELECT application_count FROM records WHERE object_id = 'split'`)
		if logged != answered || accepted != answered || count != answered || answered < 1 {
			t.Errorf("applied: %d answered, %d in the event log, %d accepted revisions, application_count %d; want all equal",
				answered, logged, accepted, count)
		}
	})

	t.Run("a lead burst across nodes makes no duplicate", func(t *testing.T) {
		var wg sync.WaitGroup
		for i := range 40 {
			// Ten people at two companies, each signing up four times
			// through both nodes at once.
			email := fmt.Sprintf("person%d@company%d.example", i%10, i%2)
			body, _ := json.Marshal(map[string]any{"type": "lead.signup", "timestamp": time.Now().UTC().Format(time.RFC3339),
				"data": map[string]any{"email": email, "name": "P", "company": "Company", "domain": fmt.Sprintf("company%d.example", i%2),
					"campaign": "launch", "source": "form"}})
			wg.Go(func() { send(i%2, "lead-"+strconv.Itoa(i), body) })
		}
		wg.Wait()
		for _, c := range []struct{ what, sql string }{
			{"people", `SELECT count(*) FROM people`},
			{"accounts", `SELECT count(*) FROM accounts`},
			{"campaign members", `SELECT count(*) FROM campaign_members`},
			{"follow-up tasks", `SELECT count(*) FROM tasks`},
		} {
			want := map[string]int{"people": 10, "accounts": 2, "campaign members": 10, "follow-up tasks": 10}[c.what]
			if n := queryInt(t, pool, c.sql); n != want {
				t.Errorf("%d %s, want %d", n, c.what, want)
			}
		}
	})

	// The counters both nodes kept equal the event log.
	rows, err := pool.Query(context.Background(), `
SELECT coalesce(c.outcome, l.outcome), coalesce(c.n, 0), coalesce(l.n, 0)
FROM (SELECT outcome, sum(n)::int AS n FROM outcome_counters GROUP BY outcome) c
FULL JOIN (SELECT outcome, count(*)::int AS n FROM events GROUP BY outcome) l USING (outcome)`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var outcome string
		var counted, logged int
		if err := rows.Scan(&outcome, &counted, &logged); err != nil {
			t.Fatal(err)
		}
		if counted != logged {
			t.Errorf("outcome %s: counters say %d, the event log holds %d", outcome, counted, logged)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// snapshotBody is a standard contact.snapshot delivery.
func snapshotBody(contact string, revision int, snapshot string) []byte {
	body, _ := json.Marshal(map[string]any{"type": "contact.snapshot", "timestamp": time.Now().UTC().Format(time.RFC3339),
		"data": map[string]any{"contact_id": contact, "revision": revision, "snapshot": json.RawMessage(snapshot)}})
	return body
}

// postStandard sends one signed standard delivery to base, retrying 503,
// and returns the decoded 200 answer.
func postStandard(t *testing.T, base, secret, id string, body []byte) map[string]any {
	d := crashDelivery{provider: crashStandard, id: id, body: body}
	for attempt := 0; ; attempt++ {
		status, answer, err := postSigned(http.DefaultClient, base, d, secret)
		if err == nil && status == http.StatusOK {
			var a map[string]any
			if err := json.Unmarshal(answer, &a); err != nil {
				t.Errorf("delivery %s: %v in %s", id, err, answer)
			}
			return a
		}
		if attempt == 20 || (err == nil && status != http.StatusServiceUnavailable) {
			t.Errorf("delivery %s: %d %s %v", id, status, answer, err)
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// firstOutcome is the outcome of a one-event answer.
func firstOutcome(answer map[string]any) string {
	results, _ := answer["results"].([]any)
	if len(results) == 0 {
		return ""
	}
	r, _ := results[0].(map[string]any)
	o, _ := r["outcome"].(string)
	return o
}

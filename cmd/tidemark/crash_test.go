package main

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/internal/e2e"
)

// TestCrashSafety kills `tidemark serve` with SIGKILL in the middle of a
// load of signed deliveries, starts it again on the same database and
// resends every delivery; it kills it once more during that resend, then
// resends everything to the end. Every event must end applied exactly once,
// and every delivery acknowledged before a kill must be in the event log
// with the outcomes it was answered, and come back as duplicates.
func TestCrashSafety(t *testing.T) {
	e2e.Require(t, "the go command (the test builds tidemark and kills it mid-load)")
	t.Parallel()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))

	dbURL, secrets, pool, tenantID := crashSetup(t)

	load := newCrashLoad(t, rng)
	n := len(load.deliveries)
	t.Logf("load: %d deliveries, %d events, %d records", n, load.events, len(load.maxRev))
	exe := buildTidemark(t)
	childEnv := serverEnv(dbURL, crashKey)

	// Kill after at least a hundred acknowledged deliveries, then again
	// during the resend, then resend to the end.
	kills := []int{100 + rng.IntN(n/2-100), 30 + rng.IntN(n/3), 0}
	var passes []crashPass
	committedBefore := 0
	for i, killAfter := range kills {
		order := rng.Perm(n) // resends come in any order, as a provider's retries do
		if i == 0 {
			slices.Sort(order) // the first pass in the load's order
		}
		r := sendPass(t, startServer(t, exe, childEnv), load, secrets, order, killAfter)
		passes = append(passes, r)
		if r.killed {
			awaitBackends(t, pool)
		}
		committed := queryInt(t, pool, `SELECT count(*) FROM deliveries WHERE tenant_id = $1 AND status = 200`, tenantID)
		// A delivery committed but not acknowledged can only be one that
		// was in flight at the kill, or one answered 503 because its time
		// ran out while the commit went through.
		unanswered := committed - committedBefore - len(r.acked)
		t.Logf("pass %d: %s", i+1, describePass(load, passes, unanswered))
		if unanswered < 0 || unanswered > len(r.inFlight)+int(r.retries) {
			t.Errorf("pass %d: %d deliveries committed with status 200, %d acknowledged, %d in flight at the kill, %d answers retried",
				i+1, committed-committedBefore, len(r.acked), len(r.inFlight), r.retries)
		}
		committedBefore = committed
	}
	if last := passes[len(passes)-1]; len(last.acked) != n {
		t.Fatalf("the last pass acknowledged %d of %d deliveries", len(last.acked), n)
	}
	checkResends(t, load, passes)
	checkEventLog(t, pool, tenantID, load, passes)
}

// describePass summarises the last pass: acknowledged, in flight,
// committed without an answer, never sent, retried, and the outcomes of
// the events answered, split by whether an earlier pass had acknowledged
// them.
func describePass(l crashLoad, passes []crashPass, unanswered int) string {
	r := passes[len(passes)-1]
	earlier := map[int]bool{}
	for _, prev := range passes[:len(passes)-1] {
		for i := range prev.acked {
			earlier[i] = true
		}
	}
	fresh, again := map[string]int{}, map[string]int{}
	for i, a := range r.acked {
		for _, res := range a.Results {
			if earlier[i] {
				again[res.Outcome]++
			} else {
				fresh[res.Outcome]++
			}
		}
	}
	kill := "not killed"
	if r.killed {
		kill = fmt.Sprintf("killed with %d in flight and %d not sent", len(r.inFlight), len(l.deliveries)-len(r.acked)-len(r.inFlight))
	}
	return fmt.Sprintf("%d deliveries acknowledged, %s, %d committed without an answer, %d answers of 429/503 retried; "+
		"outcomes of events not acknowledged before: %s; of events acknowledged in an earlier pass: %s",
		len(r.acked), kill, unanswered, r.retries, tally(fresh), tally(again))
}

func tally(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// checkResends: an event acknowledged in one pass is a duplicate in every
// later one, under the same event id.
func checkResends(t *testing.T, l crashLoad, passes []crashPass) {
	t.Helper()
	for p, r := range passes {
		for i, a := range r.acked {
			for _, later := range passes[p+1:] {
				b, ok := later.acked[i]
				if !ok {
					continue
				}
				for seq, res := range b.Results {
					if res.EventID != a.Results[seq].EventID || res.Outcome != "duplicate" {
						t.Errorf("delivery %s, event %d: acknowledged as %s %s, resent it is %s %s, want duplicate",
							l.deliveries[i].label(), seq, a.Results[seq].EventID, a.Results[seq].Outcome, res.EventID, res.Outcome)
					}
				}
			}
		}
	}
}

// checkEventLog compares the database with the answers: every acknowledged
// delivery and its events are logged as answered; each event id was
// decided once (one row that is not a duplicate) and applied at most once;
// each record's application count equals its accepted revisions and its
// applied events, and it holds the highest revision sent.
func checkEventLog(t *testing.T, pool *pgxpool.Pool, tenantID int64, l crashLoad, passes []crashPass) {
	t.Helper()
	type delivery struct{ status, events int }
	deliveries := map[string]delivery{}
	var id string
	var d delivery
	scanAll(t, pool, `SELECT id::text, status, event_count FROM deliveries WHERE tenant_id = $1`, tenantID,
		[]any{&id, &d.status, &d.events}, func() { deliveries[id] = d })

	type event struct{ eventID, outcome string }
	type slot struct {
		delivery string
		seq      int
	}
	events := map[slot]event{}
	decided := map[string][]string{} // event id: outcomes other than duplicate
	type applied struct {
		count int
		revs  map[int64]bool
	}
	appliedTo := map[crashRecord]*applied{}
	var s slot
	var e event
	var rec crashRecord
	var rev int64
	scanAll(t, pool, `SELECT e.delivery_id::text, e.seq, e.event_id, e.outcome, p.name, coalesce(e.object_id, ''), coalesce(e.revision, 0)
		FROM events e JOIN providers p ON p.tenant_id = e.tenant_id AND p.id = e.provider_id WHERE e.tenant_id = $1`, tenantID,
		[]any{&s.delivery, &s.seq, &e.eventID, &e.outcome, &rec.provider, &rec.objectID, &rev}, func() {
			events[s] = e
			if e.outcome != "duplicate" {
				decided[e.eventID] = append(decided[e.eventID], e.outcome)
			}
			if e.outcome == "applied" {
				if appliedTo[rec] == nil {
					appliedTo[rec] = &applied{revs: map[int64]bool{}}
				}
				appliedTo[rec].count++
				appliedTo[rec].revs[rev] = true
			}
		})

	// Every acknowledged delivery is logged with its events, as answered.
	for p, r := range passes {
		for i, a := range r.acked {
			if got := deliveries[a.DeliveryID]; got != (delivery{200, len(a.Results)}) {
				t.Errorf("pass %d: delivery %s (%s) acknowledged with %d events is logged as %+v",
					p+1, a.DeliveryID, l.deliveries[i].label(), len(a.Results), got)
			}
			for seq, res := range a.Results {
				if got := events[slot{a.DeliveryID, seq}]; got != (event{res.EventID, res.Outcome}) {
					t.Errorf("pass %d: event %d of delivery %s answered %s %s is logged as %+v",
						p+1, seq, a.DeliveryID, res.EventID, res.Outcome, got)
				}
			}
		}
	}

	// Each event id sent was decided exactly once, applied at most once.
	sent := map[string]bool{}
	for _, a := range passes[len(passes)-1].acked {
		for _, res := range a.Results {
			sent[res.EventID] = true
		}
	}
	for id := range sent {
		if got := decided[id]; len(got) != 1 || !slices.Contains([]string{"applied", "stale", "redundant"}, got[0]) {
			t.Errorf("event %s was decided %v, want once as applied, stale or redundant, else duplicate", id, got)
		}
	}
	if len(decided) != len(sent) {
		t.Errorf("the event log decided %d event ids, %d were sent", len(decided), len(sent))
	}

	// Application counts, accepted revisions and applied events agree.
	var revision int64
	var applications, accepted int
	seen := map[crashRecord]bool{}
	scanAll(t, pool, `SELECT p.name, r.object_id, r.revision, r.application_count,
		       (SELECT count(*) FROM accepted_revisions a WHERE a.tenant_id = r.tenant_id AND a.provider_id = r.provider_id
		        AND a.object_type = r.object_type AND a.object_id = r.object_id)
		FROM records r JOIN providers p ON p.tenant_id = r.tenant_id AND p.id = r.provider_id WHERE r.tenant_id = $1`, tenantID,
		[]any{&rec.provider, &rec.objectID, &revision, &applications, &accepted}, func() {
			seen[rec] = true
			a := appliedTo[rec]
			if a == nil {
				a = &applied{}
			}
			if applications != accepted || applications != a.count || applications != len(a.revs) {
				t.Errorf("record %v: application_count %d, %d accepted revisions, %d applied events of %d distinct revisions",
					rec, applications, accepted, a.count, len(a.revs))
			}
			if want := l.maxRev[rec]; revision != want {
				t.Errorf("record %v holds revision %d, the highest sent is %d", rec, revision, want)
			}
		})
	if len(seen) != len(l.maxRev) {
		t.Errorf("%d records stored, %d were sent", len(seen), len(l.maxRev))
	}
	t.Logf("event log checked: %d deliveries, %d events of %d event ids, %d records",
		len(deliveries), len(events), len(decided), len(seen))
}

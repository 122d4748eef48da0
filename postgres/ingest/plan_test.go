package ingest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/tidemark/tidemark/domain"
)

// The planner is pure: these tests need no database.

const planTenant = 7

var planProvider = domain.ProviderEndpoint{Provider: domain.Provider{TenantID: planTenant, ID: 3}}

// whole is a snapshot event of record with revision rev (< 0: none).
func whole(id, record string, rev int64) domain.Event {
	e := domain.Event{EventID: id, Scope: domain.ScopeName{ObjectType: "contact", Action: "snapshot"}, ObjectID: record,
		Snapshot: []byte(`{}`)}
	if rev >= 0 {
		e.Revision = &rev
	}
	return e
}

// property is a change of one property of record.
func property(id, record, name string) domain.Event {
	rev := int64(1)
	return domain.Event{EventID: id, Scope: domain.ScopeName{ObjectType: "contact", Action: "propertyChange"},
		ObjectID: record, Revision: &rev, Property: name, Snapshot: []byte(`{}`)}
}

// rejected is an event its receiver rejected.
func rejected(id, record string) domain.Event {
	e := whole(id, record, 1)
	e.RejectReason = "malformed"
	return e
}

// signup is a lead signup of email, at example.com unless the address says
// otherwise.
func signup(id, email string) domain.Event {
	l, err := domain.NormalizeLead(domain.Lead{Email: email, Campaign: "launch"})
	if err != nil {
		panic(err)
	}
	return domain.Event{EventID: id, Scope: domain.ScopeName{ObjectType: "lead", Action: "signup"}, ObjectID: l.Email, Lead: &l}
}

// group is one job per delivery, each of the events given, in arrival
// order.
func group(deliveries ...[]domain.Event) []*ingestJob {
	var jobs []*ingestJob
	for i, events := range deliveries {
		for n := range events {
			events[n].Seq = n
		}
		d := domain.Delivery{ID: fmt.Sprintf("00000000-0000-7000-8000-%012d", i)}
		jobs = append(jobs, &ingestJob{d: d, p: planProvider, events: events})
	}
	return jobs
}

// roundsOf is how inRounds splits the events of jobs, each event named by
// its id.
func roundsOf(jobs []*ingestJob) [][]string {
	var events []roundEvent
	for _, job := range jobs {
		for n, e := range job.events {
			events = append(events, prepared(job, n, e))
		}
	}
	var names [][]string
	for _, round := range inRounds(events) {
		var ids []string
		for _, ev := range round {
			ids = append(ids, ev.e.EventID)
		}
		names = append(names, ids)
	}
	return names
}

func TestRoundsFollowArrivalAndSharing(t *testing.T) {
	t.Parallel()
	disabled := planProvider
	disabled.Scopes = map[domain.ScopeName]domain.Scope{{ObjectType: "contact", Action: "snapshot"}: {Enabled: false}}
	for _, tc := range []struct {
		name string
		jobs []*ingestJob
		want [][]string
	}{
		{"nothing shared: one round", group([]domain.Event{whole("a", "c1", 1), whole("b", "c2", 1)}, []domain.Event{whole("c", "c3", 1)}),
			[][]string{{"a", "b", "c"}}},
		{"a record shared: the next round", group([]domain.Event{whole("a", "c1", 1), whole("b", "c1", 2), whole("c", "c2", 1)}),
			[][]string{{"a", "c"}, {"b"}}},
		{"a key shared, across deliveries", group([]domain.Event{whole("a", "c1", 1)}, []domain.Event{whole("a", "c2", 1)}),
			[][]string{{"a"}, {"a"}}},
		{"the first round after every earlier event shared with", group(
			[]domain.Event{whole("a", "c1", 1), whole("b", "c1", 2), whole("c", "c2", 1)},
			[]domain.Event{whole("a", "c2", 2), whole("d", "c2", 3), whole("e", "c3", 1)}),
			[][]string{{"a", "c", "e"}, {"b", "a"}, {"d"}}},
		{"a rejected event claims no key, yet holds its record", group(
			[]domain.Event{rejected("a", "c1"), whole("a", "c2", 1), whole("b", "c1", 1)}),
			[][]string{{"a", "a"}, {"b"}}},
		{"unversioned and property changes share records too", group(
			[]domain.Event{whole("a", "c1", -1), property("b", "c1", "city"), property("c", "c2", "city")}),
			[][]string{{"a", "c"}, {"b"}}},
		{"a lead shares its person", group([]domain.Event{signup("a", "ada@example.com"), signup("b", "ada@example.com")}),
			[][]string{{"a"}, {"b"}}},
		{"a lead shares its account's domain", group([]domain.Event{signup("a", "ada@example.com"), signup("b", "bob@example.com"),
			signup("c", "carol@other.example")}),
			[][]string{{"a", "c"}, {"b"}}},
		{"a disabled scope's event claims no key", []*ingestJob{
			{d: domain.Delivery{ID: "d1"}, p: disabled, events: []domain.Event{whole("a", "c1", 1)}},
			{d: domain.Delivery{ID: "d2"}, p: disabled, events: []domain.Event{whole("a", "c2", 1)}}},
			[][]string{{"a", "a"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := roundsOf(tc.jobs); !slices.EqualFunc(got, tc.want, slices.Equal) {
				t.Fatalf("rounds %q, want %q", got, tc.want)
			}
		})
	}
}

// statementsOf names the statements of steps.
func statementsOf(steps []step) []string {
	var names []string
	for _, s := range steps {
		names = append(names, ingestStatements[s.stmt].name)
	}
	return names
}

func TestRoundStatementsFollowWhatTheRoundHolds(t *testing.T) {
	t.Parallel()
	ada, bob := signup("l1", "ada@example.com"), signup("l2", "bob@gmail.com")
	locks := func(e domain.Event) []string {
		return slices.Repeat([]string{"leadLockSQL"}, len(domain.LeadLockKeys(planTenant, *e.Lead)))
	}
	for _, tc := range []struct {
		name   string
		events []domain.Event
		want   []string
	}{
		{"whole snapshots", []domain.Event{whole("a", "c1", 1), whole("b", "c2", 1)},
			[]string{"claimApplySQL", "outcomeSQL"}},
		{"property changes", []domain.Event{property("a", "c1", "city")},
			[]string{"claimApplyPropertySQL", "outcomeSQL"}},
		{"both", []domain.Event{whole("a", "c1", 1), property("b", "c2", "city")},
			[]string{"claimApplyBothSQL", "outcomeSQL"}},
		{"unversioned only: a claim, nothing to apply", []domain.Event{whole("a", "c1", -1)},
			[]string{"claimSQL", "outcomeSQL"}},
		{"rejected only: just the outcome", []domain.Event{rejected("a", "c1")},
			[]string{"outcomeSQL"}},
		{"a signup: claim, its locks and find-or-create", []domain.Event{ada},
			slices.Concat([]string{"claimSQL"}, locks(ada), []string{"leadSQL", "outcomeSQL"})},
		{"signups with snapshots and changes: the guards after the signups, in arrival order",
			[]domain.Event{whole("a", "c1", 1), ada, property("b", "c2", "city"), bob},
			slices.Concat([]string{"claimSQL"}, locks(ada), []string{"leadSQL"}, locks(bob),
				[]string{"leadSQL", "applySQL", "applyPropertySQL", "outcomeSQL"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var round []roundEvent
			job := group(tc.events)[0]
			for n, e := range job.events {
				round = append(round, prepared(job, n, e))
			}
			steps := roundSteps(planTenant, round, 0)
			if got := statementsOf(steps); !slices.Equal(got, tc.want) {
				t.Fatalf("statements %q, want %q", got, tc.want)
			}
			last := steps[len(steps)-1]
			if len(last.round) != len(round) || len(last.args["event_id"].([]string)) != len(round) {
				t.Fatalf("the outcome step answers %d events with %d ids, want %d", len(last.round),
					len(last.args["event_id"].([]string)), len(round))
			}
		})
	}
}

// TestPlanOfAGroup: generic plans, the delivery rows, then each round's
// steps, the rounds counting their outcomes in successive counter shards.
func TestPlanOfAGroup(t *testing.T) {
	t.Parallel()
	jobs := group([]domain.Event{whole("a", "c1", 1)}, []domain.Event{whole("b", "c1", 2), property("c", "c2", "city")})
	steps := plan(jobs, 15, 16, bounds{})
	want := []string{"genericPlansSQL", "deliveriesSQL", "claimApplyBothSQL", "outcomeSQL", "claimApplySQL", "outcomeSQL", "changesSQL"}
	if got := statementsOf(steps); !slices.Equal(got, want) {
		t.Fatalf("statements %q, want %q", got, want)
	}
	if ids := steps[1].args["d_ids"].([]string); !slices.Equal(ids, []string{jobs[0].d.ID, jobs[1].d.ID}) {
		t.Fatalf("delivery rows %q, want both deliveries in arrival order", ids)
	}
	if s1, s2 := steps[3].args["shard"], steps[5].args["shard"]; s1 != 15 || s2 != 0 {
		t.Fatalf("rounds count in shards %v and %v, want 15 and 0", s1, s2)
	}
}

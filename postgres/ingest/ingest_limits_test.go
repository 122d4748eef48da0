package ingest_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
)

// noise is n bytes of random letters and digits, which PostgreSQL cannot
// compress below its index-row limit.
func noise(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)[:n]
}

// nested is a JSON object nested depth levels deep.
func nested(depth int) string {
	return strings.Repeat(`{"a":`, depth-1) + `{}` + strings.Repeat(`}`, depth-1)
}

// ingestAll delivers events in one delivery and returns their outcomes.
func ingestAll(t *testing.T, s *postgres.Store, p domain.ProviderEndpoint, events ...domain.Event) []domain.Result {
	t.Helper()
	for i := range events {
		events[i].Seq = i
	}
	rs, err := s.Ingest(context.Background(), delivery(p), p, events)
	if err != nil {
		t.Fatalf("ingest: %v", err)
	}
	return rs
}

// rejectedSignup is a lead.signup the standard receiver rejected, named by
// its email as the receiver names it.
func rejectedSignup(id, email, reason string) domain.Event {
	return domain.Event{EventID: id, Scope: domain.ScopeName{ObjectType: "lead", Action: "signup"},
		ObjectID: email, Payload: []byte(`{}`), RejectReason: reason}
}

func TestInputPostgreSQLWouldRefuseIsRejected(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	bigLead := signup(t, "", "ada@example.com", "launch")
	bigLead.Lead.Campaign = noise(3000)
	for _, tc := range []struct {
		name   string
		event  domain.Event
		reason string
	}{
		{"3 KB object id", event("", noise(3000), 1, `{}`), "object id is 3000 bytes"},
		{"70-level snapshot", event("", "c-deep", 1, nested(70)), "nests 70 levels"},
		{"10 KB email", rejectedSignup("", noise(10000)+"@example.com", "data.email is not a valid email address"), "object id is 10012 bytes"},
		{"3 KB campaign", bigLead, "campaign is 3000 bytes"},
		{"3 KB event id", event(noise(3000), "c-id", 1, `{}`), "event id is 3000 bytes"},
		{"3 KB object type", func() domain.Event {
			e := event("", "c-type", 1, `{}`)
			e.Scope.ObjectType = noise(3000)
			return e
		}(), "object type is 3000 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := tc.event
			if bad.EventID == "" {
				bad.EventID = "bad-" + tc.name
			}
			before := event("before-"+tc.name, "c-before-"+tc.name, 1, `{"v":1}`)
			after := event("after-"+tc.name, "c-after-"+tc.name, 1, `{"v":1}`)
			rs := ingestAll(t, s, p, before, bad, after)
			wantOutcome(t, rs[0], "applied")
			wantOutcome(t, rs[1], "rejected")
			wantOutcome(t, rs[2], "applied")
			if !strings.Contains(rs[1].Reason, tc.reason) || !strings.Contains(rs[1].Reason, "at most") {
				t.Fatalf("reason %q, want it to contain %q and the limit", rs[1].Reason, tc.reason)
			}
		})
	}
	if people, accounts, _, members := leadCounts(t, s, p.TenantID); people+accounts+members != 0 {
		t.Fatalf("rejected signups left %d people, %d accounts, %d memberships", people, accounts, members)
	}
}

func TestEventsAtTheLimitsAreStored(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	// The limit counts the event as received: a standard delivery wraps
	// its snapshot in two levels.
	snapshot := nested(domain.MaxJSONDepth - 2)
	e := event(noise(domain.MaxEventIDBytes), noise(domain.MaxObjectIDBytes), 1, snapshot)
	e.Scope.ObjectType = noise(domain.MaxObjectTypeBytes)
	e.Scope.Action = noise(domain.MaxActionBytes)
	if d := domain.JSONDepth(e.Payload); d != domain.MaxJSONDepth {
		t.Fatalf("payload nests %d levels, want the limit", d)
	}
	wantOutcome(t, ingestOne(t, s, p, e), "applied")
	prop := change(noise(domain.MaxEventIDBytes), noise(domain.MaxPropertyBytes), noise(1000), 5)
	prop.ObjectID = noise(domain.MaxObjectIDBytes)
	wantOutcome(t, ingestOne(t, s, p, prop), "applied")

	l := domain.Lead{Email: noise(domain.MaxEmailBytes-len("@x.example")) + "@x.example", Name: noise(domain.MaxNameBytes),
		Company: noise(domain.MaxCompanyBytes), Domain: noise(domain.MaxDomainBytes), Campaign: noise(domain.MaxCampaignBytes),
		Source: noise(domain.MaxSourceBytes)}
	lead := signup(t, "lead-at-limits", "ada@example.com", "launch")
	lead.Lead, lead.ObjectID = &l, l.Email
	lead.Snapshot, _ = json.Marshal(l)
	wantOutcome(t, ingestOne(t, s, p, lead), "applied")
	if people, accounts, tasks, members := leadCounts(t, s, p.TenantID); people != 1 || accounts != 1 || tasks != 1 || members != 1 {
		t.Fatalf("%d people, %d accounts, %d tasks, %d memberships; want one of each", people, accounts, tasks, members)
	}
}

// poison makes PostgreSQL refuse a record with a program-limit error
// (class 54), as an index row or a statement too large would: a trigger
// raises it for the object id given, or, with other set, for that object
// id only when the same delivery also wrote other.
func poison(t *testing.T, s *postgres.Store, objectID, other string) {
	t.Helper()
	createTrigger(t, s, `
CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.object_id = '`+objectID+`' AND ('`+other+`' = '' OR EXISTS (SELECT FROM records
        WHERE object_id = '`+other+`' AND last_applied_delivery = NEW.last_applied_delivery)) THEN
        RAISE EXCEPTION 'index row size 3016 exceeds btree version 4 maximum 2704' USING ERRCODE = '54000';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER poison BEFORE INSERT ON records FOR EACH ROW EXECUTE FUNCTION poison();`)
}

func TestProgramLimitErrorsRejectTheOffender(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	poison(t, s, "c-poison", "")
	rs := ingestAll(t, s, p, event("e1", "c-1", 1, `{"v":1}`), event("e2", "c-poison", 1, `{"v":1}`), event("e3", "c-3", 1, `{"v":1}`))
	wantOutcome(t, rs[0], "applied")
	wantOutcome(t, rs[1], "rejected")
	wantOutcome(t, rs[2], "applied")
	if !strings.Contains(rs[1].Reason, "index row size 3016 exceeds btree version 4 maximum 2704") {
		t.Fatalf("reason %q does not say what PostgreSQL refused", rs[1].Reason)
	}
	var logged string
	err := s.Pool().QueryRow(context.Background(), `SELECT outcome FROM events WHERE tenant_id = $1 AND event_id = 'e2'`, p.TenantID).Scan(&logged)
	if err != nil || logged != "rejected" {
		t.Fatalf("e2 logged as %q (%v), want rejected", logged, err)
	}
	if n := tableCount(t, s, p, "records"); n != 2 {
		t.Fatalf("%d records, want the two good ones", n)
	}
	// The offender's key was never claimed: once fixed, it applies.
	if _, err := s.Pool().Exec(context.Background(), `DROP TRIGGER poison ON records`); err != nil {
		t.Fatal(err)
	}
	wantOutcome(t, ingestOne(t, s, p, event("e2", "c-poison", 1, `{"v":1}`)), "applied")
}

func TestProgramLimitErrorsOfACombinationRejectTheDelivery(t *testing.T) {
	t.Parallel()
	testdb.SkipOnCitus(t, "its trigger reads records, and on Citus a trigger on a shard may not run a distributed query")
	s, p := setup(t)
	// Each event alone is stored; together they are refused.
	poison(t, s, "c-b", "c-a")
	rs := ingestAll(t, s, p, event("e1", "c-a", 1, `{"v":1}`), event("e2", "c-b", 1, `{"v":1}`))
	for _, r := range rs {
		wantOutcome(t, r, "rejected")
	}
	if n := tableCount(t, s, p, "records"); n != 0 {
		t.Fatalf("%d records, want none", n)
	}
	if n := tableCount(t, s, p, "events"); n != 2 {
		t.Fatalf("%d events logged, want both", n)
	}
}

func TestProgramLimitErrorsOfAScopeRejectItsEvents(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	createTrigger(t, s, `
CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.object_type = 'poison' THEN
        RAISE EXCEPTION 'index row size 3016 exceeds btree version 4 maximum 2704' USING ERRCODE = '54000';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER poison BEFORE INSERT ON scopes FOR EACH ROW EXECUTE FUNCTION poison();`)
	bad := event("e2", "c-2", 1, `{"v":1}`)
	bad.Scope.ObjectType = "poison"
	rs := ingestAll(t, s, p, event("e1", "c-1", 1, `{"v":1}`), bad, event("e3", "c-3", 1, `{"v":1}`))
	wantOutcome(t, rs[0], "applied")
	wantOutcome(t, rs[1], "rejected")
	wantOutcome(t, rs[2], "applied")
	if !strings.Contains(rs[1].Reason, "PostgreSQL cannot store this event: index row size") {
		t.Fatalf("reason %q", rs[1].Reason)
	}
}

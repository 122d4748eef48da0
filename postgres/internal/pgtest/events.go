package pgtest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
)

// Change builds a HubSpot-style property event for contact c-1: property
// set to value at revision (occurredAt). A property of "$created" or
// "$deleted" marks creation or deletion.
func Change(id, property, value string, revision int64) domain.Event {
	snapshot := "{}"
	if !strings.HasPrefix(property, "$") {
		v, _ := json.Marshal(value)
		snapshot = fmt.Sprintf(`{%q:%s}`, property, v)
	}
	action := "propertyChange"
	switch property {
	case domain.PropertyCreated:
		action = "creation"
	case domain.PropertyDeleted:
		action = "deletion"
	}
	return domain.Event{EventID: id, Scope: domain.ScopeName{ObjectType: "contact", Action: action},
		ObjectID: "c-1", Revision: &revision, Snapshot: json.RawMessage(snapshot), Property: property,
		Payload: []byte(snapshot)}
}

// Signup builds a lead.signup event as the standard receiver does.
func Signup(t testing.TB, id, email, campaign string) domain.Event {
	t.Helper()
	l, err := domain.NormalizeLead(domain.Lead{Email: email, Name: "Ada", Company: "Example", Campaign: campaign, Source: "webinar"})
	if err != nil {
		t.Fatal(err)
	}
	snapshot, _ := json.Marshal(l)
	return domain.Event{EventID: id, Scope: domain.ScopeName{ObjectType: "lead", Action: "signup"},
		ObjectID: l.Email, Snapshot: snapshot, Payload: snapshot, Lead: &l}
}

// LeadCounts returns how many people, accounts, tasks and memberships the
// tenant holds.
func LeadCounts(t testing.TB, pool *pgxpool.Pool, tenantID int64) (people, accounts, tasks, members int) {
	t.Helper()
	err := pool.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM people WHERE tenant_id = $1), (SELECT count(*) FROM accounts WHERE tenant_id = $1),
		(SELECT count(*) FROM tasks WHERE tenant_id = $1), (SELECT count(*) FROM campaign_members WHERE tenant_id = $1)`,
		tenantID).Scan(&people, &accounts, &tasks, &members)
	if err != nil {
		t.Fatal(err)
	}
	return
}

package postgres

import (
	"context"
	"slices"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

var wantCode = pgtest.WantCode

func TestQueryTenantForToken(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	ctx := asTestCLI(context.Background())
	token, err := s.CreateAPIToken(ctx, p.TenantID, domain.NewAPIToken{Name: "ci", Access: domain.TokenRead})
	if err != nil {
		t.Fatal(err)
	}
	g, err := s.TenantForToken(ctx, "acme", token)
	if err != nil || g.Tenant.ID != p.TenantID || g.Tenant.Slug != "acme" || g.Name != "ci" || g.Access != domain.TokenRead {
		t.Fatalf("TenantForToken = %+v, %v", g, err)
	}
	_, err = s.TenantForToken(ctx, "acme", token+"x")
	wantCode(t, err, domain.EUNAUTHORIZED)
	// Another tenant's URL: its resources do not exist for this token, and
	// a tenant that does not exist looks the same.
	if _, err := s.CreateTenant(ctx, "other", "Other"); err != nil {
		t.Fatal(err)
	}
	_, err = s.TenantForToken(ctx, "other", token)
	wantCode(t, err, domain.ENOTFOUND)
	_, err = s.TenantForToken(ctx, "nowhere", token)
	wantCode(t, err, domain.ENOTFOUND)
	if _, err := s.pool.Exec(ctx, `UPDATE api_tokens SET revoked_at = now() WHERE tenant_id = $1`, p.TenantID); err != nil {
		t.Fatal(err)
	}
	_, err = s.TenantForToken(ctx, "acme", token)
	wantCode(t, err, domain.EUNAUTHORIZED)
}

// Events of one delivery share received_at and delivery id; the keyset must
// still walk them one by one in order.
func TestQueryEventsPagesWithinOneDelivery(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	ctx := context.Background()
	var events []domain.Event
	for i, id := range []string{"e0", "e1", "e2", "e3", "e4"} {
		e := event(id, "c-1", int64(i+1), `{"n":1}`)
		e.Seq = i
		events = append(events, e)
	}
	if _, err := s.Ingest(ctx, delivery(p), p, events); err != nil {
		t.Fatal(err)
	}
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		list, next, err := s.EventLog(ctx, p.TenantID, domain.EventLogQuery{Provider: "crm"}, domain.Page{Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range list {
			got = append(got, e.EventID)
		}
		if next == "" || pages > 5 {
			break
		}
		cursor = next
	}
	if want := []string{"e4", "e3", "e2", "e1", "e0"}; !slices.Equal(got, want) {
		t.Fatalf("walked %v, want %v", got, want)
	}
}

func TestQueryInvalidCursors(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	ctx := context.Background()
	ingestEvent(t, s, p, event("e1", "c-1", 1, `{}`))
	ref := domain.RecordRef{Provider: "crm", ObjectType: "contact", ObjectID: "c-1"}
	for _, cursor := range []string{"!!", "bm90LWpzb24", pg.EncodeCursor(map[string]any{"x": 1})} {
		_, _, err := s.EventLog(ctx, p.TenantID, domain.EventLogQuery{}, domain.Page{Cursor: cursor})
		wantCode(t, err, domain.EINVALID)
		_, _, err = s.Revisions(ctx, p.TenantID, ref, domain.Page{Cursor: cursor})
		wantCode(t, err, domain.EINVALID)
		_, _, err = s.Conflicts(ctx, p.TenantID, "", domain.Page{Cursor: cursor})
		wantCode(t, err, domain.EINVALID)
	}
	_, _, err := s.EventLog(ctx, p.TenantID, domain.EventLogQuery{},
		domain.Page{Cursor: pg.EncodeCursor(map[string]any{"t": "2026-01-01T00:00:00Z", "d": "not-a-uuid", "s": 0})})
	wantCode(t, err, domain.EINVALID)
}

func TestQueryResolveConflict(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	other := newProvider(t, s, "globex", "crm")
	ctx := asTest(context.Background())
	ingestEvent(t, s, p, event("e12", "c-1", 12, `{"a":1}`))
	r := ingestEvent(t, s, p, event("e12b", "c-1", 12, `{"a":2}`))
	wantOutcome(t, r, domain.RevisionConflict)

	_, err := s.ResolveConflict(ctx, p.TenantID, r.ConflictID, "merge", "", "test")
	wantCode(t, err, domain.EINVALID)
	_, err = s.ResolveConflict(ctx, other.TenantID, r.ConflictID, domain.ResolveAdopt, "", "test")
	wantCode(t, err, domain.ENOTFOUND)

	// The record moves on: adopting is refused and changes nothing.
	ingestEvent(t, s, p, event("e13", "c-1", 13, `{"a":3}`))
	_, err = s.ResolveConflict(ctx, p.TenantID, r.ConflictID, domain.ResolveAdopt, "", "test")
	wantCode(t, err, domain.ECONFLICT)
	if rev, snap, n := record(t, s, p, "c-1"); rev != 13 || snap != `{"a": 3}` || n != 2 {
		t.Fatalf("record after refused adopt: %d %s %d", rev, snap, n)
	}
	open, _, err := s.Conflicts(ctx, p.TenantID, domain.ConflictOpen, domain.Page{})
	if err != nil || len(open) != 1 {
		t.Fatalf("open conflicts %v, %v", open, err)
	}

	c, err := s.ResolveConflict(ctx, p.TenantID, r.ConflictID, domain.ResolveKeep, "fine", "test")
	if err != nil || c.Status != domain.ConflictKept || c.Note != "fine" || c.ResolvedBy != "test" || c.ResolvedAt == nil {
		t.Fatalf("keep = %+v, %v", c, err)
	}
	_, err = s.ResolveConflict(ctx, p.TenantID, r.ConflictID, domain.ResolveKeep, "", "test")
	wantCode(t, err, domain.ECONFLICT)
}

func TestQueryStatsAndRecordsStayInTenant(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	other := newProvider(t, s, "globex", "crm")
	ctx := context.Background()
	ingestEvent(t, s, p, event("e1", "c-1", 1, `{}`))
	ingestEvent(t, s, other, event("e1", "c-1", 1, `{}`))
	ingestEvent(t, s, other, event("e2", "c-1", 0, `{}`))

	stats, err := s.Stats(ctx, p.TenantID, "")
	if err != nil || len(stats) != len(domain.Outcomes) || stats[domain.Applied] != 1 || stats[domain.Stale] != 0 {
		t.Fatalf("stats %v, %v", stats, err)
	}
	_, err = s.Stats(ctx, p.TenantID, "nope")
	wantCode(t, err, domain.ENOTFOUND)

	_, err = s.Record(ctx, p.TenantID, domain.RecordRef{Provider: "crm", ObjectType: "contact", ObjectID: "c-2"})
	wantCode(t, err, domain.ENOTFOUND)
	rec, err := s.Record(ctx, other.TenantID, domain.RecordRef{Provider: "crm", ObjectType: "contact", ObjectID: "c-1"})
	if err != nil || rec.LastAppliedEvent != "e1" || rec.Revision != 1 {
		t.Fatalf("record %+v, %v", rec, err)
	}
	events, _, err := s.EventLog(ctx, p.TenantID, domain.EventLogQuery{}, domain.Page{})
	if err != nil || len(events) != 1 {
		t.Fatalf("acme events %+v, %v", events, err)
	}
}

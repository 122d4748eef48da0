package postgres

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/snapshot"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

func indexSearch(t *testing.T, s *Store) {
	t.Helper()
	if _, err := s.IndexSearch(context.Background()); err != nil {
		t.Fatalf("IndexSearch: %v", err)
	}
}

func directory(t *testing.T, s *Store, tenantID int64, q domain.RecordQuery) []domain.RecordSummary {
	t.Helper()
	list, next, err := s.RecordDirectory(context.Background(), tenantID, q, domain.Page{Limit: 100})
	if err != nil {
		t.Fatalf("RecordDirectory(%+v): %v", q, err)
	}
	if next != "" {
		t.Fatalf("RecordDirectory(%+v): a next page after %d rows", q, len(list))
	}
	return list
}

func ids(list []domain.RecordSummary) []string {
	out := make([]string, len(list))
	for i, r := range list {
		out[i] = r.Provider + "/" + r.ObjectID
	}
	return out
}

func wantIDs(t *testing.T, what string, list []domain.RecordSummary, want ...string) {
	t.Helper()
	if got := ids(list); !slices.Equal(got, want) {
		t.Errorf("%s: %v, want %v", what, got, want)
	}
}

// TestRecordDirectory browses and searches what a tenant's providers sent,
// as an operator would: newest change first, filters, words, id prefixes,
// badges and pages; another tenant's records never show.
func TestRecordDirectory(t *testing.T) {
	t.Parallel()
	s, crm := setup(t)
	ctx := context.Background()
	erp := newProvider(t, s, "acme", "erp")
	other := newProvider(t, s, "globex", "crm")

	ingestEvent(t, s, crm, event("e1", "c-1001", 1, `{"name":"Ada Lovelace","title":"Analyst"}`))
	ingestEvent(t, s, crm, event("e2", "c-1002", 1, `{"name":"Grace Hopper","title":"Rear Admiral"}`))
	ingestEvent(t, s, erp, event("e3", "c-1001", 1, `{"name":"Ada Byron","code":"INV-2044"}`))
	ingestEvent(t, s, crm, event("e4", "x-77", 1, `{"name":"Lovelace \u0002fake\u0003 mark","note":"x"}`))
	ingestEvent(t, s, other, event("e5", "c-1003", 1, `{"name":"Ada Lovelace"}`))
	// c-1001 of crm changes last: a revision conflict, a stale event.
	ingestEvent(t, s, crm, event("e6", "c-1001", 3, `{"name":"Ada Lovelace","title":"Chief Analyst"}`))
	wantOutcome(t, ingestEvent(t, s, crm, event("e7", "c-1001", 3, `{"name":"Ada King"}`)), domain.RevisionConflict)
	wantOutcome(t, ingestEvent(t, s, crm, event("e8", "c-1001", 2, `{"name":"Ada"}`)), domain.Stale)

	if list := directory(t, s, crm.TenantID, domain.RecordQuery{}); len(list) != 0 {
		t.Errorf("before IndexSearch the directory shows %v", ids(list))
	}
	indexSearch(t, s)

	all := directory(t, s, crm.TenantID, domain.RecordQuery{})
	wantIDs(t, "all", all, "crm/c-1001", "crm/x-77", "erp/c-1001", "crm/c-1002")
	top := all[0]
	if top.Revision != 3 || top.ApplicationCount != 2 || top.Badges != (domain.RecordBadges{OpenConflicts: 1, StaleEvents: 1}) ||
		top.ObjectType != "contact" || top.Headline != "" {
		t.Errorf("crm/c-1001: %+v", top)
	}
	tl, err := s.RecordTimeline(ctx, crm.TenantID, top.Ref(), 10)
	if err != nil || tl.Badges != top.Badges {
		t.Errorf("timeline of crm/c-1001: badges %+v (%v), want %+v", tl.Badges, err, top.Badges)
	}
	if all[1].Badges != (domain.RecordBadges{}) {
		t.Errorf("crm/x-77 has badges %+v", all[1].Badges)
	}

	wantIDs(t, "provider erp", directory(t, s, crm.TenantID, domain.RecordQuery{Provider: "erp"}), "erp/c-1001")
	wantIDs(t, "unknown provider", directory(t, s, crm.TenantID, domain.RecordQuery{Provider: "nope"}))
	wantIDs(t, "object type", directory(t, s, crm.TenantID, domain.RecordQuery{ObjectType: "deal"}))
	wantIDs(t, "open conflicts", directory(t, s, crm.TenantID, domain.RecordQuery{OpenConflicts: true}), "crm/c-1001")
	wantIDs(t, "changed before the last", directory(t, s, crm.TenantID,
		domain.RecordQuery{Before: top.UpdatedAt}), "crm/x-77", "erp/c-1001", "crm/c-1002")
	wantIDs(t, "changed from the last", directory(t, s, crm.TenantID,
		domain.RecordQuery{From: top.UpdatedAt, Before: top.UpdatedAt.Add(time.Second)}), "crm/c-1001")

	for _, c := range []struct {
		q    string
		want []string
	}{
		{"lovelace", []string{"crm/c-1001", "crm/x-77"}},
		{"LOVELACE", []string{"crm/c-1001", "crm/x-77"}},
		{"ada -lovelace", []string{"erp/c-1001"}},
		{`"rear admiral"`, []string{"crm/c-1002"}},
		{`"admiral rear"`, nil},
		{"INV-2044", []string{"erp/c-1001"}},
		{"c-100", []string{"crm/c-1001", "erp/c-1001", "crm/c-1002"}},
		{"hopper or byron", []string{"erp/c-1001", "crm/c-1002"}},
		{"  ", []string{"crm/c-1001", "crm/x-77", "erp/c-1001", "crm/c-1002"}},
		{"!!! ::", nil},
		{"c_1001", nil},
		{"%", nil},
		{"Analyst", []string{"crm/c-1001"}}, // the old title is no longer the record's
	} {
		list := directory(t, s, crm.TenantID, domain.RecordQuery{Search: c.q})
		wantIDs(t, "search "+c.q, list, c.want...)
	}

	// Headlines mark the matched words, and only those.
	list := directory(t, s, crm.TenantID, domain.RecordQuery{Search: "lovelace"})
	for _, r := range list {
		var marked []string
		for _, part := range snapshot.HeadlineParts(r.Headline) {
			if part.Matched {
				marked = append(marked, part.Text)
			}
		}
		if !slices.Equal(marked, []string{"Lovelace"}) {
			t.Errorf("%s: headline %q marks %q, want only Lovelace", r.ObjectID, r.Headline, marked)
		}
	}
	if h := list[1].Headline; !strings.Contains(h, "fake") {
		t.Errorf("x-77's headline %q lost the text around the stripped marks", h)
	}
	if list := directory(t, s, crm.TenantID, domain.RecordQuery{Search: "c-1002"}); len(list) != 1 || list[0].Headline != "" {
		t.Errorf("a match by id alone: %+v, want one row without headline", list)
	}

	// Keyset pages of one row each walk the same order without repeats.
	var walked []domain.RecordSummary
	cursor := ""
	for range 10 {
		page, next, err := s.RecordDirectory(ctx, crm.TenantID, domain.RecordQuery{}, domain.Page{Limit: 1, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		walked = append(walked, page...)
		if cursor = next; cursor == "" {
			break
		}
	}
	wantIDs(t, "pages", walked, ids(all)...)
	if _, _, err := s.RecordDirectory(ctx, crm.TenantID, domain.RecordQuery{}, domain.Page{Cursor: "bm9wZQ"}); domain.ErrorCode(err) != domain.EINVALID {
		t.Errorf("a bad cursor: %v, want EINVALID", err)
	}
	if _, _, err := s.RecordDirectory(ctx, crm.TenantID, domain.RecordQuery{Search: "a\x02"}, domain.Page{}); domain.ErrorCode(err) != domain.EINVALID {
		t.Errorf("a search with a highlight mark: %v, want EINVALID", err)
	}
}

// TestDirectoryFollowsChanges: a new snapshot is found by its new words
// and no longer by its old ones, a reset record shows its forgotten
// revision, an erased one leaves the directory.
func TestDirectoryFollowsChanges(t *testing.T) {
	t.Parallel()
	s, crm := setup(t)
	ingestEvent(t, s, crm, event("e1", "c-1", 1, `{"name":"Ada Lovelace"}`))
	ingestEvent(t, s, crm, event("e2", "c-2", 1, `{"name":"Grace Hopper"}`))
	indexSearch(t, s)
	ingestEvent(t, s, crm, event("e3", "c-1", 2, `{"name":"Ada King"}`))
	indexSearch(t, s)
	wantIDs(t, "new words", directory(t, s, crm.TenantID, domain.RecordQuery{Search: "king"}), "crm/c-1")
	wantIDs(t, "old words", directory(t, s, crm.TenantID, domain.RecordQuery{Search: "lovelace"}))

	if _, err := s.ResetRecord(ownerCtx(), crm.TenantID, domain.RecordRef{Provider: "crm", ObjectType: "contact", ObjectID: "c-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EraseRecord(ownerCtx(), crm.TenantID, domain.RecordRef{Provider: "crm", ObjectType: "contact", ObjectID: "c-2"}); err != nil {
		t.Fatal(err)
	}
	indexSearch(t, s)
	list := directory(t, s, crm.TenantID, domain.RecordQuery{})
	wantIDs(t, "after reset and erase", list, "crm/c-1")
	if list[0].Revision != domain.ForgottenRevision {
		t.Errorf("reset record: revision %d, want %d", list[0].Revision, domain.ForgottenRevision)
	}
}

// TestIndexSearchLateCommit: a transaction that drew its accepted
// revision's id before another one committed, and commits after
// IndexSearch read past that id, is still indexed by a later run.
func TestIndexSearchLateCommit(t *testing.T) {
	t.Parallel()
	s, crm := setup(t)
	ctx := context.Background()
	slow := pgtest.SlowAndFast(t, s.pool, crm, pgtest.RecordWithRevisionSQL)
	indexSearch(t, s)
	wantIDs(t, "while the slow one runs", directory(t, s, crm.TenantID, domain.RecordQuery{}), "crm/fast")
	if err := slow.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	indexSearch(t, s)
	list := directory(t, s, crm.TenantID, domain.RecordQuery{Search: "late"})
	if got := ids(list); !slices.Contains(got, "crm/slow") || len(got) != 2 {
		t.Errorf("after the slow one committed: %v, want crm/slow and crm/fast", got)
	}
}

// TestEventLogSearch finds events by the words of their snapshots,
// combined with the other filters, with the matches marked.
func TestEventLogSearch(t *testing.T) {
	t.Parallel()
	s, crm := setup(t)
	ctx := context.Background()
	ingestEvent(t, s, crm, event("e1", "c-1", 1, `{"name":"Ada Lovelace"}`))
	ingestEvent(t, s, crm, event("e2", "c-2", 1, `{"name":"Grace Hopper"}`))
	wantOutcome(t, ingestEvent(t, s, crm, event("e3", "c-1", 1, `{"name":"Ada Lovelace"}`)), domain.Redundant)
	other := newProvider(t, s, "globex", "crm")
	ingestEvent(t, s, other, event("e4", "c-1", 1, `{"name":"Ada Lovelace"}`))

	search := func(q domain.EventLogQuery) (got []string, headlines []string) {
		t.Helper()
		list, _, err := s.EventLog(ctx, crm.TenantID, q, domain.Page{})
		if err != nil {
			t.Fatalf("EventLog(%+v): %v", q, err)
		}
		for _, e := range list {
			got, headlines = append(got, e.EventID), append(headlines, e.Headline)
		}
		return got, headlines
	}
	// The words are indexed off the ingest path, by IndexSearch.
	if got, _ := search(domain.EventLogQuery{Search: "lovelace"}); got != nil {
		t.Errorf("before IndexSearch: %v, want none", got)
	}
	indexSearch(t, s)
	got, headlines := search(domain.EventLogQuery{Search: "lovelace"})
	if !slices.Equal(got, []string{"e3", "e1"}) {
		t.Errorf("lovelace: %v, want e3 e1", got)
	}
	for _, h := range headlines {
		if !strings.Contains(h, "\x02Lovelace\x03") {
			t.Errorf("headline %q does not mark Lovelace", h)
		}
	}
	if got, _ := search(domain.EventLogQuery{Search: "lovelace", Outcome: domain.Applied}); !slices.Equal(got, []string{"e1"}) {
		t.Errorf("lovelace, applied: %v, want e1", got)
	}
	if got, _ := search(domain.EventLogQuery{Search: "ada", Contains: json.RawMessage(`{"name":"Ada Lovelace"}`)}); !slices.Equal(got, []string{"e3", "e1"}) {
		t.Errorf("ada, containing Ada Lovelace: %v, want e3 e1", got)
	}
	if got, _ := search(domain.EventLogQuery{Search: "grace", Contains: json.RawMessage(`{"name":"Ada Lovelace"}`)}); got != nil {
		t.Errorf("grace, containing Ada Lovelace: %v, want none", got)
	}
	if got, _ := search(domain.EventLogQuery{Search: "lovelace", ObjectID: "c-1"}); !slices.Equal(got, []string{"e3", "e1"}) {
		t.Errorf("lovelace in c-1: %v, want e3 e1", got)
	}
	if got, _ := search(domain.EventLogQuery{Search: "lovelace", Provider: "crm", ObjectType: "contact", ObjectID: "c-2"}); got != nil {
		t.Errorf("lovelace in c-2: %v, want none", got)
	}
	if got, _ := search(domain.EventLogQuery{Search: "ada -lovelace"}); got != nil {
		t.Errorf("ada -lovelace: %v, want none", got)
	}
	if got, _ := search(domain.EventLogQuery{Search: "?!"}); got != nil {
		t.Errorf("punctuation: %v, want none", got)
	}
	got, headlines = search(domain.EventLogQuery{})
	if len(got) != 3 || slices.ContainsFunc(headlines, func(h string) bool { return h != "" }) {
		t.Errorf("no search: %v with headlines %q, want 3 events without", got, headlines)
	}

	// An erased record's words go with it, and no later pass brings them back.
	if _, err := s.EraseRecord(ownerCtx(), crm.TenantID, domain.RecordRef{Provider: "crm", ObjectType: "contact", ObjectID: "c-1"}); err != nil {
		t.Fatal(err)
	}
	indexSearch(t, s)
	if got, _ := search(domain.EventLogQuery{Search: "lovelace"}); got != nil {
		t.Errorf("after erasing c-1: %v, want none", got)
	}
	var words int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM event_search WHERE tenant_id = $1 AND object_id = 'c-1'`, crm.TenantID).Scan(&words); err != nil || words != 0 {
		t.Errorf("event_search keeps %d rows of the erased record (%v)", words, err)
	}
}

// TestIndexSearchLateEvent: an event whose transaction drew its search id
// before another one committed, and commits after IndexSearch read past
// it, is still found by a later run.
func TestIndexSearchLateEvent(t *testing.T) {
	t.Parallel()
	s, crm := setup(t)
	ctx := context.Background()
	insert := `
INSERT INTO events (tenant_id, received_at, delivery_id, seq, provider_id, object_type, action, event_id, object_id, outcome, snapshot, payload)
VALUES ($1, now(), gen_random_uuid(), 0, $2, 'contact', 'snapshot', $3, $3, 'unversioned', '{"name":"late"}', '\x7b7d')`
	slow := pgtest.SlowAndFast(t, s.pool, crm, insert)
	found := func() []string {
		t.Helper()
		indexSearch(t, s)
		list, _, err := s.EventLog(ctx, crm.TenantID, domain.EventLogQuery{Search: "late"}, domain.Page{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range list {
			got = append(got, e.EventID)
		}
		slices.Sort(got)
		return got
	}
	if got := found(); !slices.Equal(got, []string{"fast"}) {
		t.Errorf("while the slow one runs: %v, want fast", got)
	}
	if err := slow.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := found(); !slices.Equal(got, []string{"fast", "slow"}) {
		t.Errorf("after the slow one committed: %v, want fast and slow", got)
	}
}

package postgres

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/snapshot"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// walkBoth pages a list older from the newest page and then newer back
// from the oldest, checking that both walks list the same rows, that each
// page's counts agree with its place, and that the newest page has no
// newer link.
func walkBoth[T any](t *testing.T, what string, total int, list func(domain.Page) ([]T, domain.PageInfo, error), key func(T) string) []string {
	t.Helper()
	var (
		older  [][]string
		cursor string
	)
	for offset := 0; ; {
		rows, info, err := list(domain.Page{Limit: 3, Cursor: cursor, Count: 100})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if info.Total != total || info.Offset != offset {
			t.Fatalf("%s page %d: total %d offset %d; want %d and %d", what, len(older), info.Total, info.Offset, total, offset)
		}
		if (cursor == "") != (info.Prev == "") {
			t.Fatalf("%s page %d: newer %q", what, len(older), info.Prev)
		}
		page := make([]string, len(rows))
		for i, r := range rows {
			page[i] = key(r)
		}
		older = append(older, page)
		offset += len(rows)
		if info.Next == "" {
			// Back up: Before from the oldest page's newer link.
			before := info.Prev
			for i := len(older) - 2; i >= 0; i-- {
				rows, back, err := list(domain.Page{Limit: 3, Before: before, Count: 100})
				if err != nil {
					t.Fatalf("%s newer: %v", what, err)
				}
				got := make([]string, len(rows))
				for j, r := range rows {
					got[j] = key(r)
				}
				if !slices.Equal(got, older[i]) {
					t.Fatalf("%s: newer page %d is %v, older walk had %v", what, i, got, older[i])
				}
				if back.Next == "" || (i == 0) != (back.Prev == "") {
					t.Fatalf("%s: newer page %d links older %q newer %q", what, i, back.Next, back.Prev)
				}
				before = back.Prev
			}
			break
		}
		cursor = info.Next
	}
	return slices.Concat(older...)
}

// TestListsPageBothWays: the event log, the directory and the audit log
// page older, then newer back to the same pages, counted, and another
// tenant's rows never show.
func TestListsPageBothWays(t *testing.T) {
	t.Parallel()
	s, crm := setup(t)
	ctx := pgtest.AsOperator(context.Background())
	other := newProvider(t, s, "globex", "crm")
	for i := range 8 {
		ingestEvent(t, s, crm, event(fmt.Sprintf("e%d", i), fmt.Sprintf("c-%d", i), 1, `{"name":"Ada"}`))
	}
	ingestEvent(t, s, other, event("x1", "c-x", 1, `{"name":"Ada"}`))
	indexSearch(t, s)

	events := walkBoth(t, "events", 8, func(p domain.Page) ([]domain.LoggedEvent, domain.PageInfo, error) {
		return s.EventLogPage(ctx, crm.TenantID, domain.EventLogQuery{}, p)
	}, func(e domain.LoggedEvent) string { return e.EventID })
	if want := []string{"e7", "e6", "e5", "e4", "e3", "e2", "e1", "e0"}; !slices.Equal(events, want) {
		t.Errorf("events %v, want %v", events, want)
	}
	walkBoth(t, "events searched", 8, func(p domain.Page) ([]domain.LoggedEvent, domain.PageInfo, error) {
		return s.EventLogPage(ctx, crm.TenantID, domain.EventLogQuery{Search: "ada"}, p)
	}, func(e domain.LoggedEvent) string { return e.EventID })
	records := walkBoth(t, "records", 8, func(p domain.Page) ([]domain.RecordSummary, domain.PageInfo, error) {
		return s.RecordDirectoryPage(ctx, crm.TenantID, domain.RecordQuery{}, p)
	}, func(r domain.RecordSummary) string { return r.ObjectID })
	if want := []string{"c-7", "c-6", "c-5", "c-4", "c-3", "c-2", "c-1", "c-0"}; !slices.Equal(records, want) {
		t.Errorf("records %v, want %v", records, want)
	}
	for i := range 7 {
		if _, err := s.CreateAPIToken(ctx, crm.TenantID, domain.NewAPIToken{Name: fmt.Sprintf("token %d", i), Access: domain.TokenRead}); err != nil {
			t.Fatal(err)
		}
	}
	all, _, err := s.AuditLog(ctx, domain.AuditQuery{TenantID: crm.TenantID}, domain.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	walkBoth(t, "audit", len(all), func(p domain.Page) ([]domain.AuditEntry, domain.PageInfo, error) {
		return s.AuditLogPage(ctx, domain.AuditQuery{TenantID: crm.TenantID}, p)
	}, func(e domain.AuditEntry) string { return fmt.Sprint(e.ID) })

	// A count bounded below the total says so.
	_, info, err := s.EventLogPage(ctx, crm.TenantID, domain.EventLogQuery{}, domain.Page{Limit: 2, Count: 5})
	if err != nil || info.Total != 6 || info.Offset != 0 {
		t.Errorf("bounded count: %+v, %v", info, err)
	}
	// A Before with fewer than a page newer is the newest page.
	rows, info, err := s.EventLogPage(ctx, crm.TenantID, domain.EventLogQuery{}, domain.Page{Limit: 3, Before: mustCursor(t, s, crm.TenantID)})
	if err != nil || len(rows) != 3 || rows[0].EventID != "e7" || info.Prev != "" {
		t.Errorf("before near the top: %d rows, %+v, %v", len(rows), info, err)
	}
	// The other tenant sees its one event.
	rows, info, err = s.EventLogPage(ctx, other.TenantID, domain.EventLogQuery{}, domain.Page{Count: 100})
	if err != nil || len(rows) != 1 || rows[0].EventID != "x1" || info.Total != 1 {
		t.Errorf("other tenant: %d rows, %+v, %v", len(rows), info, err)
	}
	if _, _, err := s.EventLogPage(ctx, crm.TenantID, domain.EventLogQuery{}, domain.Page{Before: "garbage"}); domain.ErrorCode(err) != domain.EINVALID {
		t.Errorf("a garbage before: %v", err)
	}
}

// mustCursor is the cursor after the tenant's second newest event.
func mustCursor(t *testing.T, s *Store, tenantID int64) string {
	t.Helper()
	_, next, err := s.EventLog(context.Background(), tenantID, domain.EventLogQuery{}, domain.Page{Limit: 2})
	if err != nil || next == "" {
		t.Fatalf("cursor: %q, %v", next, err)
	}
	return next
}

// TestDirectoryNamesLeadsAndTests: a record shows the first of its kind's
// display fields; leads are listed and found by the lead filter; a test
// event's record is left out unless asked for; matches read as fields.
func TestDirectoryNamesLeadsAndTests(t *testing.T) {
	t.Parallel()
	s, crm := setup(t)
	ctx := context.Background()
	ingestEvent(t, s, crm, event("e1", "c-1", 1, `{"firstname":"Ada","lastname":"Lovelace","email":"ada@example.com","job_title":"VP Sales"}`))
	ingestEvent(t, s, crm, event("e2", "c-2", 1, `{"email":"grace@example.com"}`))
	ingestEvent(t, s, crm, event("e3", snapshot.TestRecordID, 1, `{"name":"Test"}`))
	deliverBatch(t, s, crm, `{}`, pgtest.Signup(t, "l1", "ann@example.com", "spring"))
	other := newProvider(t, s, "globex", "crm")
	deliverBatch(t, s, other, `{}`, pgtest.Signup(t, "l9", "zed@example.com", "spring"))
	indexSearch(t, s)

	page := func(q domain.RecordQuery) []domain.RecordSummary {
		t.Helper()
		list, _, err := s.RecordDirectoryPage(ctx, crm.TenantID, q, domain.Page{})
		if err != nil {
			t.Fatal(err)
		}
		return list
	}
	list := page(domain.RecordQuery{})
	wantIDs(t, "directory", list, "crm/ann@example.com", "crm/c-2", "crm/c-1")
	names := map[string]string{}
	for _, r := range list {
		names[r.ObjectID] = r.Name
	}
	if names["c-1"] != "Ada Lovelace" || names["c-2"] != "grace@example.com" || names["ann@example.com"] != "ann@example.com" {
		t.Errorf("names %v", names)
	}
	if lead := list[0]; lead.ObjectType != "lead" || lead.ApplicationCount != 1 || lead.Revision != domain.ForgottenRevision {
		t.Errorf("lead row %+v", lead)
	}
	wantIDs(t, "lead filter", page(domain.RecordQuery{ObjectType: "lead"}), "crm/ann@example.com")
	wantIDs(t, "lead by prefix", page(domain.RecordQuery{Search: "ann@"}), "crm/ann@example.com")
	with := page(domain.RecordQuery{WithTests: true})
	wantIDs(t, "with tests", with, "crm/ann@example.com", "crm/"+snapshot.TestRecordID, "crm/c-2", "crm/c-1")
	if !with[1].Test || with[0].Test {
		t.Errorf("test marks %v %v", with[1].Test, with[0].Test)
	}
	api := directory(t, s, crm.TenantID, domain.RecordQuery{})
	wantIDs(t, "the API's list", api, "crm/"+snapshot.TestRecordID, "crm/c-2", "crm/c-1")

	found := page(domain.RecordQuery{Search: "sales"})
	if len(found) != 1 || len(found[0].Matches) != 1 || found[0].Matches[0].Field != "job_title" ||
		fmt.Sprint(found[0].Matches[0].Parts) != "[{VP  false} {Sales true}]" {
		t.Errorf("match %+v", found)
	}

	// An erased lead leaves the directory.
	if _, err := s.EraseLead(ownerCtx(), crm.TenantID, "ann@example.com"); err != nil {
		t.Fatal(err)
	}
	indexSearch(t, s)
	wantIDs(t, "after the erasure", page(domain.RecordQuery{ObjectType: "lead"}))
}

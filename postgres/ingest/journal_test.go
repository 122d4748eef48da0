package ingest_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// journalPage writes a journal page of one event moving install 7's offset
// from from to to.
func journalPage(ctx context.Context, s *postgres.Store, p domain.ProviderEndpoint, eventID, from, to string) error {
	e := dated(eventID, "c-1", time.Now(), `{"email":"a@example.com"}`)
	d := domain.Delivery{ID: uuid.Must(uuid.NewV7()).String(), TenantID: p.TenantID, ProviderID: p.ID, ReceivedAt: time.Now(),
		Status: 200, Signature: domain.SignatureValid, Body: []byte(`[]`), Source: domain.SourceJournal}
	_, err := s.IngestJournal(ctx, d, p, []domain.Event{e}, domain.JournalMove{TenantID: p.TenantID, InstallID: 7, From: from, To: to, Entries: 1})
	return err
}

// TestIngestJournalMovesTheOffsetOnce: nodes writing the same page at once
// (the offset read, the page's last entry) commit it once; the others are
// refused with ErrJournalMoved and write nothing: no delivery, no event,
// no count.
func TestIngestJournalMovesTheOffsetOnce(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	ctx := asTest(context.Background())
	if _, ok, err := s.LeaseJournal(ctx, p.TenantID, 7, "node-a", time.Minute); err != nil || !ok {
		t.Fatalf("lease: %v, %v", ok, err)
	}
	const nodes = 4
	errs := make([]error, nodes)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = journalPage(ctx, s, p, "journal:"+uuid.NewString(), "", "offset-1")
		}()
	}
	wg.Wait()
	committed := 0
	for _, err := range errs {
		switch {
		case err == nil:
			committed++
		case !errors.Is(err, domain.ErrJournalMoved):
			t.Fatalf("a page refused with %v, want ErrJournalMoved", err)
		}
	}
	if committed != 1 {
		t.Fatalf("%d of %d writers of one page committed, want 1", committed, nodes)
	}
	if n := pgtest.Scalar(t, s.Pool(), `SELECT count(*) FROM deliveries WHERE source = 'journal'`); n != 1 {
		t.Fatalf("%d journal deliveries, want 1", n)
	}
	if n := tableCount(t, s, p, "events"); n != 1 {
		t.Fatalf("%d events, want 1", n)
	}
	if c := counters(t, s, p); c[domain.Applied] != 1 {
		t.Fatalf("counters %v", c)
	}
	if err := journalPage(ctx, s, p, "journal:next", "offset-1", "offset-2"); err != nil {
		t.Fatalf("the next page: %v", err)
	}
	cur, ok, err := s.LeaseJournal(ctx, p.TenantID, 7, "node-a", time.Minute)
	if err != nil || !ok || cur.Offset != "offset-2" || cur.EntriesRead != 2 || cur.FoundMissed != 2 || cur.MovedAt.IsZero() {
		t.Fatalf("cursor %+v, %v, %v", cur, ok, err)
	}
}

// TestJournalLease: one holder at a time; the holder takes its lease
// again; a lease released or lapsed is another's to take.
func TestJournalLease(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	ctx := asTest(context.Background())
	lease := func(holder string, ttl time.Duration) bool {
		t.Helper()
		_, ok, err := s.LeaseJournal(ctx, p.TenantID, 7, holder, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !lease("a", time.Minute) || lease("b", time.Minute) || !lease("a", time.Minute) {
		t.Fatal("a holds the lease, b is refused, a takes it again: not so")
	}
	if err := s.ReleaseJournal(ctx, p.TenantID, 7, "a"); err != nil {
		t.Fatal(err)
	}
	if !lease("b", time.Millisecond) {
		t.Fatal("b could not take a released lease")
	}
	time.Sleep(20 * time.Millisecond)
	if !lease("a", time.Minute) {
		t.Fatal("a could not take b's lapsed lease")
	}
}

// TestRestartJournal: an expired offset is cleared once, counted and
// audited; a restart from an offset that moved meanwhile is refused.
func TestRestartJournal(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	ctx := asTest(context.Background())
	if _, _, err := s.LeaseJournal(ctx, p.TenantID, 7, "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := journalPage(ctx, s, p, "journal:1", "", "offset-1"); err != nil {
		t.Fatal(err)
	}
	r := domain.JournalRestart{TenantID: p.TenantID, InstallID: 7, From: "offset-1", FoundMissed: 3, Target: "hub portal 1", Summary: "expired"}
	if err := s.RestartJournal(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := s.RestartJournal(ctx, r); !errors.Is(err, domain.ErrJournalMoved) {
		t.Fatalf("a second restart from the same offset: %v, want ErrJournalMoved", err)
	}
	cur, _, err := s.LeaseJournal(ctx, p.TenantID, 7, "a", time.Minute)
	if err != nil || cur.Offset != "" || cur.Expirations != 1 || cur.FoundMissed != 4 || cur.ExpiredAt.IsZero() {
		t.Fatalf("cursor %+v, %v", cur, err)
	}
	if n := pgtest.Scalar(t, s.Pool(), `SELECT count(*) FROM audit_log WHERE action = 'app_journal_expired'`); n != 1 {
		t.Fatalf("%d app_journal_expired audit entries, want 1", n)
	}
}

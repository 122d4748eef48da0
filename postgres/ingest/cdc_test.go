package ingest_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// withCDC gives p connected app credentials and turns its stream on.
func withCDC(ctx context.Context, t *testing.T, s *postgres.Store, p domain.ProviderEndpoint) {
	t.Helper()
	if err := s.SetAPICredentials(ctx, p.TenantID, p.ID, pull.Credentials{ClientID: "consumer-key",
		ClientSecret: "consumer-secret", LoginURL: "https://acme.my.salesforce.com"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetCDC(ctx, p.TenantID, p.ID, domain.CDCConfig{Enabled: true}); err != nil {
		t.Fatal(err)
	}
}

// cdcEvents writes a delivery of one change event moving p's replay id
// from from to to.
func cdcEvents(ctx context.Context, s *postgres.Store, p domain.ProviderEndpoint, eventID string, from, to []byte, committed time.Time) error {
	e := dated(eventID, "c-1", committed, `{"email":"a@example.com"}`)
	d := domain.Delivery{ID: uuid.Must(uuid.NewV7()).String(), TenantID: p.TenantID, ProviderID: p.ID, ReceivedAt: time.Now(),
		Status: 200, Signature: domain.SignatureValid, Body: []byte(`[]`), Source: domain.SourceCDC}
	_, err := s.IngestCDC(ctx, d, p, []domain.Event{e}, domain.CDCMove{TenantID: p.TenantID, ProviderID: p.ID,
		From: from, To: to, CommittedAt: committed, Events: 1})
	return err
}

// TestIngestCDCMovesTheReplayIDOnce: four subscribers writing the events
// after one replay id at once commit them once; the others are refused
// with ErrCDCMoved and write nothing: no delivery, no event, no count.
func TestIngestCDCMovesTheReplayIDOnce(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	ctx := asTest(context.Background())
	withCDC(ctx, t, s, p)
	committed := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	const nodes = 4
	errs := make([]error, nodes)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = cdcEvents(ctx, s, p, "cdc:"+uuid.NewString(), nil, []byte{0, 0, 1}, committed)
		}()
	}
	wg.Wait()
	committedWriters := 0
	for _, err := range errs {
		switch {
		case err == nil:
			committedWriters++
		case !errors.Is(err, domain.ErrCDCMoved):
			t.Fatalf("a delivery refused with %v, want ErrCDCMoved", err)
		}
	}
	if committedWriters != 1 {
		t.Fatalf("%d of %d writers after one replay id committed, want 1", committedWriters, nodes)
	}
	if n := pgtest.Scalar(t, s.Pool(), `SELECT count(*) FROM deliveries WHERE source = 'cdc'`); n != 1 {
		t.Fatalf("%d cdc deliveries, want 1", n)
	}
	if n := tableCount(t, s, p, "events"); n != 1 {
		t.Fatalf("%d events, want 1", n)
	}
	if c := counters(t, s, p); c[domain.Applied] != 1 {
		t.Fatalf("counters %v", c)
	}
	if err := cdcEvents(ctx, s, p, "cdc:next", []byte{0, 0, 1}, []byte{0, 0, 2}, committed.Add(time.Second)); err != nil {
		t.Fatalf("the next events: %v", err)
	}
	if err := cdcEvents(ctx, s, p, "cdc:stale", []byte{0, 0, 1}, []byte{0, 0, 3}, committed); !errors.Is(err, domain.ErrCDCMoved) {
		t.Fatalf("events after a replay id passed: %v, want ErrCDCMoved", err)
	}
	st, ok, err := s.CDCStream(ctx, p.TenantID, p.ID)
	if err != nil || !ok || string(st.ReplayID) != "\x00\x00\x02" || st.Events != 2 || st.MinuteEvents+st.PreviousMinuteEvents != 2 ||
		!st.CommittedAt.Equal(committed.Add(time.Second)) || st.MovedAt.IsZero() {
		t.Fatalf("stream %+v, %v, %v", st, ok, err)
	}
	if rate := st.EventsPerMinute(st.MinuteStart.Add(time.Second)); rate < 1 {
		t.Fatalf("%v events per minute right after two", rate)
	}
}

// TestJournalAndCDCShareTheMove: a page of the journal and events of CDC
// refused by their compare-and-set leave the other's cursor alone.
func TestJournalAndCDCShareTheMove(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	ctx := asTest(context.Background())
	withCDC(ctx, t, s, p)
	if _, ok, err := s.LeaseJournal(ctx, p.TenantID, 7, "node-a", time.Minute); err != nil || !ok {
		t.Fatalf("lease: %v, %v", ok, err)
	}
	if err := journalPage(ctx, s, p, "journal:1", "", "offset-1"); err != nil {
		t.Fatal(err)
	}
	if err := cdcEvents(ctx, s, p, "cdc:1", []byte("elsewhere"), []byte("r1"), time.Now()); !errors.Is(err, domain.ErrCDCMoved) {
		t.Fatalf("events after a replay id never committed: %v, want ErrCDCMoved", err)
	}
	if err := journalPage(ctx, s, p, "journal:2", "offset-0", "offset-2"); !errors.Is(err, domain.ErrJournalMoved) {
		t.Fatalf("a page after an offset passed: %v, want ErrJournalMoved", err)
	}
	if n := pgtest.Scalar(t, s.Pool(), `SELECT count(*) FROM deliveries`); n != 1 {
		t.Fatalf("%d deliveries, want the journal's first page alone", n)
	}
}

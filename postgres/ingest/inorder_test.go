package ingest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/inorder"
)

// TestChainedDeliveryWaitsForTheOneBefore: a queue worker hands a tenant's
// deliveries to the committer several at a time, each chained after the
// one before it (internal/inorder). When one is not written (here its
// sender's deadline passed while it waited behind a slow group), the one
// after it must not commit ahead of it: it fails unwritten, for the worker
// to write again in order. A delivery outside any chain is not held back.
func TestChainedDeliveryWaitsForTheOneBefore(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	s.SetBeforeCommit(`SELECT pg_sleep(1.5)`)
	slow := make(chan error, 1)
	go func() {
		_, err := s.Ingest(context.Background(), delivery(p), p, []domain.Event{event("e0", "c-0", 1, `{"v":1}`)})
		slow <- err
	}()
	pollFor(t, 10*time.Second, "the first group to be writing", func() bool {
		var n int
		err := s.Pool().QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE query LIKE '%pg_sleep(1.5)%' AND pid <> pg_backend_pid()`).Scan(&n)
		return err == nil && n > 0
	})

	first := inorder.After(nil)
	second := inorder.After(first)
	shortCtx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	answers := make([]chan error, 2)
	for i, c := range []struct {
		ctx  context.Context
		link *inorder.Link
		e    domain.Event
	}{{shortCtx, first, event("e1", "c-1", 1, `{"v":1}`)}, {context.Background(), second, event("e2", "c-1", 2, `{"v":2}`)}} {
		answers[i] = make(chan error, 1)
		go func() {
			_, err := s.Ingest(inorder.With(c.ctx, c.link), delivery(p), p, []domain.Event{c.e})
			answers[i] <- err
		}()
		select {
		case <-c.link.Queued():
		case err := <-answers[i]:
			t.Fatalf("delivery %d answered before it was queued: %v", i+1, err)
		}
	}
	if err := <-answers[0]; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the first chained delivery got %v, want its deadline exceeded", err)
	}
	if err := <-answers[1]; domain.ErrorCode(err) != domain.EUNAVAILABLE {
		t.Fatalf("the delivery after one not written got %v, want EUNAVAILABLE (written again after it)", err)
	}
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.Pool().QueryRow(context.Background(), `SELECT count(*) FROM events WHERE tenant_id = $1 AND object_id = 'c-1'`,
		p.TenantID).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d events of c-1 written (%v): the second delivery committed ahead of the first", n, err)
	}
	if second.Committed() || first.Committed() {
		t.Error("a link not written is settled as committed")
	}

	// Written again in order, the chain commits.
	again := inorder.After(nil)
	for i, e := range []domain.Event{event("e1", "c-1", 1, `{"v":1}`), event("e2", "c-1", 2, `{"v":2}`)} {
		res, err := s.Ingest(inorder.With(context.Background(), again), delivery(p), p, []domain.Event{e})
		if err != nil {
			t.Fatal(err)
		}
		wantOutcome(t, res[0], domain.Applied)
		if !again.Committed() {
			t.Errorf("link %d not settled as committed", i+1)
		}
		again = inorder.After(again)
	}
}

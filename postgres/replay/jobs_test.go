package replay_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// replayable stores a delivery that a job can replay: an authenticated
// one with its body and request.
func replayable(t *testing.T, s *postgres.Store, p domain.ProviderEndpoint, id string) domain.DeliveryKey {
	t.Helper()
	d := pgtest.Delivery(p)
	e := pgtest.Event(id, "c-"+id, 1, `{"n": 1}`)
	d.Body, d.Request = e.Payload, domain.Request{Method: "POST", Path: "/webhooks/acme/crm",
		Headers: map[string][]string{"Webhook-Id": {id}}}
	if _, err := s.Ingest(context.Background(), d, p, []domain.Event{e}); err != nil {
		t.Fatal(err)
	}
	return domain.DeliveryKey{ReceivedAt: d.ReceivedAt, ID: d.ID}
}

// replayStep replays original as a step of the job held by worker.
func replayStep(s *postgres.Store, p domain.ProviderEndpoint, job domain.ReplayJob, worker string, original domain.DeliveryKey, id string) error {
	d := pgtest.Delivery(p)
	d.ReplayOf = original.ID
	step := domain.ReplayStep{Job: job, Worker: worker, Lease: 200 * time.Millisecond, Original: original}
	_, err := s.ReplayStep(context.Background(), step, d, p, []domain.Event{pgtest.Event(id, "c-"+id, 1, `{"n": 1}`)})
	return err
}

// TestReplayJobTakeover: a worker that stops without giving its job back
// (a crash) loses it when its lease ends; the next worker continues from
// the job's position, and a late step of the first one is refused and
// leaves nothing behind, so every delivery is replayed exactly once.
func TestReplayJobTakeover(t *testing.T) {
	t.Parallel()
	s, p := pgtest.Setup(t, postgres.New)
	ctx := domain.WithActor(context.Background(), domain.Actor{Kind: domain.ActorCLI, Name: "test"})
	keys := []domain.DeliveryKey{replayable(t, s, p, "m1"), replayable(t, s, p, "m2"), replayable(t, s, p, "m3")}
	job, err := s.StartReplayJob(ctx, p.TenantID, domain.DeliveryFilter{}, false)
	if err != nil || job.Total != 3 || job.Status != domain.ReplayQueued {
		t.Fatalf("start: %+v, %v", job, err)
	}

	a, ok, err := s.ClaimReplayJob(ctx, "a", 200*time.Millisecond)
	if err != nil || !ok || a.ID != job.ID || a.Status != domain.ReplayRunning {
		t.Fatalf("claim by a: %+v %v %v", a, ok, err)
	}
	if _, ok, _ := s.ClaimReplayJob(ctx, "b", time.Minute); ok {
		t.Fatal("b claimed a job a holds")
	}
	next, err := s.NextReplayable(ctx, a, 10)
	if err != nil || len(next) != 3 || next[0].ID != keys[0].ID {
		t.Fatalf("next: %v %v", next, err)
	}
	if err := replayStep(s, p, a, "a", keys[0], "m1"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // a's lease runs out

	b, ok, err := s.ClaimReplayJob(ctx, "b", time.Minute)
	if err != nil || !ok || b.Done != 1 || b.After.ID != keys[0].ID {
		t.Fatalf("claim by b: %+v %v %v", b, ok, err)
	}
	if err := replayStep(s, p, a, "a", keys[1], "m2"); !errors.Is(err, domain.ErrReplayLeaseLost) {
		t.Fatalf("a's late step: %v, want the lease lost", err)
	}
	next, err = s.NextReplayable(ctx, b, 10)
	if err != nil || len(next) != 2 || next[0].ID != keys[1].ID {
		t.Fatalf("next for b: %v %v", next, err)
	}
	for i, k := range next {
		if err := replayStep(s, p, b, "b", k, fmt.Sprintf("m%d", i+2)); err != nil {
			t.Fatal(err)
		}
		b.After = k
	}
	if next, _ := s.NextReplayable(ctx, b, 10); len(next) != 0 {
		t.Fatalf("left after the last step: %v", next)
	}
	done, err := s.FinishReplayJob(ctx, domain.ReplayStep{Job: b, Worker: "b"}, domain.ReplayDone, "")
	if err != nil || done.Status != domain.ReplayDone || done.Done != 3 || done.Counts["duplicate"] != 3 {
		t.Fatalf("finish: %+v %v", done, err)
	}
	var replays, originals int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*), count(DISTINCT replay_of) FROM deliveries WHERE replay_of IS NOT NULL`).
		Scan(&replays, &originals); err != nil || replays != 3 || originals != 3 {
		t.Fatalf("%d replays of %d originals (%v), want 3 of 3", replays, originals, err)
	}
	var entries []string
	rows, _ := s.Pool().Query(ctx, `SELECT action || ': ' || summary FROM audit_log
		WHERE tenant_id = $1 AND action LIKE 'replay%' ORDER BY id`, p.TenantID)
	for rows.Next() {
		var e string
		rows.Scan(&e)
		entries = append(entries, e)
	}
	want := []string{"replay_start: every delivery; 3 deliveries match", "replay_done: 3 of 3 deliveries: 3 duplicate"}
	if strings.Join(entries, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit entries %q, want %q", entries, want)
	}
}

// TestReplayJobCancelRefusesStep: a step written after the job was
// cancelled is rolled back; a cancelled job cannot be cancelled again, and
// a new job can start.
func TestReplayJobCancelRefusesStep(t *testing.T) {
	t.Parallel()
	s, p := pgtest.Setup(t, postgres.New)
	ctx := domain.WithActor(context.Background(), domain.Actor{Kind: domain.ActorCLI, Name: "test"})
	key := replayable(t, s, p, "m1")
	job, err := s.StartReplayJob(ctx, p.TenantID, domain.DeliveryFilter{Provider: "crm"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartReplayJob(ctx, p.TenantID, domain.DeliveryFilter{}, false); domain.ErrorCode(err) != domain.ECONFLICT {
		t.Fatalf("second job: %v, want ECONFLICT", err)
	}
	held, _, err := s.ClaimReplayJob(ctx, "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cancelled, err := s.CancelReplayJob(ctx, p.TenantID, job.ID)
	if err != nil || cancelled.Status != domain.ReplayCancelled || cancelled.FinishedAt.IsZero() {
		t.Fatalf("cancel: %+v %v", cancelled, err)
	}
	if err := replayStep(s, p, held, "a", key, "m1"); !errors.Is(err, domain.ErrReplayLeaseLost) {
		t.Fatalf("step after cancel: %v", err)
	}
	var n int
	if s.Pool().QueryRow(ctx, `SELECT count(*) FROM deliveries WHERE replay_of IS NOT NULL`).Scan(&n); n != 0 {
		t.Fatalf("%d replays stored after the cancel", n)
	}
	if _, err := s.CancelReplayJob(ctx, p.TenantID, job.ID); domain.ErrorCode(err) != domain.ECONFLICT {
		t.Fatalf("second cancel: %v", err)
	}
	if _, err := s.CancelReplayJob(ctx, p.TenantID+1, job.ID); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("another tenant's cancel: %v", err)
	}
	if _, err := s.StartReplayJob(ctx, p.TenantID, domain.DeliveryFilter{}, false); err != nil {
		t.Fatalf("a new job after the cancel: %v", err)
	}
}

// TestReplayJobClaimRace: workers claiming at once, on several
// connections, get a job exactly once between them.
func TestReplayJobClaimRace(t *testing.T) {
	t.Parallel()
	s, p := pgtest.Setup(t, postgres.New)
	ctx := domain.WithActor(context.Background(), domain.Actor{Kind: domain.ActorCLI, Name: "test"})
	for round := range 5 {
		job, err := s.StartReplayJob(ctx, p.TenantID, domain.DeliveryFilter{}, false)
		if err != nil {
			t.Fatal(err)
		}
		start := make(chan struct{})
		claimed := make(chan string, 6)
		var wg sync.WaitGroup
		for i := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				worker := fmt.Sprintf("w%d", i)
				if j, ok, err := s.ClaimReplayJob(ctx, worker, time.Minute); err != nil {
					t.Error(err)
				} else if ok && j.ID == job.ID {
					claimed <- worker
				}
			}()
		}
		close(start)
		wg.Wait()
		close(claimed)
		var winners []string
		for w := range claimed {
			winners = append(winners, w)
		}
		if len(winners) != 1 {
			t.Fatalf("round %d: job claimed by %v, want exactly one worker", round, winners)
		}
		if held := mustJob(t, s, p.TenantID, job.ID); held.Status != domain.ReplayRunning {
			t.Fatalf("round %d: job %+v", round, held)
		}
		if _, err := s.CancelReplayJob(ctx, p.TenantID, job.ID); err != nil {
			t.Fatal(err)
		}
	}
}

func mustJob(t *testing.T, s *postgres.Store, tenantID, id int64) domain.ReplayJob {
	t.Helper()
	j, err := s.ReplayJob(context.Background(), tenantID, id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

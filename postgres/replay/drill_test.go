package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// TestReplayJobDeliveries: the preview lists what a job would replay, in
// its order; a job lists each original with its replay, newest first,
// paged both ways, filtered by the replays' outcome, never another
// tenant's.
func TestReplayJobDeliveries(t *testing.T) {
	t.Parallel()
	s, p := pgtest.Setup(t, postgres.New)
	other := pgtest.Provider(t, s, "other", "crm")
	ctx := domain.WithActor(context.Background(), domain.Actor{Kind: domain.ActorCLI, Name: "test"})
	keys := []domain.DeliveryKey{replayable(t, s, p, "m1"), replayable(t, s, p, "m2"), replayable(t, s, p, "m3")}

	preview, err := s.PreviewReplay(ctx, p.TenantID, domain.DeliveryFilter{}, 2)
	if err != nil || len(preview) != 2 || preview[0].ID != keys[0].ID || preview[1].ID != keys[1].ID || preview[0].Outcomes["applied"] != 1 {
		t.Fatalf("preview %+v %v", preview, err)
	}
	job, err := s.StartReplayJob(ctx, p.TenantID, domain.DeliveryFilter{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if list, _, _, err := s.ReplayJobDeliveries(ctx, job, "", domain.Page{}); err != nil || len(list) != 0 {
		t.Fatalf("queued job lists %+v %v", list, err)
	}
	held, _, err := s.ClaimReplayJob(ctx, "w", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		if err := replayStep(s, p, held, "w", k, []string{"m1", "m2", "m3"}[i]); err != nil {
			t.Fatal(err)
		}
	}
	// The other tenant's replay in the same window is not listed.
	d := pgtest.Delivery(other)
	d.ReplayOf = replayable(t, s, other, "x2").ID
	if _, err := s.Replay(ctx, d, other, []domain.Event{pgtest.Event("x2", "c-x2", 1, `{"n": 1}`)}); err != nil {
		t.Fatal(err)
	}
	job, _ = s.ReplayJob(ctx, p.TenantID, job.ID)

	list, older, newer, err := s.ReplayJobDeliveries(ctx, job, "", domain.Page{Limit: 2})
	if err != nil || len(list) != 2 || older == "" || newer != "" {
		t.Fatalf("first page %+v %q %q %v", list, older, newer, err)
	}
	if list[0].Original.ID != keys[2].ID || list[0].Replay.ReplayOf != keys[2].ID || list[0].Replay.Outcomes["duplicate"] != 1 ||
		list[0].Original.Outcomes["applied"] != 1 {
		t.Errorf("newest: %+v", list[0])
	}
	rest, _, newer, err := s.ReplayJobDeliveries(ctx, job, "", domain.Page{Limit: 2, Cursor: older})
	if err != nil || len(rest) != 1 || rest[0].Original.ID != keys[0].ID || newer == "" {
		t.Fatalf("older page %+v %v", rest, err)
	}
	back, _, _, err := s.ReplayJobDeliveries(ctx, job, "", domain.Page{Limit: 2, Before: newer})
	if err != nil || len(back) != 2 || back[0].Original.ID != keys[2].ID {
		t.Fatalf("newer page %+v %v", back, err)
	}
	if dup, _, _, err := s.ReplayJobDeliveries(ctx, job, domain.Duplicate, domain.Page{}); err != nil || len(dup) != 3 {
		t.Errorf("duplicate again: %d %v", len(dup), err)
	}
	if rej, _, _, err := s.ReplayJobDeliveries(ctx, job, domain.Rejected, domain.Page{}); err != nil || len(rej) != 0 {
		t.Errorf("rejected again: %d %v", len(rej), err)
	}
	theirs := job
	theirs.TenantID = other.TenantID
	if list, _, _, err := s.ReplayJobDeliveries(ctx, theirs, "", domain.Page{}); err != nil || len(list) != 0 {
		t.Errorf("another tenant lists %+v %v", list, err)
	}
}

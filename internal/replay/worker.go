package replay

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/domain"
)

// Worker runs bulk replay jobs (domain.ReplayService). Every serve
// node runs one: a worker claims a job for a lease, replays its deliveries
// one transaction each (the job's position moves in the same transaction),
// and gives the job back after a slice of work so that the jobs of other
// tenants take turns. A worker that stops gives its job back; one that dies
// loses it when the lease runs out, and any worker continues it from its
// position. Zero fields take the defaults.
type Worker struct {
	Replayer   *Replayer
	Deliveries domain.DeliveryService // reads each delivery of a job
	Log        *slog.Logger           // default slog.Default()

	ID    string        // names the worker in the jobs it holds; default a random UUID
	Poll  time.Duration // how often an idle worker looks for a job; default 1s
	Lease time.Duration // how long a job stays held without progress; default 30s
	Slice time.Duration // how long a worker keeps a job before giving others a turn; default 5s
	Batch int           // deliveries read ahead at a time; default 50
}

func (w Worker) withDefaults() Worker {
	if w.ID == "" {
		w.ID = uuid.NewString()
	}
	w.Poll, w.Lease, w.Slice = cmp.Or(w.Poll, time.Second), cmp.Or(w.Lease, 30*time.Second), cmp.Or(w.Slice, 5*time.Second)
	w.Batch = cmp.Or(w.Batch, 50)
	if w.Log == nil {
		w.Log = slog.Default()
	}
	return w
}

// replayAttempts is how many times in a row one delivery of a job may fail
// with an error that is neither the database being away nor the job being
// lost before the job is marked failed.
const replayAttempts = 3

// Run runs bulk replay jobs until ctx ends, then gives back the job it
// holds, so that another worker continues it at once. It returns nil: a
// failed job is marked failed, and other errors are logged and tried again.
func (w Worker) Run(ctx context.Context) error {
	w = w.withDefaults()
	rp := w.Replayer
	for ctx.Err() == nil {
		// A claim cut short by ctx could still commit unseen, holding a job
		// until its lease ends: it runs to its end, and is given back if
		// ctx ended meanwhile.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.Lease)
		job, ok, err := rp.replays.ClaimReplayJob(cctx, w.ID, w.Lease)
		cancel()
		if err != nil {
			w.Log.Warn("replay worker could not claim a job", "err", err)
		}
		if ok {
			w.runJob(ctx, job)
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(w.Poll):
		}
	}
	return nil
}

// runJob works on a claimed job for one slice, acting for the actor who
// started it.
func (w Worker) runJob(ctx context.Context, job domain.ReplayJob) {
	rp := w.Replayer
	ctx = domain.WithActor(ctx, job.CreatedBy)
	step := domain.ReplayStep{Job: job, Worker: w.ID, Lease: w.Lease}
	log := w.Log.With("tenant_id", job.TenantID, "replay_job", job.ID)
	release := func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := rp.replays.ReleaseReplayJob(rctx, job.TenantID, job.ID, w.ID); err != nil {
			log.Warn("could not give back a replay job; it is taken up again when its lease ends", "err", err)
		}
	}
	// The job acts with its actor's authority: it ends when theirs does.
	if err := rp.replays.CheckReplayActor(ctx, job); domain.ErrorCode(err) == domain.EFORBIDDEN {
		log.Warn("replay job failed: its actor may no longer replay", "err", err)
		if _, err := rp.replays.FinishReplayJob(ctx, step, domain.ReplayFailed, domain.ErrorMessage(err)); err != nil &&
			!errors.Is(err, domain.ErrReplayLeaseLost) {
			release()
		}
		return
	} else if err != nil {
		log.Warn("replay worker could not check a job's actor", "err", err)
		release()
		return
	}
	end := time.Now().Add(w.Slice)
	for time.Now().Before(end) && ctx.Err() == nil {
		keys, err := rp.replays.NextReplayable(ctx, step.Job, w.Batch)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("replay worker could not read the next deliveries", "err", err)
			}
			release()
			return
		}
		if len(keys) == 0 {
			if _, err := rp.replays.FinishReplayJob(ctx, step, domain.ReplayDone, ""); err != nil && !errors.Is(err, domain.ErrReplayLeaseLost) {
				log.Warn("could not finish a replay job", "err", err)
				release()
			}
			return
		}
		for _, key := range keys {
			step.Original = key
			if err := w.replayStep(ctx, step); err != nil {
				switch {
				case errors.Is(err, domain.ErrReplayLeaseLost):
				case ctx.Err() != nil || domain.ErrorCode(err) == domain.EUNAVAILABLE:
					release()
				default:
					log.Error("replay job failed", "delivery_id", key.ID, "err", err)
					if _, err := rp.replays.FinishReplayJob(ctx, step, domain.ReplayFailed,
						"delivery "+key.ID+": "+domain.ErrorMessage(err)); err != nil && !errors.Is(err, domain.ErrReplayLeaseLost) {
						release()
					}
				}
				return
			}
			step.Job.After = key
		}
	}
	release()
}

// replayStep replays one delivery of a job, trying again a few times after
// an unexpected error. A delivery that cannot be replayed any more (gone
// with retention, its provider removed, its body unparsable today) is
// counted as such and passed.
func (w Worker) replayStep(ctx context.Context, step domain.ReplayStep) error {
	var err error
	for attempt := 1; attempt <= replayAttempts; attempt++ {
		if err = w.replayOnce(ctx, step); err == nil || errors.Is(err, domain.ErrReplayLeaseLost) ||
			ctx.Err() != nil || domain.ErrorCode(err) == domain.EUNAVAILABLE {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt) * time.Second):
		}
	}
	return err
}

func (w Worker) replayOnce(ctx context.Context, step domain.ReplayStep) error {
	rp := w.Replayer
	orig, err := w.Deliveries.Delivery(ctx, step.Job.TenantID, step.Original.ID)
	if domain.ErrorCode(err) == domain.ENOTFOUND {
		return rp.replays.SkipReplayStep(ctx, step, domain.ReplaySkipped)
	}
	if err != nil {
		return err
	}
	_, _, err = rp.replay(ctx, orig, &step)
	var unparsable *unparsableError
	switch {
	case err == nil, errors.Is(err, domain.ErrReplayLeaseLost):
		return err
	case errors.As(err, &unparsable):
		return rp.replays.SkipReplayStep(ctx, step, domain.ReplayUnparsable)
	case domain.ErrorCode(err) == domain.ENOTFOUND, domain.ErrorCode(err) == domain.ECONFLICT:
		// Its provider was removed, or it can no longer be replayed.
		return rp.replays.SkipReplayStep(ctx, step, domain.ReplaySkipped)
	}
	return err
}

package cdc

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/backfill"
	"github.com/tidemark/tidemark/internal/pull/salesforce/pubsub"
)

// repairMargin widens a repair's window on both sides of the commit it
// repairs: a record is stamped (SystemModstamp) a little before its
// transaction commits.
const repairMargin = time.Minute

// repairer reads records again through the REST API, with backfill's
// runner and source: the change events cannot say what they changed.
type repairer struct {
	s     *Subscriber
	p     domain.ProviderEndpoint
	creds pull.Credentials
	log   *slog.Logger
}

// around backfills the entity's records modified around commit: a gap
// event's records (and an update's sent as a diff) and an overflow's
// transaction are among them.
func (r repairer) around(ctx context.Context, entity string, commit time.Time) error {
	from, to := commit.Add(-repairMargin), commit.Add(repairMargin)
	if now := time.Now(); to.After(now) {
		to = now
	}
	rep, err := r.run(ctx, backfill.Pass{Tenant: r.p.TenantSlug, Provider: r.p.Name, From: from, To: to,
		ObjectType: strings.ToLower(entity), Unscoped: true})
	if err != nil {
		return err
	}
	r.log.Info("cdc: records read again", "entity", entity, "from", from, "to", to, "found_missed", rep.Missed())
	return nil
}

// catchUp backfills every object type of the provider from since (less
// repairMargin) to now.
func (r repairer) catchUp(ctx context.Context, since time.Time) error {
	if len(r.p.Scopes) == 0 {
		return nil // nothing received yet: nothing to compare with
	}
	from, to := since.Add(-repairMargin), time.Now()
	rep, err := r.run(ctx, backfill.Pass{Tenant: r.p.TenantSlug, Provider: r.p.Name, From: from, To: to})
	if err != nil {
		return err
	}
	r.log.Warn("cdc: backfilled since the last event written", "from", from, "to", to, "found_missed", rep.Missed())
	return nil
}

func (r repairer) run(ctx context.Context, pass backfill.Pass) (backfill.Report, error) {
	runner := &backfill.Runner{Store: credentials{r.s.Store, r.creds}, Sources: backfill.NewSources(r.s.Store, r.log), Log: r.log}
	return runner.Run(ctx, pass)
}

// reset clears a replay id Salesforce refused (past its 72 hours, or
// unknown), counted and audited; the next session subscribes from the
// newest event and backfills since the last one written (catchUp).
func (s *Subscriber) reset(ctx context.Context, ref domain.CDCStreamRef, st domain.CDCStream, log *slog.Logger) error {
	since := "no event was written yet"
	if !st.CommittedAt.IsZero() {
		since = "backfilling since " + st.CommittedAt.UTC().Format(time.RFC3339) + ", the commit of the last event written"
	}
	log.Warn("cdc: Salesforce no longer knows the replay id; subscribing from the newest event", "since", since)
	err := s.Store.ResetCDC(ctx, domain.CDCReset{TenantID: ref.TenantID, ProviderID: ref.ProviderID, From: st.ReplayID,
		Target: ref.Provider, Summary: fmt.Sprintf("Salesforce no longer knew the stream's replay id (%s); subscribing from "+
			"the newest event, %s", pubsub.ErrReplayIDCorrupted.Error(), since)})
	if err != nil {
		return fmt.Errorf("clear the refused replay id: %w", err)
	}
	return nil
}

package cdc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/backfill"
	"github.com/tidemark/tidemark/internal/pull/salesforce"
	"github.com/tidemark/tidemark/internal/pull/salesforce/pubsub"
)

// session subscribes to the stream from st's replay id and writes each
// change event, in replay order, until a failure (never nil but when ctx
// ends); wrote counts the change events written.
func (s *Subscriber) session(ctx context.Context, ref domain.CDCStreamRef, st domain.CDCStream, log *slog.Logger) (wrote int, err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go s.keepLease(ctx, cancel, ref)
	defer func() {
		if errors.Is(context.Cause(ctx), errLeaseLost) {
			err = errLeaseLost
		}
	}()
	p, err := s.Store.Endpoint(ctx, ref.TenantSlug, ref.Provider)
	if err != nil {
		return 0, err
	}
	creds, ok, err := s.Store.APICredentials(ctx, p.TenantID, p.ID)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, domain.Errorf(domain.EINVALID, "provider %s has no connected app credentials: set them (provider update "+
			"--client-id ... --client-secret-stdin --login-url ...) or turn Change Data Capture off", p.Name)
	}
	src, err := salesforce.New(creds, s.Log)
	if err != nil {
		return 0, err
	}
	go s.watchAllocation(ctx, ref, src, log)
	client, err := pubsub.Dial(ctx, pubsub.Config{Address: st.PubSubAddress, AllowPrivate: st.AllowPrivate,
		Token: pubsub.SourceToken(src, p.Config["org_id"])})
	if err != nil {
		return 0, err
	}
	defer client.Close()
	sub, err := client.Subscribe(ctx, st.Channel, pubsub.Position{ReplayID: st.ReplayID}, pubsub.MaxRequested)
	if err != nil {
		return 0, signInAgain(ctx, src, err)
	}
	defer sub.Close()
	r := repairer{s: s, p: p, creds: creds, log: log}
	if st.ReplayID == nil && !st.CommittedAt.IsZero() {
		// A replay id Salesforce refused was cleared (reset): what
		// changed since the last event written comes by backfill, while
		// the new subscription holds what comes after.
		if err := r.catchUp(ctx, st.CommittedAt); err != nil {
			return 0, fmt.Errorf("backfill since the last event written, after the replay id was refused: %w", err)
		}
	}
	from := st.ReplayID
	for {
		ev, err := sub.Next()
		if err != nil {
			return wrote, signInAgain(ctx, src, err)
		}
		if err := s.write(ctx, r, ev, from); err != nil {
			return wrote, err
		}
		from = ev.ReplayID
		wrote++
	}
}

// signInAgain makes the next sign-in ask for a new token when Salesforce
// refused this one, and returns err.
func signInAgain(ctx context.Context, src *salesforce.Source, err error) error {
	if errors.Is(err, pubsub.ErrAuthentication) {
		if token, _, serr := src.Session(ctx); serr == nil {
			src.Forget(token)
		}
	}
	return err
}

// write writes one change event's delivery and moves the replay id from
// from to the event's in its transaction. A gap or overflow event, or an
// update whose long text came as a diff, is repaired first: should the
// write then fail, the event is read again and repaired again, which
// finds the same records.
func (s *Subscriber) write(ctx context.Context, r repairer, ev pubsub.ChangeEvent, from []byte) error {
	events, reread := pubsub.Events(ev)
	h := ev.Header
	commit := time.UnixMilli(h.CommitTimestamp).UTC()
	move := domain.CDCMove{TenantID: r.p.TenantID, ProviderID: r.p.ID, From: from, To: ev.ReplayID, CommittedAt: commit, Events: 1}
	if ev.Overflow || len(reread) > 0 {
		if err := r.around(ctx, h.EntityName, commit); err != nil {
			return fmt.Errorf("repair of the %s event of %s at %s: %w", h.ChangeType, h.EntityName, commit.Format(time.RFC3339), err)
		}
		switch {
		case ev.Overflow:
			move.Overflows = 1
		case ev.Gap:
			move.GapsRepaired = 1
		}
	}
	ctx, cancel := context.WithTimeout(ctx, ingestTimeout)
	defer cancel()
	_, err := s.Store.IngestCDC(ctx, backfill.PulledDelivery(r.p, domain.SourceCDC, events), r.p, events, move)
	return err
}

// credentials are the provider's connected app credentials, given to the
// backfill of a repair.
type credentials struct {
	Store
	creds pull.Credentials
}

func (c credentials) APICredentials(context.Context, int64, int64) (pull.Credentials, bool, error) {
	return c.creds, true, nil
}

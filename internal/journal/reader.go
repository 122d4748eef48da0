// Package journal reads the change journal of every installed portal of
// the HubSpot apps (HubSpot's Webhooks Journal, docs/contract/apps.md#the-journal)
// and writes each page through the ingest of every delivery, as a
// delivery whose source is journal: a change the webhooks brought is
// duplicate or redundant, one they missed applied and counted on the
// install's cursor. The page's offset moves in its delivery's transaction,
// so that a crash neither skips nor repeats an entry.
package journal

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/backfill"
	"github.com/tidemark/tidemark/internal/pull/hubspot"
	"github.com/tidemark/tidemark/internal/supervisor"
)

// DefaultInterval is serve's --journal-interval: how often each install's
// journal is read.
const DefaultInterval = 10 * time.Second

const (
	// leaseTTL is how long a node holds an install's journal without
	// writing a page: a node that died gives it up after this.
	leaseTTL = time.Minute
	// maxPagesPerTurn bounds one install's turn, so that the others get
	// theirs; the rest is read at the next.
	maxPagesPerTurn = 20
	// gapOverlap is how far before the last move the search of an expired
	// offset's gap starts: a change stamped a little before it was
	// journaled is not missed.
	gapOverlap = 5 * time.Minute
	// ingestTimeout bounds the write of one page.
	ingestTimeout = 30 * time.Second
)

// Store is what the reader needs of storage.
type Store interface {
	domain.IngestService
	domain.JournalService
	hubspot.InstallStore
	Apps(ctx context.Context) ([]domain.App, error)
	AppInstalls(ctx context.Context, appName string) ([]domain.AppInstall, error)
	EraseRecord(ctx context.Context, tenantID int64, ref domain.RecordRef) (domain.Erasure, error)
	// APICredentials are the provider's private app credentials, which
	// the search of an expired offset's gap prefers to the install's
	// tokens.
	APICredentials(ctx context.Context, tenantID, providerID int64) (pull.Credentials, bool, error)
}

// Reader reads the journals; several nodes may run one on one database:
// a lease keeps an install's journal to one node at a time, and the
// offset's compare-and-set makes a page written twice impossible.
type Reader struct {
	Store Store
	Log   *slog.Logger
	// Holder names this reader's leases; New sets a fresh one.
	Holder string
}

// New is the reader of a node.
func New(store Store, log *slog.Logger) *Reader {
	return &Reader{Store: store, Log: log, Holder: uuid.NewString()}
}

// Service reads every install's journal every interval.
func Service(r *Reader, every time.Duration) supervisor.Service {
	return supervisor.Every("journal reader", every, func(ctx context.Context) time.Duration {
		if err := r.Pass(ctx); err != nil && ctx.Err() == nil {
			r.Log.Error("journal: a pass failed", "err", err)
		}
		return every
	})
}

// actor is who the reader's erasures and audit entries name.
var actor = domain.Actor{Kind: domain.ActorCLI, Name: "journal reader"}

// Pass reads the journal of every active install with tokens of every
// HubSpot app once, up to maxPagesPerTurn pages each. An install's
// failure is logged and the others are still read.
func (r *Reader) Pass(ctx context.Context) error {
	ctx = domain.WithActor(ctx, actor)
	apps, err := r.Store.Apps(ctx)
	if err != nil {
		return err
	}
	for _, app := range apps {
		if app.Kind != domain.AppKindHubSpot {
			continue
		}
		installs, err := r.Store.AppInstalls(ctx, app.Name)
		if err != nil {
			return err
		}
		for _, in := range installs {
			if !in.HasTokens || in.Status != domain.InstallActive {
				continue // a needs_reconnect install waits for its owner
			}
			if err := r.readInstall(ctx, app, in); err != nil && ctx.Err() == nil {
				r.Log.Warn("journal: could not read an install's journal", "app", app.Name, "portal", in.PortalID,
					"tenant", in.TenantSlug, "err", err)
			}
		}
	}
	return ctx.Err()
}

// install is one install's turn.
type install struct {
	app     domain.App
	in      domain.AppInstall
	p       domain.ProviderEndpoint
	journal *hubspot.Journal
	tokens  *hubspot.TokenSource
	cursor  domain.JournalCursor
}

func (r *Reader) readInstall(ctx context.Context, app domain.App, in domain.AppInstall) error {
	cur, ok, err := r.Store.LeaseJournal(ctx, in.TenantID, in.ID, r.Holder, leaseTTL)
	if err != nil || !ok {
		return err // !ok: another node reads it now
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := r.Store.ReleaseJournal(ctx, in.TenantID, in.ID, r.Holder); err != nil {
			r.Log.Warn("journal: could not release a lease; it lapses", "portal", in.PortalID, "err", err)
		}
	}()
	p, err := r.Store.Endpoint(ctx, in.TenantSlug, in.ProviderName)
	if domain.ErrorCode(err) == domain.ENOTFOUND {
		return nil // an archived tenant's journal waits, its cursor kept, until it is unarchived
	}
	if err != nil {
		return err
	}
	c, tokens, err := hubspot.ForInstall(ctx, r.Store, app, in, r.Log)
	if err != nil {
		return err
	}
	t := &install{app: app, in: in, p: p, journal: c.Journal(tokens, in.PortalID), tokens: tokens, cursor: cur}
	for range maxPagesPerTurn {
		more, err := r.page(ctx, t)
		if errors.Is(err, domain.ErrJournalMoved) {
			// Another node wrote this page: its lease lapsed under us.
			r.Log.Info("journal: the offset moved meanwhile; reading again at the next turn", "portal", in.PortalID)
			return nil
		}
		if err != nil || !more {
			return err
		}
		if _, ok, err := r.Store.LeaseJournal(ctx, in.TenantID, in.ID, r.Holder, leaseTTL); err != nil || !ok {
			return err
		}
	}
	return nil
}

// page reads and writes the install's next page; more is false when the
// journal held nothing newer.
func (r *Reader) page(ctx context.Context, t *install) (more bool, err error) {
	pages, err := r.next(ctx, t)
	if errors.Is(err, hubspot.ErrOffsetExpired) {
		return true, r.restart(ctx, t)
	}
	if errors.Is(err, hubspot.ErrJournalEmpty) || (err == nil && len(pages) == 0) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var entries []hubspot.JournalEntry
	for _, pg := range pages {
		es, err := t.journal.Entries(ctx, pg)
		if err != nil {
			return false, err
		}
		entries = append(entries, es...)
	}
	changes := hubspot.JournalEvents(entries)
	// Erased before the page commits: should the commit fail, the page is
	// read again and its erasures run again, which finds nothing left.
	for _, e := range changes.Erasures {
		ref := domain.RecordRef{Provider: t.in.ProviderName, ObjectType: e.ObjectType, ObjectID: e.ObjectID}
		if _, err := r.Store.EraseRecord(ctx, t.in.TenantID, ref); err != nil && domain.ErrorCode(err) != domain.ENOTFOUND {
			return false, fmt.Errorf("erase %s %s (GDPR_DELETE): %w", e.ObjectType, e.ObjectID, err)
		}
	}
	move := domain.JournalMove{TenantID: t.in.TenantID, InstallID: t.in.ID, From: t.cursor.Offset,
		To: pages[len(pages)-1].Offset, Entries: len(entries)}
	ictx, cancel := context.WithTimeout(ctx, ingestTimeout)
	results, err := r.Store.IngestJournal(ictx, backfill.PulledDelivery(t.p, domain.SourceJournal, changes.Events), t.p, changes.Events, move)
	cancel()
	if err != nil {
		return false, err
	}
	missed := 0
	for _, res := range results {
		if res.Outcome == domain.Applied {
			missed++
		}
	}
	if missed > 0 {
		r.Log.Info("journal: a page found changes the webhooks missed", "app", t.app.Name, "portal", t.in.PortalID,
			"tenant", t.in.TenantSlug, "entries", len(entries), "events", len(results), "found_missed", missed)
	}
	if len(changes.Erasures) > 0 {
		r.Log.Info("journal: records erased (GDPR_DELETE)", "portal", t.in.PortalID, "tenant", t.in.TenantSlug, "records", len(changes.Erasures))
	}
	t.cursor.Offset = move.To
	return true, nil
}

// next is the pages after the cursor, or from the earliest entry (itself
// the first page's first entry) when it has no offset.
func (r *Reader) next(ctx context.Context, t *install) ([]hubspot.JournalPage, error) {
	if t.cursor.Offset != "" {
		return t.journal.Next(ctx, t.cursor.Offset, hubspot.MaxJournalBatch)
	}
	first, err := t.journal.Earliest(ctx)
	if err != nil {
		return nil, err
	}
	rest, err := t.journal.Next(ctx, first.Offset, hubspot.MaxJournalBatch-1)
	if err != nil {
		return nil, err
	}
	return append([]hubspot.JournalPage{first}, rest...), nil
}

// restart fills the gap of an expired offset, from the cursor's last move
// (less gapOverlap) to now, and clears the offset: the next page starts
// from the earliest entry.
func (r *Reader) restart(ctx context.Context, t *install) error {
	from := cmp.Or(t.cursor.MovedAt, t.in.CreatedAt).Add(-gapOverlap)
	to := time.Now()
	r.Log.Warn("journal: the offset expired; filling the gap by search, then reading from the earliest entry",
		"app", t.app.Name, "portal", t.in.PortalID, "tenant", t.in.TenantSlug, "from", from, "to", to)
	missed, err := r.fillGap(ctx, t, from, to)
	if err != nil {
		return fmt.Errorf("fill the gap of an expired offset: %w", err)
	}
	summary := fmt.Sprintf("the journal's offset had expired: searched %s to %s, %d changes found missed; reading again from the earliest entry",
		from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339), missed)
	if err := r.Store.RestartJournal(ctx, domain.JournalRestart{TenantID: t.in.TenantID, InstallID: t.in.ID, From: t.cursor.Offset,
		FoundMissed: missed, Target: fmt.Sprintf("%s portal %d", t.app.Name, t.in.PortalID), Summary: summary}); err != nil {
		return err
	}
	t.cursor.Offset, t.cursor.MovedAt = "", to
	return nil
}

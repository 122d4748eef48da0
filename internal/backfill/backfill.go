// Package backfill pulls from a provider's API the records its webhooks
// should have carried and writes them through the ingest of every delivery:
// each page of records becomes a delivery whose source is backfill, its
// events decided by the same idempotency, revision guard and conflict
// queue. A record pulled twice is a duplicate, one a webhook brought
// already is redundant or stale, a missed change is applied.
package backfill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/tracing"
)

// Store is what a backfill needs from storage: the ingest, and the
// provider's API credentials.
type Store interface {
	domain.IngestService
	APICredentials(ctx context.Context, tenantID, providerID int64) (pull.Credentials, bool, error)
}

// Sources makes the source of a provider, for these object types, from its
// credentials; an error for a kind with no API to pull from.
type Sources func(ctx context.Context, p domain.ProviderEndpoint, objectTypes []string, c pull.Credentials) (pull.Source, error)

// Pass is one backfill: the records of a provider modified in [From, To),
// of one object type or of every object type its scopes name. A job's
// pass runs in slices: each starts At the position the previous reached,
// and stops once it has used its Budget.
type Pass struct {
	Tenant, Provider string
	From, To         time.Time
	ObjectType       string // "" for all
	// Unscoped lets ObjectType be one the provider has no scope of yet:
	// a repair of what a stream brought, which the pass's deliveries then
	// give a scope.
	Unscoped bool
	At       pull.Position
	Budget   Budget // zero: unbounded (the command line's pass)
}

// Budget bounds a slice of a pass: its pages (each a source's emit) and
// its time. Zero fields bound nothing.
type Budget struct {
	Pages int
	Time  time.Duration
}

// ErrSliceSpent: the pass used its budget before its end; its report's At
// is where the next slice starts.
var ErrSliceSpent = errors.New("the backfill used its slice")

// Report counts what a pass did.
type Report struct {
	Deliveries  int
	Events      int
	Pages       int
	Outcomes    map[domain.Outcome]int
	ObjectTypes []string      // the object types pulled
	At          pull.Position // where the next slice starts, after ErrSliceSpent
}

// Missed is how many changes the pass found that webhooks had missed: the
// events it applied.
func (r Report) Missed() int { return r.Outcomes[domain.Applied] }

// String is one line per outcome, most frequent first, after a total.
func (r Report) String() string {
	var b strings.Builder
	deliveries := "deliveries"
	if r.Deliveries == 1 {
		deliveries = "delivery"
	}
	fmt.Fprintf(&b, "pulled %d events of %s in %d %s; %d changes webhooks had missed\n",
		r.Events, cmpList(r.ObjectTypes), r.Deliveries, deliveries, r.Missed())
	outcomes := make([]domain.Outcome, 0, len(r.Outcomes))
	for o := range r.Outcomes {
		outcomes = append(outcomes, o)
	}
	sort.Slice(outcomes, func(i, j int) bool {
		if r.Outcomes[outcomes[i]] != r.Outcomes[outcomes[j]] {
			return r.Outcomes[outcomes[i]] > r.Outcomes[outcomes[j]]
		}
		return outcomes[i] < outcomes[j]
	})
	for _, o := range outcomes {
		fmt.Fprintf(&b, "%-18s %d\n", o, r.Outcomes[o])
	}
	return b.String()
}

// maxEventsPerDelivery bounds a backfill delivery, as HubSpot bounds a
// batch: a page of records is written as several deliveries.
const maxEventsPerDelivery = 100

// ingestTimeout bounds the ingest of one delivery of a pass.
const ingestTimeout = 30 * time.Second

// Runner runs passes.
type Runner struct {
	Store   Store
	Sources Sources
	Log     *slog.Logger
	// Progress, when set, is called after each delivery with the report so
	// far.
	Progress func(Report)
}

// Run runs one pass and returns what it did; on error, the report says
// what was written before it.
func (r *Runner) Run(ctx context.Context, pass Pass) (rep Report, err error) {
	// A pass is a trace of its own, its deliveries' group commits in it.
	ctx, span := tracing.StartRoot(ctx, "backfill", trace.WithAttributes(tracing.AttrTenant.String(pass.Tenant),
		tracing.AttrProvider.String(pass.Provider)))
	defer func() {
		if err != nil && !errors.Is(err, ErrSliceSpent) {
			tracing.Fail(span, domain.ErrorCode(err))
		}
		span.SetAttributes(tracing.AttrEvents.Int(rep.Events))
		span.End()
	}()
	rep = Report{Outcomes: map[domain.Outcome]int{}}
	if !pass.From.Before(pass.To) {
		return rep, domain.Errorf(domain.EINVALID, "the backfill's window is empty: from %s to %s", pass.From.Format(time.RFC3339), pass.To.Format(time.RFC3339))
	}
	p, err := r.Store.Endpoint(ctx, pass.Tenant, pass.Provider)
	if err != nil {
		return rep, err
	}
	creds, ok, err := r.Store.APICredentials(ctx, p.TenantID, p.ID)
	if err != nil {
		return rep, err
	}
	if !ok {
		return rep, domain.Errorf(domain.EINVALID, "provider %s of tenant %s has no API credentials; set them with tidemark provider update", pass.Provider, pass.Tenant)
	}
	rep.ObjectTypes, err = objectTypes(p, pass.ObjectType)
	if err != nil && pass.Unscoped && pass.ObjectType != "" {
		rep.ObjectTypes, err = []string{pass.ObjectType}, nil
	}
	if err != nil {
		return rep, err
	}
	src, err := r.Sources(ctx, p, rep.ObjectTypes, creds)
	if err != nil {
		return rep, err
	}
	err = r.pull(ctx, p, src, pass, &rep)
	return rep, err
}

// minSpan is the narrowest sub-window: Salesforce's windows are whole
// seconds.
const minSpan = time.Second

// pull pulls the pass's object types from pass.At on, a sub-window at a
// time. A slice that runs out within the first sub-window it pulled gives
// it back halved, to be pulled again from its start (what it wrote is
// pulled again, as duplicates): a sub-window comes to fit in a slice
// unless more records changed within a second than a slice pulls, and an
// endless source spends the job's total bound.
func (r *Runner) pull(ctx context.Context, p domain.ProviderEndpoint, src pull.Source, pass Pass, rep *Report) error {
	sctx := ctx
	if pass.Budget.Time > 0 {
		var cancel context.CancelFunc
		sctx, cancel = context.WithTimeout(ctx, pass.Budget.Time)
		defer cancel()
	}
	spent := func() bool {
		if ctx.Err() != nil {
			return false // stopped from outside: the caller's error, not the slice's
		}
		return sctx.Err() != nil || (pass.Budget.Pages > 0 && rep.Pages >= pass.Budget.Pages)
	}
	firstWindow := true
	types := rep.ObjectTypes
	first := 0
	if pass.At.ObjectType != "" {
		first, _ = slices.BinarySearch(types, pass.At.ObjectType)
	}
	for i := first; i < len(types); i++ {
		ot := types[i]
		from, span := pass.From, time.Duration(0)
		if ot == pass.At.ObjectType {
			span = pass.At.Span
			if pass.At.From.After(from) {
				from = pass.At.From
			}
		}
		for from.Before(pass.To) {
			if spent() {
				rep.At = pull.Position{ObjectType: ot, From: from, Span: span}
				return ErrSliceSpent
			}
			end := pass.To
			if span > 0 && from.Add(span).Before(end) {
				end = from.Add(span)
			}
			pages := rep.Pages
			err := src.Pull(sctx, ot, from, end, func(events []domain.Event) error {
				// Checked before a page rather than after: a sub-window
				// whose last page the slice wrote ends within it.
				if spent() {
					return ErrSliceSpent
				}
				rep.Pages++
				for chunk := range slices.Chunk(events, maxEventsPerDelivery) {
					if err := r.write(sctx, p, chunk, rep); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil && ctx.Err() == nil && (errors.Is(err, ErrSliceSpent) || sctx.Err() != nil) {
				// Halved only when it had the whole slice and wrote pages:
				// its size ran out, not a provider's Retry-After.
				if firstWindow && rep.Pages > pages {
					span = max(end.Sub(from)/2, minSpan)
				}
				rep.At = pull.Position{ObjectType: ot, From: from, Span: span}
				return ErrSliceSpent
			}
			if err != nil {
				return fmt.Errorf("backfill of %s: %w", ot, err)
			}
			from, firstWindow = end, false
		}
		if spent() && i+1 < len(types) {
			rep.At = pull.Position{ObjectType: types[i+1]}
			return ErrSliceSpent
		}
	}
	return nil
}

// objectTypes are the object types the provider's scopes name, or only
// want when it is set (one of them).
func objectTypes(p domain.ProviderEndpoint, want string) ([]string, error) {
	var all []string
	for s := range p.Scopes {
		if s.ObjectType != "" && !slices.Contains(all, s.ObjectType) {
			all = append(all, s.ObjectType)
		}
	}
	slices.Sort(all)
	switch {
	case want != "" && !slices.Contains(all, want):
		return nil, domain.Errorf(domain.EINVALID, "provider %s has no scope of object type %q; its object types: %s",
			p.Name, want, cmpList(all))
	case want != "":
		return []string{want}, nil
	case len(all) == 0:
		return nil, domain.Errorf(domain.EINVALID, "provider %s has no scopes yet, so there is no object type to pull: "+
			"add one (the provider's page, Scopes) or let its first delivery of each type create it", p.Name)
	}
	return all, nil
}

func cmpList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// write ingests events as one backfill delivery, retrying while the
// database is unavailable.
func (r *Runner) write(ctx context.Context, p domain.ProviderEndpoint, events []domain.Event, rep *Report) error {
	d := PulledDelivery(p, domain.SourceBackfill, events)
	wait := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		ictx, cancel := context.WithTimeout(ctx, ingestTimeout)
		results, err := r.Store.Ingest(ictx, d, p, events)
		cancel()
		if err == nil {
			rep.Deliveries++
			rep.Events += len(results)
			for _, res := range results {
				rep.Outcomes[res.Outcome]++
			}
			if r.Progress != nil {
				r.Progress(*rep)
			}
			return nil
		}
		if domain.ErrorCode(err) != domain.EUNAVAILABLE || attempt == 5 || ctx.Err() != nil {
			return err
		}
		r.Log.Warn("backfill: the database is unavailable; retrying", "delivery", d.ID, "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// PulledDelivery is the delivery of events Tidemark pulled from source
// (backfill, the HubSpot journal, a CDC stream): its body the events'
// payloads as a JSON array, for the inspector; it numbers the events.
func PulledDelivery(p domain.ProviderEndpoint, source string, events []domain.Event) domain.Delivery {
	payloads := make([]json.RawMessage, len(events))
	for i := range events {
		events[i].Seq = i
		payloads[i] = events[i].Payload
		if !json.Valid(payloads[i]) {
			payloads[i], _ = json.Marshal(string(events[i].Payload))
		}
	}
	body, _ := json.Marshal(payloads)
	return domain.Delivery{ID: uuid.Must(uuid.NewV7()).String(), TenantID: p.TenantID, ProviderID: p.ID, ReceivedAt: time.Now(),
		Status: 200, Signature: domain.SignatureValid, Body: body, Source: source}
}

// Package hubspot is the HubSpot API source of backfill: it reads from a
// HubSpot account, with a private app's access token, the contacts,
// companies and deals modified or archived in a time window, as the same
// events the HubSpot webhook parser makes (internal/provider/hubspot.go),
// so the ingest's per-property guard decides pulled and pushed changes alike.
package hubspot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/egress"
)

// DefaultBaseURL is HubSpot's API address.
const DefaultBaseURL = "https://api.hubapi.com"

// hubspotCap is the most results one search query can page through
// (https://developers.hubspot.com/docs/api/crm/search, Limitations).
const hubspotCap = 10000

// objectType is how the API names one of Tidemark's HubSpot object types,
// and the property a search filters and sorts by: contacts keep the legacy
// lastmodifieddate (the search guide lists it among their default
// properties), companies and deals have hs_lastmodifieddate.
type objectType struct {
	name, api, modified string
}

var objectTypes = map[string]objectType{
	"contact": {"contact", "contacts", "lastmodifieddate"},
	"company": {"company", "companies", "hs_lastmodifieddate"},
	"deal":    {"deal", "deals", "hs_lastmodifieddate"},
}

// Source reads one HubSpot account. It implements pull.Source; its Pull
// may run for several object types at once, sharing the account's limits.
type Source struct {
	base         string
	token        string
	tokens       *TokenSource // an install's, when token is empty
	allowPrivate bool
	share        float64
	http         *http.Client
	log          *slog.Logger
	searchGap    time.Duration

	mu               sync.Mutex
	lastSearch       time.Time
	daily, remaining int64 // the daily budget as last seen; daily 0: unknown
	cap              int   // the search cap, lowered if HubSpot refuses to page sooner
}

var _ pull.Source = (*Source)(nil)

// New returns the source of the account c.Token belongs to. It returns an
// EINVALID error when the token is missing or malformed, the base URL is not
// an http(s) URL, or the budget share is outside 0 to 1. The base URL's
// address is checked against private ranges when Pull starts, and by the
// dialer on every connection, unless c.AllowPrivate.
func New(c pull.Credentials, log *slog.Logger) (*Source, error) {
	if c.Token == "" {
		return nil, domain.Errorf(domain.EINVALID, "a HubSpot private app access token is required")
	}
	if strings.IndexFunc(c.Token, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0 {
		return nil, domain.Errorf(domain.EINVALID, "the HubSpot access token must be printable, without spaces")
	}
	return newSource(c, nil, log)
}

// NewForInstall returns the source of an installed portal, whose calls
// carry the install's access token (renewed by tokens) rather than a
// private app's: the journal's gap is searched this way. c gives the API
// base and the budget share; its Token is not used.
func NewForInstall(c pull.Credentials, tokens *TokenSource, log *slog.Logger) (*Source, error) {
	return newSource(c, tokens, log)
}

func newSource(c pull.Credentials, tokens *TokenSource, log *slog.Logger) (*Source, error) {
	// The form only, without a lookup: New has no context to bound one.
	u, err := egress.CheckURL(context.Background(), cmp.Or(c.BaseURL, DefaultBaseURL), true)
	if err != nil {
		return nil, domain.Errorf(domain.EINVALID, "the HubSpot API base %v", err)
	}
	share := cmp.Or(c.BudgetShare, pull.DefaultBudgetShare)
	if share < 0 || share > 1 {
		return nil, domain.Errorf(domain.EINVALID, "the budget share must be from 0 to 1; got %g", share)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Source{
		base:         strings.TrimRight(u.String(), "/"),
		token:        c.Token,
		tokens:       tokens,
		allowPrivate: c.AllowPrivate,
		share:        share,
		http:         egress.NewClient(c.AllowPrivate, requestLimit),
		log:          log,
		searchGap:    searchGap,
		cap:          hubspotCap,
	}, nil
}

// Pull emits the records of objectType (contact, company or deal) modified
// in [from, to), found by the CRM search API a page at a time in the order
// of their last modification, then those archived in [from, to) as
// deletions. See pull.Source. An unknown object type is an EINVALID error;
// a refused token an EINVALID error naming it invalid or short of scopes;
// a spent budget an EUNAVAILABLE error.
func (s *Source) Pull(ctx context.Context, objectType string, from, to time.Time, emit func([]domain.Event) error) error {
	o, ok := objectTypes[objectType]
	if !ok {
		return domain.Errorf(domain.EINVALID, "HubSpot backfill reads contact, company and deal records; got object type %q", objectType)
	}
	if to.Before(from) {
		return domain.Errorf(domain.EINVALID, "the window ends (%s) before it starts (%s)", to.Format(time.RFC3339), from.Format(time.RFC3339))
	}
	if _, err := egress.CheckURL(ctx, s.base, s.allowPrivate); err != nil {
		return domain.Errorf(domain.EINVALID, "the HubSpot API base %v", err)
	}
	// Whole milliseconds, widened: HubSpot's times are milliseconds.
	start, end := from.UnixMilli(), to.Add(time.Millisecond-1).UnixMilli()
	w := &walk{s: s, o: o, emit: emit}
	if start < end {
		if err := w.window(ctx, start, end, nil); err != nil {
			return err
		}
	}
	deleted, err := s.deletions(ctx, o, start, end, emit)
	if err != nil {
		return err
	}
	s.log.Info("hubspot: pulled", "object_type", objectType, "from", from, "to", to,
		"records", w.records, "events", w.events, "deletions", deleted, "searches", w.searches)
	return nil
}

// walk is one Pull's walk of the search API over its window.
type walk struct {
	s    *Source
	o    objectType
	emit func([]domain.Event) error

	records, events, searches int
}

// searchLimit is the page size asked for (HubSpot allows up to 200).
const searchLimit = 100

// window emits the records modified in [from, to) (epoch milliseconds),
// skipping the ids in skip (records modified at from that an earlier walk
// emitted). A window with more results than the search can page through is
// split in halves; a walk that reaches the cap anyway (records modified
// meanwhile, or a cap smaller than believed) resumes from the last record's
// modification time.
func (w *walk) window(ctx context.Context, from, to int64, skip map[string]bool) error {
	after := ""
	seen := 0
	var last int64
	lastIDs := map[string]bool{}
	for {
		var page searchPage
		w.searches++
		err := w.s.call(ctx, http.MethodPost, "/crm/v3/objects/"+w.o.api+"/search", searchBody(w.o, from, to, after), &page)
		var refused *apiError
		if after != "" && errors.As(err, &refused) && refused.Status == http.StatusBadRequest {
			// Only the cursor differs from the first page's request: the
			// search refuses to page further than it has.
			w.s.lowerCap(seen)
			w.s.log.Info("hubspot: the search stopped paging; resuming from the last record", "object_type", w.o.name, "after", seen, "message", refused.Message)
			return w.resume(ctx, from, last, to, lastIDs)
		}
		if err != nil {
			return fmt.Errorf("hubspot: search %s: %w", w.o.api, err)
		}
		if capacity := w.s.searchCap(); after == "" && page.Total > capacity {
			if to-from < 2 {
				return fmt.Errorf("hubspot: %d %s were modified in the same millisecond (%s), more than the search can page through (%d)",
					page.Total, w.o.api, time.UnixMilli(from).UTC().Format(time.RFC3339Nano), capacity)
			}
			mid := from + (to-from)/2
			w.s.log.Debug("hubspot: splitting a window over the search cap", "object_type", w.o.name, "total", page.Total,
				"from", time.UnixMilli(from).UTC(), "to", time.UnixMilli(to).UTC())
			if err := w.window(ctx, from, mid, skip); err != nil {
				return err
			}
			return w.window(ctx, mid, to, nil)
		}
		var fresh []searchObject
		for _, r := range page.Results {
			if !skip[r.ID] {
				fresh = append(fresh, r)
			}
			if m := r.modified(w.o); m != last {
				last, lastIDs = m, map[string]bool{}
			}
			lastIDs[r.ID] = true
		}
		if err := w.emitRecords(ctx, fresh); err != nil {
			return err
		}
		seen += len(page.Results)
		if page.Paging.Next.After == "" {
			return nil
		}
		if seen+searchLimit > w.s.searchCap() {
			return w.resume(ctx, from, last, to, lastIDs)
		}
		after = page.Paging.Next.After
	}
}

// resume walks [last, to) after a walk from from stopped at the cap,
// skipping the records at last it emitted.
func (w *walk) resume(ctx context.Context, from, last, to int64, emitted map[string]bool) error {
	if last <= from {
		return fmt.Errorf("hubspot: the search of %s stopped paging within one millisecond (%s)", w.o.api, time.UnixMilli(from).UTC().Format(time.RFC3339Nano))
	}
	return w.window(ctx, last, to, emitted)
}

func (w *walk) emitRecords(ctx context.Context, records []searchObject) error {
	if len(records) == 0 {
		return nil
	}
	events, err := w.s.recordEvents(ctx, w.o, records)
	if err != nil {
		return err
	}
	w.records += len(records)
	w.events += len(events)
	if len(events) == 0 {
		return nil
	}
	return w.emit(events)
}

func (s *Source) searchCap() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cap
}

func (s *Source) lowerCap(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n > 0 && n < s.cap {
		s.cap = n
	}
}

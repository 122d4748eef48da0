// Package destinations is the console's destination pages
// (/t/{tenant}/destinations): where a workspace's accepted changes are
// pushed, their status and lag, recent attempts, and the owners' actions
// on them. It is a page family of web/console: web/console registers its
// routes, behind the session, the tenant, the owner role and cross-origin
// protection, and hands it the page frame through Console.
package destinations

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/egress"
	"github.com/tidemark/tidemark/internal/sink"
	"github.com/tidemark/tidemark/views"
	"github.com/tidemark/tidemark/web/console/shell"
)

// Pages serves the destination pages.
type Pages struct {
	Console shell.Console
	Store   Store
	Log     *slog.Logger
	Now     func() time.Time
}

// Store is what the destination pages read and change; the feed is what
// a preview of a filter and transform is tried on.
type Store interface {
	stream.DestinationService
	stream.ChangeFeed
}

// lookupTimeout bounds the DNS lookup of a new destination's host.
const lookupTimeout = 5 * time.Second

// HandleList lists the tenant's destinations with the form to add one.
func (p Pages) HandleList(w http.ResponseWriter, r *http.Request) {
	p.renderList(w, r, http.StatusOK, views.DestinationsPage{Form: views.DestinationForm{MaxInFlight: defaultMaxInFlight}})
}

// defaultMaxInFlight is what the create form starts with.
var defaultMaxInFlight = strconv.Itoa(stream.DefaultMaxInFlight)

func (p Pages) renderList(w http.ResponseWriter, r *http.Request, status int, v views.DestinationsPage) {
	ctx, tenantID := r.Context(), p.Console.Membership(r).Tenant.ID
	ds, err := p.Store.Destinations(ctx, tenantID)
	if err != nil {
		p.Console.Error(w, r, err)
		return
	}
	for _, d := range ds {
		// The newest attempt of each: a tenant has a handful of destinations.
		last, _, err := p.Store.DestinationAttempts(ctx, tenantID, d.ID, domain.Page{Limit: 1})
		if err != nil {
			p.Console.Error(w, r, err)
			return
		}
		row := views.DestinationRow{Destination: d}
		if len(last) > 0 {
			row.Last = &last[0]
		}
		v.Destinations = append(v.Destinations, row)
	}
	v.Now = p.Now()
	p.Console.Render(w, r, status, views.DestinationsView(p.Console.Layout(r, "Destinations", "destinations"), v))
}

// HandleCreate stores a destination and answers with its signing secret,
// which exists in plaintext only in this response. Its address must be
// public: the console never allows private ones (only the CLI can).
func (p Pages) HandleCreate(w http.ResponseWriter, r *http.Request) {
	m := p.Console.Membership(r)
	form := views.DestinationForm{URL: strings.TrimSpace(r.PostFormValue("url")),
		NATSURL: strings.TrimSpace(r.PostFormValue("nats_url")), Subject: strings.TrimSpace(r.PostFormValue("subject")),
		Provider: strings.TrimSpace(r.PostFormValue("provider")), ObjectType: strings.TrimSpace(r.PostFormValue("object_type")),
		Format: r.PostFormValue("format"), MaxInFlight: strings.TrimSpace(r.PostFormValue("max_in_flight")),
		NATSTLSCA: strings.TrimSpace(r.PostFormValue("nats_tls_ca")),
		Filter:    strings.TrimSpace(r.PostFormValue("filter")), Transform: strings.TrimSpace(r.PostFormValue("transform"))}
	form.Types = r.PostForm["types"] // parsed by PostFormValue above
	if r.PostFormValue("preview") != "" {
		preview := p.preview(r, form.Filter, form.Transform)
		p.renderList(w, r, http.StatusOK, views.DestinationsPage{Form: form, Preview: &preview})
		return
	}
	nd := stream.NewDestination{URL: form.URL, NATSURL: form.NATSURL, Subject: form.Subject, Provider: form.Provider,
		ObjectType: form.ObjectType, Types: form.Types, Format: form.Format, Filter: form.Filter, Transform: form.Transform,
		NATS: stream.NATSAuth{Creds: r.PostFormValue("nats_creds"), NKey: r.PostFormValue("nats_nkey"), TLSCA: form.NATSTLSCA}}
	var err error
	if form.MaxInFlight != "" {
		if nd.MaxInFlight, err = strconv.Atoi(form.MaxInFlight); err != nil {
			err = domain.Errorf(domain.EINVALID, "Changes in flight must be a whole number from 1 to %d", stream.MaxMaxInFlight)
		}
	}
	if err == nil {
		err = p.checkPublic(r, nd)
	}
	var (
		d      stream.Destination
		secret string
	)
	if err == nil {
		d, secret, err = p.Store.CreateDestination(r.Context(), m.Tenant.ID, nd)
	}
	if code := domain.ErrorCode(err); code == domain.EINVALID || code == domain.ECONFLICT {
		form.Error = domain.ErrorMessage(err)
		p.renderList(w, r, http.StatusUnprocessableEntity, views.DestinationsPage{Form: form})
		return
	}
	if err != nil {
		p.Console.Error(w, r, err)
		return
	}
	p.logChange(r, "destination created", d.ID, "target", d.RedactedTarget())
	w.Header().Set("Cache-Control", "no-store") // the page holds the secret
	p.renderList(w, r, http.StatusOK, views.DestinationsPage{Created: &views.NewSecret{Destination: d, Secret: secret},
		Form: views.DestinationForm{MaxInFlight: defaultMaxInFlight}})
}

// checkPublic checks nd as the API and the CLI do, never allowing a
// private address: the form has no such choice. What the owner is not
// told of a refusal (the address, the resolver's error) is logged.
func (p Pages) checkPublic(r *http.Request, nd stream.NewDestination) error {
	ctx, cancel := context.WithTimeout(r.Context(), lookupTimeout)
	defer cancel()
	nd.AllowPrivate = false
	_, err := sink.Check(ctx, nd)
	if d := egress.Detail(err); d != "" {
		p.Log.InfoContext(r.Context(), "destination URL refused", "tenant", p.Console.Membership(r).Tenant.Slug, "detail", d)
	}
	return err
}

// logChange logs an owner's change of a destination; never its secret.
func (p Pages) logChange(r *http.Request, msg string, id int64, attrs ...any) {
	by := ""
	if a, ok := domain.ActorFrom(r.Context()); ok {
		by = a.Name
	}
	p.Log.Info(msg, append([]any{"tenant", p.Console.Membership(r).Tenant.Slug, "destination", id, "by", by}, attrs...)...)
}

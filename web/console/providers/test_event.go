package providers

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
)

// HandleTestEvent sends a sample delivery of the provider's kind, signed
// (or otherwise authenticated) as the provider would, through the real
// receiver in-process, so everything a provider's delivery goes through
// (authentication, parsing, ingest, the delivery log) is exercised; the
// answer is shown as a flash.
func (h Pages) HandleTestEvent(w http.ResponseWriter, r *http.Request) {
	p, k, ok := h.currentProvider(w, r)
	if !ok {
		return
	}
	t := h.tenant(r)
	var secret string
	if k.HasSecrets() {
		var err error
		secret, err = h.Providers.NewestProviderSecret(r.Context(), t.ID, p.ID)
		if domain.ErrorCode(err) == domain.ENOTFOUND {
			h.Console.RedirectWithFlash(w, r, h.providerURL(r, p.Name), "error", "The provider has no active secret to sign with: rotate to create one.")
			return
		}
		if err != nil {
			h.Console.Error(w, r, err)
			return
		}
	}
	now := h.Now()
	// Kinds that sign the URL sign the one the webhook handler derives from
	// this request, so the delivery is sent to this request's host.
	sample, err := k.TestDelivery(h.endpointURL(r, p.Name), secret, p.Config, now)
	if err != nil {
		h.Console.Error(w, r, fmt.Errorf("sign test event: %w", err))
		return
	}
	d := inProcessDelivery{tenant: t.Slug, provider: p.Name, host: r.Host, tls: r.TLS, Delivery: sample}
	status, answer := h.deliverInProcess(r.Context(), d)

	kind, msg := "ok", fmt.Sprintf("Test event answered %d %s", status, http.StatusText(status))
	var parsed struct {
		Results []struct {
			Outcome string `json:"outcome"`
		} `json:"results"`
	}
	switch {
	case sample.EventID != "" && status == http.StatusOK:
		// The kind's answer carries no outcome (sample.EventID names the
		// event then): read it from the log.
		if sample.Ack != "" && bytes.Contains(answer, []byte(sample.Ack)) {
			msg += ", " + sample.AckNote
		}
		o, err := h.Events.EventOutcome(r.Context(), t.ID, p.ID, sample.EventID, now.Add(-time.Minute))
		if err == nil {
			msg += ", outcome " + string(o)
		} else {
			h.Log.Warn("test event outcome not found", "tenant", t.Slug, "provider", p.Name, "err", err)
		}
	case json.Unmarshal(answer, &parsed) == nil && len(parsed.Results) == 1:
		msg += ", outcome " + parsed.Results[0].Outcome
	}
	if status != http.StatusOK {
		kind = "error"
	}
	h.Console.RedirectWithFlash(w, r, h.providerURL(r, p.Name), kind, msg+": "+string(bytes.TrimSpace(answer)))
}

// inProcessDelivery is a delivery handed to the webhook handler directly.
type inProcessDelivery struct {
	provider.Delivery
	tenant, provider string
	host             string               // the Host the delivery was sent to; empty for none
	tls              *tls.ConnectionState // non-nil when sent over HTTPS
}

// deliverInProcess hands a delivery to the webhook handler as the router
// would, and returns its status and body.
func (h Pages) deliverInProcess(ctx context.Context, d inProcessDelivery) (int, []byte) {
	rctx := chi.NewRouteContext()
	rctx.URLParams.Add("tenant", d.tenant)
	rctx.URLParams.Add("provider", d.provider)
	target := "/webhooks/" + d.tenant + "/" + d.provider
	if d.Query != "" {
		target += "?" + d.Query
	}
	req, _ := http.NewRequestWithContext(context.WithValue(ctx, chi.RouteCtxKey, rctx), http.MethodPost, target, bytes.NewReader(d.Body))
	req.RemoteAddr = d.RemoteAddr
	req.Host, req.TLS = d.host, d.tls
	if d.ContentType == "" {
		d.ContentType = "application/json"
	}
	req.Header.Set("Content-Type", d.ContentType)
	for k, v := range d.Headers {
		req.Header.Set(k, v)
	}
	rec := &capturedResponse{header: http.Header{}, status: http.StatusOK}
	h.Webhook.ServeHTTP(rec, req)
	return rec.status, rec.body.Bytes()
}

// capturedResponse keeps what a handler wrote.
type capturedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
	wrote  bool
}

func (c *capturedResponse) Header() http.Header { return c.header }

func (c *capturedResponse) WriteHeader(status int) {
	if !c.wrote {
		c.status, c.wrote = status, true
	}
}

func (c *capturedResponse) Write(b []byte) (int, error) {
	c.wrote = true
	return c.body.Write(b)
}

package providers

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
)

// HandleTestEvent sends a sample delivery of the provider's kind, signed
// (or otherwise authenticated) as the provider would, through the real
// receiver in-process, so everything a provider's delivery goes through
// (authentication, parsing, ingest, the delivery log) is exercised; the
// answer is shown as a flash, in words.
func (h Pages) HandleTestEvent(w http.ResponseWriter, r *http.Request) {
	p, k, ok := h.currentProvider(w, r)
	if !ok {
		return
	}
	t := h.tenant(r)
	var secret string
	if k.HasSecrets() {
		var err error
		secret, err = h.Store.NewestProviderSecret(r.Context(), t.ID, p.ID)
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

	msg := testEventMessage(status, answer)
	if sample.EventID != "" && status == http.StatusOK {
		// The kind's answer carries no outcome (sample.EventID names the
		// event then): read it from the log.
		msg = "Test event sent"
		o, err := h.Store.EventOutcome(r.Context(), t.ID, p.ID, sample.EventID, now.Add(-time.Minute))
		if err == nil {
			msg += ": " + domain.OutcomeLabel(string(o))
		} else {
			h.Log.WarnContext(r.Context(), "test event outcome not found", "tenant", t.Slug, "provider", p.Name, "err", err)
		}
		if sample.Ack != "" && bytes.Contains(answer, []byte(sample.Ack)) {
			msg += " (answered " + sample.AckNote + ")"
		}
		msg += "."
	}
	kind := "ok"
	if status != http.StatusOK && status != http.StatusAccepted {
		kind = "error"
	}
	h.Console.RedirectWithFlash(w, r, h.providerURL(r, p.Name), kind, msg)
}

// testEventResult is one item of the receiver's 200 answer
// (docs/contract/webhooks.md#the-200-body).
type testEventResult struct {
	Outcome    string `json:"outcome"`
	ContactID  string `json:"contact_id"`
	ObjectType string `json:"object_type"`
	ObjectID   string `json:"object_id"`
	Revision   *int64 `json:"revision"`
	Reason     string `json:"reason"`
}

// testEventMessage says in words what the receiver answered a test event
// ("Test event sent: applied (contact tidemark-test, revision 12)."), not
// as the JSON it sent.
func testEventMessage(status int, answer []byte) string {
	var parsed struct {
		Results []testEventResult `json:"results"`
		Error   string            `json:"error"`
	}
	isJSON := json.Unmarshal(answer, &parsed) == nil
	switch {
	case status == http.StatusOK && isJSON && len(parsed.Results) > 0:
		parts := make([]string, len(parsed.Results))
		for i, res := range parsed.Results {
			parts[i] = testEventResultText(res)
		}
		return "Test event sent: " + strings.Join(parts, "; ") + "."
	case status == http.StatusOK:
		return "Test event sent."
	case status == http.StatusAccepted:
		return "Test event queued: a worker applies it shortly; its outcome shows in the recent deliveries."
	}
	why := strings.TrimSpace(parsed.Error)
	if !isJSON || why == "" {
		why = strings.TrimSpace(string(answer))
		if len(why) > 200 {
			why = strings.ToValidUTF8(why[:200], "") + "…"
		}
	}
	msg := fmt.Sprintf("Test event refused: %d %s", status, http.StatusText(status))
	if why != "" {
		msg += ": " + why
	}
	return msg
}

// testEventResultText is one event's outcome and record in words.
func testEventResultText(res testEventResult) string {
	text := domain.OutcomeLabel(res.Outcome)
	var about []string
	switch {
	case res.ContactID != "":
		about = append(about, "contact "+res.ContactID)
	case res.ObjectID != "":
		about = append(about, res.ObjectType+" "+res.ObjectID)
	}
	if res.Revision != nil {
		about = append(about, "revision "+strconv.FormatInt(*res.Revision, 10))
	}
	if len(about) > 0 {
		text += " (" + strings.Join(about, ", ") + ")"
	}
	if res.Reason != "" {
		text += ": " + res.Reason
	}
	return text
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

package deliveries

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/internal/replay"
	"github.com/tidemark/tidemark/views"
	"github.com/tidemark/tidemark/web/httpx"
)

// replaysPageSize is how many replays the inspector lists at a time.
const replaysPageSize = 20

// HandleDelivery is the delivery inspector: one delivery with its request,
// body and events, the answer Tidemark sent, its processing time, its
// replays (newest first, paged both ways) and "copy as curl".
func (p Pages) HandleDelivery(w http.ResponseWriter, r *http.Request) {
	ctx, t := r.Context(), p.tenant(r)
	d, err := p.Store.Delivery(ctx, t.ID, chi.URLParam(r, "id"))
	if err != nil {
		p.Console.Error(w, r, err)
		return
	}
	q := r.URL.Query()
	replays, err := p.Store.ReplaysOf(ctx, t.ID, d.ID, domain.Page{Limit: replaysPageSize,
		Cursor: q.Get("replays"), Before: q.Get("replays_before")})
	if err != nil {
		p.Console.Error(w, r, err)
		return
	}
	v := views.DeliveryPage{Delivery: d, Back: SafeBack(t.Slug, q.Get("back")), Replays: replays.Deliveries,
		ReplayPages: pages(r, replays.Older, replays.Newer, "replays", "replays_before"),
		Answer:      Answer(d), Curl: Curl(httpx.BaseURL(p.PublicURL, r), d)}
	if !d.AnsweredAt.IsZero() && !d.AnsweredAt.Before(d.ReceivedAt) {
		v.Processing = d.AnsweredAt.Sub(d.ReceivedAt)
		v.Processed = true
	}
	if err := d.Replayable(); err != nil {
		v.NotReplayable = domain.ErrorMessage(err)
	}
	p.Console.Render(w, r, http.StatusOK, views.DeliveryView(p.Console.Layout(r, "Delivery "+d.ID, "events"), v))
}

// Answer rebuilds the answer Tidemark sent from what the delivery log
// stores, which holds no answer: the kind's own answer (Kind.Respond) to
// the stored outcomes for an accepted delivery, {"error": reason} for a
// refused one. Notes say where it may differ.
func Answer(d domain.DeliveryDetail) views.DeliveryAnswer {
	a := views.DeliveryAnswer{Status: d.Status}
	rec := httptest.NewRecorder()
	switch kind, ok := provider.Lookup(d.ProviderKind); {
	case d.Status == http.StatusOK && ok:
		results := make([]domain.Result, len(d.Events))
		for i, e := range d.Events {
			results[i] = domain.Result{EventID: e.EventID, ObjectType: e.ObjectType, ObjectID: e.ObjectID, Revision: e.Revision,
				Outcome: e.Outcome, Reason: e.Reason}
		}
		if d.ReplayOf != "" {
			provider.RespondJSON(rec, d.ID, results) // a replay answers JSON whatever its kind
		} else {
			kind.Respond(rec, d.ID, results)
		}
		a.Notes = append(a.Notes, "current_revision (the record's revision when an event was stale or in conflict) is not stored: it shows as null here.",
			"In queued mode (serve --queue) the sender was answered at once with the delivery id and \"queued\" instead.")
	default:
		httpx.WriteError(rec, d.Status, d.Reason)
		if d.Status == http.StatusTooManyRequests {
			a.Notes = append(a.Notes, "A 429 answered \"too many refused deliveries\" from the address or for the provider, not the reason shown, which is why the delivery was refused first.")
		}
	}
	a.ContentType = rec.Header().Get("Content-Type")
	a.Body = strings.TrimRight(rec.Body.String(), "\n")
	return a
}

// curlSkipped are headers curl sets itself or a proxy added.
var curlSkipped = []string{"Accept-Encoding", "Connection", "Content-Length", "Host", "Transfer-Encoding", "Te", "Upgrade",
	"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Real-Ip", "Forwarded"}

// redacted stands for a credential in "copy as curl".
const redacted = "<redacted>"

// Curl is a curl command that resends the stored request to the same
// webhook URL (base is the public URL) with its headers and body as
// stored: credentials (signatures, tokens, authorization, cookies, by
// the generic rule and the kind's) are replaced by <redacted>, whatever
// the log kept of them, so a resend must be signed again. A body that is
// not text is piped through base64; "" when the request was not kept.
func Curl(base string, d domain.DeliveryDetail) string {
	req := d.Request
	if req.Method == "" {
		return ""
	}
	target := strings.TrimRight(base, "/") + req.Path
	if req.Query != "" {
		parts := strings.Split(req.Query, "&")
		for i, part := range parts {
			key, _, hasValue := strings.Cut(part, "=")
			name, err := url.QueryUnescape(key)
			if err != nil {
				name = key
			}
			if hasValue && credential(d.ProviderKind, name, provider.CredentialQuery) {
				parts[i] = key + "=" + url.QueryEscape(redacted)
			}
		}
		target += "?" + strings.Join(parts, "&")
	}
	var b strings.Builder
	body := d.Body
	binary := body != nil && !utf8.Valid(body)
	if binary {
		fmt.Fprintf(&b, "echo %s | base64 -d | ", base64.StdEncoding.EncodeToString(body))
	}
	fmt.Fprintf(&b, "curl -X %s %s", provider.ShellWord(req.Method), provider.ShellQuote(target))
	names := make([]string, 0, len(req.Headers))
	for name := range req.Headers {
		if !slices.Contains(curlSkipped, http.CanonicalHeaderKey(name)) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		for _, value := range req.Headers[name] {
			if credential(d.ProviderKind, name, provider.CredentialHeader) || strings.HasSuffix(value, "…") {
				value = redacted
			}
			fmt.Fprintf(&b, " \\\n  -H %s", provider.ShellQuote(name+": "+value))
		}
	}
	switch {
	case binary:
		b.WriteString(" \\\n  --data-binary @-")
	case body != nil:
		fmt.Fprintf(&b, " \\\n  --data-binary %s", provider.ShellQuote(string(body)))
	}
	return b.String()
}

// credential reports whether a header or query parameter name carries a
// credential by the generic rule or the kind's.
func credential(kind, name string, byKind func(kind, name string) bool) bool {
	return domain.CredentialName(name) || byKind(kind, name)
}

// HandleReplayDelivery replays one delivery and shows the new one.
func (p Pages) HandleReplayDelivery(w http.ResponseWriter, r *http.Request) {
	ctx, t := r.Context(), p.tenant(r)
	back := "/t/" + t.Slug + views.DeliveryPath(chi.URLParam(r, "id"))
	orig, err := p.Store.Delivery(ctx, t.ID, chi.URLParam(r, "id"))
	if err != nil {
		p.Console.Error(w, r, err)
		return
	}
	id, results, err := p.Replayer.Replay(ctx, orig)
	var limited *replay.LimitedError
	if errors.As(err, &limited) {
		p.Console.RedirectWithFlash(w, r, back, "error", limited.Error())
		return
	}
	if code := domain.ErrorCode(err); code == domain.ECONFLICT || code == domain.ENOTFOUND {
		p.Console.RedirectWithFlash(w, r, back, "error", domain.ErrorMessage(err))
		return
	}
	if err != nil {
		p.Console.Error(w, r, err)
		return
	}
	msg := "Replayed as this delivery"
	if counts := views.OutcomeCounts(domain.CountResults(results)); counts != "" {
		msg += ": " + counts
	}
	p.Console.RedirectWithFlash(w, r, "/t/"+t.Slug+views.DeliveryPath(id), "ok", msg+".")
}

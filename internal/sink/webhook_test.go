package sink_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/sink"
	"github.com/tidemark/tidemark/internal/whsig"
)

// conns are a sender's Conns for a test, closed when it ends.
func conns(t *testing.T) *sink.Conns {
	t.Helper()
	c := sink.Open(sink.Options{Timeout: 5 * time.Second, Idle: time.Minute, MaxConns: 4, Log: slog.Default()})
	t.Cleanup(c.Close)
	return c
}

// request is what a fake receiver got.
type request struct {
	header http.Header
	body   string
}

// receiver is a fake destination that answers status (with Retry-After
// when given) and hands over each request it got.
func receiver(t *testing.T, status int, retryAfter string) (*httptest.Server, <-chan request) {
	t.Helper()
	got := make(chan request, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- request{r.Header.Clone(), string(b)}
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(status)
		io.WriteString(w, "busy\nnow")
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

var (
	change = stream.QueuedChange{Change: stream.Change{TenantID: 7, Position: 42, Type: stream.ChangeApplied,
		Provider: "crm", ObjectType: "contact", ObjectID: "c-1", CommittedAt: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}}
	fired = alerting.Event{TenantID: 7, ID: 5, Type: alerting.EventFired, At: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC),
		Alert: alerting.Alert{ID: 9, Rule: "refusals", Provider: "crm", Summary: "crm refused <3> & more.", Value: 4, Threshold: 1,
			Window: 5 * time.Minute, StartedAt: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}}
	alert = stream.QueuedChange{Change: stream.Change{Position: (5 + stream.AlertQueueBase)}, Alert: &fired}
)

// TestWebhookSends: a change and an alert event POSTed as signed Standard
// Webhooks messages; an answer other than 2xx with its status, an excerpt
// and its Retry-After.
func TestWebhookSends(t *testing.T) {
	t.Parallel()
	secret := whsig.NewSecret()
	srv, got := receiver(t, http.StatusOK, "")
	d := stream.LeasedDestination{TenantID: 7, ID: 1, TenantSlug: "acme", Kind: "webhook", URL: srv.URL + "/hook",
		AllowPrivate: true, Format: stream.FormatStandard, Secrets: []string{secret}}
	c := conns(t)
	for _, m := range []stream.QueuedChange{change, alert} {
		if a := c.Send(context.Background(), d, m); a.Status != http.StatusOK || a.Err != "" {
			t.Fatalf("%s: %+v", m.MessageID(), a)
		}
		r := <-got
		if err := whsig.Verify(secret, r.header, []byte(r.body), time.Now(), time.Minute); err != nil ||
			r.header.Get("webhook-id") != m.MessageID() || r.header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: headers %v (%v)", m.MessageID(), r.header, err)
		}
		var msg struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal([]byte(r.body), &msg); err != nil || (msg.Type != "record.applied" && msg.Type != "alert.fired") {
			t.Errorf("body %s (%v)", r.body, err)
		}
	}

	busy, _ := receiver(t, http.StatusServiceUnavailable, "7")
	d.URL = busy.URL
	if a := c.Send(context.Background(), d, change); a.Status != http.StatusServiceUnavailable ||
		a.Err != "answered 503 Service Unavailable: busy now" || a.RetryAfter != 7*time.Second {
		t.Errorf("busy: %+v", a)
	}
}

// TestWebhookRefusesPrivateAddresses: without allow_private, the address
// is refused when connecting, naming the host and redacting the query.
func TestWebhookRefusesPrivateAddresses(t *testing.T) {
	t.Parallel()
	srv, _ := receiver(t, http.StatusOK, "")
	d := stream.LeasedDestination{TenantID: 7, ID: 1, Kind: "webhook", URL: srv.URL + "/hook?token=S3cr3t", Secrets: []string{whsig.NewSecret()}}
	a := conns(t).Send(context.Background(), d, change)
	if a.Status != 0 || !strings.Contains(a.Err, "private or internal address") || strings.Contains(a.Err, "S3cr3t") {
		t.Errorf("%+v; want the private address refused, the token redacted", a)
	}
}

// TestUnknownKindIsNotSent: a destination of a kind this node does not
// know is answered with an error, never sent some other way.
func TestUnknownKindIsNotSent(t *testing.T) {
	t.Parallel()
	a := conns(t).Send(context.Background(), stream.LeasedDestination{Kind: "carrier-pigeon"}, change)
	if a.Status != 0 || !strings.Contains(a.Err, "does not know destination kind carrier-pigeon") {
		t.Errorf("%+v", a)
	}
}

package web_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/alerting"
	"github.com/tidemark/tidemark/internal/outbound"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestDestinationURLSecretsStayWithOwners (review 4, M2): a destination
// with a token in its URL's query fails until it is paused as failing
// and its alert fires. The token is nowhere but on the destination's own
// page and API, where its owners and read-write tokens see the URL whole:
// not in its attempts' errors, its status reason, the alert's summary (read
// by viewers and read-only tokens), the alert messages sent to a Slack
// channel and to a standard destination, the audit log, or any log line
// of the server, the sender or the alert evaluator, debug included. A
// slack destination's path, its secret, is nowhere but there either.
func TestDestinationURLSecretsStayWithOwners(t *testing.T) {
	t.Parallel()
	const token, slackSecret = "S3cr3tQueryT0ken", "XoXbSlackPathS3cr3t"
	e, serverLog := webtest.SetupLogged(t, postgres.DefaultReadTimeout)
	log := slog.New(slog.NewTextHandler(serverLog, &slog.HandlerOptions{Level: slog.LevelDebug}))
	acme := e.Tenant("acme")

	// Nothing listens at the failing destination's address: Go's error
	// for each attempt quotes the URL.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	failingURL := "http://" + ln.Addr().String() + "/hook?token=" + token
	ln.Close()
	var mu sync.Mutex
	var messages []string // what the alert destinations were sent: path, body
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		messages = append(messages, r.URL.Path+" "+string(b))
		mu.Unlock()
	}))
	t.Cleanup(rc.Close)
	slackURL := rc.URL + "/services/T0/B0/" + slackSecret
	ctx := webtest.CliContext()
	failing, _, err := e.Store.CreateDestination(ctx, acme.ID, stream.NewDestination{URL: failingURL, AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, nd := range []stream.NewDestination{
		{URL: slackURL, Format: stream.FormatSlack, AllowPrivate: true},
		{URL: rc.URL + "/standard", Types: []string{"alert.*"}, AllowPrivate: true},
	} {
		if _, _, err := e.Store.CreateDestination(ctx, acme.ID, nd); err != nil {
			t.Fatal(err)
		}
	}

	run, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()
	wg.Go(func() {
		outbound.New(e.Store, outbound.Options{LeaseTTL: 3 * time.Second, LeaseEvery: 300 * time.Millisecond,
			Poll: 50 * time.Millisecond, Log: log}).Run(run)
	})
	e.Deliver1("evt-1", webtest.SnapshotBody("c1", 1, `{"name":"a"}`))
	attemptsPath := fmt.Sprintf("/api/v1/tenants/acme/destinations/%d/attempts", failing.ID)
	write := e.Token("acme")
	waitUntil(t, "a failed attempt", func() bool {
		_, body := e.Get(attemptsPath, write)
		list, _ := body["attempts"].([]any)
		return len(list) > 0
	})
	// Failing since 3 days: the next failure pauses it.
	if _, err := e.Store.Pool().Exec(context.Background(), `UPDATE destination_queue SET first_failed_at = now() - interval '73 hours'
		WHERE tenant_id = $1 AND destination_id = $2`, acme.ID, failing.ID); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the destination failing", func() bool {
		d, err := e.Store.Destination(context.Background(), acme.ID, failing.ID)
		return err == nil && d.Status == stream.DestinationFailing
	})
	wg.Go(func() { alerting.Evaluator{Store: e.Store, Every: 100 * time.Millisecond, Log: log}.Run(run) })
	waitUntil(t, "the alert sent to both alert destinations", func() bool {
		mu.Lock()
		defer mu.Unlock()
		got := map[string]bool{}
		for _, m := range messages {
			path, text, _ := strings.Cut(m, " ")
			got[path] = got[path] || strings.Contains(text, "paused as failing")
		}
		return got["/services/T0/B0/"+slackSecret] && got["/standard"]
	})

	// The owner's view: the URL whole on the destination's page and in the
	// API, for a read-write token; once each, not in the attempts.
	owner := e.Operator("owner@example.com", false, "acme")
	_, doc := owner.Get(fmt.Sprintf("/t/acme/destinations/%d", failing.ID))
	page, _ := doc.Html()
	if n := strings.Count(page, token); n != 1 || webtest.Text(doc, "td.mono") != failingURL {
		t.Errorf("the owner's destination page holds the token %d times, shows %q; want once, as the URL", n,
			webtest.Text(doc, "td.mono"))
	}
	_, body := e.Get(fmt.Sprintf("/api/v1/tenants/acme/destinations/%d", failing.ID), write)
	if body["url"] != failingURL {
		t.Errorf("the API shows a read-write token url %v, want %q", body["url"], failingURL)
	}
	reason, _ := body["status_reason"].(string)
	if want := fmt.Sprintf(`Post "http://%s/hook?<redacted>": `, ln.Addr()); !strings.Contains(reason, want) ||
		!strings.Contains(reason, "has not been delivered since") {
		t.Errorf("status reason %q, want the error with %s", reason, want)
	}

	// Everywhere else.
	viewer := e.WithRole("viewer@example.com", domain.RoleViewer)
	readOnly := e.TokenWith("acme", domain.NewAPIToken{Name: "bi", Access: domain.TokenRead})
	_, alerts := e.Get("/api/v1/tenants/acme/alerts", readOnly)
	summary := ""
	for _, a := range alerts["alerts"].([]any) {
		if a := a.(map[string]any); a["rule"] == "destination_failing" {
			summary = a["summary"].(string)
		}
	}
	wantSummary := fmt.Sprintf("Destination %d (http://%s/hook?<redacted>) was paused as failing: change ", failing.ID, ln.Addr())
	if !strings.HasPrefix(summary, wantSummary) || strings.Contains(summary, "dial") || strings.Contains(summary, "Post") {
		t.Errorf("summary %q, want %q... without the error", summary, wantSummary)
	}
	seen := map[string]string{
		"the alerts in the API, for a read-only token":        fmt.Sprint(alerts),
		"the attempts in the API":                             fmt.Sprint(e.Get(attemptsPath, write)),
		"the audit log":                                       strings.Join(e.Strings(`SELECT action || ' ' || target || ': ' || summary FROM audit_log`), "\n"),
		"the alert messages":                                  strings.Join(bodies(&mu, &messages), "\n"),
		"the server's, the sender's and the evaluator's logs": serverLog.String(),
	}
	for name, path := range map[string]string{"a viewer's overview": "/t/acme", "a viewer's alerts page": "/t/acme/alerts"} {
		seen[name] = html(t, viewer, path)
	}
	seen["the owner's destination list, but the URLs"] = withoutTargets(t, owner, "/t/acme/destinations", "span.mono")
	seen["the owner's destination page, but the URL"] = withoutTargets(t, owner, fmt.Sprintf("/t/acme/destinations/%d", failing.ID), "td.mono")
	for _, name := range []string{"the alerts in the API, for a read-only token", "a viewer's overview", "a viewer's alerts page"} {
		if !strings.Contains(seen[name], "paused as failing") {
			t.Errorf("%s do not show the alert", name)
		}
	}
	for name, text := range seen {
		for _, secret := range []string{token, slackSecret} {
			if i := strings.Index(text, secret); i >= 0 {
				t.Errorf("%s hold %s: ...%s...", name, secret, text[max(0, i-200):min(len(text), i+100)])
			}
		}
	}
}

// waitUntil polls ok for up to 20 s.
func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !ok(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 20 s", what)
		}
	}
}

func html(t *testing.T, b *webtest.Browser, path string) string {
	t.Helper()
	status, doc := b.Get(path)
	if status != http.StatusOK {
		t.Fatalf("GET %s: %d", path, status)
	}
	s, _ := doc.Html()
	return s
}

// withoutTargets is the page at path without the elements of selector,
// where the destinations' URLs are shown.
func withoutTargets(t *testing.T, b *webtest.Browser, path, selector string) string {
	t.Helper()
	status, doc := b.Get(path)
	if status != http.StatusOK {
		t.Fatalf("GET %s: %d", path, status)
	}
	doc.Find(selector).Each(func(_ int, s *goquery.Selection) {
		if strings.Contains(s.Text(), "://") {
			s.Remove()
		}
	})
	s, _ := doc.Html()
	return s
}

// bodies are the bodies of messages, without their paths.
func bodies(mu *sync.Mutex, messages *[]string) []string {
	mu.Lock()
	defer mu.Unlock()
	out := make([]string, len(*messages))
	for i, m := range *messages {
		_, out[i], _ = strings.Cut(m, " ")
	}
	return out
}

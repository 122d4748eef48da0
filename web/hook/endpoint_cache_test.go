package hook_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/web"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// twoServers runs two servers on one fresh database, each with its own
// store and endpoint cache listener, as two nodes behind a load balancer,
// with tenant "acme" and its standard provider "crm".
func twoServers(t *testing.T) (one, two *webtest.Env) {
	t.Helper()
	dbURL := testdb.NewURL(t)
	one, two = listeningServer(t, dbURL), listeningServer(t, dbURL)
	one.Secret = one.Provider("acme", "crm")
	two.Secret = one.Secret
	return one, two
}

// listeningServer is a server on dbURL whose endpoint cache is live.
func listeningServer(t *testing.T, dbURL string) *webtest.Env {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	store, err := postgres.New(pool, webtest.TestKey)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- store.ListenForChanges(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	pollWithin(t, 5*time.Second, "the endpoint cache to go live", store.EndpointCacheLive)
	s := web.New(web.Config{Store: store, Sessions: store.SessionStore(),
		Ping: store.Pool().Ping, Logger: webtest.QuietLog()})
	e := &webtest.Env{T: t, Store: store, Web: s, Srv: httptest.NewServer(s.Handler())}
	t.Cleanup(e.Srv.Close)
	return e
}

// pollWithin polls cond until it holds, failing the test after limit, and
// returns how long it took.
func pollWithin(t *testing.T, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			t.Fatalf("waited %s for %s", limit, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
	return time.Since(start)
}

// TestSecretRetiredOnOneServerRefusedByAnother: once an operator retires a
// secret in the console of one server, another server that had it cached
// answers 401 to deliveries signed with it within a second.
func TestSecretRetiredOnOneServerRefusedByAnother(t *testing.T) {
	t.Parallel()
	one, two := twoServers(t)
	b := one.Operator("ops@example.com", false, "acme")
	status, doc, _ := b.Post("/t/acme/providers/crm/rotate", nil)
	newSecret := webtest.Text(doc, "#provider-secret")
	if status != http.StatusOK || newSecret == "" {
		t.Fatalf("rotate: %d", status)
	}
	if got := two.Outcome("acme", "crm", two.Secret, "r-1", webtest.SnapshotBody("c-1", 1, `{"a":1}`)); got != "applied" {
		t.Fatalf("old secret during the rotation: %s", got)
	}

	if status, _, _ := b.Post("/t/acme/providers/crm/retire", nil); status != http.StatusSeeOther {
		t.Fatalf("retire: %d", status)
	}
	n := 1
	took := pollWithin(t, time.Second, "the other server to refuse the retired secret", func() bool {
		n++
		status, answer := two.Deliver("acme", "crm", two.Secret, fmt.Sprint("r-", n), webtest.SnapshotBody("c-1", n, `{"a":1}`))
		if status != http.StatusOK && status != http.StatusUnauthorized {
			t.Fatalf("retired secret answered %d (%v)", status, answer)
		}
		return status == http.StatusUnauthorized
	})
	t.Logf("retired secret refused by the other server after %s", took)
	if got := two.Outcome("acme", "crm", newSecret, "r-new", webtest.SnapshotBody("c-1", 100, `{"a":2}`)); got != "applied" {
		t.Fatalf("new secret on the other server: %s", got)
	}
}

// TestScopeDisabledOnOneServerRejectsNextEvent: once the notification of a
// scope disabled in the console of one server reaches another, the very
// next event of that scope there is rejected.
func TestScopeDisabledOnOneServerRejectsNextEvent(t *testing.T) {
	t.Parallel()
	one, two := twoServers(t)
	for i := range 2 { // the first creates the scope; the endpoint is cached with it
		if got := two.Outcome("acme", "crm", two.Secret, fmt.Sprint("s-", i), webtest.SnapshotBody("c-1", i+1, `{"a":1}`)); got != "applied" {
			t.Fatalf("event %d before disabling: %s", i, got)
		}
	}

	b := one.Operator("ops@example.com", false, "acme")
	status, _, _ := b.Post("/t/acme/providers/crm/scopes", url.Values{"object_type": {"contact"}, "action": {"snapshot"},
		"ttl": {"7"}, "ttl_unit": {"days"}, "identifier_rule": {"event_id"}}) // no "enabled": disabled
	if status != http.StatusSeeOther {
		t.Fatalf("disable scope: %d", status)
	}
	scope := domain.ScopeName{ObjectType: "contact", Action: "snapshot"}
	pollWithin(t, time.Second, "the notification on the other server", func() bool {
		p, err := two.Store.Endpoint(context.Background(), "acme", "crm")
		return err == nil && !p.Scope(scope).Enabled
	})
	status, answer := two.Deliver("acme", "crm", two.Secret, "s-next", webtest.SnapshotBody("c-1", 10, `{"a":2}`))
	if got := webtest.Outcome(t, status, answer); got != "rejected" {
		t.Fatalf("next event after disabling the scope: %s (%v)", got, answer)
	}
	if reason := fmt.Sprint(answer["results"].([]any)[0].(map[string]any)["reason"]); !strings.Contains(reason, "disabled") {
		t.Fatalf("rejected with reason %q, want one saying the scope is disabled", reason)
	}
}

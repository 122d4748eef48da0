package console_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// consoleRoutes lists every console route of the router, so that a route
// added later is covered by the isolation and forgery tests without
// anyone remembering to list it.
func consoleRoutes(t *testing.T, e *webtest.Env) []struct{ method, pattern string } {
	t.Helper()
	h := web.New(web.Config{Store: e.Store, Sessions: e.Store.SessionStore(),
		Ping: e.Store.Pool().Ping, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}).Handler()
	var routes []struct{ method, pattern string }
	err := chi.Walk(h.(chi.Routes), func(method, pattern string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if strings.HasPrefix(pattern, "/t/") || strings.HasPrefix(pattern, "/admin") {
			routes = append(routes, struct{ method, pattern string }{method, pattern})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(routes) < 2 {
		t.Fatalf("found only %d console routes", len(routes))
	}
	return routes
}

// globexData gives tenant globex a provider, a contact, an event and an
// open conflict, and returns the values its URLs need.
func globexData(t *testing.T, e *webtest.Env) map[string]string {
	t.Helper()
	secret := e.Provider("globex", "crm")
	e.Outcome("globex", "crm", secret, "g1", webtest.SnapshotBody("c-1", 5, `{"a":1}`))
	e.Outcome("globex", "crm", secret, "g2", webtest.SnapshotBody("c-1", 5, `{"a":2}`))
	var conflictID, deliveryID, tokenID string
	ctx := context.Background()
	e.Store.Pool().QueryRow(ctx, `SELECT c.id::text FROM conflicts c JOIN tenants t ON t.id = c.tenant_id WHERE t.slug = 'globex'`).Scan(&conflictID)
	e.Store.Pool().QueryRow(ctx, `SELECT e.delivery_id::text FROM events e JOIN tenants t ON t.id = e.tenant_id WHERE t.slug = 'globex' LIMIT 1`).Scan(&deliveryID)
	e.TokenWith("globex", domain.NewAPIToken{Name: "globex token", Access: domain.TokenWrite})
	e.Store.Pool().QueryRow(ctx, `SELECT a.id::text FROM api_tokens a JOIN tenants t ON t.id = a.tenant_id WHERE t.slug = 'globex'`).Scan(&tokenID)
	var userID string
	e.Member("globex-ops@example.com", false, domain.RoleOwner, "globex")
	e.Store.Pool().QueryRow(ctx, `SELECT id::text FROM users WHERE email = 'globex-ops@example.com'`).Scan(&userID)
	if conflictID == "" || deliveryID == "" {
		t.Fatal("globex data was not created")
	}
	return map[string]string{"tenant": "globex", "provider": "crm", "name": "crm", "contact_id": "c-1",
		"object_type": "contact", "object_id": "c-1", "id": conflictID, "delivery_id": deliveryID, "seq": "0",
		"token": tokenID, "user": userID}
}

// TestConsoleTenantIsolation: a member of acme gets 404 for every route of
// tenant globex, GET and POST alike, and 403 for every admin route.
func TestConsoleTenantIsolation(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	values := globexData(t, e)
	member := e.Operator("acme-ops@example.com", false, "acme")
	for _, rt := range consoleRoutes(t, e) {
		path := webtest.Fill(rt.pattern, values)
		var status int
		switch rt.method {
		case http.MethodGet:
			status, _ = member.Get(path)
		case http.MethodPost:
			status, _, _ = member.Post(path, url.Values{"resolution": {"adopt"}, "note": {"x"}, "name": {"x"}})
		default:
			continue
		}
		want := http.StatusNotFound
		if strings.HasPrefix(rt.pattern, "/admin") {
			want = http.StatusForbidden // admin pages exist for everyone, and say who may use them
		}
		if status != want {
			t.Errorf("%s %s answered %d to a member of another tenant, want %d", rt.method, path, status, want)
		}
	}
}

// TestConsoleRefusesCrossOriginPosts: every state-changing console route
// refuses a cross-site form post, even from a signed-in admin.
func TestConsoleRefusesCrossOriginPosts(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	values := globexData(t, e)
	admin := e.Operator("root@example.com", true)
	routes := append(consoleRoutes(t, e), struct{ method, pattern string }{http.MethodPost, "/logout"})
	posts := 0
	for _, rt := range routes {
		if rt.method != http.MethodPost {
			continue
		}
		posts++
		path := webtest.Fill(rt.pattern, values)
		req, _ := http.NewRequest(http.MethodPost, e.Srv.URL+path, strings.NewReader("resolution=adopt&note=x"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "https://evil.example")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		resp, err := admin.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("cross-site POST %s answered %d, want 403", path, resp.StatusCode)
		}
	}
	if posts == 0 {
		t.Fatal("no state-changing console routes found")
	}
	// The admin's session still works: nothing was changed by the refused posts.
	if status, _ := admin.Get("/t/globex"); status != http.StatusOK {
		t.Fatalf("admin overview answered %d", status)
	}
}

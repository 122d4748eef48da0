package web_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// Who may use a route, besides the roles of a tenant.
const (
	needPublic     = "public"    // anyone: the route authenticates by itself
	needSignedIn   = "signed in" // any operator
	needAdmin      = "admin"
	needRead       = "read"        // any API token of the tenant
	needWrite      = "write"       // a read-write API token
	needAdminToken = "admin token" // an admin API token; a tenant's is 403
	needAnyToken   = "any token"   // any tenant's API token, which decides the tenant; an admin token is 403
)

// routeNeeds is who may use each route that changes something, and each
// read that needs more than the least: a tenant's viewer, an operator
// anywhere or an API token of the tenant. Every state-changing route must
// be listed here, so a new one fails TestRouteRoles until someone decides
// who may use it, and the route table checks it.
var routeNeeds = map[string]string{
	"POST /login":                                             needPublic,
	"POST /logout":                                            needSignedIn,
	"POST /webhooks/apps/{name}":                              needPublic,
	"POST /webhooks/{tenant}/{provider}":                      needPublic,
	"POST /t/{tenant}/conflicts/{id}/resolve":                 string(domain.RoleOperator),
	"POST /t/{tenant}/conflicts/{id}/snapshot":                string(domain.RoleOperator),
	"POST /t/{tenant}/deliveries/{id}/replay":                 string(domain.RoleOperator),
	"POST /t/{tenant}/replays":                                string(domain.RoleOperator),
	"POST /t/{tenant}/replays/{id}/cancel":                    string(domain.RoleOperator),
	"POST /t/{tenant}/providers/{name}/backfills":             string(domain.RoleOperator),
	"POST /t/{tenant}/providers/{name}/backfills/{id}/cancel": string(domain.RoleOperator),

	"POST /t/{tenant}/providers":                              string(domain.RoleOwner),
	"POST /t/{tenant}/providers/{name}/rotate":                string(domain.RoleOwner),
	"POST /t/{tenant}/providers/{name}/retire":                string(domain.RoleOwner),
	"POST /t/{tenant}/providers/{name}/secret-shown":          string(domain.RoleOwner),
	"POST /t/{tenant}/providers/{name}/test":                  string(domain.RoleOwner),
	"POST /t/{tenant}/providers/{name}/scopes":                string(domain.RoleOwner),
	"POST /t/{tenant}/providers/{name}/api-credentials":       string(domain.RoleOwner),
	"POST /t/{tenant}/providers/{name}/api-credentials/clear": string(domain.RoleOwner),
	"POST /t/{tenant}/providers/{name}/cdc":                   string(domain.RoleOwner),
	"POST /t/{tenant}/providers/{name}/delete":                string(domain.RoleOwner),
	"POST /t/{tenant}/tokens":                                 string(domain.RoleOwner),
	"POST /t/{tenant}/tokens/{id}/revoke":                     string(domain.RoleOwner),
	"GET /t/{tenant}/members":                                 string(domain.RoleOwner),
	"POST /t/{tenant}/members":                                string(domain.RoleOwner),
	"POST /t/{tenant}/members/{id}/role":                      string(domain.RoleOwner),
	"POST /t/{tenant}/members/{id}/remove":                    string(domain.RoleOwner),
	"GET /t/{tenant}/audit":                                   string(domain.RoleOwner),

	// The OAuth install of a HubSpot app starts from a GET (a redirect to
	// the consent page); its callback is any signed-in operator's, who
	// must still be an owner of the state's tenant.
	"GET /t/{tenant}/apps/{app}/connect": string(domain.RoleOwner),
	"GET /apps/{app}/oauth/callback":     needSignedIn,

	"GET /t/{tenant}/destinations":                   string(domain.RoleOwner),
	"POST /t/{tenant}/destinations":                  string(domain.RoleOwner),
	"GET /t/{tenant}/destinations/{id}":              string(domain.RoleOwner),
	"POST /t/{tenant}/destinations/{id}/pause":       string(domain.RoleOwner),
	"POST /t/{tenant}/destinations/{id}/resume":      string(domain.RoleOwner),
	"POST /t/{tenant}/destinations/{id}/rewind":      string(domain.RoleOwner),
	"POST /t/{tenant}/destinations/{id}/expressions": string(domain.RoleOwner),
	"POST /t/{tenant}/destinations/{id}/rotate":      string(domain.RoleOwner),
	"POST /t/{tenant}/destinations/{id}/delete":      string(domain.RoleOwner),

	"POST /t/{tenant}/alerts/rules/{rule}": string(domain.RoleOwner),

	"POST /t/{tenant}/records/{provider}/{object_type}/{object_id}/reset": string(domain.RoleOwner),
	"POST /t/{tenant}/records/{provider}/{object_type}/{object_id}/erase": string(domain.RoleOwner),
	"GET /t/{tenant}/leads/erase":                                         string(domain.RoleOwner),
	"POST /t/{tenant}/leads/erase":                                        string(domain.RoleOwner),

	"POST /admin/tenants":                                needAdmin,
	"POST /admin/tenants/{slug}/rename":                  needAdmin,
	"POST /admin/tenants/{slug}/archive":                 needAdmin,
	"POST /admin/tenants/{slug}/unarchive":               needAdmin,
	"POST /admin/tenants/{slug}/delete":                  needAdmin,
	"GET /admin/users":                                   needAdmin,
	"POST /admin/users":                                  needAdmin,
	"POST /admin/reconciliation/run":                     needAdmin,
	"POST /admin/users/{id}/memberships":                 needAdmin,
	"POST /admin/users/{id}/memberships/{tenant}/remove": needAdmin,
	"POST /admin/users/{id}/admin":                       needAdmin,
	"POST /admin/users/{id}/disable":                     needAdmin,
	"POST /admin/users/{id}/enable":                      needAdmin,
	"POST /admin/users/{id}/password":                    needAdmin,
	"POST /admin/users/{id}/sign-out":                    needAdmin,
	"GET /admin/audit":                                   needAdmin,
	"GET /admin/apps":                                    needAdmin,
	"GET /admin/apps/{name}":                             needAdmin,

	"POST /api/v1/tenants/{tenant}/conflicts/{id}/resolve":                             needWrite,
	"POST /api/v1/tenants/{tenant}/records/{provider}/{object_type}/{object_id}/reset": needWrite,
	"DELETE /api/v1/tenants/{tenant}/records/{provider}/{object_type}/{object_id}":     needWrite,
	"POST /api/v1/tenants/{tenant}/deliveries/{id}/replay":                             needWrite,
	"POST /api/v1/tenants/{tenant}/replays":                                            needWrite,
	"POST /api/v1/tenants/{tenant}/replays/{id}/cancel":                                needWrite,
	"POST /api/v1/tenants/{tenant}/providers/{provider}/backfills":                     needWrite,
	"POST /api/v1/tenants/{tenant}/providers/{provider}/backfills/{id}/cancel":         needWrite,
	// The audit log names operators and their addresses: owners only in
	// the console, read-write tokens only in the API.
	"GET /api/v1/tenants/{tenant}/audit": needWrite,
	// Destinations, reads included, are the owners' (the console's too).
	"POST /api/v1/tenants/{tenant}/destinations":                 needWrite,
	"GET /api/v1/tenants/{tenant}/destinations":                  needWrite,
	"GET /api/v1/tenants/{tenant}/destinations/{id}":             needWrite,
	"PATCH /api/v1/tenants/{tenant}/destinations/{id}":           needWrite,
	"POST /api/v1/tenants/{tenant}/destinations/test-expression": needWrite,
	"GET /api/v1/tenants/{tenant}/destinations/{id}/attempts":    needWrite,
	"POST /api/v1/tenants/{tenant}/destinations/{id}/rotate":     needWrite,
	"POST /api/v1/tenants/{tenant}/destinations/{id}/pause":      needWrite,
	"POST /api/v1/tenants/{tenant}/destinations/{id}/resume":     needWrite,
	"POST /api/v1/tenants/{tenant}/destinations/{id}/rewind":     needWrite,
	"DELETE /api/v1/tenants/{tenant}/destinations/{id}":          needWrite,
	// Alert rules: any token reads them, read-write tokens set them.
	"PUT /api/v1/tenants/{tenant}/alert-rules/{rule}": needWrite,
	// The admin API: admin tokens alone.
	"GET /api/v1/admin/apps":        needAdminToken,
	"GET /api/v1/admin/apps/{name}": needAdminToken,
	// The MCP server: the token alone decides the tenant, and its tools
	// what the token may do.
	"POST /api/v1/mcp": needAnyToken,
	// The API's OpenAPI document needs no token.
	"GET /api/v1/openapi.json": needPublic,
}

// routeNeed is who may use method pattern, and whether it is listed.
func routeNeed(method, pattern string) (string, bool) {
	if need, ok := routeNeeds[method+" "+pattern]; ok {
		return need, true
	}
	switch {
	case pattern == "/static/*":
		return needPublic, true // the embedded files answer every method, and change nothing
	case method != http.MethodGet:
		return "", false
	case strings.HasPrefix(pattern, "/t/"):
		return string(domain.RoleViewer), true
	case strings.HasPrefix(pattern, "/api/"):
		return needRead, true
	}
	return needPublic, true // signed-out pages, health, metrics, assets
}

// allRoutes lists every route of the router.
func allRoutes(t *testing.T, e *webtest.Env) []struct{ method, pattern string } {
	t.Helper()
	h := web.New(web.Config{Store: e.Store, Sessions: e.Store.SessionStore(),
		Ping: e.Store.Pool().Ping, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}).Handler()
	var routes []struct{ method, pattern string }
	err := chi.Walk(h.(chi.Routes), func(method, pattern string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		routes = append(routes, struct{ method, pattern string }{method, pattern})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(routes, func(i, j int) bool { return routes[i].pattern+routes[i].method < routes[j].pattern+routes[j].method })
	return routes
}

// roleValues fill route patterns with names that exist nowhere (except the
// tenant), so that a request the role allows reaches a handler and changes
// nothing.
var roleValues = map[string]string{"tenant": "acme", "id": "999999", "name": "nope", "provider": "nope",
	"contact_id": "nope", "object_type": "contact", "object_id": "nope", "delivery_id": "0190a2b4-0000-7000-8000-000000000000",
	"seq": "0", "rule": "nope"}

// TestRouteRoles walks every route for every kind of operator and API
// token, and checks that those the route table allows get through and the
// others get 403 (404 for another tenant's operators and tokens, who must
// not learn that the tenant exists).
func TestRouteRoles(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.Provider("globex", "crm")
	operators := []struct {
		name    string
		browser *webtest.Browser
		role    domain.Role // in acme; "" for none
		admin   bool
	}{
		{"another tenant's owner", e.Operator("outsider@example.com", false, "globex"), "", false},
		{"viewer", e.WithRole("viewer@example.com", domain.RoleViewer), domain.RoleViewer, false},
		{"operator", e.WithRole("operator@example.com", domain.RoleOperator), domain.RoleOperator, false},
		{"owner", e.WithRole("owner@example.com", domain.RoleOwner), domain.RoleOwner, false},
		{"admin", e.Operator("admin@example.com", true), domain.RoleOwner, true},
	}
	adminToken, err := e.Store.CreateAdminToken(webtest.CliContext(), domain.NewAdminToken{Name: "a", CreatorEmail: "admin@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	tokens := []struct {
		name, token string
		access      domain.TokenAccess // "" for another tenant's, or an admin token
		admin       bool
	}{
		{"another tenant's token", e.Token("globex"), "", false},
		{"read-only token", e.TokenWith("acme", domain.NewAPIToken{Name: "r", Access: domain.TokenRead}), domain.TokenRead, false},
		{"read-write token", e.TokenWith("acme", domain.NewAPIToken{Name: "w", Access: domain.TokenWrite}), domain.TokenWrite, false},
		{"admin token", adminToken, "", true},
	}

	checked := map[string]bool{}
	for _, rt := range allRoutes(t, e) {
		key := rt.method + " " + rt.pattern
		need, listed := routeNeed(rt.method, rt.pattern)
		if !listed {
			t.Errorf("%s changes something but is not in routeNeeds: add it, with the role it needs, and check that role in its route group", key)
			continue
		}
		checked[key] = true
		path := webtest.Fill(rt.pattern, roleValues)
		switch {
		case need == needAdminToken:
			for _, tk := range tokens {
				status, body := e.Call(webtest.APIRoute{Method: rt.method, Path: path}, tk.token)
				if tk.admin && (status == http.StatusForbidden || status == http.StatusUnauthorized) {
					t.Errorf("%s with an admin token: %d %v, want it let through", key, status, body)
				}
				if !tk.admin && (status != http.StatusForbidden || !strings.Contains(body["error"].(string), "admin token")) {
					t.Errorf("%s with a %s: %d %v, want 403 saying an admin token is needed", key, tk.name, status, body)
				}
			}
		case need == needPublic || need == needSignedIn:
			// Not a role's business: sign-in, sign-out, webhooks, assets,
			// the API's document.
		case need == needAnyToken:
			for _, tk := range tokens {
				want := http.StatusOK
				if tk.admin {
					want = http.StatusForbidden
				}
				if status := mcpInitialize(t, e, path, tk.token); status != want {
					t.Errorf("%s with a %s: %d, want %d", key, tk.name, status, want)
				}
			}
		case strings.HasPrefix(rt.pattern, "/api/"):
			for _, tk := range tokens {
				status, body := e.Call(webtest.APIRoute{Method: rt.method, Path: path}, tk.token)
				want, allowed := http.StatusForbidden, need == needRead || tk.access == domain.TokenWrite
				if tk.access == "" {
					want, allowed = http.StatusNotFound, false
				}
				if allowed && (status == http.StatusForbidden || status == http.StatusUnauthorized) {
					t.Errorf("%s with a %s: %d %v, want it let through", key, tk.name, status, body)
				}
				if !allowed && status != want {
					t.Errorf("%s with a %s: %d %v, want %d", key, tk.name, status, body, want)
				}
				if !allowed && want == http.StatusForbidden && !strings.Contains(body["error"].(string), "read-write token") {
					t.Errorf("%s with a %s: error %q does not say which token is needed", key, tk.name, body["error"])
				}
			}
		default:
			for _, op := range operators {
				var (
					status int
					doc    *goquery.Document
				)
				if rt.method == http.MethodGet {
					status, doc = op.browser.Get(path)
				} else {
					status, doc, _ = op.browser.Post(path, url.Values{})
				}
				want, allowed := http.StatusForbidden, op.admin
				switch {
				case need == needAdmin:
				case op.role == "":
					want = http.StatusNotFound
				default:
					allowed = op.role.Allows(domain.Role(need))
				}
				if allowed && status == http.StatusForbidden {
					t.Errorf("%s by the %s: 403 %q, want it let through", key, op.name, webtest.Text(doc, "main p"))
				}
				if !allowed && status != want {
					t.Errorf("%s by the %s: %d, want %d", key, op.name, status, want)
				}
				if !allowed && want == http.StatusForbidden && need != needAdmin &&
					!strings.Contains(webtest.Text(doc, "main p"), "needs the "+need+" role") {
					t.Errorf("%s by the %s: the 403 page says %q, not which role is needed", key, op.name, webtest.Text(doc, "main p"))
				}
			}
		}
	}
	for key := range routeNeeds {
		if !checked[key] {
			t.Errorf("routeNeeds lists %s, which the router does not serve", key)
		}
	}
}

// mcpInitialize posts an MCP initialize request with token and returns
// the answer's status.
func mcpInitialize(t *testing.T, e *webtest.Env, path, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.Srv.URL+path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize",`+
		`"params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"roles","version":"0"}}}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

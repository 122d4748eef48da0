package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

func TestAPIAuthentication(t *testing.T) {
	t.Parallel()
	e, d := apiSetup(t)
	path := d.base + "/contacts/crm/c-1"
	for name, header := range map[string]string{
		"missing":     "",
		"not bearer":  "Basic " + d.token,
		"empty":       "Bearer ",
		"unknown":     "Bearer tmk_not-a-token",
		"bare token":  d.token,
		"wrong token": "Bearer " + d.token + "x",
	} {
		req, _ := http.NewRequest(http.MethodGet, e.srv.URL+path, nil)
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		status, body := e.do(req)
		if status != http.StatusUnauthorized {
			t.Errorf("%s: status %d (%v), want 401", name, status, body)
			continue
		}
		assertKeys(t, body, "error")
	}
	status, body := e.get(path, d.token)
	if status != http.StatusOK {
		t.Fatalf("valid token: %d %v", status, body)
	}

	// Using the token records when; a revoked token stops working.
	var used bool
	err := e.store.Pool().QueryRow(context.Background(),
		`SELECT last_used_at IS NOT NULL FROM api_tokens WHERE name = 'test'`).Scan(&used)
	if err != nil || !used {
		t.Fatalf("last_used_at set: %v, %v", used, err)
	}
	if _, err := e.store.Pool().Exec(context.Background(), `UPDATE api_tokens SET revoked_at = now()`); err != nil {
		t.Fatal(err)
	}
	status, body = e.get(path, d.token)
	assertError(t, status, body, http.StatusUnauthorized, "invalid, expired or revoked API token")

	// An unknown tenant in the URL looks like any missing resource.
	status, body = e.get("/api/v1/tenants/nosuch/contacts/crm/c-1", e.token("acme"))
	assertError(t, status, body, http.StatusNotFound, "not found")
}

// apiRoute is one route of docs/contract.md section 4, with the resources named.
type apiRoute struct {
	method, path string
}

func apiRoutes(base, provider, contact string, conflictID int64) []apiRoute {
	return []apiRoute{
		{http.MethodGet, base + "/contacts/" + provider + "/" + contact},
		{http.MethodGet, base + "/contacts/" + provider + "/" + contact + "/revisions"},
		{http.MethodGet, base + "/events"},
		{http.MethodGet, base + "/stats"},
		{http.MethodGet, base + "/conflicts"},
		{http.MethodPost, fmt.Sprintf("%s/conflicts/%d/resolve", base, conflictID)},
		{http.MethodGet, base + "/records/" + provider + "/contact/" + contact},
	}
}

func (e *env) call(rt apiRoute, token string) (int, map[string]any) {
	e.t.Helper()
	var body *strings.Reader
	if rt.method == http.MethodPost {
		body = strings.NewReader(`{"resolution":"adopt","note":"cross-tenant"}`)
	} else {
		body = strings.NewReader("")
	}
	req, _ := http.NewRequest(rt.method, e.srv.URL+rt.path, body)
	req.Header.Set("Authorization", "Bearer "+token)
	return e.do(req)
}

func TestAPITenantIsolation(t *testing.T) {
	t.Parallel()
	e, acme := apiSetup(t)
	// globex has a provider of the same name with the same contact ids, and
	// one of its own.
	globex := apiData{tenant: "globex", provider: "crm", secret: e.provider("globex", "crm"), token: e.token("globex"),
		base: "/api/v1/tenants/globex"}
	apiSeed(t, e, &globex, "g-")
	shop := apiData{tenant: "globex", provider: "shop", secret: e.provider("globex", "shop"), token: globex.token,
		base: globex.base}
	status, body := e.deliver("globex", "shop", shop.secret, "g-shop-1", snapshotBody("g-only", 1, `{"company":"G"}`))
	if got := outcome(t, status, body); got != "applied" {
		t.Fatalf("g-shop-1: %s", got)
	}
	// acme has a provider and a contact globex lacks.
	erp := e.provider("acme", "erp")
	status, body = e.deliver("acme", "erp", erp, "a-erp-1", snapshotBody("c-1", 1, `{"company":"E"}`))
	if got := outcome(t, status, body); got != "applied" {
		t.Fatalf("a-erp-1: %s", got)
	}
	status, body = e.deliver("acme", "crm", acme.secret, "a-only-1", snapshotBody("a-only", 1, `{"company":"A"}`))
	if got := outcome(t, status, body); got != "applied" {
		t.Fatalf("a-only-1: %s", got)
	}
	if globex.conflictID == acme.conflictID {
		t.Fatal("both tenants have the same conflict id")
	}

	// With acme's token, every route under globex answers 404, whatever it names.
	for _, routes := range [][]apiRoute{
		apiRoutes(globex.base, "crm", "c-1", globex.conflictID),
		apiRoutes(globex.base, "shop", "g-only", acme.conflictID),
	} {
		for _, rt := range routes {
			status, body := e.call(rt, acme.token)
			if status != http.StatusNotFound || body["error"] != "not found" || len(body) != 1 {
				t.Errorf("acme token %s %s: %d %v, want 404 not found", rt.method, rt.path, status, body)
			}
		}
	}
	// With globex's token, every route under acme answers 404 too.
	for _, rt := range apiRoutes(acme.base, "crm", "c-1", acme.conflictID) {
		status, body := e.call(rt, globex.token)
		if status != http.StatusNotFound || body["error"] != "not found" || len(body) != 1 {
			t.Errorf("globex token %s %s: %d %v, want 404 not found", rt.method, rt.path, status, body)
		}
	}
	// Under its own URL, globex's token cannot reach acme's conflict or
	// acme-only resources: they answer 404 like missing ones.
	for _, rt := range []apiRoute{
		{http.MethodPost, fmt.Sprintf("%s/conflicts/%d/resolve", globex.base, acme.conflictID)},
		{http.MethodGet, globex.base + "/stats?provider=erp"},
		{http.MethodGet, globex.base + "/contacts/erp/c-1"},
		{http.MethodGet, globex.base + "/contacts/erp/c-1/revisions"},
		{http.MethodGet, globex.base + "/records/erp/contact/c-1"},
		{http.MethodGet, globex.base + "/contacts/crm/a-only"},
		{http.MethodGet, globex.base + "/contacts/crm/a-only/revisions"},
		{http.MethodGet, globex.base + "/records/crm/contact/a-only"},
	} {
		status, body := e.call(rt, globex.token)
		if status != http.StatusNotFound {
			t.Errorf("globex token %s %s: %d %v, want 404", rt.method, rt.path, status, body)
		}
	}

	// Lists under each tenant hold only its own data.
	status, body = e.get(globex.base+"/events", globex.token)
	for _, ev := range list(t, status, body, "events") {
		if id := ev["event_id"].(string); !strings.HasPrefix(id, "g-") {
			t.Errorf("globex events list acme's %s", id)
		}
	}
	status, body = e.get(globex.base+"/conflicts", globex.token)
	if cs := list(t, status, body, "conflicts"); len(cs) != 1 || cs[0]["id"] != float64(globex.conflictID) {
		t.Errorf("globex conflicts %v", cs)
	}
	status, body = e.get(acme.base+"/stats", acme.token)
	if status != http.StatusOK || body["outcomes"].(map[string]any)["applied"] != 5.0 { // 3 seeded, a-erp-1, a-only-1
		t.Errorf("acme stats %v", body)
	}
	status, body = e.get(globex.base+"/contacts/crm/c-1", globex.token)
	if status != http.StatusOK || body["last_applied_event"] != "g-evt-12" {
		t.Errorf("globex contact %v", body)
	}
	// acme's conflict survived every attempt.
	status, body = e.get(acme.base+"/conflicts?status=open", acme.token)
	if open := list(t, status, body, "conflicts"); len(open) != 1 || open[0]["id"] != float64(acme.conflictID) {
		t.Errorf("acme open conflicts %v", open)
	}
}

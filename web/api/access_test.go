package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/web/internal/webtest"
)

func TestAPIAuthentication(t *testing.T) {
	t.Parallel()
	e, d := webtest.APISetup(t)
	path := d.Base + "/contacts/crm/c-1"
	for name, header := range map[string]string{
		"missing":     "",
		"not bearer":  "Basic " + d.Token,
		"empty":       "Bearer ",
		"unknown":     "Bearer tmk_not-a-token",
		"bare token":  d.Token,
		"wrong token": "Bearer " + d.Token + "x",
	} {
		req, _ := http.NewRequest(http.MethodGet, e.Srv.URL+path, nil)
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		status, body := e.Do(req)
		if status != http.StatusUnauthorized {
			t.Errorf("%s: status %d (%v), want 401", name, status, body)
			continue
		}
		webtest.AssertKeys(t, body, "error")
	}
	status, body := e.Get(path, d.Token)
	if status != http.StatusOK {
		t.Fatalf("valid token: %d %v", status, body)
	}

	// Using the token records when; a revoked token stops working.
	var used bool
	err := e.Store.Pool().QueryRow(context.Background(),
		`SELECT last_used_at IS NOT NULL FROM api_tokens WHERE name = 'test'`).Scan(&used)
	if err != nil || !used {
		t.Fatalf("last_used_at set: %v, %v", used, err)
	}
	if _, err := e.Store.Pool().Exec(context.Background(), `UPDATE api_tokens SET revoked_at = now()`); err != nil {
		t.Fatal(err)
	}
	status, body = e.Get(path, d.Token)
	webtest.AssertError(t, status, body, http.StatusUnauthorized, "invalid, expired or revoked API token")

	// An unknown tenant in the URL looks like any missing resource.
	status, body = e.Get("/api/v1/tenants/nosuch/contacts/crm/c-1", e.Token("acme"))
	webtest.AssertError(t, status, body, http.StatusNotFound, "not found")
}

func TestAPITenantIsolation(t *testing.T) {
	t.Parallel()
	e, acme := webtest.APISetup(t)
	// globex has a provider of the same name with the same contact ids, and
	// one of its own.
	globex := webtest.APIData{Tenant: "globex", Provider: "crm", Secret: e.Provider("globex", "crm"), Token: e.Token("globex"),
		Base: "/api/v1/tenants/globex"}
	webtest.APISeed(t, e, &globex, "g-")
	shop := webtest.APIData{Tenant: "globex", Provider: "shop", Secret: e.Provider("globex", "shop"), Token: globex.Token,
		Base: globex.Base}
	status, body := e.Deliver("globex", "shop", shop.Secret, "g-shop-1", webtest.SnapshotBody("g-only", 1, `{"company":"G"}`))
	if got := webtest.Outcome(t, status, body); got != "applied" {
		t.Fatalf("g-shop-1: %s", got)
	}
	// acme has a provider and a contact globex lacks.
	erp := e.Provider("acme", "erp")
	status, body = e.Deliver("acme", "erp", erp, "a-erp-1", webtest.SnapshotBody("c-1", 1, `{"company":"E"}`))
	if got := webtest.Outcome(t, status, body); got != "applied" {
		t.Fatalf("a-erp-1: %s", got)
	}
	status, body = e.Deliver("acme", "crm", acme.Secret, "a-only-1", webtest.SnapshotBody("a-only", 1, `{"company":"A"}`))
	if got := webtest.Outcome(t, status, body); got != "applied" {
		t.Fatalf("a-only-1: %s", got)
	}
	if globex.ConflictID == acme.ConflictID {
		t.Fatal("both tenants have the same conflict id")
	}

	// With acme's token, every route under globex answers 404, whatever it names.
	for _, routes := range [][]webtest.APIRoute{
		webtest.APIRoutes(globex.Base, "crm", "c-1", globex.ConflictID),
		webtest.APIRoutes(globex.Base, "shop", "g-only", acme.ConflictID),
	} {
		for _, rt := range routes {
			status, body := e.Call(rt, acme.Token)
			if status != http.StatusNotFound || body["error"] != "not found" || len(body) != 1 {
				t.Errorf("acme token %s %s: %d %v, want 404 not found", rt.Method, rt.Path, status, body)
			}
		}
	}
	// With globex's token, every route under acme answers 404 too.
	for _, rt := range webtest.APIRoutes(acme.Base, "crm", "c-1", acme.ConflictID) {
		status, body := e.Call(rt, globex.Token)
		if status != http.StatusNotFound || body["error"] != "not found" || len(body) != 1 {
			t.Errorf("globex token %s %s: %d %v, want 404 not found", rt.Method, rt.Path, status, body)
		}
	}
	// Under its own URL, globex's token cannot reach acme's conflict or
	// acme-only resources: they answer 404 like missing ones.
	for _, rt := range []webtest.APIRoute{
		{Method: http.MethodPost, Path: fmt.Sprintf("%s/conflicts/%d/resolve", globex.Base, acme.ConflictID)},
		{Method: http.MethodGet, Path: globex.Base + "/stats?provider=erp"},
		{Method: http.MethodGet, Path: globex.Base + "/contacts/erp/c-1"},
		{Method: http.MethodGet, Path: globex.Base + "/contacts/erp/c-1/revisions"},
		{Method: http.MethodGet, Path: globex.Base + "/records/erp/contact/c-1"},
		{Method: http.MethodGet, Path: globex.Base + "/contacts/crm/a-only"},
		{Method: http.MethodGet, Path: globex.Base + "/contacts/crm/a-only/revisions"},
		{Method: http.MethodGet, Path: globex.Base + "/records/crm/contact/a-only"},
	} {
		status, body := e.Call(rt, globex.Token)
		if status != http.StatusNotFound {
			t.Errorf("globex token %s %s: %d %v, want 404", rt.Method, rt.Path, status, body)
		}
	}

	// Lists under each tenant hold only its own data.
	status, body = e.Get(globex.Base+"/events", globex.Token)
	for _, ev := range webtest.List(t, status, body, "events") {
		if id := ev["event_id"].(string); !strings.HasPrefix(id, "g-") {
			t.Errorf("globex events list acme's %s", id)
		}
	}
	status, body = e.Get(globex.Base+"/conflicts", globex.Token)
	if cs := webtest.List(t, status, body, "conflicts"); len(cs) != 1 || cs[0]["id"] != float64(globex.ConflictID) {
		t.Errorf("globex conflicts %v", cs)
	}
	status, body = e.Get(acme.Base+"/stats", acme.Token)
	if status != http.StatusOK || body["outcomes"].(map[string]any)["applied"] != 5.0 { // 3 seeded, a-erp-1, a-only-1
		t.Errorf("acme stats %v", body)
	}
	status, body = e.Get(globex.Base+"/contacts/crm/c-1", globex.Token)
	if status != http.StatusOK || body["last_applied_event"] != "g-evt-12" {
		t.Errorf("globex contact %v", body)
	}
	// acme's conflict survived every attempt.
	status, body = e.Get(acme.Base+"/conflicts?status=open", acme.Token)
	if open := webtest.List(t, status, body, "conflicts"); len(open) != 1 || open[0]["id"] != float64(acme.ConflictID) {
		t.Errorf("acme open conflicts %v", open)
	}
}

package api_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

func TestAPIAudit(t *testing.T) {
	t.Parallel()
	e, d := webtest.APISetup(t)
	globex := e.Token("globex")
	p, err := e.Store.ProviderSummary(context.Background(), e.Tenant("acme").ID, "crm")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store.RetireProviderSecrets(webtest.CliContext(), p.TenantID, p.ID); err != nil {
		t.Fatal(err)
	}
	// A change made with the token is recorded as the token's.
	if status, body := e.Resolve(d, d.ConflictID, `{"resolution": "keep", "note": "fine"}`); status != http.StatusOK {
		t.Fatalf("resolve: %d %v", status, body)
	}

	status, body := e.Get(d.Base+"/audit?limit=2", d.Token)
	entries := webtest.List(t, status, body, "entries")
	if len(entries) != 2 || body["next_cursor"] == nil {
		t.Fatalf("first page: %v", body)
	}
	first := entries[0]
	webtest.AssertKeys(t, first, "id", "at", "actor", "actor_kind", "action", "target", "summary", "client_address")
	assertTime(t, first, "at")
	if first["action"] != "conflict_resolve" || first["actor_kind"] != "token" || first["client_address"] != "127.0.0.1" ||
		first["summary"] != `keep: open → kept; note "fine"` {
		t.Fatalf("the token's entry: %v", first)
	}
	if entries[1]["action"] != "provider_retire" || entries[1]["actor"] != "test" || entries[1]["client_address"] != nil {
		t.Fatalf("the command line's entry: %v", entries[1])
	}
	status, body = e.Get(d.Base+"/audit?limit=2&cursor="+url.QueryEscape(body["next_cursor"].(string)), d.Token)
	// (The test's set-up is recorded too: the provider and the token.)
	if rest := webtest.List(t, status, body, "entries"); len(rest) != 2 || rest[0]["action"] != "token_create" ||
		rest[1]["action"] != "provider_create" || body["next_cursor"] != nil {
		t.Fatalf("second page: %v", body)
	}

	filters := []struct {
		query  string
		status int
		count  int
	}{
		{"?action=provider_retire", http.StatusOK, 1},
		{"?actor=test", http.StatusOK, 4}, // the token is named test too
		{"?actor=nobody", http.StatusOK, 0},
		{"?from=2999-01-01T00:00:00Z", http.StatusOK, 0},
		{"?to=2999-01-01T00:00:00Z", http.StatusOK, 4},
		{"?from=yesterday", http.StatusBadRequest, 0},
		{"?limit=0", http.StatusBadRequest, 0},
		{"?cursor=garbage", http.StatusBadRequest, 0},
	}
	for _, f := range filters {
		t.Run(f.query, func(t *testing.T) {
			status, body := e.Get(d.Base+"/audit"+f.query, d.Token)
			if f.status != http.StatusOK {
				if status != f.status {
					t.Fatalf("%d %v, want %d", status, body, f.status)
				}
				webtest.AssertKeys(t, body, "error")
				return
			}
			if got := webtest.List(t, status, body, "entries"); len(got) != f.count {
				t.Fatalf("%d entries, want %d", len(got), f.count)
			}
		})
	}

	// Another tenant's token sees nothing of acme's log.
	status, body = e.Get(d.Base+"/audit", globex)
	webtest.AssertError(t, status, body, http.StatusNotFound, "not found")
	status, body = e.Get("/api/v1/tenants/globex/audit", globex)
	if got := webtest.List(t, status, body, "entries"); len(got) != 1 || got[0]["action"] != "token_create" {
		t.Fatalf("globex's log: %v", got)
	}
}

// TestAPIAuditNeedsAWriteToken is the review's L3: a read-only token (one
// handed to a BI tool) read the audit log, with actors and operators'
// addresses, which the console shows only to owners.
func TestAPIAuditNeedsAWriteToken(t *testing.T) {
	t.Parallel()
	e, d := webtest.APISetup(t)
	read := e.TokenWith("acme", domain.NewAPIToken{Name: "bi", Access: domain.TokenRead})
	status, body := e.Get(d.Base+"/audit", read)
	webtest.AssertError(t, status, body, http.StatusForbidden, "read-only")
	if status, body := e.Get(d.Base+"/audit", d.Token); status != http.StatusOK {
		t.Fatalf("a read-write token: %d %v", status, body)
	}
}

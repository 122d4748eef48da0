package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestAPITokensConsole(t *testing.T) {
	t.Parallel()
	e := setup(t)
	b := e.operator("ops@example.com", false, "acme")
	if _, doc := b.get("/t/acme/tokens"); !strings.Contains(text(doc, ".empty"), "No API tokens yet") {
		t.Fatalf("empty state %q", text(doc, ".empty"))
	}
	if status, doc, _ := b.post("/t/acme/tokens", url.Values{"name": {"  "}}); status != http.StatusUnprocessableEntity ||
		!strings.Contains(text(doc, "[role=alert]"), "give the token a name") {
		t.Fatalf("empty name: %d %q", status, text(doc, "[role=alert]"))
	}

	status, doc, _ := b.post("/t/acme/tokens", url.Values{"name": {"reporting export"}})
	token := text(doc, "#api-token")
	if status != http.StatusOK || !strings.HasPrefix(token, "tmk_") || doc.Find(`button[data-copy="api-token"]`).Length() != 1 {
		t.Fatalf("create: %d, token %q", status, token)
	}
	if !strings.Contains(text(doc, "#api-example"), token) {
		t.Errorf("example %q does not use the token", text(doc, "#api-example"))
	}
	if status, _ := e.get("/api/v1/tenants/acme/stats", token); status != http.StatusOK {
		t.Fatalf("new token answered %d", status)
	}

	_, doc = b.get("/t/acme/tokens")
	html, _ := doc.Html()
	row := doc.Find("table.tokens tbody tr").First()
	rowText := strings.Join(strings.Fields(row.Text()), " ")
	if strings.Contains(html, token) || !strings.Contains(rowText, "reporting export") || !strings.Contains(rowText, "active") ||
		row.Find("td").Eq(2).Text() == "never" {
		t.Fatalf("token list: row %q, shows token again: %v", rowText, strings.Contains(html, token))
	}
	revoke := row.Find("form[data-confirm]").AttrOr("action", "")
	status, _, loc := b.post(revoke, nil)
	if status != http.StatusSeeOther || loc != "/t/acme/tokens" {
		t.Fatalf("revoke %q: %d to %q", revoke, status, loc)
	}
	if status, _ := e.get("/api/v1/tenants/acme/stats", token); status != http.StatusUnauthorized {
		t.Fatalf("revoked token answered %d, want 401", status)
	}
	_, doc = b.get(loc)
	if row := text(doc, "table.tokens tbody tr"); !strings.Contains(row, "revoked") || !strings.Contains(text(doc, ".flash"), "Token revoked") {
		t.Fatalf("after revoke: row %q, flash %q", row, text(doc, ".flash"))
	}
	if status, _, _ := b.post("/t/acme/tokens/999999/revoke", nil); status != http.StatusNotFound {
		t.Fatalf("unknown token revoke answered %d", status)
	}
}

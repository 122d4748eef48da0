package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
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

func TestAPITokenAccessAndExpiry(t *testing.T) {
	t.Parallel()
	e, d := apiSetup(t)
	owner := e.operator("owner@example.com", false, "acme")

	// The form starts on the safer choices.
	_, doc := owner.get("/t/acme/tokens")
	form := doc.Find(`form[action="/t/acme/tokens"]`)
	if a, x := form.Find("select[name=access] option[selected]").AttrOr("value", ""), form.Find("select[name=expires] option[selected]").AttrOr("value", ""); a != "read" || x != "90d" {
		t.Fatalf("form defaults: access %q, expires %q", a, x)
	}
	if status, doc, _ := owner.post("/t/acme/tokens", url.Values{"name": {"x"}, "access": {"read"}, "expires": {"7y"}}); status != http.StatusUnprocessableEntity ||
		!strings.Contains(text(doc, "[role=alert]"), "expiry must be whole days or hours") {
		t.Fatalf("bad expiry: %d %q", status, text(doc, "[role=alert]"))
	}

	_, doc, _ = owner.post("/t/acme/tokens", url.Values{"name": {"dashboard"}, "access": {"read"}, "expires": {"30d"}})
	read := text(doc, "#api-token")
	row := doc.Find("table.tokens tbody tr").First()
	access, creator, expiry := row.Find(".token-access").Text(), row.Find(".token-creator").Text(), row.Find(".token-expires").Text()
	if want := time.Now().UTC().AddDate(0, 0, 30).Format("2006-01-02"); access != "read-only" || creator != "by owner@example.com" ||
		!strings.HasPrefix(expiry, want) {
		t.Fatalf("token listed as %q, %q, expiring %q; want read-only, by owner@example.com, expiring %s", access, creator, expiry, want)
	}

	resolve := fmt.Sprintf("%s/conflicts/%d/resolve", d.base, d.conflictID)
	if status, _ := e.get(d.base+"/conflicts", read); status != http.StatusOK {
		t.Fatalf("read-only token reading: %d", status)
	}
	status, body := e.call(apiRoute{http.MethodPost, resolve}, read)
	assertError(t, status, body, http.StatusForbidden, "read-only")
	status, body = e.call(apiRoute{http.MethodPost, resolve}, d.token)
	if status != http.StatusOK || body["status"] != "adopted" {
		t.Fatalf("read-write token resolving: %d %v", status, body)
	}

	// Once past its expiry a token is refused like a revoked one.
	if _, err := e.store.Pool().Exec(context.Background(), `UPDATE api_tokens SET expires_at = now() - interval '1 minute' WHERE name = 'dashboard'`); err != nil {
		t.Fatal(err)
	}
	status, body = e.get(d.base+"/stats", read)
	assertError(t, status, body, http.StatusUnauthorized, "expired")
	if _, doc := owner.get("/t/acme/tokens"); !strings.Contains(text(doc, "table.tokens tbody tr"), "expired") {
		t.Fatalf("expired token listed as %q", text(doc, "table.tokens tbody tr"))
	}

	// A viewer sees the tokens but no form to create or revoke one.
	viewer := e.withRole("viewer@example.com", domain.RoleViewer)
	_, doc = viewer.get("/t/acme/tokens")
	if doc.Find("table.tokens tbody tr").Length() != 2 || doc.Find("form").Length() != 1 { // sign out only
		t.Fatalf("viewer's tokens page: %d rows, %d forms", doc.Find("table.tokens tbody tr").Length(), doc.Find("form").Length())
	}
}

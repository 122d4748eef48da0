package workspace_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

func TestAPITokensConsole(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("ops@example.com", false, "acme")
	if _, doc := b.Get("/t/acme/tokens"); !strings.Contains(webtest.Text(doc, ".empty"), "No API tokens yet") {
		t.Fatalf("empty state %q", webtest.Text(doc, ".empty"))
	}
	if status, doc, _ := b.Post("/t/acme/tokens", url.Values{"name": {"  "}}); status != http.StatusUnprocessableEntity ||
		!strings.Contains(webtest.Text(doc, "[role=alert]"), "give the token a name") {
		t.Fatalf("empty name: %d %q", status, webtest.Text(doc, "[role=alert]"))
	}

	status, doc, _ := b.Post("/t/acme/tokens", url.Values{"name": {"reporting export"}})
	token := webtest.Text(doc, "#api-token")
	if status != http.StatusOK || !strings.HasPrefix(token, "tmk_") || doc.Find(`button[data-copy="api-token"]`).Length() != 1 {
		t.Fatalf("create: %d, token %q", status, token)
	}
	if !strings.Contains(webtest.Text(doc, "#api-example"), token) {
		t.Errorf("example %q does not use the token", webtest.Text(doc, "#api-example"))
	}
	if status, _ := e.Get("/api/v1/tenants/acme/stats", token); status != http.StatusOK {
		t.Fatalf("new token answered %d", status)
	}

	_, doc = b.Get("/t/acme/tokens")
	html, _ := doc.Html()
	row := doc.Find("table.tokens tbody tr").First()
	rowText := strings.Join(strings.Fields(row.Text()), " ")
	if strings.Contains(html, token) || !strings.Contains(rowText, "reporting export") || !strings.Contains(rowText, "active") ||
		row.Find("td").Eq(2).Text() == "never" {
		t.Fatalf("token list: row %q, shows token again: %v", rowText, strings.Contains(html, token))
	}
	revoke := row.Find("form[data-confirm]").AttrOr("action", "")
	status, _, loc := b.Post(revoke, nil)
	if status != http.StatusSeeOther || loc != "/t/acme/tokens" {
		t.Fatalf("revoke %q: %d to %q", revoke, status, loc)
	}
	if status, _ := e.Get("/api/v1/tenants/acme/stats", token); status != http.StatusUnauthorized {
		t.Fatalf("revoked token answered %d, want 401", status)
	}
	_, doc = b.Get(loc)
	if row := webtest.Text(doc, "table.tokens tbody tr"); !strings.Contains(row, "revoked") || !strings.Contains(webtest.Text(doc, ".flash"), "Token revoked") {
		t.Fatalf("after revoke: row %q, flash %q", row, webtest.Text(doc, ".flash"))
	}
	if status, _, _ := b.Post("/t/acme/tokens/999999/revoke", nil); status != http.StatusNotFound {
		t.Fatalf("unknown token revoke answered %d", status)
	}
}

func TestAPITokenAccessAndExpiry(t *testing.T) {
	t.Parallel()
	e, d := webtest.APISetup(t)
	owner := e.Operator("owner@example.com", false, "acme")

	// The form starts on the safer choices.
	_, doc := owner.Get("/t/acme/tokens")
	form := doc.Find(`form[action="/t/acme/tokens"]`)
	if a, x := form.Find("select[name=access] option[selected]").AttrOr("value", ""), form.Find("select[name=expires] option[selected]").AttrOr("value", ""); a != "read" || x != "90d" {
		t.Fatalf("form defaults: access %q, expires %q", a, x)
	}
	if status, doc, _ := owner.Post("/t/acme/tokens", url.Values{"name": {"x"}, "access": {"read"}, "expires": {"7y"}}); status != http.StatusUnprocessableEntity ||
		!strings.Contains(webtest.Text(doc, "[role=alert]"), "expiry must be whole days or hours") {
		t.Fatalf("bad expiry: %d %q", status, webtest.Text(doc, "[role=alert]"))
	}

	_, doc, _ = owner.Post("/t/acme/tokens", url.Values{"name": {"dashboard"}, "access": {"read"}, "expires": {"30d"}})
	read := webtest.Text(doc, "#api-token")
	row := doc.Find("table.tokens tbody tr").First()
	access, creator, expiry := row.Find(".token-access").Text(), row.Find(".token-creator").Text(), row.Find(".token-expires").Text()
	if want := time.Now().UTC().AddDate(0, 0, 30).Format("2006-01-02"); access != "read-only" || creator != "by owner@example.com" ||
		!strings.HasPrefix(expiry, want) {
		t.Fatalf("token listed as %q, %q, expiring %q; want read-only, by owner@example.com, expiring %s", access, creator, expiry, want)
	}

	resolve := fmt.Sprintf("%s/conflicts/%d/resolve", d.Base, d.ConflictID)
	if status, _ := e.Get(d.Base+"/conflicts", read); status != http.StatusOK {
		t.Fatalf("read-only token reading: %d", status)
	}
	status, body := e.Call(webtest.APIRoute{Method: http.MethodPost, Path: resolve}, read)
	webtest.AssertError(t, status, body, http.StatusForbidden, "read-only")
	status, body = e.Call(webtest.APIRoute{Method: http.MethodPost, Path: resolve}, d.Token)
	if status != http.StatusOK || body["status"] != "adopted" {
		t.Fatalf("read-write token resolving: %d %v", status, body)
	}

	// Once past its expiry a token is refused like a revoked one.
	if _, err := e.Store.Pool().Exec(context.Background(), `UPDATE api_tokens SET expires_at = now() - interval '1 minute' WHERE name = 'dashboard'`); err != nil {
		t.Fatal(err)
	}
	status, body = e.Get(d.Base+"/stats", read)
	webtest.AssertError(t, status, body, http.StatusUnauthorized, "expired")
	if _, doc := owner.Get("/t/acme/tokens"); !strings.Contains(webtest.Text(doc, "table.tokens tbody tr"), "expired") {
		t.Fatalf("expired token listed as %q", webtest.Text(doc, "table.tokens tbody tr"))
	}

	// A viewer sees the tokens but no form to create or revoke one.
	viewer := e.WithRole("viewer@example.com", domain.RoleViewer)
	_, doc = viewer.Get("/t/acme/tokens")
	if doc.Find("table.tokens tbody tr").Length() != 2 || doc.Find("form").Length() != 1 { // sign out only
		t.Fatalf("viewer's tokens page: %d rows, %d forms", doc.Find("table.tokens tbody tr").Length(), doc.Find("form").Length())
	}
}

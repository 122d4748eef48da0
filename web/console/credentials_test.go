package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestOwnerTokensDieWithTheirAccess is the review's M1 reproduction: a
// read-write token an owner created answered 200 after an admin disabled
// the owner, or reset their password. It answers 401 now, and the
// operators page says so.
func TestOwnerTokensDieWithTheirAccess(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	admin := e.Operator("root@example.com", true)
	for _, c := range []struct{ email, action string }{
		{"ann@example.com", "/disable"},
		{"bob@example.com", "/password"},
	} {
		e.Member(c.email, false, domain.RoleOwner, "acme")
		id := e.OperatorID(c.email)
		tok := e.TokenWith("acme", domain.NewAPIToken{Name: "owner-script", Access: domain.TokenWrite, CreatedBy: id})
		if status, _ := e.Get("/api/v1/tenants/acme/stats", tok); status != http.StatusOK {
			t.Fatalf("%s: the token before: %d", c.action, status)
		}
		if status, _, _ := admin.Post(webtest.UserPath(id, c.action), url.Values{"password": {"a brand new secret"}}); status != http.StatusSeeOther {
			t.Fatalf("%s: %d", c.action, status)
		}
		if status, _ := e.Get("/api/v1/tenants/acme/stats", tok); status != http.StatusUnauthorized {
			t.Errorf("%s: the owner's token answered %d, want 401", c.action, status)
		}
	}
	log := strings.Join(e.AuditLog("acme"), "\n")
	for _, want := range []string{"its creator was disabled", "its creator's password was reset"} {
		if !strings.Contains(log, want) {
			t.Errorf("the audit log lacks %q:\n%s", want, log)
		}
	}
	_, doc := admin.Get("/admin/users")
	if text := doc.Text(); !strings.Contains(text, "also revokes the API tokens they created") {
		t.Error("the operators page does not say that disabling revokes tokens")
	}
}

// TestConsoleSealsOnlyUnderTheKeyInUse is M6 for the console: a node whose
// first key is not the one the active secrets use refuses to connect a
// provider or rotate a secret, saying which keys, and stores nothing.
func TestConsoleSealsOnlyUnderTheKeyInUse(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("ops@example.com", false, "acme")
	// The active secrets as another node's key sealed them.
	e.Exec(`UPDATE provider_secrets SET key_id = 'ffffffffffffffff'`)
	active := func() []string {
		return e.Strings(`SELECT key_id FROM provider_secrets WHERE retired_at IS NULL ORDER BY id`)
	}

	status, _, loc := b.Post("/t/acme/providers/crm/rotate", nil)
	if status != http.StatusSeeOther || loc != "/t/acme/providers/crm" {
		t.Fatalf("rotate: %d to %q", status, loc)
	}
	_, doc := b.Get(loc)
	if flash := webtest.ShownFlash(doc); !strings.Contains(flash, "Cannot rotate") ||
		!strings.Contains(flash, "stored under key id ffffffffffffffff (1 active secrets of 1 providers)") || !strings.Contains(flash, "--new-key") {
		t.Fatalf("rotate flash %q", flash)
	}
	status, doc, _ = b.Post("/t/acme/providers", url.Values{"name": {"other"}, "kind": {"standard"}})
	if msg := webtest.Text(doc, ".error"); status != http.StatusUnprocessableEntity || !strings.Contains(msg, "key id ffffffffffffffff") {
		t.Fatalf("connect: %d %q", status, msg)
	}
	if got := active(); len(got) != 1 || got[0] != "ffffffffffffffff" {
		t.Fatalf("the refusals stored secrets under %v", got)
	}
}

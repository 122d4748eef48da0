package console_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestTimelineOutcomeLabel: the record timeline names an outcome as every
// other page does ("revision conflict"), never by its machine value.
func TestTimelineOutcomeLabel(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.ConflictOf("c-1", 3, `{"a":1}`, `{"a":2}`)
	b := e.Operator("ann@example.com", false, "acme")
	status, doc := b.Get("/t/acme/contacts/crm/c-1")
	if status != http.StatusOK {
		t.Fatalf("timeline: %d", status)
	}
	if got := webtest.Text(doc, ".badge.revision_conflict"); got != "revision conflict" {
		t.Errorf("badge %q, want %q", got, "revision conflict")
	}
	if main := webtest.Text(doc, "main"); strings.Contains(main, "revision_conflict") {
		t.Errorf("the timeline shows the machine value: %q", main)
	}
	// The event history and the timeline agree.
	_, doc = b.Get("/t/acme/events?outcome=revision_conflict")
	if got := webtest.Text(doc, ".badge.revision_conflict"); got != "revision conflict" {
		t.Errorf("event history badge %q", got)
	}
}

// TestAuditSentences: both audit logs say what happened as a sentence
// ("ann@example.com created an API token reporting"), with the raw action
// kept as the title and as the filter's value; command-line entries name
// the CLI user (never "unknown") and come from the "command line".
func TestAuditSentences(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	admin := e.Operator("root@example.com", true)
	ann := e.Operator("ann@example.com", false, "acme")
	if status, _, _ := ann.Post("/t/acme/tokens", url.Values{"name": {"reporting"}, "access": {"read"}, "expires": {"30d"}}); status != http.StatusOK {
		t.Fatalf("create token: %d", status)
	}
	if status, _, _ := ann.Post("/t/acme/providers/crm/scopes", url.Values{"object_type": {"deal"}, "action": {"snapshot"},
		"ttl": {"2"}, "ttl_unit": {"days"}, "identifier_rule": {"event_id"}, "enabled": {"on"}, "new": {"1"}}); status != http.StatusSeeOther {
		t.Fatalf("save scope: %d", status)
	}
	// An entry written by an older CLI that found no user.
	e.Exec(`INSERT INTO audit_log (tenant_id, actor_kind, actor, action, target, summary, client_address)
		SELECT id, 'cli', 'unknown', 'token_revoke', 'old', '', '' FROM tenants WHERE slug = 'acme'`)

	for _, path := range []string{"/t/acme/audit", "/admin/audit"} {
		status, doc := admin.Get(path)
		if status != http.StatusOK {
			t.Fatalf("%s: %d", path, status)
		}
		rows := webtest.CellRows(doc, "table.audit tbody tr")
		for _, want := range []string{
			"ann@example.com (console) created an API token reporting | read-only, expires",
			"ann@example.com (console) changed a scope crm deal.snapshot |",
			"cli (command line) revoked an API token old |  | command line",
		} {
			if !slices.ContainsFunc(rows, func(r string) bool { return strings.Contains(r, want) }) {
				t.Errorf("%s: no row with %q in\n%s", path, want, strings.Join(rows, "\n"))
			}
		}
		if main := webtest.Text(doc, "table.audit"); strings.Contains(main, "token_create") || strings.Contains(main, "unknown") {
			t.Errorf("%s shows a raw action or an unknown actor: %q", path, main)
		}
		if title := doc.Find(`.audit-action[title="token_create"]`).First().Text(); title != "created an API token" {
			t.Errorf("%s: token_create shown as %q", path, title)
		}
		opt := doc.Find(`select[name=action] option[value="scope_update"]`)
		if opt.Length() != 1 || opt.Text() != "changed a scope" {
			t.Errorf("%s: filter option %q", path, opt.Text())
		}
	}
	_, doc := admin.Get("/t/acme/audit?action=token_create")
	if rows := webtest.CellRows(doc, "table.audit tbody tr"); len(rows) != 1 || !strings.Contains(rows[0], "created an API token reporting") {
		t.Errorf("filtered by token_create:\n%s", strings.Join(rows, "\n"))
	}
}

// TestReconciliationRunNow: an admin's "Run now" checks every workspace,
// stores the report shown after it and records who ran it; anyone else
// gets 403; a run while another holds the lock is refused with a message.
func TestReconciliationRunNow(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	admin := e.Operator("root@example.com", true)
	owner := e.Operator("ann@example.com", false, "acme")

	_, doc := admin.Get("/admin/reconciliation")
	if doc.Find(`form[method=post][action="/admin/reconciliation/run"] button`).Text() != "Run now" {
		t.Fatal("no Run now button")
	}
	if status, _, _ := owner.Post("/admin/reconciliation/run", nil); status != http.StatusForbidden {
		t.Fatalf("an owner's run answered %d, want 403", status)
	}
	if n := e.Strings(`SELECT action FROM audit_log WHERE action = 'reconciliation_run'`); len(n) != 0 {
		t.Fatalf("a refused run was recorded: %v", n)
	}

	status, _, loc := admin.Post("/admin/reconciliation/run", nil)
	if status != http.StatusSeeOther || loc != "/admin/reconciliation" {
		t.Fatalf("run: %d to %q", status, loc)
	}
	_, doc = admin.Get(loc)
	if flash := webtest.ShownFlash(doc); !regexp.MustCompile(`^Reconciliation finished in [0-9.]+m?s: no violations of the \d+ invariants \(every tenant\)\.$`).MatchString(flash) {
		t.Errorf("flash %q", flash)
	}
	if got := webtest.Text(doc, ".reconcile-last .badge"); got != "no violations" {
		t.Errorf("report badge %q", got)
	}
	if got := e.Strings(`SELECT actor || ' ' || actor_kind || ' ' || action || ' ' || target || ': ' || summary FROM audit_log
		WHERE action = 'reconciliation_run'`); len(got) != 1 || !strings.HasPrefix(got[0], "root@example.com operator reconciliation_run every workspace: no violations") {
		t.Errorf("audit entries %q", got)
	}
	_, doc = admin.Get("/admin/audit?action=reconciliation_run")
	if rows := webtest.CellRows(doc, "table.audit tbody tr"); len(rows) != 1 || !strings.Contains(rows[0], "root@example.com (console) ran the reconciliation of every workspace") {
		t.Errorf("admin audit rows %q", rows)
	}

	// While another run holds the lock (the nightly one, another node's).
	conn, err := e.Store.Pool().Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(t.Context(), `SELECT pg_advisory_lock(x'7265636f6e63696c'::bigint)`); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(context.Background(), `SELECT pg_advisory_unlock(x'7265636f6e63696c'::bigint)`)
	_, _, loc = admin.Post("/admin/reconciliation/run", nil)
	if _, doc := admin.Get(loc); !strings.Contains(webtest.ShownFlash(doc), "already running") {
		t.Errorf("run during another: flash %q", webtest.ShownFlash(doc))
	}
}

// TestRevokeExpiredToken: an expired token can be revoked like any other,
// and is listed as revoked after it.
func TestRevokeExpiredToken(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("ann@example.com", false, "acme")
	e.TokenWith("acme", domain.NewAPIToken{Name: "old-export", Access: domain.TokenRead, Lifetime: time.Hour})
	e.Exec(`UPDATE api_tokens SET expires_at = now() - interval '1 day' WHERE name = 'old-export'`)
	var id int64
	if err := e.Store.Pool().QueryRow(t.Context(), `SELECT id FROM api_tokens WHERE name = 'old-export'`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	revoke := "/t/acme/tokens/" + strconv.FormatInt(id, 10) + "/revoke"

	_, doc := b.Get("/t/acme/tokens")
	row := doc.Find("table.tokens tbody tr").FilterFunction(func(_ int, tr *goquery.Selection) bool {
		return strings.Contains(tr.Text(), "old-export")
	})
	if strings.TrimSpace(row.Find(".badge").Text()) != "expired" || row.Find(`form[action="`+revoke+`"] button`).Text() != "Revoke" {
		t.Fatalf("expired row %q, revoke form %d", strings.TrimSpace(row.Find(".badge").Text()), row.Find("form").Length())
	}
	if status, _, _ := b.Post(revoke, nil); status != http.StatusSeeOther {
		t.Fatalf("revoke: %d", status)
	}
	_, doc = b.Get("/t/acme/tokens")
	row = doc.Find("table.tokens tbody tr").FilterFunction(func(_ int, tr *goquery.Selection) bool {
		return strings.Contains(tr.Text(), "old-export")
	})
	if strings.TrimSpace(row.Find(".badge").Text()) != "revoked" || row.Find("form").Length() != 0 {
		t.Errorf("after revoking: %q, %d forms", strings.TrimSpace(row.Find(".badge").Text()), row.Find("form").Length())
	}
	if got := e.AuditLog("acme"); !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "ann@example.com token_revoke old-export") }) {
		t.Errorf("audit %q", got)
	}
}

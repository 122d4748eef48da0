package views_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
)

// TestFormsFollowTheRole: every page shows only the forms the operator's
// role can use.
func TestFormsFollowTheRole(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	provider := views.ProviderView{Provider: domain.ProviderSummary{Provider: domain.Provider{Name: "crm", Kind: "standard", CreatedAt: at}},
		HasSecrets: true, Secrets: []domain.ProviderSecretInfo{{ID: 1, CreatedAt: at}},
		Scopes:   []views.ScopeForm{{ObjectType: "contact", Action: "snapshot", TTLValue: "7", TTLUnit: "days", IdentifierRule: "event_id", Enabled: true}},
		NewScope: views.ScopeForm{New: true}}
	tokens := views.TokensView{Tokens: []domain.APIToken{{ID: 3, Name: "export", Access: domain.TokenRead, CreatedAt: at, CreatedBy: "ops@example.com"}}}
	for _, tc := range []struct {
		page   string
		render func(l views.Layout) string // the page's HTML
		forms  map[string]domain.Role      // form action → the least role that sees it
	}{
		{"provider", func(l views.Layout) string { _, html := render(t, views.Provider(l, provider)); return html },
			map[string]domain.Role{
				"/t/acme/providers/crm/rotate": domain.RoleOwner, "/t/acme/providers/crm/retire": domain.RoleOwner,
				"/t/acme/providers/crm/test": domain.RoleOwner, "/t/acme/providers/crm/scopes": domain.RoleOwner,
			}},
		{"providers", func(l views.Layout) string {
			_, html := render(t, views.Providers(l, views.ProvidersView{Kinds: []views.ProviderKind{{Name: "standard", Title: "Standard"}}, Form: views.ProviderForm{Kind: "standard"}}))
			return html
		}, map[string]domain.Role{"/t/acme/providers": domain.RoleOwner}},
		{"tokens", func(l views.Layout) string { _, html := render(t, views.Tokens(l, tokens)); return html },
			map[string]domain.Role{"/t/acme/tokens": domain.RoleOwner, "/t/acme/tokens/3/revoke": domain.RoleOwner}},
		{"conflict", func(l views.Layout) string {
			_, html := render(t, views.ConflictView(l, conflictPage(domain.ConflictOpen, nil)))
			return html
		}, map[string]domain.Role{"/t/acme/conflicts/4/resolve": domain.RoleOperator}},
	} {
		for _, role := range domain.Roles {
			t.Run(tc.page+" as "+string(role), func(t *testing.T) {
				t.Parallel()
				html := tc.render(acmeAs("x", role))
				for action, need := range tc.forms {
					if got, want := strings.Contains(html, `action="`+action+`"`), role.Allows(need); got != want {
						t.Errorf("form %s shown = %v, want %v", action, got, want)
					}
				}
			})
		}
	}
}

func TestMembersPage(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	v := views.MembersView{SelfID: 1, Form: views.MemberForm{Email: "new@example.com", Role: domain.RoleViewer, Error: "There is no operator new@example.com."},
		Members: []domain.Member{
			{UserID: 1, Email: "me@example.com", Role: domain.RoleOwner, Since: at},
			{UserID: 2, Email: "ann@example.com", Role: domain.RoleViewer, Since: at},
			{UserID: 3, Email: "root@example.com", Role: domain.RoleOperator, IsAdmin: true, Since: at},
		}}
	doc, _ := render(t, views.Members(acme("members"), v))
	rows := doc.Find("table.members tbody tr")
	if rows.Length() != 3 {
		t.Fatalf("%d member rows", rows.Length())
	}
	for i, want := range []struct {
		text, role, confirm string
	}{
		{"me@example.com (you)", "owner", "If you stop being an owner"},
		{"ann@example.com", "viewer", ""},
		{"root@example.com admin", "operator", ""},
	} {
		row := rows.Eq(i)
		if got := seen(row.Find(".member-email")); got != want.text {
			t.Errorf("row %d: %q, want %q", i, got, want.text)
		}
		form := row.Find(`form.member-role`)
		if got := form.Find("option[selected]").AttrOr("value", ""); got != want.role {
			t.Errorf("row %d: role %q, want %q", i, got, want.role)
		}
		if got := form.AttrOr("data-confirm", ""); !strings.HasPrefix(got, want.confirm) || (want.confirm == "") != (got == "") {
			t.Errorf("row %d: confirm %q, want %q…", i, got, want.confirm)
		}
		if row.Find(`form[action$="/remove"] button`).Length() != 1 {
			t.Errorf("row %d: no remove button", i)
		}
	}
	add := doc.Find(`form[method=post][action="/t/acme/members"]`)
	if add.Find("input[name=email]").AttrOr("value", "") != "new@example.com" ||
		add.Find("select[name=role] option[selected]").AttrOr("value", "") != "viewer" {
		t.Error("the refused form does not keep what was entered")
	}
	if got := text(doc, "[role=alert]"); got != "There is no operator new@example.com." {
		t.Errorf("alert %q", got)
	}
}

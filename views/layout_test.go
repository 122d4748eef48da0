package views_test

import (
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
)

func TestLayoutNav(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		layout     views.Layout
		sections   int    // links in the section nav
		active     string // href of the highlighted link; "" for none
		operators  bool   // the admin link
		switcher   bool
		tenantName string // shown beside the account, without a switcher
	}{
		{"owner in a tenant", acme("events"), 11, "/t/acme/events", false, false, "Acme Inc"},
		{"viewer in a tenant: no members page, destinations nor audit log", acmeAs("events", domain.RoleViewer), 8, "/t/acme/events", false, false, "Acme Inc"},
		{"operator in a tenant: no members page, destinations nor audit log", acmeAs("members", domain.RoleOperator), 8, "", false, false, "Acme Inc"},
		{"members highlighted", acme("members"), 11, "/t/acme/members", false, false, "Acme Inc"},
		{"destinations highlighted", acme("destinations"), 11, "/t/acme/destinations", false, false, "Acme Inc"},
		{"audit log highlighted", acme("audit"), 11, "/t/acme/audit", false, false, "Acme Inc"},
		{"overview highlighted", acme("overview"), 11, "/t/acme", false, false, "Acme Inc"},
		{"records highlighted", acme("records"), 11, "/t/acme/records", false, false, "Acme Inc"},
		{"admin", func() views.Layout { l := acme("admin"); l.IsAdmin = true; return l }(), 11, "/admin/users", true, false, "Acme Inc"},
		{"two workspaces", func() views.Layout {
			l := acme("conflicts")
			l.Tenants = append(l.Tenants, domain.Tenant{Slug: "globex", Name: "Globex"})
			return l
		}(), 11, "/t/acme/conflicts", false, true, ""},
		{"outside a tenant", views.Layout{Title: "Workspaces", UserEmail: "ops@example.com",
			Tenants: []domain.Tenant{{Slug: "acme", Name: "Acme Inc"}}}, 0, "", false, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc, _ := render(t, views.Message(tc.layout, "Hello", "Body text"))
			if n := doc.Find("nav.sections a").Length(); n != tc.sections {
				t.Errorf("%d section links, want %d", n, tc.sections)
			}
			active := doc.Find("header a.active")
			switch {
			case tc.active == "" && active.Length() != 0:
				t.Errorf("%d links highlighted, want none", active.Length())
			case tc.active != "" && (active.Length() != 1 || active.AttrOr("href", "") != tc.active):
				t.Errorf("highlighted %d links (%q), want %s", active.Length(), active.AttrOr("href", ""), tc.active)
			}
			if got := doc.Find(`a[href="/admin/users"]`).Length() == 1; got != tc.operators {
				t.Errorf("operators link shown = %v, want %v", got, tc.operators)
			}
			if got := doc.Find(`a[href="/admin/audit"]`).Length() == 1; got != tc.operators {
				t.Errorf("all audit logs link shown = %v, want %v", got, tc.operators)
			}
			if got := doc.Find("details.switcher").Length() == 1; got != tc.switcher {
				t.Errorf("workspace switcher shown = %v, want %v", got, tc.switcher)
			}
			if got := text(doc, ".tenant-name"); got != tc.tenantName {
				t.Errorf("tenant name %q, want %q", got, tc.tenantName)
			}
			if got := text(doc, ".account > span.muted"); got != "ops@example.com" {
				t.Errorf("signed-in email %q", got)
			}
			if doc.Find(`form[method=post][action="/logout"] button`).Length() != 1 {
				t.Error("no sign-out form")
			}
			if got := doc.Find("title").Text(); got != tc.layout.Title+" · Tidemark" {
				t.Errorf("title %q", got)
			}
			if text(doc, "main h1") != "Hello" || text(doc, "main p") != "Body text" {
				t.Errorf("main shows %q", text(doc, "main"))
			}
		})
	}
}

func TestLayoutFlash(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		flash views.Flash
		class string // "" when no flash is shown
	}{
		{"none", views.Flash{}, ""},
		{"ok", views.Flash{Kind: "ok", Message: "Conflict 1 kept."}, "flash-ok"},
		{"error", views.Flash{Kind: "error", Message: "Cannot rotate: <b>no</b>"}, "flash-error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := acme("overview")
			l.Flash = tc.flash
			doc, _ := render(t, views.Message(l, "Hello", "Body"))
			f := doc.Find(".flash")
			if tc.class == "" {
				if f.Length() != 0 {
					t.Fatalf("a flash is shown: %q", f.Text())
				}
				return
			}
			if f.Length() != 1 || !f.HasClass(tc.class) || f.AttrOr("role", "") != "status" {
				t.Fatalf("flash: %d elements, class %q", f.Length(), f.AttrOr("class", ""))
			}
			if f.Text() != tc.flash.Message || f.Find("b").Length() != 0 {
				t.Errorf("flash shows %q, want the message as text", f.Text())
			}
			// The flash sits above the page's content, not inside it.
			if f.ParentsFiltered("main").Length() != 0 {
				t.Error("the flash is inside main")
			}
		})
	}
}

func TestLogin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, email, message, next string
	}{
		{"first visit", "", "", ""},
		{"refused", "ops@example.com", "Wrong email or password.", "/t/acme/events"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc, _ := render(t, views.Login(tc.email, tc.message, tc.next))
			form := doc.Find(`form[method=post][action="/login"]`)
			if form.Length() != 1 {
				t.Fatal("no login form")
			}
			if got := form.Find("input[name=email]").AttrOr("value", "?"); got != tc.email {
				t.Errorf("email filled with %q, want %q", got, tc.email)
			}
			if got := form.Find("input[name=next]").AttrOr("value", "?"); got != tc.next {
				t.Errorf("next %q, want %q", got, tc.next)
			}
			if got := text(doc, "[role=alert]"); got != tc.message {
				t.Errorf("alert %q, want %q", got, tc.message)
			}
			// Signed out: no console navigation and no sign-out form.
			if doc.Find(`nav, form[action="/logout"]`).Length() != 0 {
				t.Error("the login page shows signed-in navigation")
			}
		})
	}
}

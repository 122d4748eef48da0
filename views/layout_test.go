package views_test

import (
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
)

func TestLayoutNav(t *testing.T) {
	t.Parallel()
	admin := func(nav string) views.Layout {
		return views.Layout{Title: "Admin", UserEmail: "ops@example.com", IsAdmin: true, Nav: nav,
			Tenants: []domain.Tenant{{Slug: "acme", Name: "Acme Inc"}}}
	}
	for _, tc := range []struct {
		name      string
		layout    views.Layout
		sections  int    // links in the section nav
		active    string // href of the highlighted link; "" for none
		adminArea bool   // the link to the admin area
		current   string // the workspace switcher's current place; "" for no switcher
		others    int    // other workspaces in the switcher's menu
	}{
		{"owner in a tenant", acme("events"), 13, "/t/acme/events", false, "Acme Inc", 0},
		{"viewer in a tenant: no members page, destinations nor audit log", acmeAs("events", domain.RoleViewer), 10, "/t/acme/events", false, "Acme Inc", 0},
		{"operator in a tenant: no members page, destinations nor audit log", acmeAs("members", domain.RoleOperator), 10, "", false, "Acme Inc", 0},
		{"members highlighted", acme("members"), 13, "/t/acme/members", false, "Acme Inc", 0},
		{"destinations highlighted", acme("destinations"), 13, "/t/acme/destinations", false, "Acme Inc", 0},
		{"deliveries highlighted", acme("deliveries"), 13, "/t/acme/deliveries", false, "Acme Inc", 0},
		{"audit log highlighted", acme("audit"), 13, "/t/acme/audit", false, "Acme Inc", 0},
		{"overview highlighted", acme("overview"), 13, "/t/acme", false, "Acme Inc", 0},
		{"alerts highlighted", acme("alerts"), 13, "/t/acme/alerts", false, "Acme Inc", 0},
		{"records highlighted", acme("records"), 13, "/t/acme/records", false, "Acme Inc", 0},
		{"admin in a tenant", func() views.Layout { l := acme("events"); l.IsAdmin = true; return l }(), 13, "/t/acme/events", true, "Acme Inc", 0},
		{"admin area: landing", admin("admin-home"), 5, "/admin", false, "Admin", 1},
		{"admin area: operators", admin("admin"), 5, "/admin/users", false, "Admin", 1},
		{"admin area: apps", admin("admin-apps"), 5, "/admin/apps", false, "Admin", 1},
		{"admin area: all audit logs", admin("admin-audit"), 5, "/admin/audit", false, "Admin", 1},
		{"two workspaces", func() views.Layout {
			l := acme("conflicts")
			l.Tenants = append(l.Tenants, domain.Tenant{Slug: "globex", Name: "Globex"})
			return l
		}(), 13, "/t/acme/conflicts", false, "Acme Inc", 1},
		{"outside a tenant", views.Layout{Title: "Workspaces", UserEmail: "ops@example.com",
			Tenants: []domain.Tenant{{Slug: "acme", Name: "Acme Inc"}}}, 0, "", false, "Workspaces", 1},
		{"no workspace", views.Layout{Title: "Workspaces", UserEmail: "ops@example.com"}, 0, "", false, "", 0},
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
			if got := doc.Find(`.account a[href="/admin"]`).Length() == 1; got != tc.adminArea {
				t.Errorf("admin area link shown = %v, want %v", got, tc.adminArea)
			}
			if got := text(doc, "details.switcher summary strong"); got != tc.current {
				t.Errorf("switcher shows %q, want %q", got, tc.current)
			}
			// The menu lists the other workspaces and, with any, the way
			// back to all of them.
			if n := doc.Find(`details.switcher li a[href^="/t/"]`).Length(); n != tc.others {
				t.Errorf("switcher lists %d other workspaces, want %d", n, tc.others)
			}
			if tc.current != "" && doc.Find(`details.switcher li a[href="/"]`).Length() != 1 {
				t.Error("the switcher has no link to all workspaces")
			}
			if got := text(doc, ".account > span.email"); got != "ops@example.com" {
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
			doc, _ := render(t, views.Login(views.LoginForm{Email: tc.email, Message: tc.message, Next: tc.next, Password: "all"}))
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

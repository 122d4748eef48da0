// Package workspace is the console's pages of a workspace's own people
// and keys: its members (/t/{tenant}/members) and its API tokens
// (/t/{tenant}/tokens). Owners change them; web/console registers the
// routes behind the role each needs.
package workspace

import (
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
	"github.com/tidemark/tidemark/web/console/admin"
	"github.com/tidemark/tidemark/web/console/shell"
)

// Store is what the workspace pages read and change.
type Store interface {
	domain.OperatorService
	domain.TokenService
}

// Pages serves the members and API tokens pages.
type Pages struct {
	Console   shell.Console
	Store     Store
	PublicURL string // the base URL of the API example; "" to build it from each request
	Log       *slog.Logger
}

// tenant is the request's tenant.
func (h Pages) tenant(r *http.Request) domain.Tenant { return h.Console.Membership(r).Tenant }

// HandleMembers lists the workspace's members with the form that adds one.
func (h Pages) HandleMembers(w http.ResponseWriter, r *http.Request) {
	h.renderMembers(w, r, http.StatusOK, views.MemberForm{Role: domain.RoleOperator})
}

func (h Pages) renderMembers(w http.ResponseWriter, r *http.Request, status int, form views.MemberForm) {
	members, err := h.Store.Members(r.Context(), h.tenant(r).ID)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	v := views.MembersView{Members: members, SelfID: h.Console.User(r).ID, Form: form}
	h.Console.Render(w, r, status, views.Members(h.Console.Layout(r, "Members", "members"), v))
}

// HandleAddMember makes an existing operator, named by email, a member.
func (h Pages) HandleAddMember(w http.ResponseWriter, r *http.Request) {
	t := h.tenant(r)
	form := views.MemberForm{Email: strings.ToLower(strings.TrimSpace(r.PostFormValue("email"))), Role: admin.FormRole(r)}
	if form.Email == "" {
		form.Error = "Give the email of the operator to add."
		h.renderMembers(w, r, http.StatusUnprocessableEntity, form)
		return
	}
	err := h.Store.AddMembership(r.Context(), domain.NewMembership{Email: form.Email, TenantSlug: t.Slug, Role: form.Role})
	switch domain.ErrorCode(err) {
	case domain.EINVALID, domain.ENOTFOUND, domain.ECONFLICT:
		form.Error = domain.ErrorMessage(err)
		h.renderMembers(w, r, http.StatusUnprocessableEntity, form)
		return
	}
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	h.Console.RedirectWithFlash(w, r, "/t/"+t.Slug+"/members", "ok",
		fmt.Sprintf("%s can now open %s as %s %s.", form.Email, t.Slug, form.Role.Article(), form.Role))
}

// memberID is the {id} of a member route; one that is not a number names
// no member.
func memberID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil {
		return 0, domain.Errorf(domain.ENOTFOUND, "member not found")
	}
	return id, nil
}

// afterMemberChange is where a change of member userID leads: back to the
// operators page when it came from there, to the workspace when the
// operator changed their own role, home when they left, else to the
// members page. Only the paths named here are reachable, never one from
// the form.
func (h Pages) afterMemberChange(r *http.Request, userID int64, left bool) string {
	t, u := h.tenant(r), h.Console.User(r)
	switch {
	case r.PostFormValue("from") == "admin" && u.IsAdmin:
		return admin.OperatorsPath
	case userID == u.ID && !u.IsAdmin && left:
		return "/"
	case userID == u.ID && !u.IsAdmin:
		return "/t/" + t.Slug
	}
	return "/t/" + t.Slug + "/members"
}

// memberChanged ends a successful change of member userID with the
// message msg writes about their email. The email is read only now, so
// that an id that is no member's reveals no one's.
func (h Pages) memberChanged(w http.ResponseWriter, r *http.Request, userID int64, left bool, msg func(email string) string) {
	u, err := h.Store.User(r.Context(), userID)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	h.Console.RedirectWithFlash(w, r, h.afterMemberChange(r, userID, left), "ok", msg(u.Email))
}

// HandleSetMemberRole changes a member's role.
func (h Pages) HandleSetMemberRole(w http.ResponseWriter, r *http.Request) {
	t := h.tenant(r)
	id, err := memberID(r)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	role := admin.FormRole(r)
	revoked, err := h.Store.SetMemberRole(r.Context(), id, t.Slug, role)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	h.memberChanged(w, r, id, false, func(email string) string {
		return fmt.Sprintf("%s is now %s %s of %s.", email, role.Article(), role, t.Slug) + admin.RevokedNote(revoked)
	})
}

// HandleRemoveMember ends a membership of the workspace.
func (h Pages) HandleRemoveMember(w http.ResponseWriter, r *http.Request) {
	t := h.tenant(r)
	id, err := memberID(r)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	revoked, err := h.Store.RemoveMembership(r.Context(), id, t.Slug)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	h.memberChanged(w, r, id, true, func(email string) string {
		return fmt.Sprintf("%s can no longer open %s.", email, t.Slug) + admin.RevokedNote(revoked)
	})
}

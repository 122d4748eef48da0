package console

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
)

// formRole is the role a form chose, operator when it chose none; an
// unknown one is refused by the service.
func formRole(r *http.Request) domain.Role {
	if v := r.PostFormValue("role"); v != "" {
		return domain.Role(v)
	}
	return domain.RoleOperator
}

// revokedNote tells how many API tokens a membership change revoked.
func revokedNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" The %d API token(s) they created there were revoked.", n)
}

func (h memberPages) handleMembers(w http.ResponseWriter, r *http.Request) {
	h.renderMembers(w, r, http.StatusOK, views.MemberForm{Role: domain.RoleOperator})
}

func (h memberPages) renderMembers(w http.ResponseWriter, r *http.Request, status int, form views.MemberForm) {
	members, err := h.operators.Members(r.Context(), currentTenant(r.Context()).ID)
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	v := views.MembersView{Members: members, SelfID: currentUser(r.Context()).ID, Form: form}
	h.render(w, r, status, views.Members(h.layout(r, "Members", "members"), v))
}

// handleAddMember makes an existing operator, named by email, a member.
func (h memberPages) handleAddMember(w http.ResponseWriter, r *http.Request) {
	t := currentTenant(r.Context())
	form := views.MemberForm{Email: strings.ToLower(strings.TrimSpace(r.PostFormValue("email"))), Role: formRole(r)}
	if form.Email == "" {
		form.Error = "Give the email of the operator to add."
		h.renderMembers(w, r, http.StatusUnprocessableEntity, form)
		return
	}
	err := h.operators.AddMembership(r.Context(), domain.NewMembership{Email: form.Email, TenantSlug: t.Slug, Role: form.Role})
	switch domain.ErrorCode(err) {
	case domain.EINVALID, domain.ENOTFOUND, domain.ECONFLICT:
		form.Error = domain.ErrorMessage(err)
		h.renderMembers(w, r, http.StatusUnprocessableEntity, form)
		return
	}
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	h.redirectWithFlash(w, r, "/t/"+t.Slug+"/members", "ok",
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
func (h memberPages) afterMemberChange(r *http.Request, userID int64, left bool) string {
	t, u := currentTenant(r.Context()), currentUser(r.Context())
	switch {
	case r.PostFormValue("from") == "admin" && u.IsAdmin:
		return operatorsPath
	case userID == u.ID && !u.IsAdmin && left:
		return "/"
	case userID == u.ID && !u.IsAdmin:
		return "/t/" + t.Slug
	}
	return "/t/" + t.Slug + "/members"
}

// memberChanged ends a successful change of member userID with the
// message msg writes about their email. The email is read only now, so
// that an id that is no member's reveals no one'h.
func (h memberPages) memberChanged(w http.ResponseWriter, r *http.Request, userID int64, left bool, msg func(email string) string) {
	u, err := h.operators.User(r.Context(), userID)
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	h.redirectWithFlash(w, r, h.afterMemberChange(r, userID, left), "ok", msg(u.Email))
}

func (h memberPages) handleSetMemberRole(w http.ResponseWriter, r *http.Request) {
	t := currentTenant(r.Context())
	id, err := memberID(r)
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	role := formRole(r)
	revoked, err := h.operators.SetMemberRole(r.Context(), id, t.Slug, role)
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	h.memberChanged(w, r, id, false, func(email string) string {
		return fmt.Sprintf("%s is now %s %s of %s.", email, role.Article(), role, t.Slug) + revokedNote(revoked)
	})
}

func (h memberPages) handleRemoveMember(w http.ResponseWriter, r *http.Request) {
	t := currentTenant(r.Context())
	id, err := memberID(r)
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	revoked, err := h.operators.RemoveMembership(r.Context(), id, t.Slug)
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	h.memberChanged(w, r, id, true, func(email string) string {
		return fmt.Sprintf("%s can no longer open %s.", email, t.Slug) + revokedNote(revoked)
	})
}

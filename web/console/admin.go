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

const operatorsPath = "/admin/users"

// requireAdmin answers anyone but an admin 403, saying who may.
func (h adminPages) requireAdmin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !currentUser(r.Context()).IsAdmin {
			h.consoleError(w, r, domain.Errorf(domain.EFORBIDDEN, "Only admins manage operators. Ask an admin if you need a change."))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (h adminPages) handleOperators(w http.ResponseWriter, r *http.Request) {
	h.renderOperators(w, r, http.StatusOK, views.NewOperatorForm{})
}

// renderOperators shows the operators page, with form as last submitted.
func (h adminPages) renderOperators(w http.ResponseWriter, r *http.Request, status int, form views.NewOperatorForm) {
	ops, err := h.operators.Operators(r.Context())
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	l := h.layout(r, "Operators", "admin")
	h.render(w, r, status, views.Operators(views.OperatorsPage{Layout: l, Operators: ops, Tenants: l.Tenants,
		SelfID: currentUser(r.Context()).ID, Form: form}))
}

func (h adminPages) handleCreateOperator(w http.ResponseWriter, r *http.Request) {
	form := views.NewOperatorForm{
		Email:  strings.ToLower(strings.TrimSpace(r.PostFormValue("email"))),
		Admin:  r.PostFormValue("admin") != "",
		Tenant: r.PostFormValue("tenant"),
		Role:   formRole(r),
	}
	err := h.operators.CreateUser(r.Context(), form.Email, r.PostFormValue("password"), form.Admin, form.Tenant, form.Role)
	if err != nil {
		// A mistake in the form is shown beside it, with what was typed.
		status := http.StatusBadRequest
		switch domain.ErrorCode(err) {
		case domain.EINVALID, domain.ENOTFOUND:
		case domain.ECONFLICT:
			status = http.StatusConflict
		default:
			h.consoleError(w, r, err)
			return
		}
		form.Error = domain.ErrorMessage(err)
		h.renderOperators(w, r, status, form)
		return
	}
	msg := fmt.Sprintf("Operator %s added.", form.Email)
	switch {
	case form.Admin:
		msg += " As an admin they can open every workspace."
	case form.Tenant != "":
		msg += fmt.Sprintf(" They can sign in and open %s as %s %s.", form.Tenant, form.Role.Article(), form.Role)
	default:
		msg += " Add them to a workspace so they can see something."
	}
	h.redirectWithFlash(w, r, operatorsPath, "ok", msg)
}

// targetOperator is the operator named by {id}; an id that is not a number
// is as unknown as one that does not exist.
func (h adminPages) targetOperator(r *http.Request) (domain.User, error) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil {
		return domain.User{}, domain.Errorf(domain.ENOTFOUND, "operator not found")
	}
	return h.operators.User(r.Context(), id)
}

func (h adminPages) handleAddMembership(w http.ResponseWriter, r *http.Request) {
	u, err := h.targetOperator(r)
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	tenant := r.PostFormValue("tenant")
	if tenant == "" {
		h.redirectWithFlash(w, r, operatorsPath, "error", "Choose a workspace to add "+u.Email+" to.")
		return
	}
	role := formRole(r)
	err = h.operators.AddMembership(r.Context(), domain.NewMembership{UserID: u.ID, TenantSlug: tenant, Role: role})
	switch domain.ErrorCode(err) {
	case domain.ENOTFOUND:
		h.redirectWithFlash(w, r, operatorsPath, "error", fmt.Sprintf("There is no workspace %q.", tenant))
		return
	case domain.EINVALID, domain.ECONFLICT:
		h.redirectWithFlash(w, r, operatorsPath, "error", domain.ErrorMessage(err))
		return
	}
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	h.redirectWithFlash(w, r, operatorsPath, "ok", fmt.Sprintf("%s can now open %s as %s %s.", u.Email, tenant, role.Article(), role))
}

func (h adminPages) handleRemoveMembership(w http.ResponseWriter, r *http.Request) {
	u, err := h.targetOperator(r)
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	tenant := chi.URLParam(r, "tenant")
	revoked, err := h.operators.RemoveMembership(r.Context(), u.ID, tenant)
	if domain.ErrorCode(err) == domain.ENOTFOUND {
		h.redirectWithFlash(w, r, operatorsPath, "error", fmt.Sprintf("%s is not a member of %s.", u.Email, tenant))
		return
	}
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	msg := fmt.Sprintf("%s can no longer open %s.", u.Email, tenant) + revokedNote(revoked)
	if u.IsAdmin {
		msg += " As an admin they still see every workspace."
	}
	h.redirectWithFlash(w, r, operatorsPath, "ok", msg)
}

// handleSetAdmin sets the admin flag to the form's "admin" value, or flips
// it when the form does not say.
func (h adminPages) handleSetAdmin(w http.ResponseWriter, r *http.Request) {
	u, err := h.targetOperator(r)
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	admin := !u.IsAdmin
	if v := r.PostFormValue("admin"); v != "" {
		admin, err = strconv.ParseBool(v)
		if err != nil {
			h.consoleError(w, r, domain.Errorf(domain.EINVALID, "admin must be true or false"))
			return
		}
	}
	err = h.operators.SetAdmin(r.Context(), currentUser(r.Context()), u.ID, admin)
	if domain.ErrorCode(err) == domain.ECONFLICT {
		h.redirectWithFlash(w, r, operatorsPath, "error", domain.ErrorMessage(err))
		return
	}
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	msg := u.Email + " is now an admin and can open every workspace."
	if !admin {
		msg = u.Email + " is no longer an admin and sees only the workspaces they are a member of."
	}
	h.redirectWithFlash(w, r, operatorsPath, "ok", msg)
}

// handleSetDisabled disables an operator, whose sessions end at once, or
// enables them again. Refusals (yourself, the last enabled admin) come
// back as a flash on the operators page.
func (h adminPages) handleSetDisabled(disabled bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		u, err := h.targetOperator(r)
		if err != nil {
			h.consoleError(w, r, err)
			return
		}
		err = h.operators.SetDisabled(r.Context(), currentUser(r.Context()), u.ID, disabled)
		if domain.ErrorCode(err) == domain.ECONFLICT {
			h.redirectWithFlash(w, r, operatorsPath, "error", domain.ErrorMessage(err))
			return
		}
		if err != nil {
			h.consoleError(w, r, err)
			return
		}
		msg := u.Email + " can sign in again."
		if disabled {
			msg = u.Email + " is disabled: signed out everywhere, and cannot sign in until enabled again."
		}
		h.redirectWithFlash(w, r, operatorsPath, "ok", msg)
	}
}

// handleResetPassword sets an operator's password and ends their sessions
// (the admin's own too, when they reset their own).
func (h adminPages) handleResetPassword(w http.ResponseWriter, r *http.Request) {
	u, err := h.targetOperator(r)
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	err = h.operators.ResetPassword(r.Context(), u.Email, r.PostFormValue("password"))
	if domain.ErrorCode(err) == domain.EINVALID {
		h.redirectWithFlash(w, r, operatorsPath, "error", "The password of "+u.Email+" was not changed: "+domain.ErrorMessage(err)+".")
		return
	}
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	h.redirectWithFlash(w, r, operatorsPath, "ok", "New password set for "+u.Email+"; their sessions have ended. Share it with them over a safe channel.")
}

// handleSignOutEverywhere ends every session of an operator.
func (h adminPages) handleSignOutEverywhere(w http.ResponseWriter, r *http.Request) {
	u, err := h.targetOperator(r)
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	if err := h.operators.SignOutEverywhere(r.Context(), u.ID); err != nil {
		h.consoleError(w, r, err)
		return
	}
	h.redirectWithFlash(w, r, operatorsPath, "ok", u.Email+" is signed out everywhere.")
}

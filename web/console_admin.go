package web

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

// adminRoutes registers the console pages of operators and memberships (admins only).
func (s *Server) adminRoutes(r chi.Router) {
	r.Group(func(r chi.Router) {
		r.Use(s.requireAdmin)
		r.Get(operatorsPath, s.handleOperators)
		r.Post(operatorsPath, s.handleCreateOperator)
		r.Post(operatorsPath+"/{id}/memberships", s.handleAddMembership)
		r.Post(operatorsPath+"/{id}/memberships/{tenant}/remove", s.handleRemoveMembership)
		r.Post(operatorsPath+"/{id}/admin", s.handleSetAdmin)
		r.Post(operatorsPath+"/{id}/disable", s.handleSetDisabled(true))
		r.Post(operatorsPath+"/{id}/enable", s.handleSetDisabled(false))
		r.Post(operatorsPath+"/{id}/password", s.handleResetPassword)
		r.Post(operatorsPath+"/{id}/sign-out", s.handleSignOutEverywhere)
		r.Get(adminAuditPath, s.handleAdminAudit)
		r.Get(reconciliationPath, s.handleReconciliation)
	})
}

// requireAdmin answers anyone but an admin 403, saying who may.
func (s *Server) requireAdmin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !currentUser(r.Context()).IsAdmin {
			s.consoleError(w, r, domain.Errorf(domain.EFORBIDDEN, "Only admins manage operators. Ask an admin if you need a change."))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) handleOperators(w http.ResponseWriter, r *http.Request) {
	s.renderOperators(w, r, http.StatusOK, views.NewOperatorForm{})
}

// renderOperators shows the operators page, with form as last submitted.
func (s *Server) renderOperators(w http.ResponseWriter, r *http.Request, status int, form views.NewOperatorForm) {
	ops, err := s.operators.Operators(r.Context())
	if err != nil {
		s.consoleError(w, r, err)
		return
	}
	l := s.layout(r, "Operators", "admin")
	s.render(w, r, status, views.Operators(views.OperatorsPage{Layout: l, Operators: ops, Tenants: l.Tenants,
		SelfID: currentUser(r.Context()).ID, Form: form}))
}

func (s *Server) handleCreateOperator(w http.ResponseWriter, r *http.Request) {
	form := views.NewOperatorForm{
		Email:  strings.ToLower(strings.TrimSpace(r.PostFormValue("email"))),
		Admin:  r.PostFormValue("admin") != "",
		Tenant: r.PostFormValue("tenant"),
		Role:   formRole(r),
	}
	err := s.operators.CreateUser(r.Context(), form.Email, r.PostFormValue("password"), form.Admin, form.Tenant, form.Role)
	if err != nil {
		// A mistake in the form is shown beside it, with what was typed.
		status := http.StatusBadRequest
		switch domain.ErrorCode(err) {
		case domain.EINVALID, domain.ENOTFOUND:
		case domain.ECONFLICT:
			status = http.StatusConflict
		default:
			s.consoleError(w, r, err)
			return
		}
		form.Error = domain.ErrorMessage(err)
		s.renderOperators(w, r, status, form)
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
	s.redirectWithFlash(w, r, operatorsPath, "ok", msg)
}

// targetOperator is the operator named by {id}; an id that is not a number
// is as unknown as one that does not exist.
func (s *Server) targetOperator(r *http.Request) (domain.User, error) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil {
		return domain.User{}, domain.Errorf(domain.ENOTFOUND, "operator not found")
	}
	return s.operators.User(r.Context(), id)
}

func (s *Server) handleAddMembership(w http.ResponseWriter, r *http.Request) {
	u, err := s.targetOperator(r)
	if err != nil {
		s.consoleError(w, r, err)
		return
	}
	tenant := r.PostFormValue("tenant")
	if tenant == "" {
		s.redirectWithFlash(w, r, operatorsPath, "error", "Choose a workspace to add "+u.Email+" to.")
		return
	}
	role := formRole(r)
	err = s.operators.AddMembership(r.Context(), domain.NewMembership{UserID: u.ID, TenantSlug: tenant, Role: role})
	switch domain.ErrorCode(err) {
	case domain.ENOTFOUND:
		s.redirectWithFlash(w, r, operatorsPath, "error", fmt.Sprintf("There is no workspace %q.", tenant))
		return
	case domain.EINVALID, domain.ECONFLICT:
		s.redirectWithFlash(w, r, operatorsPath, "error", domain.ErrorMessage(err))
		return
	}
	if err != nil {
		s.consoleError(w, r, err)
		return
	}
	s.redirectWithFlash(w, r, operatorsPath, "ok", fmt.Sprintf("%s can now open %s as %s %s.", u.Email, tenant, role.Article(), role))
}

func (s *Server) handleRemoveMembership(w http.ResponseWriter, r *http.Request) {
	u, err := s.targetOperator(r)
	if err != nil {
		s.consoleError(w, r, err)
		return
	}
	tenant := chi.URLParam(r, "tenant")
	revoked, err := s.operators.RemoveMembership(r.Context(), u.ID, tenant)
	if domain.ErrorCode(err) == domain.ENOTFOUND {
		s.redirectWithFlash(w, r, operatorsPath, "error", fmt.Sprintf("%s is not a member of %s.", u.Email, tenant))
		return
	}
	if err != nil {
		s.consoleError(w, r, err)
		return
	}
	msg := fmt.Sprintf("%s can no longer open %s.", u.Email, tenant) + revokedNote(revoked)
	if u.IsAdmin {
		msg += " As an admin they still see every workspace."
	}
	s.redirectWithFlash(w, r, operatorsPath, "ok", msg)
}

// handleSetAdmin sets the admin flag to the form's "admin" value, or flips
// it when the form does not say.
func (s *Server) handleSetAdmin(w http.ResponseWriter, r *http.Request) {
	u, err := s.targetOperator(r)
	if err != nil {
		s.consoleError(w, r, err)
		return
	}
	admin := !u.IsAdmin
	if v := r.PostFormValue("admin"); v != "" {
		admin, err = strconv.ParseBool(v)
		if err != nil {
			s.consoleError(w, r, domain.Errorf(domain.EINVALID, "admin must be true or false"))
			return
		}
	}
	err = s.operators.SetAdmin(r.Context(), currentUser(r.Context()), u.ID, admin)
	if domain.ErrorCode(err) == domain.ECONFLICT {
		s.redirectWithFlash(w, r, operatorsPath, "error", domain.ErrorMessage(err))
		return
	}
	if err != nil {
		s.consoleError(w, r, err)
		return
	}
	msg := u.Email + " is now an admin and can open every workspace."
	if !admin {
		msg = u.Email + " is no longer an admin and sees only the workspaces they are a member of."
	}
	s.redirectWithFlash(w, r, operatorsPath, "ok", msg)
}

// handleSetDisabled disables an operator, whose sessions end at once, or
// enables them again. Refusals (yourself, the last enabled admin) come
// back as a flash on the operators page.
func (s *Server) handleSetDisabled(disabled bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		u, err := s.targetOperator(r)
		if err != nil {
			s.consoleError(w, r, err)
			return
		}
		err = s.operators.SetDisabled(r.Context(), currentUser(r.Context()), u.ID, disabled)
		if domain.ErrorCode(err) == domain.ECONFLICT {
			s.redirectWithFlash(w, r, operatorsPath, "error", domain.ErrorMessage(err))
			return
		}
		if err != nil {
			s.consoleError(w, r, err)
			return
		}
		msg := u.Email + " can sign in again."
		if disabled {
			msg = u.Email + " is disabled: signed out everywhere, and cannot sign in until enabled again."
		}
		s.redirectWithFlash(w, r, operatorsPath, "ok", msg)
	}
}

// handleResetPassword sets an operator's password and ends their sessions
// (the admin's own too, when they reset their own).
func (s *Server) handleResetPassword(w http.ResponseWriter, r *http.Request) {
	u, err := s.targetOperator(r)
	if err != nil {
		s.consoleError(w, r, err)
		return
	}
	err = s.operators.ResetPassword(r.Context(), u.Email, r.PostFormValue("password"))
	if domain.ErrorCode(err) == domain.EINVALID {
		s.redirectWithFlash(w, r, operatorsPath, "error", "The password of "+u.Email+" was not changed: "+domain.ErrorMessage(err)+".")
		return
	}
	if err != nil {
		s.consoleError(w, r, err)
		return
	}
	s.redirectWithFlash(w, r, operatorsPath, "ok", "New password set for "+u.Email+"; their sessions have ended. Share it with them over a safe channel.")
}

// handleSignOutEverywhere ends every session of an operator.
func (s *Server) handleSignOutEverywhere(w http.ResponseWriter, r *http.Request) {
	u, err := s.targetOperator(r)
	if err != nil {
		s.consoleError(w, r, err)
		return
	}
	if err := s.operators.SignOutEverywhere(r.Context(), u.ID); err != nil {
		s.consoleError(w, r, err)
		return
	}
	s.redirectWithFlash(w, r, operatorsPath, "ok", u.Email+" is signed out everywhere.")
}

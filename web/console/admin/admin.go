// Package admin is the console's admin area (/admin): the operators, their
// memberships of workspaces, the reconciliation report and the apps. Admins only:
// web/console registers its routes behind RequireAdmin.
package admin

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/reconciliation"
	"github.com/tidemark/tidemark/views"
	"github.com/tidemark/tidemark/web/console/shell"
)

// Store is what the admin pages read and change.
type Store interface {
	domain.OperatorService
	reconciliation.Service
	// The workspaces' lifecycle, on the admin home.
	CreateTenant(ctx context.Context, slug, name string) (domain.Tenant, error)
	Tenant(ctx context.Context, slug string) (domain.Tenant, error)
	domain.TenantLifecycle
	// The apps page.
	Apps(ctx context.Context) ([]domain.App, error)
	App(ctx context.Context, name string) (domain.App, error)
	AppInstalls(ctx context.Context, appName string) ([]domain.AppInstall, error)
	AppUnrouted(ctx context.Context, appID int64) ([]domain.AppUnrouted, error)
}

// Pages serves the admin area.
type Pages struct {
	Console   shell.Console
	Store     Store
	PublicURL string // the base of the apps' webhook URLs; "" to build it from each request
	Log       *slog.Logger
	Now       func() time.Time
}

// OperatorsPath is the page of the operators and their memberships.
const OperatorsPath = "/admin/users"

// FormRole is the role a form chose, operator when it chose none; an
// unknown one is refused by the service.
func FormRole(r *http.Request) domain.Role {
	if v := r.PostFormValue("role"); v != "" {
		return domain.Role(v)
	}
	return domain.RoleOperator
}

// RevokedNote tells how many API tokens a membership change revoked.
func RevokedNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" The %d API token(s) they created there were revoked.", n)
}

// RequireAdmin answers anyone but an admin 403, saying who may.
func (h Pages) RequireAdmin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.Console.User(r).IsAdmin {
			h.Console.Error(w, r, domain.Errorf(domain.EFORBIDDEN, "Only admins open the admin area: its operators, apps and checks. Ask an admin if you need a change."))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// HandleOperators shows the operators with their memberships and the form
// that adds one.
func (h Pages) HandleOperators(w http.ResponseWriter, r *http.Request) {
	h.renderOperators(w, r, http.StatusOK, views.NewOperatorForm{})
}

// renderOperators shows the operators page, with form as last submitted.
func (h Pages) renderOperators(w http.ResponseWriter, r *http.Request, status int, form views.NewOperatorForm) {
	ops, err := h.Store.Operators(r.Context())
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	l := h.Console.Layout(r, "Operators", "admin")
	h.Console.Render(w, r, status, views.Operators(views.OperatorsPage{Layout: l, Operators: ops, Tenants: l.Tenants,
		SelfID: h.Console.User(r).ID, Form: form}))
}

// HandleCreateOperator adds an operator, and their first membership when
// the form names a workspace.
func (h Pages) HandleCreateOperator(w http.ResponseWriter, r *http.Request) {
	form := views.NewOperatorForm{
		Email:  strings.ToLower(strings.TrimSpace(r.PostFormValue("email"))),
		Admin:  r.PostFormValue("admin") != "",
		Tenant: r.PostFormValue("tenant"),
		Role:   FormRole(r),
	}
	err := h.Store.CreateUser(r.Context(), form.Email, r.PostFormValue("password"), form.Admin, form.Tenant, form.Role)
	if err != nil {
		// A mistake in the form is shown beside it, with what was typed.
		status := http.StatusBadRequest
		switch domain.ErrorCode(err) {
		case domain.EINVALID, domain.ENOTFOUND:
		case domain.ECONFLICT:
			status = http.StatusConflict
		default:
			h.Console.Error(w, r, err)
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
	h.Console.RedirectWithFlash(w, r, OperatorsPath, "ok", msg)
}

// targetOperator is the operator named by {id}; an id that is not a number
// is as unknown as one that does not exist.
func (h Pages) targetOperator(r *http.Request) (domain.User, error) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil {
		return domain.User{}, domain.Errorf(domain.ENOTFOUND, "operator not found")
	}
	return h.Store.User(r.Context(), id)
}

// HandleAddMembership makes an operator a member of a workspace.
func (h Pages) HandleAddMembership(w http.ResponseWriter, r *http.Request) {
	u, err := h.targetOperator(r)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	tenant := r.PostFormValue("tenant")
	if tenant == "" {
		h.Console.RedirectWithFlash(w, r, OperatorsPath, "error", "Choose a workspace to add "+u.Email+" to.")
		return
	}
	role := FormRole(r)
	err = h.Store.AddMembership(r.Context(), domain.NewMembership{UserID: u.ID, TenantSlug: tenant, Role: role})
	switch domain.ErrorCode(err) {
	case domain.ENOTFOUND:
		h.Console.RedirectWithFlash(w, r, OperatorsPath, "error", fmt.Sprintf("There is no workspace %q.", tenant))
		return
	case domain.EINVALID, domain.ECONFLICT:
		h.Console.RedirectWithFlash(w, r, OperatorsPath, "error", domain.ErrorMessage(err))
		return
	}
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	h.Console.RedirectWithFlash(w, r, OperatorsPath, "ok", fmt.Sprintf("%s can now open %s as %s %s.", u.Email, tenant, role.Article(), role))
}

// HandleRemoveMembership ends an operator's membership of a workspace.
func (h Pages) HandleRemoveMembership(w http.ResponseWriter, r *http.Request) {
	u, err := h.targetOperator(r)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	tenant := chi.URLParam(r, "tenant")
	revoked, err := h.Store.RemoveMembership(r.Context(), u.ID, tenant)
	if domain.ErrorCode(err) == domain.ENOTFOUND {
		h.Console.RedirectWithFlash(w, r, OperatorsPath, "error", fmt.Sprintf("%s is not a member of %s.", u.Email, tenant))
		return
	}
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	msg := fmt.Sprintf("%s can no longer open %s.", u.Email, tenant) + RevokedNote(revoked)
	if u.IsAdmin {
		msg += " As an admin they still see every workspace."
	}
	h.Console.RedirectWithFlash(w, r, OperatorsPath, "ok", msg)
}

// HandleSetAdmin sets the admin flag to the form's "admin" value, or flips
// it when the form does not say.
func (h Pages) HandleSetAdmin(w http.ResponseWriter, r *http.Request) {
	u, err := h.targetOperator(r)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	admin := !u.IsAdmin
	if v := r.PostFormValue("admin"); v != "" {
		admin, err = strconv.ParseBool(v)
		if err != nil {
			h.Console.Error(w, r, domain.Errorf(domain.EINVALID, "admin must be true or false"))
			return
		}
	}
	err = h.Store.SetAdmin(r.Context(), h.Console.User(r), u.ID, admin)
	if domain.ErrorCode(err) == domain.ECONFLICT {
		h.Console.RedirectWithFlash(w, r, OperatorsPath, "error", domain.ErrorMessage(err))
		return
	}
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	msg := u.Email + " is now an admin and can open every workspace."
	if !admin {
		msg = u.Email + " is no longer an admin and sees only the workspaces they are a member of."
	}
	h.Console.RedirectWithFlash(w, r, OperatorsPath, "ok", msg)
}

// HandleSetDisabled disables an operator, whose sessions end at once, or
// enables them again. Refusals (yourself, the last enabled admin) come
// back as a flash on the operators page.
func (h Pages) HandleSetDisabled(disabled bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		u, err := h.targetOperator(r)
		if err != nil {
			h.Console.Error(w, r, err)
			return
		}
		err = h.Store.SetDisabled(r.Context(), h.Console.User(r), u.ID, disabled)
		if domain.ErrorCode(err) == domain.ECONFLICT {
			h.Console.RedirectWithFlash(w, r, OperatorsPath, "error", domain.ErrorMessage(err))
			return
		}
		if err != nil {
			h.Console.Error(w, r, err)
			return
		}
		msg := u.Email + " can sign in again."
		if disabled {
			msg = u.Email + " is disabled: signed out everywhere, and cannot sign in until enabled again."
		}
		h.Console.RedirectWithFlash(w, r, OperatorsPath, "ok", msg)
	}
}

// HandleResetPassword sets an operator's password and ends their sessions
// (the admin's own too, when they reset their own).
func (h Pages) HandleResetPassword(w http.ResponseWriter, r *http.Request) {
	u, err := h.targetOperator(r)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	err = h.Store.ResetPassword(r.Context(), u.Email, r.PostFormValue("password"))
	if domain.ErrorCode(err) == domain.EINVALID {
		h.Console.RedirectWithFlash(w, r, OperatorsPath, "error", "The password of "+u.Email+" was not changed: "+domain.ErrorMessage(err)+".")
		return
	}
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	h.Console.RedirectWithFlash(w, r, OperatorsPath, "ok", "New password set for "+u.Email+"; their sessions have ended. Share it with them over a safe channel.")
}

// HandleSignOutEverywhere ends every session of an operator.
func (h Pages) HandleSignOutEverywhere(w http.ResponseWriter, r *http.Request) {
	u, err := h.targetOperator(r)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	if err := h.Store.SignOutEverywhere(r.Context(), u.ID); err != nil {
		h.Console.Error(w, r, err)
		return
	}
	h.Console.RedirectWithFlash(w, r, OperatorsPath, "ok", u.Email+" is signed out everywhere.")
}

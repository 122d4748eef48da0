package console

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
)

// Routes registers every console page: forms capped, sessions,
// cross-origin protection on every state-changing request, then the
// operator, then the tenant from their membership, then the role each
// group of routes needs.
func (h *Handler) Routes(r chi.Router) {
	csrf := http.NewCrossOriginProtection()
	r.Use(h.securityHeaders, limitConsoleBody, h.loadSession, csrf.Handler)
	r.Get("/login", h.handleLoginPage)
	r.Post("/login", h.handleLogin)
	r.Group(func(r chi.Router) {
		r.Use(h.requireUser)
		r.Get("/", h.handleHome)
		r.Post("/logout", h.handleLogout)

		// Operators and memberships: admins only.
		r.Group(func(r chi.Router) {
			r.Use(h.requireAdmin)
			r.Get(operatorsPath, h.handleOperators)
			r.Post(operatorsPath, h.handleCreateOperator)
			r.Post(operatorsPath+"/{id}/memberships", h.handleAddMembership)
			r.Post(operatorsPath+"/{id}/memberships/{tenant}/remove", h.handleRemoveMembership)
			r.Post(operatorsPath+"/{id}/admin", h.handleSetAdmin)
			r.Post(operatorsPath+"/{id}/disable", h.handleSetDisabled(true))
			r.Post(operatorsPath+"/{id}/enable", h.handleSetDisabled(false))
			r.Post(operatorsPath+"/{id}/password", h.handleResetPassword)
			r.Post(operatorsPath+"/{id}/sign-out", h.handleSignOutEverywhere)
			r.Get(adminAuditPath, h.handleAdminAudit)
			r.Get(reconciliationPath, h.handleReconciliation)
		})

		r.Route("/t/{tenant}", func(r chi.Router) {
			r.Use(h.requireTenant)
			r.Get("/", h.handleOverview)

			// Event history and event detail.
			r.Get("/events", h.handleEventLog)
			r.Get("/events/{delivery_id}/{seq}", h.handleEventDetail)

			// The records directory and the record timelines.
			r.Get("/records", h.handleRecords)
			r.Get("/records/{provider}/{object_type}/{object_id}", h.handleTimeline)
			r.Get("/contacts", h.handleContactSearch)
			r.Get("/contacts/{provider}/{contact_id}", h.handleTimeline)

			// The conflict queue and conflicts.
			r.Get("/conflicts", h.handleConflictQueue)
			r.Get("/conflicts/{id}", h.handleConflict)
			r.With(h.requireRole(domain.RoleOperator)).Post("/conflicts/{id}/resolve", h.handleResolveConflict)

			// Providers, their secrets, scopes and deliveries, and API
			// tokens: every member reads them; only owners change them.
			r.Get("/providers", h.handleProviders)
			r.Get("/providers/{name}", h.handleProvider)
			r.Get("/tokens", h.handleTokens)
			r.Group(func(r chi.Router) {
				r.Use(h.requireRole(domain.RoleOwner))
				r.Post("/providers", h.handleConnectProvider)
				r.Post("/providers/{name}/rotate", h.handleRotateSecret)
				r.Post("/providers/{name}/retire", h.handleRetireSecrets)
				r.Post("/providers/{name}/secret-shown", h.handleSecretShown)
				r.Post("/providers/{name}/test", h.handleTestEvent)
				r.Post("/providers/{name}/scopes", h.handleSaveScope)
				r.Post("/tokens", h.handleCreateToken)
				r.Post("/tokens/{id}/revoke", h.handleRevokeToken)
			})

			// People.
			r.Get("/people", h.handlePeople)
			r.Get("/people/{id}", h.handlePerson)

			// Members: owners (and admins, who act as owners) add members,
			// change their roles and remove them.
			r.Group(func(r chi.Router) {
				r.Use(h.requireRole(domain.RoleOwner))
				r.Get("/members", h.handleMembers)
				r.Post("/members", h.handleAddMember)
				r.Post("/members/{id}/role", h.handleSetMemberRole)
				r.Post("/members/{id}/remove", h.handleRemoveMember)
			})

			// The tenant's audit log: owners only (and admins).
			r.With(h.requireRole(domain.RoleOwner)).Get("/audit", h.handleTenantAudit)

			// Record repair: reset and erase of a record, erase of a lead,
			// each after a typed confirmation; owners only.
			r.Group(func(r chi.Router) {
				r.Use(h.requireRole(domain.RoleOwner))
				r.Post("/records/{provider}/{object_type}/{object_id}/reset", h.handleRecordReset)
				r.Post("/records/{provider}/{object_type}/{object_id}/erase", h.handleRecordErase)
				r.Get("/leads/erase", h.handleLeadErasePage)
				r.Post("/leads/erase", h.handleLeadErase)
			})

			// The delivery inspector and replay jobs; replaying changes what
			// Tidemark holds: operators and owners.
			r.Get("/deliveries/{id}", h.handleDeliveryPage)
			r.Get("/replays", h.handleReplaysPage)
			r.Get("/replays/{id}", h.handleReplayJobPage)
			r.Group(func(r chi.Router) {
				r.Use(h.requireRole(domain.RoleOperator))
				r.Post("/deliveries/{id}/replay", h.handleReplayDelivery)
				r.Post("/replays", h.handleStartReplay)
				r.Post("/replays/{id}/cancel", h.handleCancelReplay)
			})
		})
	})
}

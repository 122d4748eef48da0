package console

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
	alertpages "github.com/tidemark/tidemark/web/console/alerts"
	"github.com/tidemark/tidemark/web/console/deliveries"
	"github.com/tidemark/tidemark/web/console/destinations"
	"github.com/tidemark/tidemark/web/console/lists"
	overviewpage "github.com/tidemark/tidemark/web/console/overview"
	peoplepages "github.com/tidemark/tidemark/web/console/people"
	"github.com/tidemark/tidemark/web/console/providers"
	"github.com/tidemark/tidemark/web/httpx"
)

// Routes registers every console page: forms capped, sessions,
// cross-origin protection on every state-changing request, then the
// operator, then the tenant from their membership, then the role each
// group of routes needs.
func (h *Handler) Routes(r chi.Router) {
	// Each family of pages is a small type over h.
	var (
		admin    = adminPages{h}
		conflict = conflictPages{h}
		event    = eventPages{h}
		member   = memberPages{h}
		overview = overviewpage.Pages{Console: frame{h}, Stats: h.stats, Sweeps: h.backfills, Queue: h.queue, Log: h.log, Now: h.now}
		provider = providers.Pages{Console: frame{h}, Providers: h.providers, Events: h.events, Backfills: h.backfills, Webhook: h.webhook,
			Credentials: h.apiCreds, PublicURL: h.publicURL, Log: h.log, Now: h.now}
		record   = recordPages{h}
		token    = tokenPages{h}
		dest     = destinations.Pages{Console: frame{h}, Destinations: h.dests, Log: h.log, Now: h.now}
		alert    = alertpages.Pages{Console: frame{h}, Alerts: h.alerts, Log: h.log}
		list     = lists.Pages{Console: frame{h}, Events: h.events, Records: h.records, Audit: h.audit}
		delivery = deliveries.Pages{Console: frame{h}, Deliveries: h.deliveries, Replays: h.replays, Events: h.events,
			Replayer: h.replayer, PublicURL: h.publicURL}
	)
	people := peoplepages.Pages{Console: frame{h}, People: h.people,
		Timeline: func(w http.ResponseWriter, r *http.Request, ref domain.RecordRef) {
			record.renderTimeline(w, r, ref, http.StatusOK, views.RepairForms{})
		}}
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
			r.Use(admin.requireAdmin)
			r.Get(adminHomePath, admin.handleAdminHome)
			r.Get(operatorsPath, admin.handleOperators)
			r.Post(operatorsPath, admin.handleCreateOperator)
			r.Post(operatorsPath+"/{id}/memberships", admin.handleAddMembership)
			r.Post(operatorsPath+"/{id}/memberships/{tenant}/remove", admin.handleRemoveMembership)
			r.Post(operatorsPath+"/{id}/admin", admin.handleSetAdmin)
			r.Post(operatorsPath+"/{id}/disable", admin.handleSetDisabled(true))
			r.Post(operatorsPath+"/{id}/enable", admin.handleSetDisabled(false))
			r.Post(operatorsPath+"/{id}/password", admin.handleResetPassword)
			r.Post(operatorsPath+"/{id}/sign-out", admin.handleSignOutEverywhere)
			r.Get(lists.AdminAuditPath, list.HandleAdminAudit)
			r.Get(reconciliationPath, admin.handleReconciliation)
			r.Post(reconciliationPath+"/run", admin.handleRunReconciliation)
		})

		r.Route("/t/{tenant}", func(r chi.Router) {
			r.Use(h.requireTenant, httpx.GateReads(h.reads, readKeys, h.readsBusy))
			r.Get("/", overview.Handle)

			// Event history and event detail (web/console/lists).
			r.Get("/events", list.HandleEventLog)
			r.Get("/events/find", event.handleFindEvent)
			r.Get("/events/{delivery_id}/{seq}", list.HandleEventDetail)

			// The records directory and the record timelines.
			r.Get("/records", list.HandleRecords)
			r.Get("/records/{provider}/{object_type}/{object_id}", record.handleTimeline)
			// A lead's page lists its signups (web/console/people).
			r.Get("/records/{provider}/"+peoplepages.LeadType+"/{object_id}", people.HandleLead)
			r.Get("/contacts", record.handleContactSearch)
			r.Get("/contacts/{provider}/{contact_id}", record.handleTimeline)

			// The conflict queue and conflicts.
			r.Get("/conflicts", conflict.handleConflictQueue)
			r.Get("/conflicts/{id}", conflict.handleConflict)
			r.With(h.requireRole(domain.RoleOperator)).Post("/conflicts/{id}/resolve", conflict.handleResolveConflict)

			// Providers, their secrets, scopes and deliveries, and API
			// tokens: every member reads them; only owners change them.
			r.Get("/providers", provider.HandleProviders)
			r.Get("/providers/{name}", provider.HandleProvider)
			r.Get("/tokens", token.handleTokens)
			r.Group(func(r chi.Router) {
				r.Use(h.requireRole(domain.RoleOwner))
				r.Post("/providers", provider.HandleConnectProvider)
				r.Post("/providers/{name}/rotate", provider.HandleRotateSecret)
				r.Post("/providers/{name}/retire", provider.HandleRetireSecrets)
				r.Post("/providers/{name}/secret-shown", provider.HandleSecretShown)
				r.Post("/providers/{name}/test", provider.HandleTestEvent)
				r.Post("/providers/{name}/scopes", provider.HandleSaveScope)
				r.Post("/providers/{name}/api-credentials", provider.HandleSetAPICredentials)
				r.Post("/providers/{name}/api-credentials/clear", provider.HandleClearAPICredentials)
				r.Post("/tokens", token.handleCreateToken)
				r.Post("/tokens/{id}/revoke", token.handleRevokeToken)
			})
			// Backfills pull what webhooks missed through the same guard,
			// as a replay does: operators and owners.
			r.Group(func(r chi.Router) {
				r.Use(h.requireRole(domain.RoleOperator))
				r.Post("/providers/{name}/backfills", provider.HandleStartBackfill)
				r.Post("/providers/{name}/backfills/{id}/cancel", provider.HandleCancelBackfill)
			})

			// People.
			r.Get("/people", people.HandleList)
			r.Get("/people/{id}", people.HandlePerson)

			// Members: owners (and admins, who act as owners) add members,
			// change their roles and remove them.
			r.Group(func(r chi.Router) {
				r.Use(h.requireRole(domain.RoleOwner))
				r.Get("/members", member.handleMembers)
				r.Post("/members", member.handleAddMember)
				r.Post("/members/{id}/role", member.handleSetMemberRole)
				r.Post("/members/{id}/remove", member.handleRemoveMember)
			})

			// Destinations, where the workspace's changes are pushed
			// (web/console/destinations): owners only, reading included.
			r.Group(func(r chi.Router) {
				r.Use(h.requireRole(domain.RoleOwner))
				r.Get("/destinations", dest.HandleList)
				r.Post("/destinations", dest.HandleCreate)
				r.Get("/destinations/{id}", dest.HandleDetail)
				r.Post("/destinations/{id}/pause", dest.HandlePause)
				r.Post("/destinations/{id}/resume", dest.HandleResume)
				r.Post("/destinations/{id}/rewind", dest.HandleRewind)
				r.Post("/destinations/{id}/rotate", dest.HandleRotate)
				r.Post("/destinations/{id}/delete", dest.HandleDelete)
			})

			// Alerts (web/console/alerts): every member reads them; owners
			// change the rules.
			r.Get(alertpages.Path, alert.HandlePage)
			r.With(h.requireRole(domain.RoleOwner)).Post(alertpages.Path+"/rules/{rule}", alert.HandleSetRule)

			// The tenant's audit log: owners only (and admins).
			r.With(h.requireRole(domain.RoleOwner)).Get("/audit", list.HandleTenantAudit)

			// Record repair: reset and erase of a record, erase of a lead,
			// each after a typed confirmation; owners only.
			r.Group(func(r chi.Router) {
				r.Use(h.requireRole(domain.RoleOwner))
				r.Post("/records/{provider}/{object_type}/{object_id}/reset", record.handleRecordReset)
				r.Post("/records/{provider}/{object_type}/{object_id}/erase", record.handleRecordErase)
				r.Get("/leads/erase", record.handleLeadErasePage)
				r.Post("/leads/erase", record.handleLeadErase)
			})

			// The delivery list, the inspector and replay jobs
			// (web/console/deliveries); replaying changes what Tidemark
			// holds: operators and owners.
			r.Get("/deliveries", delivery.HandleList)
			r.Get("/deliveries/{id}", delivery.HandleDelivery)
			r.Get("/replays", delivery.HandleReplays)
			r.Get("/replays/{id}", delivery.HandleReplayJob)
			r.Group(func(r chi.Router) {
				r.Use(h.requireRole(domain.RoleOperator))
				r.Post("/deliveries/{id}/replay", delivery.HandleReplayDelivery)
				r.Post("/replays", delivery.HandleStartReplay)
				r.Post("/replays/{id}/cancel", delivery.HandleCancelReplay)
			})
		})
	})
}

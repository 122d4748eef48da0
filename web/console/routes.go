package console

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/pull/hubspot"
	"github.com/tidemark/tidemark/web/console/admin"
	"github.com/tidemark/tidemark/web/console/alerts"
	"github.com/tidemark/tidemark/web/console/apps"
	"github.com/tidemark/tidemark/web/console/conflicts"
	"github.com/tidemark/tidemark/web/console/deliveries"
	"github.com/tidemark/tidemark/web/console/destinations"
	"github.com/tidemark/tidemark/web/console/lists"
	"github.com/tidemark/tidemark/web/console/overview"
	"github.com/tidemark/tidemark/web/console/people"
	"github.com/tidemark/tidemark/web/console/providers"
	"github.com/tidemark/tidemark/web/console/records"
	"github.com/tidemark/tidemark/web/console/workspace"
	"github.com/tidemark/tidemark/web/httpx"
)

// Routes registers every console page: forms capped, sessions,
// cross-origin protection on every state-changing request, then the
// operator, then the tenant from their membership, then the role each
// group of routes needs.
func (h *Handler) Routes(r chi.Router) {
	// Each family of pages is a package of its own, handed the frame and
	// the store (its narrow Store) and what else it uses.
	f := frame{h}
	var (
		adminPages     = admin.Pages{Console: f, Store: h.store, PublicURL: h.publicURL, Log: h.log, Now: h.now}
		workspacePages = workspace.Pages{Console: f, Store: h.store, PublicURL: h.publicURL, Log: h.log}
		recordPages    = records.Pages{Console: f, Store: h.store}
		conflictPages  = conflicts.Pages{Console: f, Store: h.store, Now: h.now,
			Snapshots: hubspot.ConflictSnapshots{Store: h.store, Log: h.log}}
		overviewPage  = overview.Pages{Console: f, Store: h.store, Queue: h.queue, Log: h.log, Now: h.now}
		providerPages = providers.Pages{Console: f, Store: h.store, Webhook: h.webhook, PublicURL: h.publicURL,
			Log: h.log, Now: h.now}
		destPages     = destinations.Pages{Console: f, Store: h.store, Log: h.log, Now: h.now}
		alertPages    = alerts.Pages{Console: f, Store: h.store, Log: h.log}
		listPages     = lists.Pages{Console: f, Store: h.store}
		deliveryPages = deliveries.Pages{Console: f, Store: h.store, Replayer: h.replayer, PublicURL: h.publicURL}
		peoplePages   = people.Pages{Console: f, Store: h.store, Timeline: recordPages.Timeline}
		appPages      = apps.Pages{Console: f, Store: h.store, Sessions: h.sessions, PublicURL: h.publicURL, Log: h.log}
	)
	csrf := http.NewCrossOriginProtection()
	r.Use(h.securityHeaders, limitConsoleBody, h.loadSession, csrf.Handler)
	r.Get("/login", h.handleLoginPage)
	r.Post("/login", h.handleLogin)
	r.Get(ssoStartPath, h.handleSSOStart)
	r.Get(ssoCallbackPath, h.handleSSOCallback)
	r.Group(func(r chi.Router) {
		r.Use(h.requireUser)
		r.Get("/", h.handleHome)
		r.Post("/logout", h.handleLogout)
		// Where an app's consent page sends the browser back: the state
		// names the tenant, and the operator must still be its owner.
		r.Get(apps.CallbackPath, appPages.HandleCallback)

		// Operators and memberships: admins only.
		r.Group(func(r chi.Router) {
			r.Use(adminPages.RequireAdmin)
			r.Get(admin.HomePath, adminPages.HandleHome)
			r.Post(admin.TenantsPath, adminPages.HandleCreateTenant)
			r.Post(admin.TenantsPath+"/{slug}/rename", adminPages.HandleRenameTenant)
			r.Post(admin.TenantsPath+"/{slug}/archive", adminPages.HandleArchiveTenant(true))
			r.Post(admin.TenantsPath+"/{slug}/unarchive", adminPages.HandleArchiveTenant(false))
			r.Post(admin.TenantsPath+"/{slug}/delete", adminPages.HandleDeleteTenant)
			r.Get(admin.OperatorsPath, adminPages.HandleOperators)
			r.Post(admin.OperatorsPath, adminPages.HandleCreateOperator)
			r.Post(admin.OperatorsPath+"/{id}/memberships", adminPages.HandleAddMembership)
			r.Post(admin.OperatorsPath+"/{id}/memberships/{tenant}/remove", adminPages.HandleRemoveMembership)
			r.Post(admin.OperatorsPath+"/{id}/admin", adminPages.HandleSetAdmin)
			r.Post(admin.OperatorsPath+"/{id}/disable", adminPages.HandleSetDisabled(true))
			r.Post(admin.OperatorsPath+"/{id}/enable", adminPages.HandleSetDisabled(false))
			r.Post(admin.OperatorsPath+"/{id}/password", adminPages.HandleResetPassword)
			r.Post(admin.OperatorsPath+"/{id}/sign-out", adminPages.HandleSignOutEverywhere)
			r.Get(lists.AdminAuditPath, listPages.HandleAdminAudit)
			r.Get(admin.ReconciliationPath, adminPages.HandleReconciliation)
			r.Post(admin.ReconciliationPath+"/run", adminPages.HandleRunReconciliation)
			r.Get(admin.AppsPath, adminPages.HandleApps)
			r.Get(admin.AppsPath+"/{name}", adminPages.HandleApp)
		})

		r.Route("/t/{tenant}", func(r chi.Router) {
			r.Use(h.requireTenant, httpx.GateReads(h.reads, readKeys, h.readsBusy))
			r.Get("/", overviewPage.Handle)

			// Event history and event detail (web/console/lists).
			r.Get("/events", listPages.HandleEventLog)
			r.Get("/events/find", recordPages.HandleFindEvent)
			r.Get("/events/{delivery_id}/{seq}", listPages.HandleEventDetail)

			// The records directory and the record timelines.
			r.Get("/records", listPages.HandleRecords)
			r.Get("/records/{provider}/{object_type}/{object_id}", recordPages.HandleTimeline)
			// A lead's page lists its signups (web/console/people).
			r.Get("/records/{provider}/"+people.LeadType+"/{object_id}", peoplePages.HandleLead)
			r.Get("/contacts", recordPages.HandleContactSearch)
			r.Get("/contacts/{provider}/{contact_id}", recordPages.HandleTimeline)

			// The conflict queue and conflicts.
			r.Get("/conflicts", conflictPages.HandleConflictQueue)
			r.Get("/conflicts/{id}", conflictPages.HandleConflict)
			r.With(h.requireRole(domain.RoleOperator)).Post("/conflicts/{id}/resolve", conflictPages.HandleResolveConflict)
			r.With(h.requireRole(domain.RoleOperator)).Post("/conflicts/{id}/snapshot", conflictPages.HandleAskSnapshot)

			// Providers, their secrets, scopes and deliveries, and API
			// tokens: every member reads them; only owners change them.
			r.With(appPages.AllowConsentForms).Get("/providers", providerPages.HandleProviders)
			r.Get("/providers/{name}", providerPages.HandleProvider)
			r.Get("/tokens", workspacePages.HandleTokens)
			r.Group(func(r chi.Router) {
				r.Use(h.requireRole(domain.RoleOwner))
				r.Post("/providers", providerPages.HandleConnectProvider)
				r.Post("/providers/{name}/rotate", providerPages.HandleRotateSecret)
				r.Post("/providers/{name}/retire", providerPages.HandleRetireSecrets)
				r.Post("/providers/{name}/secret-shown", providerPages.HandleSecretShown)
				r.Post("/providers/{name}/test", providerPages.HandleTestEvent)
				r.Post("/providers/{name}/scopes", providerPages.HandleSaveScope)
				r.Post("/providers/{name}/api-credentials", providerPages.HandleSetAPICredentials)
				r.Post("/providers/{name}/api-credentials/clear", providerPages.HandleClearAPICredentials)
				r.Post("/providers/{name}/cdc", providerPages.HandleSetCDC)
				r.Post("/providers/{name}/delete", providerPages.HandleRemoveProvider)
				r.Post("/tokens", workspacePages.HandleCreateToken)
				r.Post("/tokens/{id}/revoke", workspacePages.HandleRevokeToken)
				// The OAuth install of a HubSpot app (web/console/apps).
				r.Get("/apps/{app}/connect", appPages.HandleConnect)
			})
			// Backfills pull what webhooks missed through the same guard,
			// as a replay does: operators and owners.
			r.Group(func(r chi.Router) {
				r.Use(h.requireRole(domain.RoleOperator))
				r.Post("/providers/{name}/backfills", providerPages.HandleStartBackfill)
				r.Post("/providers/{name}/backfills/{id}/cancel", providerPages.HandleCancelBackfill)
			})

			// People.
			r.Get("/people", peoplePages.HandleList)
			r.Get("/people/{id}", peoplePages.HandlePerson)

			// Members: owners (and admins, who act as owners) add members,
			// change their roles and remove them.
			r.Group(func(r chi.Router) {
				r.Use(h.requireRole(domain.RoleOwner))
				r.Get("/members", workspacePages.HandleMembers)
				r.Post("/members", workspacePages.HandleAddMember)
				r.Post("/members/{id}/role", workspacePages.HandleSetMemberRole)
				r.Post("/members/{id}/remove", workspacePages.HandleRemoveMember)
			})

			// Destinations, where the workspace's changes are pushed
			// (web/console/destinations): owners only, reading included.
			r.Group(func(r chi.Router) {
				r.Use(h.requireRole(domain.RoleOwner))
				r.Get("/destinations", destPages.HandleList)
				r.Post("/destinations", destPages.HandleCreate)
				r.Get("/destinations/{id}", destPages.HandleDetail)
				r.Post("/destinations/{id}/pause", destPages.HandlePause)
				r.Post("/destinations/{id}/resume", destPages.HandleResume)
				r.Post("/destinations/{id}/rewind", destPages.HandleRewind)
				r.Post("/destinations/{id}/expressions", destPages.HandleExpressions)
				r.Post("/destinations/{id}/rotate", destPages.HandleRotate)
				r.Post("/destinations/{id}/delete", destPages.HandleDelete)
			})

			// Alerts (web/console/alerts): every member reads them; owners
			// change the rules.
			r.Get(alerts.Path, alertPages.HandlePage)
			r.With(h.requireRole(domain.RoleOwner)).Post(alerts.Path+"/rules/{rule}", alertPages.HandleSetRule)

			// The tenant's audit log: owners only (and admins).
			r.With(h.requireRole(domain.RoleOwner)).Get("/audit", listPages.HandleTenantAudit)

			// Record repair: reset and erase of a record, erase of a lead,
			// each after a typed confirmation; owners only.
			r.Group(func(r chi.Router) {
				r.Use(h.requireRole(domain.RoleOwner))
				r.Post("/records/{provider}/{object_type}/{object_id}/reset", recordPages.HandleRecordReset)
				r.Post("/records/{provider}/{object_type}/{object_id}/erase", recordPages.HandleRecordErase)
				r.Get("/leads/erase", recordPages.HandleLeadErasePage)
				r.Post("/leads/erase", recordPages.HandleLeadErase)
			})

			// The delivery list, the inspector and replay jobs
			// (web/console/deliveries); replaying changes what Tidemark
			// holds: operators and owners.
			r.Get("/deliveries", deliveryPages.HandleList)
			r.Get("/deliveries/{id}", deliveryPages.HandleDelivery)
			r.Get("/replays", deliveryPages.HandleReplays)
			r.Get("/replays/{id}", deliveryPages.HandleReplayJob)
			r.Group(func(r chi.Router) {
				r.Use(h.requireRole(domain.RoleOperator))
				r.Post("/deliveries/{id}/replay", deliveryPages.HandleReplayDelivery)
				r.Post("/replays", deliveryPages.HandleStartReplay)
				r.Post("/replays/{id}/cancel", deliveryPages.HandleCancelReplay)
			})
		})
	})
}

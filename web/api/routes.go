package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/web/httpx"
)

// Routes registers the whole API under a router mounted at
// /api/v1/tenants/{tenant}: every route needs a token of that tenant.
func (h *Handler) Routes(r chi.Router) {
	base := resource{store: h.store, log: h.log}
	change := changeHandlers{resource: base, reads: h.reads, heads: h.heads, calls: h.feedCalls}
	r.Use(h.requireToken)
	// The feed takes a read slot per read and the writing of its page, not
	// for a whole long poll; it caps its requests per token itself.
	r.Get("/changes", change.handleChanges)
	r.Group(func(r chi.Router) { h.gatedRoutes(r, base) })

	r.NotFound(func(w http.ResponseWriter, r *http.Request) { httpx.WriteError(w, http.StatusNotFound, "not found") })
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteError(w, http.StatusMethodNotAllowed, "method not allowed")
	})
}

// AdminRoutes registers the admin API under a router mounted at
// /api/v1/admin: every route needs an admin token, and reads what admins
// see of the whole service rather than a tenant's.
func (h *Handler) AdminRoutes(r chi.Router) {
	apps := adminAppHandlers{resource: resource{store: h.store, log: h.log}, publicURL: h.publicURL}
	r.Use(h.requireAdminToken, httpx.GateReads(h.reads, adminReadKeys, readsBusy))
	r.Get("/apps", apps.handleApps)
	r.Get("/apps/{name}", apps.handleApp)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) { httpx.WriteError(w, http.StatusNotFound, "not found") })
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteError(w, http.StatusMethodNotAllowed, "method not allowed")
	})
}

// gatedRoutes are the routes whose reads take a slot of the read gate for
// the whole request.
func (h *Handler) gatedRoutes(r chi.Router, base resource) {
	var (
		record   = recordHandlers{base}
		event    = eventHandlers{base}
		people   = peopleHandlers{base}
		conflict = conflictHandlers{base}
		audit    = auditHandlers{base}
		delivery = deliveryHandlers{resource: base, replayer: h.replayer}
		replay   = replayHandlers{base}
		alert    = alertHandlers{base}
		backfill = backfillHandlers{base}
		dest     = destinationHandlers{base}
	)
	r.Use(httpx.GateReads(h.reads, readKeys, readsBusy))
	r.Get("/contacts/{provider}/{contact_id}", record.handleContact)
	r.Get("/contacts/{provider}/{contact_id}/revisions", record.handleRevisions)
	r.Get("/events", event.handleEvents)
	r.Get("/stats", event.handleStats)
	r.Get("/conflicts", conflict.handleConflicts)
	r.Get("/records", record.handleRecords)
	r.Get("/records/{provider}/{object_type}/{object_id}", record.handleRecord)
	r.Get("/people", people.handlePeople)
	// The audit log names operators and their addresses: the console shows
	// it to owners only, so read-only tokens (BI tools) do not read it.
	r.With(requireWriteToken).Get("/audit", audit.handleAudit)
	r.Get("/deliveries", delivery.handleDeliveries)
	r.Get("/deliveries/{id}", delivery.handleDelivery)
	r.Get("/deliveries/{id}/replays", delivery.handleDeliveryReplays)
	r.Get("/replays", replay.handleReplayJobs)
	r.Get("/replays/{id}", replay.handleReplayJob)
	// Alert rules and alerts: any token reads them, read-write ones set
	// the rules.
	r.Get("/alert-rules", alert.handleAlertRules)
	r.Get("/alert-rules/{rule}", alert.handleAlertRule)
	r.Get("/alerts", alert.handleAlerts)
	r.Get("/providers/{provider}/backfills", backfill.handleBackfills)
	r.Get("/providers/{provider}/backfills/{id}", backfill.handleBackfill)
	r.Group(func(r chi.Router) {
		r.Use(requireWriteToken)
		r.Post("/conflicts/{id}/resolve", conflict.handleResolve)
		r.Post("/records/{provider}/{object_type}/{object_id}/reset", record.handleRecordReset)
		r.Delete("/records/{provider}/{object_type}/{object_id}", record.handleRecordErase)
		r.Post("/deliveries/{id}/replay", delivery.handleReplay)
		r.Post("/replays", replay.handleStartReplay)
		r.Post("/replays/{id}/cancel", replay.handleCancelReplay)
		r.Put("/alert-rules/{rule}", alert.handleSetAlertRule)
		r.Post("/providers/{provider}/backfills", backfill.handleStartBackfill)
		r.Post("/providers/{provider}/backfills/{id}/cancel", backfill.handleCancelBackfill)
		// Destinations, reads included: a destination's URL and status are
		// the owners', as on the console.
		r.Post("/destinations", dest.handleCreateDestination)
		r.Post("/destinations/test-expression", dest.handleTestExpression)
		r.Get("/destinations", dest.handleDestinations)
		r.Get("/destinations/{id}", dest.handleDestination)
		r.Patch("/destinations/{id}", dest.handleUpdateDestination)
		r.Get("/destinations/{id}/attempts", dest.handleDestinationAttempts)
		r.Post("/destinations/{id}/rotate", dest.handleRotateDestination)
		r.Post("/destinations/{id}/pause", dest.handlePauseDestination)
		r.Post("/destinations/{id}/resume", dest.handleResumeDestination)
		r.Post("/destinations/{id}/rewind", dest.handleRewindDestination)
		r.Delete("/destinations/{id}", dest.handleDeleteDestination)
	})
}

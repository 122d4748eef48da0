package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/web/httpx"
)

// Routes registers the whole API under a router mounted at
// /api/v1/tenants/{tenant}: every route needs a token of that tenant.
func (h *Handler) Routes(r chi.Router) {
	r.Use(h.requireToken)
	// The feed takes a read slot per read and the writing of its page, not
	// for a whole long poll; it caps its requests per token itself.
	r.Get("/changes", h.handleChanges)
	r.Group(func(r chi.Router) { h.gatedRoutes(r) })

	r.NotFound(func(w http.ResponseWriter, r *http.Request) { httpx.WriteError(w, http.StatusNotFound, "not found") })
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteError(w, http.StatusMethodNotAllowed, "method not allowed")
	})
}

// gatedRoutes are the routes whose reads take a slot of the read gate for
// the whole request.
func (h *Handler) gatedRoutes(r chi.Router) {
	r.Use(httpx.GateReads(h.reads, readKeys, readsBusy))
	r.Get("/contacts/{provider}/{contact_id}", h.handleContact)
	r.Get("/contacts/{provider}/{contact_id}/revisions", h.handleRevisions)
	r.Get("/events", h.handleEvents)
	r.Get("/stats", h.handleStats)
	r.Get("/conflicts", h.handleConflicts)
	r.Get("/records", h.handleRecords)
	r.Get("/records/{provider}/{object_type}/{object_id}", h.handleRecord)
	r.Get("/people", h.handlePeople)
	// The audit log names operators and their addresses: the console shows
	// it to owners only, so read-only tokens (BI tools) do not read it.
	r.With(requireWriteToken).Get("/audit", h.handleAudit)
	r.Get("/deliveries", h.handleDeliveries)
	r.Get("/deliveries/{id}", h.handleDelivery)
	r.Get("/deliveries/{id}/replays", h.handleDeliveryReplays)
	r.Get("/replays", h.handleReplayJobs)
	r.Get("/replays/{id}", h.handleReplayJob)
	// Alert rules and alerts: any token reads them, read-write ones set
	// the rules.
	r.Get("/alert-rules", h.handleAlertRules)
	r.Get("/alert-rules/{rule}", h.handleAlertRule)
	r.Get("/alerts", h.handleAlerts)
	r.Get("/providers/{provider}/backfills", h.handleBackfills)
	r.Get("/providers/{provider}/backfills/{id}", h.handleBackfill)
	r.Group(func(r chi.Router) {
		r.Use(requireWriteToken)
		r.Post("/conflicts/{id}/resolve", h.handleResolve)
		r.Post("/records/{provider}/{object_type}/{object_id}/reset", h.handleRecordReset)
		r.Delete("/records/{provider}/{object_type}/{object_id}", h.handleRecordErase)
		r.Post("/deliveries/{id}/replay", h.handleReplay)
		r.Post("/replays", h.handleStartReplay)
		r.Post("/replays/{id}/cancel", h.handleCancelReplay)
		r.Put("/alert-rules/{rule}", h.handleSetAlertRule)
		r.Post("/providers/{provider}/backfills", h.handleStartBackfill)
		r.Post("/providers/{provider}/backfills/{id}/cancel", h.handleCancelBackfill)
		// Destinations, reads included: a destination's URL and status are
		// the owners', as on the console.
		r.Post("/destinations", h.handleCreateDestination)
		r.Get("/destinations", h.handleDestinations)
		r.Get("/destinations/{id}", h.handleDestination)
		r.Get("/destinations/{id}/attempts", h.handleDestinationAttempts)
		r.Post("/destinations/{id}/rotate", h.handleRotateDestination)
		r.Post("/destinations/{id}/pause", h.handlePauseDestination)
		r.Post("/destinations/{id}/resume", h.handleResumeDestination)
		r.Post("/destinations/{id}/rewind", h.handleRewindDestination)
		r.Delete("/destinations/{id}", h.handleDeleteDestination)
	})
}

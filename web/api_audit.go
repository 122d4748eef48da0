package web

import (
	"net/http"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// auditEntryJSON is one audit entry as the API answers it.
type auditEntryJSON struct {
	ID            int64   `json:"id"`
	At            apiTime `json:"at"`
	Actor         string  `json:"actor"`
	ActorKind     string  `json:"actor_kind"`
	Action        string  `json:"action"`
	Target        string  `json:"target"`
	Summary       string  `json:"summary"`
	ClientAddress *string `json:"client_address"` // null for the command line
}

// handleAuditAPI answers GET audit?actor=&action=&from=&to= with the
// tenant's audit log, newest first; from and to are RFC 3339 instants.
func (s *Server) handleAuditAPI(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	q := domain.AuditQuery{TenantID: apiTenant(r.Context()).ID, Actor: v.Get("actor"), Action: v.Get("action")}
	for _, bound := range []struct {
		name string
		to   *time.Time
	}{{"from", &q.From}, {"to", &q.Before}} {
		if raw := v.Get(bound.name); raw != "" {
			t, err := time.Parse(time.RFC3339Nano, raw)
			if err != nil {
				writeError(w, http.StatusBadRequest, bound.name+" must be an RFC 3339 time such as 2026-11-29T10:00:00Z")
				return
			}
			*bound.to = t
		}
	}
	p, err := page(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	entries, next, err := s.audit.AuditLog(r.Context(), q, p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]auditEntryJSON, len(entries))
	for i, e := range entries {
		out[i] = auditEntryJSON{ID: e.ID, At: apiTime(e.At), Actor: e.Actor, ActorKind: e.ActorKind, Action: e.Action,
			Target: e.Target, Summary: e.Summary, ClientAddress: optionalString(e.ClientAddress)}
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": out, "next_cursor": nextCursor(next)})
}

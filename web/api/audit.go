package api

import (
	"context"
	"net/http"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/httpx"
)

// auditEntryJSON is one audit entry as the API answers it.
type auditEntryJSON struct {
	ID            int64    `json:"id"`
	At            jsonTime `json:"at"`
	Actor         string   `json:"actor"`
	ActorKind     string   `json:"actor_kind"`
	Action        string   `json:"action"`
	Target        string   `json:"target"`
	Summary       string   `json:"summary"`
	ClientAddress *string  `json:"client_address"` // null for the command line
}

// handleAudit answers GET audit?actor=&action=&from=&to= with the
// tenant's audit log, newest first; from and to are RFC 3339 instants.
func (h auditHandlers) handleAudit(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	q := domain.AuditQuery{TenantID: tokenTenant(r.Context()).ID, Actor: v.Get("actor"), Action: v.Get("action")}
	for _, bound := range []struct {
		name string
		to   *time.Time
	}{{"from", &q.From}, {"to", &q.Before}} {
		if raw := v.Get(bound.name); raw != "" {
			t, err := time.Parse(time.RFC3339Nano, raw)
			if err != nil {
				httpx.WriteError(w, http.StatusBadRequest, bound.name+" must be an RFC 3339 time such as 2026-11-29T10:00:00Z")
				return
			}
			*bound.to = t
		}
	}
	fetch := func(ctx context.Context, p domain.Page) ([]domain.AuditEntry, string, error) {
		return h.store.AuditLog(ctx, q, p)
	}
	listJSON(h, w, r, "entries", fetch, func(e domain.AuditEntry) auditEntryJSON {
		return auditEntryJSON{ID: e.ID, At: jsonTime(e.At), Actor: e.Actor, ActorKind: e.ActorKind, Action: e.Action,
			Target: e.Target, Summary: e.Summary, ClientAddress: optionalString(e.ClientAddress)}
	})
}

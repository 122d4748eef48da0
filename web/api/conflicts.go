package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/httpx"
)

type snapshotJSON struct {
	EventID  string          `json:"event_id"`
	Snapshot json.RawMessage `json:"snapshot"`
}

type conflictJSON struct {
	ID          int64        `json:"id"`
	Provider    string       `json:"provider"`
	ContactID   *string      `json:"contact_id"`
	ObjectType  string       `json:"object_type"`
	ObjectID    string       `json:"object_id"`
	Revision    int64        `json:"revision"`
	Status      string       `json:"status"`
	Note        string       `json:"note"`
	ResolvedBy  *string      `json:"resolved_by"`
	ResolvedAt  *jsonTime    `json:"resolved_at"`
	Accepted    snapshotJSON `json:"accepted"`
	Conflicting snapshotJSON `json:"conflicting"`
	DetectedAt  jsonTime     `json:"detected_at"`
}

func newConflictJSON(c domain.Conflict) conflictJSON {
	return conflictJSON{ID: c.ID, Provider: c.Provider, ContactID: contactID(c.ObjectType, c.ObjectID),
		ObjectType: c.ObjectType, ObjectID: c.ObjectID, Revision: c.Revision, Status: c.Status, Note: c.Note,
		ResolvedBy: optionalString(c.ResolvedBy), ResolvedAt: optionalTime(c.ResolvedAt),
		Accepted:    snapshotJSON{EventID: c.AcceptedEventID, Snapshot: c.AcceptedSnapshot},
		Conflicting: snapshotJSON{EventID: c.ConflictingEventID, Snapshot: c.ConflictingSnapshot},
		DetectedAt:  jsonTime(c.DetectedAt)}
}

// handleConflicts answers GET conflicts?status=.
func (h conflictHandlers) handleConflicts(w http.ResponseWriter, r *http.Request) {
	status := r.URL.Query().Get("status")
	switch status {
	case "", domain.ConflictOpen, domain.ConflictKept, domain.ConflictAdopted:
	default:
		httpx.WriteError(w, http.StatusBadRequest, fmt.Sprintf("status must be %s, %s or %s; got %q",
			domain.ConflictOpen, domain.ConflictKept, domain.ConflictAdopted, status))
		return
	}
	listJSON(h, w, r, "conflicts", func(ctx context.Context, p domain.Page) ([]domain.Conflict, string, error) {
		return h.store.Conflicts(ctx, tokenTenant(ctx).ID, status, p)
	}, newConflictJSON)
}

// resolvedBy names who resolved a conflict through the API.
const resolvedBy = "api token"

// maxResolveBody bounds a resolve request; a note has no business being larger.
const maxResolveBody = 64 << 10

// handleResolve answers POST conflicts/{id}/resolve with the resolved conflict.
func (h conflictHandlers) handleResolve(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil || id < 1 {
		httpx.WriteError(w, http.StatusNotFound, "not found") // no such conflict can exist
		return
	}
	var req struct {
		Resolution string `json:"resolution"`
		Note       string `json:"note"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxResolveBody))
	if err := dec.Decode(&req); err != nil || dec.Decode(&struct{}{}) != io.EOF {
		httpx.WriteError(w, http.StatusBadRequest, `body must be JSON: {"resolution": "keep" | "adopt", "note": "..."}`)
		return
	}
	c, err := h.store.ResolveConflict(r.Context(), tokenTenant(r.Context()).ID, id, req.Resolution, req.Note, resolvedBy)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, newConflictJSON(c))
}

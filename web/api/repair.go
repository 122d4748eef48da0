package api

import (
	"net/http"

	"github.com/tidemark/tidemark/web/httpx"
)

// Record repair through the API: reset and erase, for read-write tokens.

// handleRecordReset answers POST records/{provider}/{object_type}/{object_id}/reset
// with the record as reset.
func (h recordHandlers) handleRecordReset(w http.ResponseWriter, r *http.Request) {
	rec, err := h.store.ResetRecord(r.Context(), tokenTenant(r.Context()).ID, httpx.RecordRef(r))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, newRecordJSON(rec))
}

// handleRecordErase answers DELETE records/{provider}/{object_type}/{object_id}
// with what was erased.
func (h recordHandlers) handleRecordErase(w http.ResponseWriter, r *http.Request) {
	ref := httpx.RecordRef(r)
	e, err := h.store.EraseRecord(r.Context(), tokenTenant(r.Context()).ID, ref)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"provider": ref.Provider, "object_type": ref.ObjectType,
		"object_id": ref.ObjectID, "erased": true, "accepted_revisions": e.Revisions, "events": e.Events,
		"conflicts": e.Conflicts, "delivery_bodies": e.Bodies})
}

package web

import (
	"encoding/json"
	"net/http"

	"github.com/tidemark/tidemark/domain"
)

// recordJSON is a record as the API answers it. A reset record's revision
// is null until the next event applies; a record the provider deleted
// (HubSpot) says so, with the deletion's revision.
type recordJSON struct {
	Provider         string          `json:"provider"`
	ObjectType       string          `json:"object_type"`
	ObjectID         string          `json:"object_id"`
	Revision         *int64          `json:"revision"`
	Snapshot         json.RawMessage `json:"snapshot"`
	ApplicationCount int             `json:"application_count"`
	LastAppliedEvent string          `json:"last_applied_event"`
	CreatedAt        apiTime         `json:"created_at"`
	UpdatedAt        apiTime         `json:"updated_at"`
	Deleted          bool            `json:"deleted"`
	DeletedRevision  *int64          `json:"deleted_revision"`
	ResetAt          *apiTime        `json:"reset_at"`
}

func newRecordJSON(rec domain.Record) recordJSON {
	out := recordJSON{Provider: rec.Provider, ObjectType: rec.ObjectType, ObjectID: rec.ObjectID,
		Snapshot: rec.Snapshot, ApplicationCount: rec.ApplicationCount, LastAppliedEvent: rec.LastAppliedEvent,
		CreatedAt: apiTime(rec.CreatedAt), UpdatedAt: apiTime(rec.UpdatedAt), Deleted: rec.DeletedRevision != nil,
		DeletedRevision: rec.DeletedRevision, ResetAt: optionalTime(rec.ResetAt)}
	if !rec.Forgotten() {
		out.Revision = &rec.Revision
	}
	return out
}

// handleRecordResetAPI answers POST records/{provider}/{object_type}/{object_id}/reset
// with the record as reset.
func (s *Server) handleRecordResetAPI(w http.ResponseWriter, r *http.Request) {
	rec, err := s.records.ResetRecord(r.Context(), apiTenant(r.Context()).ID, recordRef(r))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newRecordJSON(rec))
}

// handleRecordEraseAPI answers DELETE records/{provider}/{object_type}/{object_id}
// with what was erased.
func (s *Server) handleRecordEraseAPI(w http.ResponseWriter, r *http.Request) {
	ref := recordRef(r)
	e, err := s.records.EraseRecord(r.Context(), apiTenant(r.Context()).ID, ref)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"provider": ref.Provider, "object_type": ref.ObjectType,
		"object_id": ref.ObjectID, "erased": true, "accepted_revisions": e.Revisions, "events": e.Events,
		"conflicts": e.Conflicts, "delivery_bodies": e.Bodies})
}

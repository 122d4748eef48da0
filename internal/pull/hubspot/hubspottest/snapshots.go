package hubspottest

import (
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
)

// CRM snapshots as the spec (webhooksJournal.json, 2026-03) describes them:
// POST /webhooks-journal/snapshots/2026-03/crm {snapshotRequests} →
// {snapshotResponses: [{portalId, objectTypeId, objectId, snapshotStatusId}]},
// and GET /webhooks-journal/journal-local/2026-03/status/{id} →
// SnapshotStatusResponse. The fake appends the SNAPSHOT entry (the record's
// current properties) at once; the status reads IN_PROGRESS once, then SUCCESS.

type snapshot struct {
	initiated, completed time.Time
	polled               bool
}

// objectTypeIDs maps HubSpot's object type ids to the API's names.
var objectTypeIDs = map[string]string{"0-1": "contacts", "0-2": "companies", "0-3": "deals", "0-5": "tickets"}

func (s *Server) requestSnapshots(w http.ResponseWriter, r *http.Request) {
	var req struct {
		SnapshotRequests []struct {
			PortalID     int64    `json:"portalId"`
			ObjectTypeID string   `json:"objectTypeId"`
			ObjectID     int64    `json:"objectId"`
			Properties   []string `json:"properties"`
		} `json:"snapshotRequests"`
	}
	if !decode(w, r, &req) {
		return
	}
	if len(req.SnapshotRequests) == 0 {
		writeError(w, http.StatusBadRequest, "VALIDATION_ERROR", "snapshotRequests is required")
		return
	}
	for _, sr := range req.SnapshotRequests {
		if sr.PortalID == 0 || sr.ObjectTypeID == "" || sr.ObjectID == 0 || sr.Properties == nil {
			writeError(w, http.StatusBadRequest, "VALIDATION_ERROR", "portalId, objectTypeId, objectId and properties are required")
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	responses := []map[string]any{}
	for _, sr := range req.SnapshotRequests {
		props := map[string]*string{}
		if rec := s.objects[objectTypeIDs[sr.ObjectTypeID]][strconv.FormatInt(sr.ObjectID, 10)]; rec != nil {
			for _, name := range sr.Properties {
				if v, ok := rec.current(name); ok {
					props[name] = &v
				}
			}
		}
		now := time.Now()
		s.appendEntry(sr.PortalID, Entry{ObjectTypeID: sr.ObjectTypeID, ObjectID: sr.ObjectID, Action: "SNAPSHOT",
			OccurredAt: now.UnixMilli(), Properties: props})
		id := uuid.NewString()
		s.app.snapshots[id] = &snapshot{initiated: now, completed: now}
		responses = append(responses, map[string]any{"portalId": sr.PortalID, "objectTypeId": sr.ObjectTypeID,
			"objectId": sr.ObjectID, "snapshotStatusId": id})
	}
	writeJSON(w, http.StatusOK, map[string]any{"snapshotResponses": responses})
}

func (s *Server) snapshotStatus(w http.ResponseWriter, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sn := s.app.snapshots[id]
	if sn == nil {
		writeError(w, http.StatusNotFound, "OBJECT_NOT_FOUND", "no snapshot "+id)
		return
	}
	answer := map[string]any{"id": id, "initiatedAt": sn.initiated.UnixMilli(), "status": "IN_PROGRESS"}
	if sn.polled {
		answer["status"], answer["completedAt"] = "SUCCESS", sn.completed.UnixMilli()
	}
	sn.polled = true
	writeJSON(w, http.StatusOK, answer)
}

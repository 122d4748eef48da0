package hubspot

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// CRM snapshots, as the spec
// PublicApiSpecs/Webhooks Journal/Webhooks Journal/Rollouts/284944/2026-03/webhooksJournal.json
// and https://developers.hubspot.com/docs/api-reference/latest/webhooks-journal/snapshots/guide.md
// describe them: POST /webhooks-journal/snapshots/2026-03/crm
// (CrmObjectSnapshotBatchRequest {snapshotRequests} →
// CrmObjectSnapshotBatchResponse {snapshotResponses: [{…, snapshotStatusId}]}),
// then GET /webhooks-journal/journal-local/2026-03/status/{statusId}
// (SnapshotStatusResponse) until it is done; the snapshot lands in the
// journal as a SNAPSHOT entry.
const snapshotsPath = "/webhooks-journal/snapshots/2026-03/crm"

// SnapshotRequest asks for a record's current properties.
type SnapshotRequest struct {
	PortalID     int64    `json:"portalId"`
	ObjectTypeID string   `json:"objectTypeId"`
	ObjectID     int64    `json:"objectId"`
	Properties   []string `json:"properties"`
}

// SnapshotAccepted is one request accepted, with the id to poll.
type SnapshotAccepted struct {
	PortalID     int64  `json:"portalId"`
	ObjectTypeID string `json:"objectTypeId"`
	ObjectID     int64  `json:"objectId"`
	StatusID     string `json:"snapshotStatusId"`
}

// The snapshot statuses (the spec's enum; its description names COMPLETED
// where the enum has SUCCESS, so both count as success).
const (
	SnapshotPending    = "PENDING"
	SnapshotInProgress = "IN_PROGRESS"
	SnapshotSuccess    = "SUCCESS"
	SnapshotCompleted  = "COMPLETED"
	SnapshotFailed     = "FAILED"
	SnapshotExpired    = "EXPIRED"
)

// SnapshotStatus is the spec's SnapshotStatusResponse.
type SnapshotStatus struct {
	ID          string
	Status      string
	InitiatedAt time.Time
	CompletedAt time.Time
	ErrorCode   string // TIMEOUT, VALIDATION_ERROR, INTERNAL_ERROR, PERMISSION_DENIED
	Message     string
}

// Done reports whether the snapshot will not change any more.
func (s SnapshotStatus) Done() bool {
	switch s.Status {
	case SnapshotSuccess, SnapshotCompleted, SnapshotFailed, SnapshotExpired:
		return true
	}
	return false
}

// Succeeded reports whether the snapshot is in the journal.
func (s SnapshotStatus) Succeeded() bool {
	return s.Status == SnapshotSuccess || s.Status == SnapshotCompleted
}

// RequestSnapshots asks HubSpot for snapshots of records.
func (c *Client) RequestSnapshots(ctx context.Context, tokens *TokenSource, reqs []SnapshotRequest) ([]SnapshotAccepted, error) {
	var a struct {
		Responses []SnapshotAccepted `json:"snapshotResponses"`
	}
	body := map[string]any{"snapshotRequests": reqs}
	err := c.authed(ctx, tokens, request{method: http.MethodPost, url: c.base + snapshotsPath, what: "request CRM snapshots", body: body}, &a)
	return a.Responses, err
}

// SnapshotStatus reads where a snapshot stands.
func (c *Client) SnapshotStatus(ctx context.Context, tokens *TokenSource, statusID string) (SnapshotStatus, error) {
	var a struct {
		ID          string `json:"id"`
		Status      string `json:"status"`
		InitiatedAt int64  `json:"initiatedAt"`
		CompletedAt int64  `json:"completedAt"`
		ErrorCode   string `json:"errorCode"`
		Message     string `json:"message"`
	}
	err := c.authed(ctx, tokens, request{method: http.MethodGet, url: c.base + journalPath + "/status/" + url.PathEscape(statusID),
		what: "read a snapshot's status"}, &a)
	if err != nil {
		return SnapshotStatus{}, err
	}
	return SnapshotStatus{ID: a.ID, Status: a.Status, InitiatedAt: millis(a.InitiatedAt), CompletedAt: millis(a.CompletedAt),
		ErrorCode: a.ErrorCode, Message: clip(a.Message)}, nil
}

// WaitSnapshot polls a snapshot's status every interval until it is done
// or ctx ends.
func (c *Client) WaitSnapshot(ctx context.Context, tokens *TokenSource, statusID string, every time.Duration) (SnapshotStatus, error) {
	for {
		s, err := c.SnapshotStatus(ctx, tokens, statusID)
		if err != nil || s.Done() {
			return s, err
		}
		if err := sleep(ctx, every); err != nil {
			return s, fmt.Errorf("hubspot: snapshot %s still %s: %w", statusID, s.Status, err)
		}
	}
}

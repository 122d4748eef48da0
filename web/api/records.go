package api

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/httpx"
)

type contactJSON struct {
	ContactID        string          `json:"contact_id"`
	Provider         string          `json:"provider"`
	Revision         int64           `json:"revision"`
	Snapshot         json.RawMessage `json:"snapshot"`
	ApplicationCount int             `json:"application_count"`
	LastAppliedEvent string          `json:"last_applied_event"`
	UpdatedAt        jsonTime        `json:"updated_at"`
}

// handleContact answers GET contacts/{provider}/{contact_id}.
func (h recordHandlers) handleContact(w http.ResponseWriter, r *http.Request) {
	rec, err := h.store.Record(r.Context(), tokenTenant(r.Context()).ID, contactRef(r))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, contactJSON{ContactID: rec.ObjectID, Provider: rec.Provider, Revision: rec.Revision,
		Snapshot: rec.Snapshot, ApplicationCount: rec.ApplicationCount, LastAppliedEvent: rec.LastAppliedEvent,
		UpdatedAt: jsonTime(rec.UpdatedAt)})
}

func contactRef(r *http.Request) domain.RecordRef {
	return domain.RecordRef{Provider: httpx.PathParam(r, "provider"), ObjectType: domain.ContactType,
		ObjectID: httpx.PathParam(r, "contact_id")}
}

// handleRecord answers GET records/{provider}/{object_type}/{object_id}.
func (h recordHandlers) handleRecord(w http.ResponseWriter, r *http.Request) {
	rec, err := h.store.Record(r.Context(), tokenTenant(r.Context()).ID, httpx.RecordRef(r))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, newRecordJSON(rec))
}

type revisionJSON struct {
	Revision   int64           `json:"revision"`
	EventID    string          `json:"event_id"`
	Snapshot   json.RawMessage `json:"snapshot"`
	AppliedAt  jsonTime        `json:"applied_at"`
	ConflictID *int64          `json:"conflict_id"` // set when an operator adopted this snapshot
}

// handleRevisions answers GET contacts/{provider}/{contact_id}/revisions.
func (h recordHandlers) handleRevisions(w http.ResponseWriter, r *http.Request) {
	listJSON(h, w, r, "revisions", func(ctx context.Context, p domain.Page) ([]domain.Revision, string, error) {
		return h.store.Revisions(ctx, tokenTenant(ctx).ID, contactRef(r), p)
	}, func(rev domain.Revision) revisionJSON {
		return revisionJSON{Revision: rev.Revision, EventID: rev.EventID, Snapshot: rev.Snapshot,
			AppliedAt: jsonTime(rev.AppliedAt), ConflictID: optionalInt(rev.ConflictID)}
	})
}

type recordSummaryJSON struct {
	Provider         string   `json:"provider"`
	ObjectType       string   `json:"object_type"`
	ObjectID         string   `json:"object_id"`
	Revision         *int64   `json:"revision"` // null while reset (docs/contract/api.md#reset-a-record)
	UpdatedAt        jsonTime `json:"updated_at"`
	ApplicationCount int      `json:"application_count"`
	OpenConflicts    int      `json:"open_conflicts"`
	StaleEvents      int      `json:"stale_events_7d"`
	Deleted          bool     `json:"deleted"`
	// The matched words between U+0002 and U+0003; null without q or when
	// only the id matched.
	Headline *string `json:"headline"`
}

// handleRecords answers GET records?provider=&object_type=&conflicts=open&q=&from=&before=
// with the tenant's records, most recently changed first.
func (h recordHandlers) handleRecords(w http.ResponseWriter, r *http.Request) {
	q, err := recordQuery(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	listJSON(h, w, r, "records", func(ctx context.Context, p domain.Page) ([]domain.RecordSummary, string, error) {
		return h.store.RecordDirectory(ctx, tokenTenant(ctx).ID, q, p)
	}, func(rec domain.RecordSummary) recordSummaryJSON {
		return recordSummaryJSON{Provider: rec.Provider, ObjectType: rec.ObjectType, ObjectID: rec.ObjectID,
			Revision: summaryRevision(rec.Revision), UpdatedAt: jsonTime(rec.UpdatedAt), ApplicationCount: rec.ApplicationCount,
			OpenConflicts: rec.Badges.OpenConflicts, StaleEvents: rec.Badges.StaleEvents, Deleted: rec.Badges.Deleted,
			Headline: optionalString(rec.Headline)}
	})
}

func recordQuery(r *http.Request) (domain.RecordQuery, error) {
	v := r.URL.Query()
	q := domain.RecordQuery{Provider: v.Get("provider"), ObjectType: v.Get("object_type"), Search: v.Get("q")}
	switch c := v.Get("conflicts"); c {
	case "":
	case "open":
		q.OpenConflicts = true
	default:
		return q, domain.Errorf(domain.EINVALID, "conflicts must be \"open\" or absent; got %q", c)
	}
	for _, bound := range []struct {
		name string
		to   *time.Time
	}{{"from", &q.From}, {"before", &q.Before}} {
		if raw := v.Get(bound.name); raw != "" {
			t, err := time.Parse(time.RFC3339Nano, raw)
			if err != nil {
				return q, domain.Errorf(domain.EINVALID, "%s must be an RFC 3339 time such as 2026-11-29T10:00:00Z; got %q", bound.name, raw)
			}
			*bound.to = t
		}
	}
	return q, q.Validate()
}

// summaryRevision is a directory row's revision: none while the record is
// reset, as the record's own answer says.
func summaryRevision(r int64) *int64 {
	if r == domain.ForgottenRevision {
		return nil
	}
	return &r
}

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
	CreatedAt        jsonTime        `json:"created_at"`
	UpdatedAt        jsonTime        `json:"updated_at"`
	Deleted          bool            `json:"deleted"`
	DeletedRevision  *int64          `json:"deleted_revision"`
	ResetAt          *jsonTime       `json:"reset_at"`
}

func newRecordJSON(rec domain.Record) recordJSON {
	out := recordJSON{Provider: rec.Provider, ObjectType: rec.ObjectType, ObjectID: rec.ObjectID,
		Snapshot: rec.Snapshot, ApplicationCount: rec.ApplicationCount, LastAppliedEvent: rec.LastAppliedEvent,
		CreatedAt: jsonTime(rec.CreatedAt), UpdatedAt: jsonTime(rec.UpdatedAt), Deleted: rec.DeletedRevision != nil,
		DeletedRevision: rec.DeletedRevision, ResetAt: optionalTime(rec.ResetAt)}
	if !rec.Forgotten() {
		out.Revision = &rec.Revision
	}
	return out
}

package web

import (
	"net/http"
	"time"

	"github.com/tidemark/tidemark/domain"
)

type recordSummaryJSON struct {
	Provider         string  `json:"provider"`
	ObjectType       string  `json:"object_type"`
	ObjectID         string  `json:"object_id"`
	Revision         *int64  `json:"revision"` // null while reset (7.12)
	UpdatedAt        apiTime `json:"updated_at"`
	ApplicationCount int     `json:"application_count"`
	OpenConflicts    int     `json:"open_conflicts"`
	StaleEvents      int     `json:"stale_events_7d"`
	Deleted          bool    `json:"deleted"`
	// The matched words between U+0002 and U+0003; null without q or when
	// only the id matched.
	Headline *string `json:"headline"`
}

// handleRecordsAPI answers GET records?provider=&object_type=&conflicts=open&q=&from=&before=
// with the tenant's records, most recently changed first.
func (s *Server) handleRecordsAPI(w http.ResponseWriter, r *http.Request) {
	q, err := recordQuery(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p, err := page(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	list, next, err := s.records.RecordDirectory(r.Context(), apiTenant(r.Context()).ID, q, p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]recordSummaryJSON, len(list))
	for i, rec := range list {
		out[i] = recordSummaryJSON{Provider: rec.Provider, ObjectType: rec.ObjectType, ObjectID: rec.ObjectID,
			Revision: summaryRevision(rec.Revision), UpdatedAt: apiTime(rec.UpdatedAt), ApplicationCount: rec.ApplicationCount,
			OpenConflicts: rec.Badges.OpenConflicts, StaleEvents: rec.Badges.StaleEvents, Deleted: rec.Badges.Deleted,
			Headline: optionalString(rec.Headline)}
	}
	writeJSON(w, http.StatusOK, map[string]any{"records": out, "next_cursor": nextCursor(next)})
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

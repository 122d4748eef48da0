package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
)

// The JSON API of docs/contract.md section 4. Every handler reads the tenant that
// requireToken put in the context and passes it to the query service, which
// answers ENOTFOUND for anything outside it.

func (s *Server) apiRoutes(r chi.Router) {
	r.Get("/contacts/{provider}/{contact_id}", s.handleContact)
	r.Get("/contacts/{provider}/{contact_id}/revisions", s.handleRevisions)
	r.Get("/events", s.handleEvents)
	r.Get("/stats", s.handleStats)
	r.Get("/conflicts", s.handleConflicts)
	r.Get("/records", s.handleRecordsAPI)
	r.Get("/records/{provider}/{object_type}/{object_id}", s.handleRecord)
	r.Get("/people", s.handlePeopleAPI)
	r.Get("/audit", s.handleAuditAPI)
	r.Get("/deliveries", s.handleDeliveriesAPI)
	r.Get("/deliveries/{id}", s.handleDeliveryAPI)
	r.Get("/replays", s.handleReplayJobsAPI)
	r.Get("/replays/{id}", s.handleReplayJobAPI)
	r.Group(func(r chi.Router) {
		r.Use(requireWriteToken)
		r.Post("/conflicts/{id}/resolve", s.handleResolve)
		r.Post("/records/{provider}/{object_type}/{object_id}/reset", s.handleRecordResetAPI)
		r.Delete("/records/{provider}/{object_type}/{object_id}", s.handleRecordEraseAPI)
		r.Post("/deliveries/{id}/replay", s.handleReplayAPI)
		r.Post("/replays", s.handleStartReplayAPI)
		r.Post("/replays/{id}/cancel", s.handleCancelReplayAPI)
	})

	r.NotFound(func(w http.ResponseWriter, r *http.Request) { writeError(w, http.StatusNotFound, "not found") })
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusMethodNotAllowed, "method not allowed")
	})
}

type tenantKey struct{}

func apiTenant(ctx context.Context) domain.Tenant {
	return apiGrant(ctx).Tenant
}

// apiGrant is what the request's API token grants.
func apiGrant(ctx context.Context) domain.TokenGrant {
	g, _ := ctx.Value(tenantKey{}).(domain.TokenGrant)
	return g
}

// requireToken authenticates the bearer token and puts what it grants in
// the context, with the token as the actor of the changes made with it. A
// token of another tenant answers 404, exactly like a missing resource, so
// that tokens cannot probe which tenants exist.
func (s *Server) requireToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		token = strings.TrimSpace(token)
		if !strings.EqualFold(scheme, "Bearer") || token == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="tidemark"`)
			writeError(w, http.StatusUnauthorized, "missing API token; send the header Authorization: Bearer <token>")
			return
		}
		g, err := s.tokens.TenantForToken(r.Context(), chi.URLParam(r, "tenant"), token)
		if err != nil {
			if domain.ErrorCode(err) == domain.EUNAUTHORIZED {
				w.Header().Set("WWW-Authenticate", `Bearer realm="tidemark", error="invalid_token"`)
			}
			s.fail(w, r, err)
			return
		}
		ctx := context.WithValue(r.Context(), tenantKey{}, g)
		ctx = domain.WithActor(ctx, domain.Actor{Kind: domain.ActorToken, Name: g.Name, Address: clientAddress(r)})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// requireWriteToken answers requests with a read-only token 403: the
// routes it guards change something.
func requireWriteToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if apiGrant(r.Context()).Access != domain.TokenWrite {
			writeError(w, http.StatusForbidden, "this API token is read-only; this needs a read-write token")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// apiTime formats times as RFC 3339 in UTC.
type apiTime time.Time

func (t apiTime) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Time(t).UTC().Format(time.RFC3339Nano) + `"`), nil
}

func optionalTime(t *time.Time) *apiTime {
	if t == nil {
		return nil
	}
	v := apiTime(*t)
	return &v
}

func optionalString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func optionalInt(n int64) *int64 {
	if n == 0 {
		return nil
	}
	return &n
}

// contactID is the object id of a contact and null for other object types.
func contactID(objectType, objectID string) *string {
	if objectType != domain.ContactType {
		return nil
	}
	return optionalString(objectID)
}

// nextCursor is null on the last page.
func nextCursor(c string) *string { return optionalString(c) }

// page reads ?limit= and ?cursor=. A limit above the maximum is capped.
func page(r *http.Request) (domain.Page, error) {
	p := domain.Page{Limit: domain.DefaultPageLimit, Cursor: r.URL.Query().Get("cursor")}
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return p, domain.Errorf(domain.EINVALID, "limit must be a positive integer (at most %d), got %q", domain.MaxPageLimit, v)
		}
		p.Limit = min(n, domain.MaxPageLimit)
	}
	return p, nil
}

type contactJSON struct {
	ContactID        string          `json:"contact_id"`
	Provider         string          `json:"provider"`
	Revision         int64           `json:"revision"`
	Snapshot         json.RawMessage `json:"snapshot"`
	ApplicationCount int             `json:"application_count"`
	LastAppliedEvent string          `json:"last_applied_event"`
	UpdatedAt        apiTime         `json:"updated_at"`
}

// handleContact answers GET contacts/{provider}/{contact_id}.
func (s *Server) handleContact(w http.ResponseWriter, r *http.Request) {
	rec, err := s.records.Record(r.Context(), apiTenant(r.Context()).ID, contactRef(r))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, contactJSON{ContactID: rec.ObjectID, Provider: rec.Provider, Revision: rec.Revision,
		Snapshot: rec.Snapshot, ApplicationCount: rec.ApplicationCount, LastAppliedEvent: rec.LastAppliedEvent,
		UpdatedAt: apiTime(rec.UpdatedAt)})
}

func contactRef(r *http.Request) domain.RecordRef {
	return domain.RecordRef{Provider: pathParam(r, "provider"), ObjectType: domain.ContactType,
		ObjectID: pathParam(r, "contact_id")}
}

// handleRecord answers GET records/{provider}/{object_type}/{object_id}.
func (s *Server) handleRecord(w http.ResponseWriter, r *http.Request) {
	rec, err := s.records.Record(r.Context(), apiTenant(r.Context()).ID, recordRef(r))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newRecordJSON(rec))
}

type revisionJSON struct {
	Revision   int64           `json:"revision"`
	EventID    string          `json:"event_id"`
	Snapshot   json.RawMessage `json:"snapshot"`
	AppliedAt  apiTime         `json:"applied_at"`
	ConflictID *int64          `json:"conflict_id"` // set when an operator adopted this snapshot
}

// handleRevisions answers GET contacts/{provider}/{contact_id}/revisions.
func (s *Server) handleRevisions(w http.ResponseWriter, r *http.Request) {
	p, err := page(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	revs, next, err := s.records.Revisions(r.Context(), apiTenant(r.Context()).ID, contactRef(r), p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]revisionJSON, len(revs))
	for i, rev := range revs {
		out[i] = revisionJSON{Revision: rev.Revision, EventID: rev.EventID, Snapshot: rev.Snapshot,
			AppliedAt: apiTime(rev.AppliedAt), ConflictID: optionalInt(rev.ConflictID)}
	}
	writeJSON(w, http.StatusOK, map[string]any{"revisions": out, "next_cursor": nextCursor(next)})
}

type eventJSON struct {
	EventID    string         `json:"event_id"`
	Provider   string         `json:"provider"`
	ContactID  *string        `json:"contact_id"`
	Revision   *int64         `json:"revision"`
	Outcome    domain.Outcome `json:"outcome"`
	ReceivedAt apiTime        `json:"received_at"`
	Reason     *string        `json:"reason"`
	ObjectType string         `json:"object_type"`
	ObjectID   *string        `json:"object_id"`
	DeliveryID string         `json:"delivery_id"`
	// With q: the matched words between U+0002 and U+0003.
	Headline *string `json:"headline,omitempty"`
}

// handleEvents answers GET events?provider=&contact_id=&object_type=&object_id=&outcome=&q=.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	f, err := eventFilter(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p, err := page(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	events, next, err := s.events.EventLog(r.Context(), apiTenant(r.Context()).ID, f, p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]eventJSON, len(events))
	for i, e := range events {
		out[i] = eventJSON{EventID: e.EventID, Provider: e.Provider, ContactID: contactID(e.ObjectType, e.ObjectID),
			Revision: e.Revision, Outcome: e.Outcome, ReceivedAt: apiTime(e.ReceivedAt), Reason: optionalString(e.Reason),
			ObjectType: e.ObjectType, ObjectID: optionalString(e.ObjectID), DeliveryID: e.DeliveryID}
		if f.Search != "" {
			out[i].Headline = &events[i].Headline
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"events": out, "next_cursor": nextCursor(next)})
}

func eventFilter(r *http.Request) (domain.EventLogQuery, error) {
	q := r.URL.Query()
	f := domain.EventLogQuery{Provider: q.Get("provider"), ObjectType: q.Get("object_type"), ObjectID: q.Get("object_id"),
		Outcome: domain.Outcome(q.Get("outcome")), Search: strings.TrimSpace(q.Get("q"))}
	if c := q.Get("contact_id"); c != "" {
		if f.ObjectType != "" && f.ObjectType != domain.ContactType {
			return f, domain.Errorf(domain.EINVALID, "contact_id names a contact; it cannot be combined with object_type %q", f.ObjectType)
		}
		if f.ObjectID != "" && f.ObjectID != c {
			return f, domain.Errorf(domain.EINVALID, "contact_id and object_id name different records")
		}
		f.ObjectType, f.ObjectID = domain.ContactType, c
	}
	if f.Outcome != "" && !domain.ValidOutcome(string(f.Outcome)) {
		return f, domain.Errorf(domain.EINVALID, "outcome must be one of %s; got %q", outcomeList(), f.Outcome)
	}
	return f, nil
}

func outcomeList() string {
	names := make([]string, len(domain.Outcomes))
	for i, o := range domain.Outcomes {
		names[i] = string(o)
	}
	return strings.Join(names, ", ")
}

// handleStats answers GET stats?provider=.
func (s *Server) handleStats(w http.ResponseWriter, r *http.Request) {
	stats, err := s.stats.Stats(r.Context(), apiTenant(r.Context()).ID, r.URL.Query().Get("provider"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	outcomes := make(map[domain.Outcome]int64, len(domain.Outcomes))
	for _, o := range domain.Outcomes {
		outcomes[o] = stats[o]
	}
	writeJSON(w, http.StatusOK, map[string]any{"outcomes": outcomes})
}

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
	ResolvedAt  *apiTime     `json:"resolved_at"`
	Accepted    snapshotJSON `json:"accepted"`
	Conflicting snapshotJSON `json:"conflicting"`
	DetectedAt  apiTime      `json:"detected_at"`
}

func newConflictJSON(c domain.Conflict) conflictJSON {
	return conflictJSON{ID: c.ID, Provider: c.Provider, ContactID: contactID(c.ObjectType, c.ObjectID),
		ObjectType: c.ObjectType, ObjectID: c.ObjectID, Revision: c.Revision, Status: c.Status, Note: c.Note,
		ResolvedBy: optionalString(c.ResolvedBy), ResolvedAt: optionalTime(c.ResolvedAt),
		Accepted:    snapshotJSON{EventID: c.AcceptedEventID, Snapshot: c.AcceptedSnapshot},
		Conflicting: snapshotJSON{EventID: c.ConflictingEventID, Snapshot: c.ConflictingSnapshot},
		DetectedAt:  apiTime(c.DetectedAt)}
}

// handleConflicts answers GET conflicts?status=.
func (s *Server) handleConflicts(w http.ResponseWriter, r *http.Request) {
	status := r.URL.Query().Get("status")
	switch status {
	case "", domain.ConflictOpen, domain.ConflictKept, domain.ConflictAdopted:
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("status must be %s, %s or %s; got %q",
			domain.ConflictOpen, domain.ConflictKept, domain.ConflictAdopted, status))
		return
	}
	p, err := page(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	conflicts, next, err := s.conflicts.Conflicts(r.Context(), apiTenant(r.Context()).ID, status, p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]conflictJSON, len(conflicts))
	for i, c := range conflicts {
		out[i] = newConflictJSON(c)
	}
	writeJSON(w, http.StatusOK, map[string]any{"conflicts": out, "next_cursor": nextCursor(next)})
}

// resolvedBy names who resolved a conflict through the API.
const resolvedBy = "api token"

// maxResolveBody bounds a resolve request; a note has no business being larger.
const maxResolveBody = 64 << 10

// handleResolve answers POST conflicts/{id}/resolve with the resolved conflict.
func (s *Server) handleResolve(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil || id < 1 {
		writeError(w, http.StatusNotFound, "not found") // no such conflict can exist
		return
	}
	var req struct {
		Resolution string `json:"resolution"`
		Note       string `json:"note"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxResolveBody))
	if err := dec.Decode(&req); err != nil || dec.Decode(&struct{}{}) != io.EOF {
		writeError(w, http.StatusBadRequest, `body must be JSON: {"resolution": "keep" | "adopt", "note": "..."}`)
		return
	}
	c, err := s.conflicts.ResolveConflict(r.Context(), apiTenant(r.Context()).ID, id, req.Resolution, req.Note, resolvedBy)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newConflictJSON(c))
}

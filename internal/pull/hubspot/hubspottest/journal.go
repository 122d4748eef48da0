package hubspottest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// The Webhooks Journal (2026-03) as the spec
// PublicApiSpecs/Webhooks Journal/Webhooks Journal/Rollouts/284944/2026-03/webhooksJournal.json
// of HubSpot/HubSpot-public-api-spec-collection and the guide
// https://developers.hubspot.com/docs/api-reference/latest/webhooks-journal/journal-entries/guide.md
// describe it: the local journal's earliest, latest and
// batch/{offset}/next/{count} (404 for an offset no longer held), each
// entry's data at a signed URL served here (/journal-files/…, checked and
// expiring as a presigned S3 URL: 403), the subscriptions and the CRM
// snapshots (a snapshot appends a SNAPSHOT entry).

// Entry is a journal entry as the fake writes it in an entry's data.
// [unverified] The data's format is not in the spec: see JournalEntry in
// the hubspot package.
type Entry struct {
	Offset           string             `json:"offset"`
	PortalID         int64              `json:"portalId"`
	AppID            int64              `json:"appId"`
	SubscriptionID   int64              `json:"subscriptionId,omitempty"`
	SubscriptionType string             `json:"subscriptionType"`
	ObjectTypeID     string             `json:"objectTypeId"`
	ObjectID         int64              `json:"objectId"`
	Action           string             `json:"action"`
	OccurredAt       int64              `json:"occurredAt"` // epoch milliseconds
	EventID          int64              `json:"eventId"`
	ChangeSource     string             `json:"changeSource,omitempty"`
	Properties       map[string]*string `json:"properties,omitempty"`
	PrimaryObjectID  int64              `json:"primaryObjectId,omitempty"`
	MergedObjectIDs  []int64            `json:"mergedObjectIds,omitempty"`
}

// AppendEntry adds e to portal's journal and returns its offset. Offset,
// PortalID, AppID, EventID and SubscriptionType (OBJECT) are filled in.
func (s *Server) AppendEntry(portal int64, e Entry) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.appendEntry(portal, e)
}

func (s *Server) appendEntry(portal int64, e Entry) string {
	s.app.nextEvent++
	e.Offset, e.PortalID, e.AppID, e.EventID = uuid.NewString(), portal, s.app.app.ID, s.app.nextEvent
	if e.SubscriptionType == "" {
		e.SubscriptionType = "OBJECT"
	}
	s.app.journals[portal] = append(s.app.journals[portal], e)
	return e.Offset
}

// Expire drops portal's n oldest entries, as the journal's 3 days of
// history do: a next from their offsets is then a 404.
func (s *Server) Expire(portal int64, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.app.journals[portal]
	s.app.journals[portal] = slices.Clone(j[min(n, len(j)):])
}

// SetFileURLLife sets how long the signed URLs issued next stay good.
func (s *Server) SetFileURLLife(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.app.fileLife = d
}

// SetFileDelay makes each entry's data answer after d: a slow file store,
// so that a reader can be stopped in the middle of a page.
func (s *Server) SetFileDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fileDelay = d
}

// FileFetches counts the entries' data served.
func (s *Server) FileFetches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fileFetches
}

// Journal is portal's entries, oldest first.
func (s *Server) Journal(portal int64) []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.app.journals[portal])
}

func (s *Server) webhooksJournal(w http.ResponseWriter, r *http.Request) {
	tok, ok := s.bearer(w, r)
	if !ok {
		return
	}
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/webhooks-journal/journal-local/2026-03/status/") && r.Method == http.MethodGet:
		s.snapshotStatus(w, strings.TrimPrefix(p, "/webhooks-journal/journal-local/2026-03/status/"))
	case strings.HasPrefix(p, "/webhooks-journal/journal-local/2026-03/") && r.Method == http.MethodGet:
		s.journalLocal(w, r, tok, strings.TrimPrefix(p, "/webhooks-journal/journal-local/2026-03/"))
	case strings.HasPrefix(p, "/webhooks-journal/subscriptions/2026-03"):
		s.subscriptions(w, r, tok, strings.TrimPrefix(p, "/webhooks-journal/subscriptions/2026-03"))
	case p == "/webhooks-journal/snapshots/2026-03/crm" && r.Method == http.MethodPost:
		s.requestSnapshots(w, r)
	default:
		writeError(w, http.StatusNotFound, "NOT_FOUND", "no such endpoint in the fake")
	}
}

func (s *Server) journalLocal(w http.ResponseWriter, r *http.Request, tok *accessToken, rest string) {
	portal, err := strconv.ParseInt(r.URL.Query().Get("installPortalId"), 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, "VALIDATION_ERROR", "the fake reads the local journal of an installPortalId")
		return
	}
	if tok.portal != 0 && tok.portal != portal {
		writeError(w, http.StatusForbidden, "MISSING_SCOPES", "the token is not for this portal")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.app.journals[portal]
	switch parts := strings.Split(rest, "/"); {
	case rest == "earliest" || rest == "latest":
		if len(j) == 0 {
			writeError(w, http.StatusNotFound, "OBJECT_NOT_FOUND", "the journal holds no entry")
			return
		}
		e := j[0]
		if rest == "latest" {
			e = j[len(j)-1]
		}
		writeJSON(w, http.StatusOK, s.fetchResponse(e))
	case len(parts) == 4 && parts[0] == "batch" && parts[2] == "next":
		count, err := strconv.Atoi(parts[3])
		if err != nil || count < 1 {
			writeError(w, http.StatusBadRequest, "VALIDATION_ERROR", "count must be an integer of at least 1")
			return
		}
		at := slices.IndexFunc(j, func(e Entry) bool { return e.Offset == parts[1] })
		if at < 0 {
			writeError(w, http.StatusNotFound, "OBJECT_NOT_FOUND", "offset "+parts[1]+" has expired or does not exist")
			return
		}
		results := []map[string]any{}
		for _, e := range j[at+1 : min(at+1+count, len(j))] {
			results = append(results, s.fetchResponse(e))
		}
		now := iso(time.Now())
		writeJSON(w, http.StatusOK, map[string]any{"status": "COMPLETE", "results": results,
			"startedAt": now, "completedAt": now, "requestedAt": now})
	default:
		writeError(w, http.StatusNotFound, "NOT_FOUND", "the fake serves earliest, latest and batch/{offset}/next/{count}")
	}
}

// fetchResponse is a JournalFetchResponse for e: a signed URL of its data.
func (s *Server) fetchResponse(e Entry) map[string]any {
	expires := time.Now().Add(s.app.fileLife)
	exp := strconv.FormatInt(expires.Unix(), 10)
	path := "/journal-files/" + strconv.FormatInt(e.PortalID, 10) + "/" + e.Offset
	return map[string]any{"currentOffset": e.Offset, "expiresAt": iso(expires),
		"url": s.srv.URL + path + "?X-Amz-Expires=" + exp + "&X-Amz-Signature=" + s.sign(path, exp)}
}

func (s *Server) sign(path, expires string) string {
	mac := hmac.New(sha256.New, s.app.fileKey)
	mac.Write([]byte(path + "\n" + expires))
	return hex.EncodeToString(mac.Sum(nil))
}

// journalFile serves an entry's data as a presigned S3 URL would: its own
// signature and expiry, no other authentication allowed.
func (s *Server) journalFile(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	exp := q.Get("X-Amz-Expires")
	unix, err := strconv.ParseInt(exp, 10, 64)
	switch {
	case r.Header.Get("Authorization") != "":
		http.Error(w, "InvalidArgument: Only one auth mechanism allowed", http.StatusBadRequest)
		return
	case err != nil || !hmac.Equal([]byte(q.Get("X-Amz-Signature")), []byte(s.sign(r.URL.Path, exp))):
		http.Error(w, "SignatureDoesNotMatch", http.StatusForbidden)
		return
	case time.Now().Unix() > unix:
		http.Error(w, "AccessDenied: Request has expired", http.StatusForbidden)
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/journal-files/"), "/")
	portal, _ := strconv.ParseInt(parts[0], 10, 64)
	s.mu.Lock()
	delay := s.fileDelay
	s.fileFetches++
	j := s.app.journals[portal]
	at := slices.IndexFunc(j, func(e Entry) bool { return len(parts) == 2 && e.Offset == parts[1] })
	var e Entry
	if at >= 0 {
		e = j[at]
	}
	s.mu.Unlock()
	select {
	case <-time.After(delay):
	case <-r.Context().Done():
		return
	}
	if at < 0 {
		http.Error(w, "NoSuchKey", http.StatusNotFound)
		return
	}
	writeJSON(w, http.StatusOK, e)
}

// The actions and subscription types of the spec's enums.
var (
	journalActions = []string{"CREATE", "UPDATE", "DELETE", "MERGE", "RESTORE", "ASSOCIATION_ADDED", "ASSOCIATION_REMOVED",
		"SNAPSHOT", "APP_INSTALL", "APP_UNINSTALL", "ADDED_TO_LIST", "REMOVED_FROM_LIST", "GDPR_DELETE"}
	subscriptionTypes = []string{"OBJECT", "ASSOCIATION", "EVENT", "APP_LIFECYCLE_EVENT", "LIST_MEMBERSHIP", "GDPR_PRIVACY_DELETION"}
)

// subscription is a SubscriptionUpsertRequest (any of its kinds) and the
// SubscriptionResponse the fake answers.
type subscription struct {
	ID                      int64    `json:"id"`
	AppID                   int64    `json:"appId"`
	SubscriptionType        string   `json:"subscriptionType"`
	PortalID                int64    `json:"portalId,omitempty"`
	ObjectTypeID            string   `json:"objectTypeId"`
	Actions                 []string `json:"actions"`
	Properties              []string `json:"properties,omitempty"`
	ObjectIDs               []int64  `json:"objectIds,omitempty"`
	AssociatedObjectTypeIDs []string `json:"associatedObjectTypeIds,omitempty"`
	ListIDs                 []int64  `json:"listIds,omitempty"`
	EventTypeID             string   `json:"eventTypeId,omitempty"`
	CreatedAt               string   `json:"createdAt"`
	UpdatedAt               string   `json:"updatedAt"`
}

// The scopes the journal guide requires of the token that reads and the
// token that changes the subscriptions.
const (
	subscriptionsRead  = "developer.webhooks_journal.subscriptions.read"
	subscriptionsWrite = "developer.webhooks_journal.subscriptions.write"
)

func (s *Server) subscriptions(w http.ResponseWriter, r *http.Request, tok *accessToken, rest string) {
	need := subscriptionsWrite
	if r.Method == http.MethodGet {
		need = subscriptionsRead
	}
	if !slices.Contains(tok.scopes, need) {
		writeError(w, http.StatusForbidden, "MISSING_SCOPES", "This app hasn't been granted all required scopes to make this call. Required scopes: "+need)
		return
	}
	switch {
	case rest == "" && r.Method == http.MethodGet:
		s.mu.Lock()
		list := slices.Clone(s.app.subs)
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"results": append([]subscription{}, list...)})
	case rest == "" && r.Method == http.MethodPost:
		var sub subscription
		if !decode(w, r, &sub) {
			return
		}
		if msg := checkSubscription(sub); msg != "" {
			writeError(w, http.StatusBadRequest, "VALIDATION_ERROR", msg)
			return
		}
		s.mu.Lock()
		s.app.nextSub++
		now := iso(time.Now())
		sub.ID, sub.AppID, sub.CreatedAt, sub.UpdatedAt = s.app.nextSub, s.app.app.ID, now, now
		s.app.subs = append(s.app.subs, sub)
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, sub)
	case r.Method == http.MethodDelete:
		s.deleteSubscriptions(w, rest)
	default:
		writeError(w, http.StatusNotFound, "NOT_FOUND", "no such subscriptions endpoint in the fake")
	}
}

func checkSubscription(sub subscription) string {
	switch {
	case sub.ID != 0 || sub.AppID != 0 || sub.CreatedAt != "" || sub.UpdatedAt != "":
		return "id, appId, createdAt and updatedAt are HubSpot's"
	case !slices.Contains(subscriptionTypes, sub.SubscriptionType):
		return fmt.Sprintf("subscriptionType %q is not one of %v", sub.SubscriptionType, subscriptionTypes)
	case sub.SubscriptionType == "APP_LIFECYCLE_EVENT":
		return ""
	case sub.PortalID == 0 || sub.ObjectTypeID == "" || len(sub.Actions) == 0:
		return "portalId, objectTypeId and actions are required"
	}
	for _, a := range sub.Actions {
		if !slices.Contains(journalActions, a) {
			return fmt.Sprintf("action %q is not one of %v", a, journalActions)
		}
	}
	return ""
}

// deleteSubscriptions answers DELETE /{id} and /portals/{portalId}.
func (s *Server) deleteSubscriptions(w http.ResponseWriter, rest string) {
	portalRest, byPortal := strings.CutPrefix(rest, "/portals/")
	id, err := strconv.ParseInt(strings.TrimPrefix(portalRest, "/"), 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, "VALIDATION_ERROR", "the id must be an integer")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.app.subs)
	s.app.subs = slices.DeleteFunc(s.app.subs, func(sub subscription) bool {
		return (byPortal && sub.PortalID == id) || (!byPortal && sub.ID == id)
	})
	if !byPortal && len(s.app.subs) == n {
		writeError(w, http.StatusNotFound, "OBJECT_NOT_FOUND", "no subscription "+strconv.FormatInt(id, 10))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

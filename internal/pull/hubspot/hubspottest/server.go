// Package hubspottest is a fake HubSpot CRM API for tests: an httptest
// server holding contacts, companies and deals with their property history,
// answering the three endpoints backfill uses as HubSpot documents them:
//
//   - POST /crm/v3/objects/{type}/search
//     https://developers.hubspot.com/docs/api/crm/search
//     https://developers.hubspot.com/docs/api-reference/crm-associations-v202509/public-object-search-post/post-crm-objects-2025-09-objectType-search
//   - POST /crm/v3/objects/{type}/batch/read (with propertiesWithHistory)
//     https://developers.hubspot.com/docs/api-reference/latest/crm/objects/objects/batch/get-objects
//   - GET /crm/v3/objects/{type}?archived=true
//     https://developers.hubspot.com/docs/api-reference/latest/crm/objects/companies/get-companies
//
// and the limits of https://developers.hubspot.com/docs/api/usage-details:
// 429 with a policyName, the X-HubSpot-RateLimit-Daily(-Remaining) headers,
// and the search API's 10,000-result cap (smaller here, so tests stay fast).
//
// It is also a public app's side of HubSpot: OAuth (app.go), the Webhooks
// Journal with its signed entry URLs and subscriptions (journal.go), CRM
// snapshots (snapshots.go) and signed webhook v3 batches (webhooks.go).
package hubspottest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The kinds of request Requests counts.
const (
	Search    = "search"
	BatchRead = "batch/read"
	List      = "list"
)

// Documented limits: a search page holds at most 200 records, a list page
// 100, a batch read 100 inputs but only 50 when property history is asked.
const (
	maxSearchLimit  = 200
	maxListLimit    = 100
	maxBatchInputs  = 100
	maxHistoryBatch = 50
	hubspotCap      = 10000
)

// Server is a fake HubSpot account. Its methods are safe for concurrent use.
type Server struct {
	srv   *httptest.Server
	token string

	mu          sync.Mutex
	objects     map[string]map[string]*record // API object type → id → record
	nextID      int
	cap         int
	tooMany     int // how many 429s are still to answer
	retryAfter  int // their Retry-After, in seconds
	daily, used int // the daily budget; 0 sends no daily headers
	requests    map[string]int
	searchTimes []time.Time
	app         appState      // the public app: OAuth, the journal (app.go, journal.go)
	fileDelay   time.Duration // before an entry's data is answered (SetFileDelay)
	fileFetches int
}

type record struct {
	id         string
	createdAt  time.Time
	updatedAt  time.Time
	archivedAt time.Time // zero unless archived
	history    map[string][]change
}

type change struct {
	value string
	at    time.Time
}

// New starts a fake account, stopped when the test ends. Its search cap is
// HubSpot's 10,000 until SetSearchCap.
func New(t testing.TB) *Server {
	var b [16]byte
	rand.Read(b[:])
	s := &Server{
		token:    "pat-na1-" + hex.EncodeToString(b[:]),
		objects:  map[string]map[string]*record{},
		nextID:   1000,
		cap:      hubspotCap,
		requests: map[string]int{},
	}
	s.app = newAppState()
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the base URL to give as the credentials' BaseURL.
func (s *Server) URL() string { return s.srv.URL }

// Token is the private app access token the server accepts.
func (s *Server) Token() string { return s.token }

// apiType maps the names Tidemark's webhooks use (contact) to the API's
// (contacts); the API's names are accepted as they are.
func apiType(objectType string) string {
	switch objectType {
	case "contact":
		return "contacts"
	case "company":
		return "companies"
	case "deal":
		return "deals"
	}
	return objectType
}

// modifiedProperty is the last-modified property: contacts keep the
// legacy name (https://developers.hubspot.com/docs/api/crm/search lists
// lastmodifieddate among the contacts' default properties).
func modifiedProperty(apiType string) string {
	if apiType == "contacts" {
		return "lastmodifieddate"
	}
	return "hs_lastmodifieddate"
}

// defaultProperties are what a search returns without a properties list.
var defaultProperties = map[string][]string{
	"contacts":  {"createdate", "email", "firstname", "hs_object_id", "lastmodifieddate", "lastname"},
	"companies": {"createdate", "domain", "hs_lastmodifieddate", "hs_object_id", "name"},
	"deals":     {"amount", "closedate", "createdate", "dealname", "dealstage", "hs_lastmodifieddate", "hs_object_id", "pipeline"},
}

// Create adds a record of objectType ("contact" or "contacts") created at
// at with the given properties, and returns its id.
func (s *Server) Create(objectType string, at time.Time, props map[string]string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	typ := apiType(objectType)
	if s.objects[typ] == nil {
		s.objects[typ] = map[string]*record{}
	}
	s.nextID++
	id := strconv.Itoa(s.nextID)
	r := &record{id: id, createdAt: at, history: map[string][]change{}}
	r.set("createdate", iso(at), at)
	r.set("hs_object_id", id, at)
	s.objects[typ][id] = r
	s.change(typ, r, at, props)
	return id
}

// Set changes properties of a record at at (each gets a history entry), as
// a user or an integration would in HubSpot.
func (s *Server) Set(objectType, id string, at time.Time, props map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	typ := apiType(objectType)
	s.change(typ, s.objects[typ][id], at, props)
}

func (s *Server) change(typ string, r *record, at time.Time, props map[string]string) {
	for name, value := range props {
		r.set(name, value, at)
	}
	r.set(modifiedProperty(typ), iso(at), at)
	r.updatedAt = at
}

// Archive archives (deletes) a record at at.
func (s *Server) Archive(objectType, id string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.objects[apiType(objectType)][id]
	r.archivedAt, r.updatedAt = at, at
}

// SetSearchCap makes the search API refuse to page past n results instead
// of HubSpot's 10,000.
func (s *Server) SetSearchCap(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cap = n
}

// TooManyRequestsOnce makes the next request answer 429 with Retry-After.
func (s *Server) TooManyRequestsOnce(retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tooMany, s.retryAfter = 1, int(retryAfter/time.Second)
}

// SetDailyLimit gives the account a daily budget of limit calls, used
// already used today: answers then carry X-HubSpot-RateLimit-Daily and
// -Daily-Remaining, and a call past the limit is a 429 of policy DAILY.
func (s *Server) SetDailyLimit(limit, used int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.daily, s.used = limit, used
}

// Requests counts the requests of a kind (Search, BatchRead, List) that
// passed authentication, including refused ones.
func (s *Server) Requests(kind string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[kind]
}

// MinSearchGap is the shortest time between two search requests (0 when
// fewer than two were made).
func (s *Server) MinSearchGap() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var least time.Duration
	for i := 1; i < len(s.searchTimes); i++ {
		if gap := s.searchTimes[i].Sub(s.searchTimes[i-1]); i == 1 || gap < least {
			least = gap
		}
	}
	return least
}

func (r *record) set(name, value string, at time.Time) {
	r.history[name] = append(r.history[name], change{value: value, at: at})
}

// current is a property's newest value; ok is false when it never had one.
func (r *record) current(name string) (string, bool) {
	h := r.history[name]
	if len(h) == 0 {
		return "", false
	}
	newest := h[0]
	for _, c := range h[1:] {
		if !c.at.Before(newest.at) {
			newest = c
		}
	}
	return newest.value, true
}

// iso is HubSpot's rendering of a datetime in JSON.
func iso(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// serve authenticates, applies the limits, and routes.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if s.serveApp(w, r) {
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+s.token && !s.installToken(r) {
		writeError(w, http.StatusUnauthorized, "INVALID_AUTHENTICATION",
			"Authentication credentials not found. This API supports OAuth 2.0 authentication and you can find more details at https://developers.hubspot.com/docs/methods/auth/oauth-overview")
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/crm/v3/objects/")
	typ, action, _ := strings.Cut(rest, "/")
	if !ok || defaultProperties[typ] == nil {
		writeError(w, http.StatusNotFound, "OBJECT_NOT_FOUND", "unknown object type")
		return
	}
	var kind string
	switch {
	case r.Method == http.MethodPost && action == "search":
		kind = Search
	case r.Method == http.MethodPost && action == "batch/read":
		kind = BatchRead
	case r.Method == http.MethodGet && action == "":
		kind = List
	default:
		writeError(w, http.StatusNotFound, "NOT_FOUND", "no such endpoint")
		return
	}

	s.mu.Lock()
	s.requests[kind]++
	if kind == Search {
		s.searchTimes = append(s.searchTimes, time.Now())
	}
	if s.tooMany > 0 {
		s.tooMany--
		retry := s.retryAfter
		s.mu.Unlock()
		w.Header().Set("Retry-After", strconv.Itoa(retry))
		writeRateLimited(w, "SECONDLY", "You have reached your secondly limit.")
		return
	}
	if s.daily > 0 {
		if s.used >= s.daily {
			s.mu.Unlock()
			writeRateLimited(w, "DAILY", "You have reached your daily limit.")
			return
		}
		s.used++
		// The search API's answers do not carry the rate-limit headers.
		if kind != Search {
			w.Header().Set("X-HubSpot-RateLimit-Daily", strconv.Itoa(s.daily))
			w.Header().Set("X-HubSpot-RateLimit-Daily-Remaining", strconv.Itoa(s.daily-s.used))
		}
	}
	s.mu.Unlock()

	switch kind {
	case Search:
		s.search(w, r, typ)
	case BatchRead:
		s.batchRead(w, r, typ)
	case List:
		s.listArchived(w, r, typ)
	}
}

// installToken reports whether the request carries a live access token of
// an installed portal: with one, a public app reads the portal's CRM as a
// private app token does
// (https://developers.hubspot.com/docs/guides/apps/authentication/working-with-oauth).
func (s *Server) installToken(r *http.Request) bool {
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.app.access[tok]
	return t != nil && t.portal != 0 && time.Now().Before(t.expires)
}

func writeError(w http.ResponseWriter, status int, category, message string) {
	writeJSON(w, status, map[string]any{
		"status": "error", "message": message, "category": category,
		"correlationId": "00000000-0000-0000-0000-000000000000",
	})
}

func writeRateLimited(w http.ResponseWriter, policy, message string) {
	writeJSON(w, http.StatusTooManyRequests, map[string]any{
		"status": "error", "message": message, "errorType": "RATE_LIMIT", "policyName": policy,
		"correlationId": "00000000-0000-0000-0000-000000000000",
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json;charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// decode reads a JSON body strictly: an unknown field is a 400, as a
// misspelt field would be silently ignored otherwise.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		writeError(w, http.StatusUnsupportedMediaType, "VALIDATION_ERROR", "Content-Type must be application/json")
		return false
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "VALIDATION_ERROR", fmt.Sprintf("Invalid input JSON: %v", err))
		return false
	}
	return true
}

// Package salesforcetest is a fake Salesforce org for tests: the OAuth 2.0
// token endpoint of the client credentials flow and the REST resources a
// backfill reads (Describe Global, Query with its query locators, sObject
// Get Deleted), answering in the documented shapes:
//
//   - https://help.salesforce.com/s/articleView?id=xcloud.remoteaccess_oauth_client_credentials_flow.htm
//   - https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_query.htm
//   - https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/resources_query.htm
//   - https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_get_deleted.htm
//   - https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/resources_getdeleted.htm
//   - https://developer.salesforce.com/docs/platform/api-rest/guide/dome-describeglobal.md
//   - https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/errorcodes.htm
//   - https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/headers_api_usage.htm
//   - https://developer.salesforce.com/docs/atlas.en-us.soql_sosl.meta/soql_sosl/sforce_api_calls_soql_select_dateformats.htm
//
// Only tests import it.
package salesforcetest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain/pull"
)

// restTime is how the REST API writes a dateTime.
const restTime = "2006-01-02T15:04:05.000-0700"

// Server is a fake org. Its zero value is not usable: call New.
type Server struct {
	URL          string
	ClientID     string
	ClientSecret string
	// PageSize is how many records a query answer holds before its
	// nextRecordsUrl (Salesforce's is up to 2,000).
	PageSize int
	// Endless makes every query answer never done: past its last record a
	// nextRecordsUrl starts its records over, as a hostile org behind a
	// login URL an owner set could answer.
	Endless bool

	srv *httptest.Server

	mu       sync.Mutex
	token    string // the valid access token; "" when expired
	issued   []string
	records  map[string][]map[string]any // by API name, in the order added
	fields   map[string][]string         // by API name: every field a record was given
	deleted  map[string][]deletion
	locators map[string][]map[string]any // the rest of a query's answer
	failures []failure
	used     int
	limit    int
	// delivered and deliveryMax are the org's event delivery allocation
	// that the limits resource reports (DailyDeliveredPlatformEvents).
	delivered, deliveryMax int
	requests               []Request
}

type deletion struct {
	id string
	at time.Time
}

type failure struct {
	status     int
	retryAfter string
}

// Request is one request the server answered.
type Request struct {
	Method, Path, Query string
	Status              int
}

// New starts a fake org for t with a client id and secret of its own, a
// page size of 2 and an API usage of 0 of 15,000; it stops when t ends.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{ClientID: "3MVG9fake" + random(8), ClientSecret: random(32), PageSize: 2, limit: 15000, deliveryMax: 50000,
		records: map[string][]map[string]any{}, fields: map[string][]string{}, deleted: map[string][]deletion{}, locators: map[string][]map[string]any{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	s.URL = s.srv.URL
	return s
}

func random(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Credentials are the connected app's credentials for this org, with
// AllowPrivate set, as it listens on loopback.
func (s *Server) Credentials() pull.Credentials {
	return pull.Credentials{ClientID: s.ClientID, ClientSecret: s.ClientSecret, LoginURL: s.URL, AllowPrivate: true}
}

// Put adds the record id of sObject type (API name: Contact), modified at
// modstamp, or replaces the one with that id. fields are its other fields:
// strings, bools, json.Number (written as is), nil, or time.Time (written
// as REST writes a dateTime). A field ever given to a record of a type is
// a field of all of them (null where not given), which queries may name.
func (s *Server) Put(typ, id string, modstamp time.Time, fields map[string]any) {
	rec := map[string]any{"Id": id, "SystemModstamp": modstamp}
	for k, v := range fields {
		rec[k] = v
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for f := range rec {
		if !slices.Contains(s.fields[typ], f) {
			s.fields[typ] = append(s.fields[typ], f)
		}
	}
	list := s.records[typ]
	for i, r := range list {
		if r["Id"] == id {
			list[i] = rec
			return
		}
	}
	s.records[typ] = append(list, rec)
}

// Delete removes the record id of type, deleted at.
func (s *Server) Delete(typ, id string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records[typ] = slices.DeleteFunc(s.records[typ], func(r map[string]any) bool { return r["Id"] == id })
	s.deleted[typ] = append(s.deleted[typ], deletion{id: id, at: at})
}

// RotateSecret replaces the client secret, as an admin does in Setup: the
// token endpoint refuses the old one from then on.
func (s *Server) RotateSecret(secret string) {
	s.mu.Lock()
	s.ClientSecret = secret
	s.mu.Unlock()
}

// ExpireToken ends the current access token's session: the REST resources
// answer 401 INVALID_SESSION_ID until a new token is fetched.
func (s *Server) ExpireToken() {
	s.mu.Lock()
	s.token = ""
	s.mu.Unlock()
}

// Tokens are the access tokens issued, oldest first.
func (s *Server) Tokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.issued)
}

// FailNext makes the next REST request (not the token's) answer status
// with a Retry-After of retryAfter ("" for none): 429, 503 (errorCode
// SERVER_UNAVAILABLE), or 403 with errorCode REQUEST_LIMIT_EXCEEDED.
// Failures queue up, one per request.
func (s *Server) FailNext(status int, retryAfter string) {
	s.mu.Lock()
	s.failures = append(s.failures, failure{status: status, retryAfter: retryAfter})
	s.mu.Unlock()
}

// SetUsage sets the org's API usage that Sforce-Limit-Info reports; each
// REST request then adds one.
func (s *Server) SetUsage(used, limit int) {
	s.mu.Lock()
	s.used, s.limit = used, limit
	s.mu.Unlock()
}

// Requests are the requests answered, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// apiError writes Salesforce's REST error shape: [{message, errorCode}].
func apiError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode([]map[string]any{{"message": message, "errorCode": code}})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	json.NewEncoder(w).Encode(v)
}

// recorder keeps the status a handler wrote.
type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}

var (
	versionPath  = regexp.MustCompile(`^/services/data/(v[0-9]+\.[0-9])/(.*)$`)
	deletedPath  = regexp.MustCompile(`^sobjects/([A-Za-z0-9_]+)/deleted/?$`)
	locatorPath  = regexp.MustCompile(`^query/(01g[A-Za-z0-9]+)-([0-9]+)$`)
	bearerHeader = regexp.MustCompile(`^Bearer (.+)$`)
)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	defer func() {
		s.mu.Lock()
		s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Status: rec.status})
		s.mu.Unlock()
	}()
	if r.URL.Path == "/services/oauth2/token" {
		s.tokenEndpoint(rec, r)
		return
	}
	m := versionPath.FindStringSubmatch(r.URL.Path)
	if m == nil || r.Method != http.MethodGet {
		apiError(rec, http.StatusNotFound, "NOT_FOUND", "The requested resource does not exist")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	auth := bearerHeader.FindStringSubmatch(r.Header.Get("Authorization"))
	if auth == nil || s.token == "" || auth[1] != s.token {
		apiError(rec, http.StatusUnauthorized, "INVALID_SESSION_ID", "Session expired or invalid")
		return
	}
	s.used++
	rec.Header().Set("Sforce-Limit-Info", fmt.Sprintf("api-usage=%d/%d", s.used, s.limit))
	if len(s.failures) > 0 {
		f := s.failures[0]
		s.failures = s.failures[1:]
		if f.retryAfter != "" {
			rec.Header().Set("Retry-After", f.retryAfter)
		}
		code := map[int]string{http.StatusServiceUnavailable: "SERVER_UNAVAILABLE"}[f.status]
		if code == "" {
			code = "REQUEST_LIMIT_EXCEEDED"
		}
		apiError(rec, f.status, code, "Try again later")
		return
	}
	rest := m[2]
	switch {
	case rest == "sobjects/" || rest == "sobjects":
		s.describeGlobal(rec, m[1])
	case rest == "limits" || rest == "limits/":
		s.limits(rec)
	case rest == "query" || rest == "query/":
		s.query(rec, m[1], r.URL.Query().Get("q"))
	case locatorPath.MatchString(rest):
		l := locatorPath.FindStringSubmatch(rest)
		s.page(rec, m[1], l[1], l[2])
	case deletedPath.MatchString(rest):
		s.getDeleted(rec, deletedPath.FindStringSubmatch(rest)[1], r.URL.Query().Get("start"), r.URL.Query().Get("end"))
	default:
		apiError(rec, http.StatusNotFound, "NOT_FOUND", "The requested resource does not exist")
	}
}

// SetDeliveries sets the org's event delivery use over the last 24 hours
// and its allocation, which the limits resource reports.
func (s *Server) SetDeliveries(delivered, allocation int) {
	s.mu.Lock()
	s.delivered, s.deliveryMax = delivered, allocation
	s.mu.Unlock()
}

// limits answers the limits resource (REST API Developer Guide, "Limits":
// each limit's Max and Remaining) with the API's daily requests and the
// event delivery allocation; a real org lists many more.
func (s *Server) limits(w http.ResponseWriter) {
	writeJSON(w, map[string]map[string]int{
		"DailyApiRequests":             {"Max": s.limit, "Remaining": max(s.limit-s.used, 0)},
		"DailyDeliveredPlatformEvents": {"Max": s.deliveryMax, "Remaining": max(s.deliveryMax-s.delivered, 0)},
	})
}

// tokenEndpoint is the client credentials flow: a form with grant_type,
// client_id and client_secret; a wrong one answers 400 invalid_client.
func (s *Server) tokenEndpoint(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.ParseForm() != nil || r.PostForm.Get("grant_type") != "client_credentials" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]string{"error": "unsupported_grant_type", "error_description": "grant type not supported"})
		return
	}
	s.mu.Lock()
	id, secret := s.ClientID, s.ClientSecret
	s.mu.Unlock()
	if r.PostForm.Get("client_id") != id || r.PostForm.Get("client_secret") != secret {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client", "error_description": "invalid client credentials"})
		return
	}
	s.mu.Lock()
	s.token = "00Dfake000000001!" + random(24)
	s.issued = append(s.issued, s.token)
	token := s.token
	s.mu.Unlock()
	writeJSON(w, map[string]string{"access_token": token, "signature": random(16), "scope": "api", "instance_url": s.URL,
		"id": s.URL + "/id/00Dfake000000001AAA/005fake000000001AAA", "token_type": "Bearer",
		"issued_at": strconv.FormatInt(time.Now().UnixMilli(), 10)})
}

func (s *Server) describeGlobal(w http.ResponseWriter, version string) {
	var objects []map[string]any
	for _, typ := range s.types() {
		objects = append(objects, map[string]any{"name": typ, "label": typ, "queryable": true, "replicateable": true,
			"custom": strings.HasSuffix(typ, "__c"),
			"urls":   map[string]string{"sobject": "/services/data/" + version + "/sobjects/" + typ}})
	}
	writeJSON(w, map[string]any{"encoding": "UTF-8", "maxBatchSize": 200, "sobjects": objects})
}

// types are the API names of the types that have (or had) records.
func (s *Server) types() []string {
	var types []string
	for typ := range s.records {
		types = append(types, typ)
	}
	for typ := range s.deleted {
		if _, ok := s.records[typ]; !ok {
			types = append(types, typ)
		}
	}
	slices.Sort(types)
	return types
}

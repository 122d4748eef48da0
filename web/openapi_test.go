package web_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/docs"
	"github.com/tidemark/tidemark/web"
)

// pathParam is a path parameter, in chi's form or OpenAPI's: {name} or
// {name:regexp}.
var pathParam = regexp.MustCompile(`\{[^/}]*\}`)

// operationID is an operationId in camelCase.
var operationID = regexp.MustCompile(`^[a-z][A-Za-z0-9]*$`)

// accessNeeds maps the document's x-tidemark-access to routeNeeds' words.
var accessNeeds = map[string]string{"public": needPublic, "read": needRead, "write": needWrite, "admin": needAdminToken}

// TestOpenAPIMatchesRoutes: docs/openapi.yaml describes every route the
// server answers under /api/v1 and no other, each operation says who may
// call it as the route table decides (routeNeeds), and in its description.
// After adding an API route, describe it there.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromData(docs.OpenAPIYAML())
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]*openapi3.Operation{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			documented[method+" "+pathParam.ReplaceAllString(path, "{}")] = op
		}
	}

	router := web.New(web.Config{}).Handler().(chi.Routes)
	var routed []string
	err = chi.Walk(router, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if strings.HasPrefix(route, "/api/v1/") {
			routed = append(routed, method+" "+route)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, route := range routed {
		method, pattern, _ := strings.Cut(route, " ")
		key := method + " " + pathParam.ReplaceAllString(pattern, "{}")
		op, ok := documented[key]
		if !ok {
			t.Errorf("%s is not in docs/openapi.yaml", route)
			continue
		}
		delete(documented, key)
		if pattern == "/api/v1/mcp" {
			continue // the MCP endpoint's tools check access each
		}
		access, _ := op.Extensions["x-tidemark-access"].(string)
		if need, _ := routeNeed(method, pattern); accessNeeds[access] != need {
			t.Errorf("%s: x-tidemark-access %q, but the route needs %q (routeNeeds)", route, access, need)
		}
		if !operationID.MatchString(op.OperationID) {
			t.Errorf("%s: operationId %q, want one in camelCase (the generated client's method names)", route, op.OperationID)
		}
		if !strings.Contains(op.Description, "Access:") {
			t.Errorf("%s (%s): its description does not say who may call it (Access: ...)", route, op.OperationID)
		}
	}
	for _, route := range slices.Sorted(maps.Keys(documented)) {
		t.Errorf("docs/openapi.yaml describes %s, which the server does not route", route)
	}
}

// TestOpenAPIServed: the document is served as JSON at
// /api/v1/openapi.json to anyone, without a token.
func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	web.New(web.Config{}).Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/openapi.json", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d (%s), want 200", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	if cc := rec.Header().Get("Cache-Control"); !strings.HasPrefix(cc, "public") {
		t.Errorf("Cache-Control %q, want it cacheable", cc)
	}
	var served struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &served); err != nil {
		t.Fatal(err)
	}
	if served.OpenAPI != "3.1.0" || served.Paths["/api/v1/tenants/{tenant}/changes"]["get"] == nil {
		t.Errorf("served openapi %q with %d paths, want docs/openapi.yaml's", served.OpenAPI, len(served.Paths))
	}
}

// TestWrongMethodAnswersJSON: a route under /api/v1 asked with another
// method answers 405 with the API's {"error"} body and the methods it
// takes, the document's and the MCP endpoint's as the tenant API's do.
func TestWrongMethodAnswersJSON(t *testing.T) {
	t.Parallel()
	h := web.New(web.Config{}).Handler()
	for _, c := range []struct{ method, path, allow string }{
		{http.MethodPut, "/api/v1/openapi.json", "GET"},
		{http.MethodGet, "/api/v1/mcp", "POST"},
		{http.MethodDelete, "/api/v1/mcp", "POST"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
		var answer struct{ Error string }
		err := json.Unmarshal(rec.Body.Bytes(), &answer)
		if rec.Code != http.StatusMethodNotAllowed || err != nil || answer.Error != "method not allowed" || rec.Header().Get("Allow") != c.allow {
			t.Errorf("%s %s answered %d Allow %q %q, want 405 Allow %q {\"error\": \"method not allowed\"}",
				c.method, c.path, rec.Code, rec.Header().Get("Allow"), rec.Body, c.allow)
		}
	}
}

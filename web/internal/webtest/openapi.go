package webtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/tidemark/tidemark/docs"
)

// mcpPath is the MCP endpoint: its answers are the protocol's (JSON-RPC,
// event streams), which the document does not describe.
const mcpPath = "/api/v1/mcp"

// openAPI is docs/openapi.yaml, loaded once for every test of a package.
var openAPI = sync.OnceValues(func() (*apiSpec, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(docs.OpenAPIYAML())
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, err
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	return &apiSpec{doc: doc, router: router}, nil
})

type apiSpec struct {
	doc    *openapi3.T
	router routers.Router
}

// CheckAPI wraps h so that every answer to a request under /api/v1/ (but
// the MCP endpoint's) is checked against docs/openapi.yaml: its status
// must be one the operation documents, and its headers and body what the
// document says for that status. A mismatch fails t. Answers of routes
// the document does not name must be 401, 403, 404 or 405 with an error
// body.
func CheckAPI(t testing.TB, h http.Handler) http.Handler {
	t.Helper()
	spec, err := openAPI()
	if err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/api/v1/") || r.URL.Path == mcpPath || r.Method == http.MethodHead {
			h.ServeHTTP(w, r)
			return
		}
		rec := &teeWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		if !rec.wroteHeader && r.Context().Err() != nil {
			return // the client went away before an answer
		}
		if err := spec.check(r, rec); err != nil {
			t.Errorf("%s %s answered %d %.500s: not as docs/openapi.yaml says: %v",
				r.Method, r.URL.Path, rec.status, bytes.TrimSpace(rec.body.Bytes()), err)
		}
	})
}

// check checks one answer against the document.
func (s *apiSpec) check(r *http.Request, rec *teeWriter) error {
	route, params, err := s.router.FindRoute(r)
	if errors.Is(err, routers.ErrPathNotFound) || errors.Is(err, routers.ErrMethodNotAllowed) {
		return s.checkUnrouted(rec)
	}
	if err != nil {
		return err
	}
	return openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route},
		Status:                 rec.status,
		Header:                 rec.Header(),
		Body:                   io.NopCloser(bytes.NewReader(rec.body.Bytes())),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	})
}

// checkUnrouted checks the answer to a route the document does not name:
// refused before any handler (no token, another kind of token), or an
// unknown route or method.
func (s *apiSpec) checkUnrouted(rec *teeWriter) error {
	switch rec.status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusMethodNotAllowed:
	default:
		return errors.New("the document names no such route")
	}
	var body any
	if err := json.Unmarshal(rec.body.Bytes(), &body); err != nil {
		return err
	}
	return s.doc.Components.Schemas["Error"].Value.VisitJSON(body, openapi3.EnableJSONSchema2020())
}

// teeWriter passes an answer on and keeps its status and body.
type teeWriter struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
	body        bytes.Buffer
}

func (w *teeWriter) WriteHeader(status int) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = status, true
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *teeWriter) Write(b []byte) (int, error) {
	w.wroteHeader = true
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flushes,
// deadlines).
func (w *teeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

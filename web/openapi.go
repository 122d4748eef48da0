package web

import (
	"net/http"

	"github.com/tidemark/tidemark/docs"
	"github.com/tidemark/tidemark/web/httpx"
)

// handleOpenAPI answers GET /api/v1/openapi.json with the API's OpenAPI
// document (docs/openapi.yaml as JSON). It needs no token: it describes
// the API, not a tenant.
func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	doc, err := docs.OpenAPIJSON()
	if err != nil {
		httpx.InternalError(s.log, w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=3600")
	w.Write(doc)
}

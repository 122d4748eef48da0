package webtest

import (
	"fmt"
	"net/http"
	"strings"
)

// apiRoute is one route of docs/contract.md section 4, with the resources named.
type ApiRoute struct {
	Method, Path string
}

func ApiRoutes(base, provider, contact string, conflictID int64) []ApiRoute {
	return []ApiRoute{
		{http.MethodGet, base + "/contacts/" + provider + "/" + contact},
		{http.MethodGet, base + "/contacts/" + provider + "/" + contact + "/revisions"},
		{http.MethodGet, base + "/events"},
		{http.MethodGet, base + "/stats"},
		{http.MethodGet, base + "/conflicts"},
		{http.MethodPost, fmt.Sprintf("%s/conflicts/%d/resolve", base, conflictID)},
		{http.MethodGet, base + "/records/" + provider + "/contact/" + contact},
	}
}

func (e *Env) Call(rt ApiRoute, token string) (int, map[string]any) {
	e.T.Helper()
	var body *strings.Reader
	if rt.Method == http.MethodPost {
		body = strings.NewReader(`{"resolution":"adopt","note":"cross-tenant"}`)
	} else {
		body = strings.NewReader("")
	}
	req, _ := http.NewRequest(rt.Method, e.Srv.URL+rt.Path, body)
	req.Header.Set("Authorization", "Bearer "+token)
	return e.Do(req)
}

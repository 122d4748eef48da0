package web_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestNoSniffEverywhere (review 3, F17): every answer says
// X-Content-Type-Options: nosniff, so that no browser reads a JSON or
// webhook answer holding a sender's text as HTML: webhooks (accepted and
// refused), the API, the console, health, metrics (on the public address
// and on its own listener), static files and 404s.
func TestNoSniffEverywhere(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	token := e.Token("acme")
	b := e.Operator("ops@example.com", false, "acme")
	body := webtest.SnapshotBody("c-1", 1, `{"job_title":"<b>CTO</b>"}`)
	check := func(what string, resp *http.Response) {
		t.Helper()
		if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s (%d): X-Content-Type-Options %q, want nosniff", what, resp.StatusCode, got)
		}
	}
	do := func(method, path string, body []byte, headers map[string]string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, e.Srv.URL+path, bytes.NewReader(body))
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	bearer := map[string]string{"Authorization": "Bearer " + token}
	_, answer := e.Deliver1("m1", body)
	resp, err := http.DefaultClient.Do(webtest.Signed(t, e.Srv.URL, e.Secret, "m2", body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("signed delivery: %d", resp.StatusCode)
	}
	check("webhook 200", resp)
	check("webhook 401", do(http.MethodPost, "/webhooks/acme/crm", body, nil))
	check("webhook 404", do(http.MethodPost, "/webhooks/acme/nope", body, nil))
	check("API", do(http.MethodGet, "/api/v1/tenants/acme/stats", nil, bearer))
	check("API delivery", do(http.MethodGet, "/api/v1/tenants/acme/deliveries/"+answer["delivery_id"].(string), nil, bearer))
	check("API 401", do(http.MethodGet, "/api/v1/tenants/acme/stats", nil, nil))
	check("login page", do(http.MethodGet, "/login", nil, nil))
	check("healthz", do(http.MethodGet, "/healthz", nil, nil))
	check("readyz", do(http.MethodGet, "/readyz", nil, nil))
	check("metrics", do(http.MethodGet, "/metrics", nil, nil))
	check("favicon", do(http.MethodGet, "/favicon.ico", nil, nil))
	check("static", do(http.MethodGet, "/static/img/favicon.ico", nil, nil))
	check("not found", do(http.MethodGet, "/nowhere", nil, nil))
	check("method not allowed", do(http.MethodDelete, "/healthz", nil, nil))

	// The console's pages, through the signed-in operator.
	req, _ := http.NewRequest(http.MethodGet, e.Srv.URL+"/t/acme", nil)
	resp, err = b.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("console overview: %d", resp.StatusCode)
	}
	check("console", resp)

	// --metrics-addr serves the same handler on a listener of its own.
	rec := httptest.NewRecorder()
	e.Web.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	check("metrics listener", rec.Result())
}

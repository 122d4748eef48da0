package webtest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/provider"
)

const HubspotSecret = "3f7c2a10-6d4e-4b8a-9c21-5e0f8d7a6b43"

// HubspotProvider creates acme/hs of kind hubspot with config.
func HubspotProvider(e *Env, config map[string]string) {
	e.T.Helper()
	if _, err := e.Store.ConnectProvider(CliContext(), e.Tenant("acme").ID, "hs", "hubspot", HubspotSecret, config); err != nil {
		e.T.Fatal(err)
	}
}

// HubspotPost posts body to acme/hs with a v3 signature made at sent over
// signedBody (nil: body).
func HubspotPost(e *Env, body, signedBody []byte, sent time.Time) (int, map[string]any) {
	e.T.Helper()
	if signedBody == nil {
		signedBody = body
	}
	ts := strconv.FormatInt(sent.UnixMilli(), 10)
	const path = "/webhooks/acme/hs"
	return e.Post(path, body, map[string]string{
		"Content-Type":                "application/json",
		"X-HubSpot-Signature-v3":      provider.SignHubSpotV3(HubspotSecret, http.MethodPost, e.Srv.URL+path, signedBody, ts),
		"X-HubSpot-Request-Timestamp": ts,
		"X-HubSpot-Signature":         provider.SignHubSpotV1(HubspotSecret, signedBody),
		"X-HubSpot-Signature-Version": "v1",
	})
}

func (e *Env) HubspotResults(status int, body map[string]any) []map[string]any {
	t := e.T
	t.Helper()
	if status != http.StatusOK {
		t.Fatalf("status %d (%v), want 200", status, body)
	}
	raw, _ := body["results"].([]any)
	out := make([]map[string]any, len(raw))
	for i, r := range raw {
		out[i] = r.(map[string]any)
	}
	return out
}

// DbNow is the database's clock, which decides what is in the future.
func (e *Env) DbNow() time.Time {
	e.T.Helper()
	var now time.Time
	if err := e.Store.Pool().QueryRow(context.Background(), `SELECT now()`).Scan(&now); err != nil {
		e.T.Fatal(err)
	}
	return now
}

// WantResults fails unless a 200 answer's results have these outcomes.
func (e *Env) WantResults(status int, body map[string]any, outcomes ...string) []map[string]any {
	e.T.Helper()
	results := e.HubspotResults(status, body)
	var got []string
	for _, r := range results {
		got = append(got, r["outcome"].(string))
	}
	if strings.Join(got, ",") != strings.Join(outcomes, ",") {
		e.T.Fatalf("outcomes %v (%v), want %v", got, body, outcomes)
	}
	return results
}

// Count runs a counting query.
func (e *Env) Count(sql string) int {
	e.T.Helper()
	var n int
	if err := e.Store.Pool().QueryRow(context.Background(), sql).Scan(&n); err != nil {
		e.T.Fatalf("%s: %v", sql, err)
	}
	return n
}

// Metrics fetches /metrics.
func (e *Env) Metrics() string {
	e.T.Helper()
	resp, err := http.Get(e.Srv.URL + "/metrics")
	if err != nil {
		e.T.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

const SfOrg = "00D5e000000AbCdEAK"

// SfAck is the exact acknowledgement Salesforce waits for.
const SfAck = `<?xml version="1.0" encoding="UTF-8"?>
<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/">
 <soapenv:Body>
  <notificationsResponse xmlns="http://soap.sforce.com/2005/09/outbound">
   <Ack>true</Ack>
  </notificationsResponse>
 </soapenv:Body>
</soapenv:Envelope>
`

func SfFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "internal", "provider", "testdata", "salesforce", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// SfHook is a salesforce provider of tenant acme and its newest token.
type SfHook struct {
	E           *Env
	Name, Token string
}

// SfProvider creates tenant acme (if needed) and a salesforce provider with
// a generated token.
func SfProvider(e *Env, name string, config map[string]string) SfHook {
	e.T.Helper()
	if config == nil {
		config = map[string]string{"org_id": SfOrg, "revision_field": "SystemModstamp"}
	}
	k, _ := provider.Lookup("salesforce")
	token, err := k.NewSecret(config)
	if err != nil {
		e.T.Fatal(err)
	}
	if _, err := e.Store.ConnectProvider(CliContext(), e.Tenant("acme").ID, name, "salesforce", token, config); err != nil {
		e.T.Fatal(err)
	}
	return SfHook{E: e, Name: name, Token: token}
}

// Post posts a SOAP body with the token and returns the status, body and
// Content-Type.
func (h SfHook) Post(body []byte) (int, string, string) {
	h.E.T.Helper()
	return h.PostQuery("token="+url.QueryEscape(h.Token), body)
}

// PostQuery posts a SOAP body to the provider's URL with query (no "?").
func (h SfHook) PostQuery(query string, body []byte) (int, string, string) {
	h.E.T.Helper()
	u := h.E.Srv.URL + "/webhooks/acme/" + h.Name
	if query != "" {
		u += "?" + query
	}
	req, _ := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
	req.Header.Set("Content-Type", "text/xml; charset=utf-8")
	req.Header.Set("SOAPAction", `""`)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.E.T.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw), resp.Header.Get("Content-Type")
}

// Acked posts body with the token and fails unless the answer is the exact
// ack.
func (h SfHook) Acked(body []byte) {
	h.E.T.Helper()
	status, answer, ctype := h.Post(body)
	if status != http.StatusOK || answer != SfAck || ctype != "text/xml; charset=utf-8" {
		h.E.T.Fatalf("answer %d %q %q, want 200 with the exact ack", status, ctype, answer)
	}
}

// SfOutcomes lists the outcomes of every event with this id, oldest first.
func SfOutcomes(e *Env, eventID string) []string {
	e.T.Helper()
	rows, err := e.Store.Pool().Query(context.Background(),
		`SELECT outcome FROM events WHERE event_id = $1 ORDER BY received_at, delivery_id, seq`, eventID)
	if err != nil {
		e.T.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			e.T.Fatal(err)
		}
		out = append(out, o)
	}
	return out
}

func SfCount(e *Env, sql string) int {
	e.T.Helper()
	var n int
	if err := e.Store.Pool().QueryRow(context.Background(), sql).Scan(&n); err != nil {
		e.T.Fatal(err)
	}
	return n
}

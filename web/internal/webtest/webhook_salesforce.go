package webtest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/tidemark/tidemark/internal/provider"
)

const SfOrg = "00D5e000000AbCdEAK"

// sfAck is the exact acknowledgement Salesforce waits for.
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

// sfHook is a salesforce provider of tenant acme and its newest token.
type SfHook struct {
	E           *Env
	Name, Token string
}

// sfProvider creates tenant acme (if needed) and a salesforce provider with
// a generated token.
func (e *Env) SfProvider(name string, config map[string]string) SfHook {
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

// post posts a SOAP body with the token and returns the status, body and
// Content-Type.
func (h SfHook) Post(body []byte) (int, string, string) {
	h.E.T.Helper()
	return h.PostQuery("token="+url.QueryEscape(h.Token), body)
}

// postQuery posts a SOAP body to the provider's URL with query (no "?").
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

// acked posts body with the token and fails unless the answer is the exact
// ack.
func (h SfHook) Acked(body []byte) {
	h.E.T.Helper()
	status, answer, ctype := h.Post(body)
	if status != http.StatusOK || answer != SfAck || ctype != "text/xml; charset=utf-8" {
		h.E.T.Fatalf("answer %d %q %q, want 200 with the exact ack", status, ctype, answer)
	}
}

// sfOutcomes lists the outcomes of every event with this id, oldest first.
func (e *Env) SfOutcomes(eventID string) []string {
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

func (e *Env) SfCount(sql string) int {
	e.T.Helper()
	var n int
	if err := e.Store.Pool().QueryRow(context.Background(), sql).Scan(&n); err != nil {
		e.T.Fatal(err)
	}
	return n
}

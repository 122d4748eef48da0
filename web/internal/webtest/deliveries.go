package webtest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark/internal/provider"
)

// sample is a provider's sample delivery as sent, with extra headers.
type Sample struct {
	Secret  string
	Query   string
	Headers map[string]string // as sent, extra ones included
	Status  int
}

// sendSample connects a provider of kind to acme and posts the kind's
// sample delivery (provider.TestDelivery) with extra headers.
func (e *Env) SendSample(kind, name string, config map[string]string, extra map[string]string) Sample {
	e.T.Helper()
	k, _ := provider.Lookup(kind)
	secret, config, err := provider.Setup(kind, "", config)
	if err != nil { // a kind whose secret the provider issues
		if secret, err = k.NewSecret(config); err == nil {
			secret, config, err = provider.Setup(kind, secret, config)
		}
	}
	if err != nil {
		e.T.Fatal(err)
	}
	if _, err := e.Store.ConnectProvider(CliContext(), e.Tenant("acme").ID, name, kind, secret, config); err != nil {
		e.T.Fatal(err)
	}
	path := "/webhooks/acme/" + name
	d, err := k.TestDelivery(e.Srv.URL+path, secret, config, time.Now())
	if err != nil {
		e.T.Fatal(err)
	}
	s := Sample{Secret: secret, Query: d.Query, Headers: map[string]string{"Content-Type": "application/json"}}
	if d.ContentType != "" {
		s.Headers["Content-Type"] = d.ContentType
	}
	for _, h := range []map[string]string{d.Headers, extra} {
		for k, v := range h {
			s.Headers[k] = v
		}
	}
	if d.Query != "" {
		path += "?" + d.Query
	}
	req, _ := http.NewRequest(http.MethodPost, e.Srv.URL+path, strings.NewReader(string(d.Body)))
	for k, v := range s.Headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.T.Fatal(err)
	}
	resp.Body.Close()
	s.Status = resp.StatusCode
	return s
}

// signedWithHeaders delivers body to acme/crm signed as event id, with
// extra headers, and returns the delivery's id.
func (e *Env) SignedWithHeaders(id string, body []byte, extra map[string]string) string {
	e.T.Helper()
	ts := time.Now().Unix()
	sig, err := provider.SignStandard(e.Secret, id, ts, body)
	if err != nil {
		e.T.Fatal(err)
	}
	headers := map[string]string{"webhook-id": id, "webhook-timestamp": strconv.FormatInt(ts, 10), "webhook-signature": sig}
	for k, v := range extra {
		headers[k] = v
	}
	status, answer := e.Post("/webhooks/acme/crm", body, headers)
	Outcome(e.T, status, answer)
	return answer["delivery_id"].(string)
}

// latestDelivery returns the API's view of the newest delivery of a
// provider of acme, and its raw JSON.
func (e *Env) LatestDelivery(token, providerName string) (map[string]any, string) {
	e.T.Helper()
	status, body := e.Get("/api/v1/tenants/acme/deliveries?limit=1&provider="+providerName, token)
	items := List(e.T, status, body, "deliveries")
	if len(items) != 1 {
		e.T.Fatalf("no delivery of %s", providerName)
	}
	return e.DeliveryJSON(token, items[0]["id"].(string))
}

// deliveryJSON fetches one delivery from the API, decoded and raw.
func (e *Env) DeliveryJSON(token, id string) (map[string]any, string) {
	e.T.Helper()
	status, body := e.Get("/api/v1/tenants/acme/deliveries/"+id, token)
	if status != http.StatusOK {
		e.T.Fatalf("GET delivery %s: %d %v", id, status, body)
	}
	raw, _ := json.Marshal(body)
	return body, string(raw)
}

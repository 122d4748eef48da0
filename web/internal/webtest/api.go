package webtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/internal/replay"
)

// APIData is a tenant's worth of API fixtures: contact c-1 received
// revisions 10, 12, 11 (stale) and then 12 again with another snapshot,
// which opened a conflict; deal d-1 is at revision 1; contact c-2 sent an
// event without a revision.
type APIData struct {
	Tenant, Provider, Secret, Token string
	Base                            string // /api/v1/tenants/{tenant}
	ConflictID                      int64
}

func APISetup(t *testing.T) (*Env, APIData) {
	t.Helper()
	e := Setup(t)
	d := APIData{Tenant: "acme", Provider: "crm", Secret: e.Secret, Token: e.Token("acme"), Base: "/api/v1/tenants/acme"}
	APISeed(t, e, &d, "")
	return e, d
}

// APISeed delivers the fixture events; prefix keeps event ids apart between tenants.
func APISeed(t *testing.T, e *Env, d *APIData, prefix string) {
	t.Helper()
	for _, step := range []struct {
		id      string
		body    []byte
		outcome string
	}{
		{"evt-10", SnapshotBody("c-1", 10, `{"company":"A10","lead_status":"lead"}`), "applied"},
		{"evt-12", SnapshotBody("c-1", 12, `{"company":"A12","lead_status":"customer"}`), "applied"},
		{"evt-11", SnapshotBody("c-1", 11, `{"company":"A11"}`), "stale"},
		{"evt-12b", SnapshotBody("c-1", 12, `{"company":"B12","lead_status":"churned"}`), "revision_conflict"},
		{"evt-d1", DealBody("d-1", 1, `{"amount":100}`), "applied"},
		{"evt-nr", SnapshotBody("c-2", nil, `{"company":"N"}`), "unversioned"},
	} {
		status, body := e.Deliver(d.Tenant, d.Provider, d.Secret, prefix+step.id, step.body)
		if got := Outcome(t, status, body); got != step.outcome {
			t.Fatalf("%s: outcome %s, want %s", step.id, got, step.outcome)
		}
	}
	status, body := e.Get(d.Base+"/conflicts?status=open", d.Token)
	conflicts := List(t, status, body, "conflicts")
	if len(conflicts) != 1 {
		t.Fatalf("open conflicts %v, want one", conflicts)
	}
	d.ConflictID = int64(conflicts[0]["id"].(float64))
}

func DealBody(id string, revision int, snapshot string) []byte {
	return []byte(fmt.Sprintf(`{"type":"deal.snapshot","timestamp":"2026-11-29T10:00:00Z","data":{"object_id":%q,"revision":%d,"snapshot":%s}}`,
		id, revision, snapshot))
}

// Resolve posts a resolution with a bearer token.
func (e *Env) Resolve(d APIData, id int64, body string) (int, map[string]any) {
	e.T.Helper()
	return e.Post(fmt.Sprintf("%s/conflicts/%d/resolve", d.Base, id), []byte(body),
		map[string]string{"Authorization": "Bearer " + d.Token, "Content-Type": "application/json"})
}

// List checks a 200 list answer and returns its items.
func List(t *testing.T, status int, body map[string]any, name string) []map[string]any {
	t.Helper()
	if status != http.StatusOK {
		t.Fatalf("status %d (%v), want 200", status, body)
	}
	AssertKeys(t, body, name, "next_cursor")
	raw, ok := body[name].([]any)
	if !ok {
		t.Fatalf("%q is %T, want a list", name, body[name])
	}
	items := make([]map[string]any, len(raw))
	for i, it := range raw {
		items[i] = it.(map[string]any)
	}
	return items
}

func AssertKeys(t *testing.T, m map[string]any, want ...string) {
	t.Helper()
	var got []string
	for k := range m {
		got = append(got, k)
	}
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Fatalf("keys %v, want %v (in %v)", got, want, m)
	}
}

func AssertError(t *testing.T, status int, body map[string]any, wantStatus int, contains string) {
	t.Helper()
	if status != wantStatus {
		t.Fatalf("status %d (%v), want %d", status, body, wantStatus)
	}
	AssertKeys(t, body, "error")
	if msg, _ := body["error"].(string); !strings.Contains(msg, contains) {
		t.Fatalf("error %q, want it to contain %q", msg, contains)
	}
}

// APIRoute is one route of docs/contract/api.md, with the resources named.
type APIRoute struct {
	Method, Path string
}

func APIRoutes(base, provider, contact string, conflictID int64) []APIRoute {
	return []APIRoute{
		{http.MethodGet, base + "/contacts/" + provider + "/" + contact},
		{http.MethodGet, base + "/contacts/" + provider + "/" + contact + "/revisions"},
		{http.MethodGet, base + "/events"},
		{http.MethodGet, base + "/stats"},
		{http.MethodGet, base + "/conflicts"},
		{http.MethodPost, fmt.Sprintf("%s/conflicts/%d/resolve", base, conflictID)},
		{http.MethodGet, base + "/records/" + provider + "/contact/" + contact},
	}
}

func (e *Env) Call(rt APIRoute, token string) (int, map[string]any) {
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

// Sample is a provider's sample delivery as sent, with extra headers.
type Sample struct {
	Secret  string
	Query   string
	Headers map[string]string // as sent, extra ones included
	Status  int
}

// SendSample connects a provider of kind to acme and posts the kind's
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

// SignedWithHeaders delivers body to acme/crm signed as event id, with
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

// LatestDelivery returns the API's view of the newest delivery of a
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

// DeliveryJSON fetches one delivery from the API, decoded and raw.
func (e *Env) DeliveryJSON(token, id string) (map[string]any, string) {
	e.T.Helper()
	status, body := e.Get("/api/v1/tenants/acme/deliveries/"+id, token)
	if status != http.StatusOK {
		e.T.Fatalf("GET delivery %s: %d %v", id, status, body)
	}
	raw, _ := json.Marshal(body)
	return body, string(raw)
}

// ReplayAPI posts POST deliveries/{id}/replay with token.
func ReplayAPI(e *Env, token, id string) (int, map[string]any) {
	e.T.Helper()
	return e.Post("/api/v1/tenants/acme/deliveries/"+id+"/replay", nil, map[string]string{"Authorization": "Bearer " + token})
}

// ReplayOutcome replays a delivery of one event and returns its outcome.
func ReplayOutcome(e *Env, token, id string) string {
	e.T.Helper()
	status, body := ReplayAPI(e, token, id)
	return Outcome(e.T, status, body)
}

// SetScope enables or disables acme/crm's contact.snapshot scope.
func (e *Env) SetScope(enabled bool) {
	e.T.Helper()
	ctx := CliContext()
	p, err := e.Store.Endpoint(ctx, "acme", "crm")
	if err != nil {
		e.T.Fatal(err)
	}
	sc := domain.DefaultScope(domain.ScopeName{ObjectType: "contact", Action: "snapshot"})
	sc.Enabled = enabled
	if err := e.Store.SaveProviderScope(ctx, p.TenantID, p.ID, sc); err != nil {
		e.T.Fatal(err)
	}
}

// AuditEntries lists acme's audit entries of replays as "actor action
// target: summary".
func (e *Env) AuditEntries() []string {
	e.T.Helper()
	return e.Strings(`SELECT actor || ' ' || action || ' ' || target || ': ' || summary FROM audit_log
		 WHERE tenant_id = (SELECT id FROM tenants WHERE slug = 'acme')
		   AND action IN ('delivery_replay', 'replay_start', 'replay_cancel', 'replay_done') ORDER BY id`)
}

// RejectedHistory delivers n events to acme/crm while its scope is
// disabled, then enables it: a bulk replay of them applies each.
func (e *Env) RejectedHistory(n int) {
	e.T.Helper()
	e.SetScope(false)
	for i := range n {
		id := fmt.Sprintf("m%d", i)
		if status, _ := e.Deliver1(id, SnapshotBody("c-"+id, 1, `{"n":1}`)); status != http.StatusOK {
			e.T.Fatalf("delivery %d answered %d", i, status)
		}
	}
	e.SetScope(true)
}

// StartReplay posts POST replays with body.
func StartReplay(e *Env, token, body string) (int, map[string]any) {
	e.T.Helper()
	return e.Post("/api/v1/tenants/acme/replays", []byte(body),
		map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json"})
}

// Worker runs a replay worker until the returned stop is called, which
// waits for it to give its job back.
func Worker(e *Env, id string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		replay.Worker{Replayer: e.Web.Replayer(), Deliveries: e.Store, Log: QuietLog(), ID: id, Poll: 10 * time.Millisecond,
			Slice: 50 * time.Millisecond, Batch: 10}.Run(ctx)
	}()
	stop = func() { cancel(); <-done }
	e.T.Cleanup(stop)
	return stop
}

// Job reads a replay job of acme.
func Job(e *Env, id int64) domain.ReplayJob {
	e.T.Helper()
	j, err := e.Store.ReplayJob(context.Background(), e.Tenant("acme").ID, id)
	if err != nil {
		e.T.Fatal(err)
	}
	return j
}

// WaitJob polls a job until ok says so, for at most 30 s.
func WaitJob(e *Env, id int64, what string, ok func(domain.ReplayJob) bool) domain.ReplayJob {
	e.T.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if j := Job(e, id); ok(j) {
			return j
		}
	}
	e.T.Fatalf("job %d: %s did not happen: %+v", id, what, Job(e, id))
	return domain.ReplayJob{}
}

// ReplayCounts returns how many replays are stored and of how many
// distinct originals.
func ReplayCounts(e *Env) (replays, originals int64) {
	e.T.Helper()
	if err := e.Store.Pool().QueryRow(context.Background(),
		`SELECT count(*), count(DISTINCT replay_of) FROM deliveries WHERE replay_of IS NOT NULL`).Scan(&replays, &originals); err != nil {
		e.T.Fatal(err)
	}
	return replays, originals
}

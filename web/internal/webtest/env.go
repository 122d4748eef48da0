// Package webtest is the web tests' kit: a server on a fresh database
// (Setup), signed deliveries, API calls, console sessions (Browser) and
// the helpers that the tests of more than one surface share. Only tests
// import it.
package webtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/internal/testlog"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/web"
)

var TestKey = []byte("0123456789abcdef0123456789abcdef")

// Env is a running server on a fresh database with tenant "acme" and its
// standard provider "crm".
type Env struct {
	T      *testing.T
	Store  *postgres.Store
	Web    *web.Server
	Srv    *httptest.Server
	Secret string // the secret of acme/crm
}

func Setup(t *testing.T) *Env {
	t.Helper()
	return SetupWith(t, postgres.DefaultReadTimeout, QuietLog())
}

// QuietLog is a logger that drops everything.
func QuietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// SetupWith is setup with the console's and the API's reads on a pool of
// their own whose statements stop after readTimeout, as serve runs them,
// and the server logging to log.
func SetupWith(t *testing.T, readTimeout time.Duration, log *slog.Logger) *Env {
	t.Helper()
	return SetupConfig(t, readTimeout, log, func(*web.Config) {})
}

// SetupConfig is SetupWith with the server's configuration edited by edit.
func SetupConfig(t *testing.T, readTimeout time.Duration, log *slog.Logger, edit func(*web.Config)) *Env {
	t.Helper()
	pool := testdb.New(t)
	reads, err := pgxpool.NewWithConfig(context.Background(), postgres.ReadPoolConfig(pool.Config(), 4, readTimeout))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reads.Close)
	store, err := postgres.Open(postgres.Pools{Write: pool, Read: reads}, postgres.Options{Keys: [][]byte{TestKey}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := web.Config{Store: store, Sessions: store.SessionStore(), Ping: store.Pool().Ping, Logger: log}
	edit(&cfg)
	s := web.New(cfg)
	// Every API answer is checked against docs/openapi.yaml.
	e := &Env{T: t, Store: store, Web: s, Srv: httptest.NewServer(CheckAPI(t, s.Handler()))}
	t.Cleanup(e.Srv.Close)
	e.Secret = e.Provider("acme", "crm")
	return e
}

// FlushRefusals writes the refused deliveries the server holds in memory,
// as its flusher does every few seconds.
func (e *Env) FlushRefusals() {
	e.T.Helper()
	if err := e.Web.FlushRefusals(context.Background()); err != nil {
		e.T.Fatal(err)
	}
}

// Provider creates tenant (if needed) and a standard provider, returning its secret.
func (e *Env) Provider(tenant, name string) string {
	e.T.Helper()
	ctx := CliContext()
	secret := provider.NewStandardSecret()
	if _, err := e.Store.ConnectProvider(ctx, e.Tenant(tenant).ID, name, "standard", secret, nil); err != nil {
		e.T.Fatal(err)
	}
	return secret
}

// Tenant returns the tenant with that slug, creating it if needed.
func (e *Env) Tenant(slug string) domain.Tenant {
	e.T.Helper()
	ctx := context.Background()
	t, err := e.Store.Tenant(ctx, slug)
	if domain.ErrorCode(err) == domain.ENOTFOUND {
		t, err = e.Store.CreateTenant(ctx, slug, "")
	}
	if err != nil {
		e.T.Fatal(err)
	}
	return t
}

// CliContext is a context with the CLI as the actor the audit log records,
// for changes a test makes directly in the store.
func CliContext() context.Context {
	return domain.WithActor(context.Background(), domain.Actor{Kind: domain.ActorCLI, Name: "test"})
}

// Token creates a read-write API token for tenant.
func (e *Env) Token(tenant string) string {
	e.T.Helper()
	return e.TokenWith(tenant, domain.NewAPIToken{Name: "test", Access: domain.TokenWrite})
}

// TokenWith creates an API token for tenant as nt says.
func (e *Env) TokenWith(tenant string, nt domain.NewAPIToken) string {
	e.T.Helper()
	tok, err := e.Store.CreateAPIToken(CliContext(), e.Tenant(tenant).ID, nt)
	if err != nil {
		e.T.Fatal(err)
	}
	return tok
}

// SnapshotBody is a standard contact.snapshot delivery body.
func SnapshotBody(contact string, revision any, snapshot string) []byte {
	rev, _ := json.Marshal(revision)
	return []byte(fmt.Sprintf(`{"type":"contact.snapshot","timestamp":"2026-11-29T10:00:00Z","data":{"contact_id":%q,"revision":%s,"snapshot":%s}}`,
		contact, rev, snapshot))
}

// Deliver signs body with secret as event id and posts it to tenant/name.
func (e *Env) Deliver(tenant, name, secret, id string, body []byte) (int, map[string]any) {
	e.T.Helper()
	ts := time.Now().Unix()
	sig, err := provider.SignStandard(secret, id, ts, body)
	if err != nil {
		e.T.Fatal(err)
	}
	return e.Post("/webhooks/"+tenant+"/"+name, body, map[string]string{
		"webhook-id": id, "webhook-timestamp": strconv.FormatInt(ts, 10), "webhook-signature": sig})
}

func (e *Env) Post(path string, body []byte, headers map[string]string) (int, map[string]any) {
	e.T.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.Srv.URL+path, bytes.NewReader(body))
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return e.Do(req)
}

// Get calls the API with a bearer token.
func (e *Env) Get(path, token string) (int, map[string]any) {
	e.T.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.Srv.URL+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return e.Do(req)
}

func (e *Env) Do(req *http.Request) (int, map[string]any) {
	e.T.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.T.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var body map[string]any
	if len(raw) > 0 && json.Unmarshal(raw, &body) != nil {
		e.T.Fatalf("%s %s answered %d with non-JSON body %q", req.Method, req.URL.Path, resp.StatusCode, raw)
	}
	return resp.StatusCode, body
}

// Outcome returns the first result's outcome of a 200 delivery answer.
func Outcome(t *testing.T, status int, body map[string]any) string {
	t.Helper()
	if status != http.StatusOK {
		t.Fatalf("status %d (%v), want 200", status, body)
	}
	results, _ := body["results"].([]any)
	if len(results) != 1 {
		t.Fatalf("results %v, want one", body["results"])
	}
	return results[0].(map[string]any)["outcome"].(string)
}

// Deliver1 delivers body to acme/crm with its secret.
func (e *Env) Deliver1(id string, body []byte) (int, map[string]any) {
	e.T.Helper()
	return e.Deliver("acme", "crm", e.Secret, id, body)
}

// Outcome delivers and returns the single result's outcome.
func (e *Env) Outcome(tenant, provider, secret, id string, body []byte) string {
	e.T.Helper()
	status, answer := e.Deliver(tenant, provider, secret, id, body)
	return Outcome(e.T, status, answer)
}

// LogBuffer collects a server's log lines; the server writes from its
// handlers' goroutines.
type LogBuffer = testlog.Buffer

// SetupLogged is setup with the server's log kept.
func SetupLogged(t *testing.T, readTimeout time.Duration) (*Env, *LogBuffer) {
	t.Helper()
	logs := &LogBuffer{}
	return SetupWith(t, readTimeout, slog.New(slog.NewTextHandler(logs, nil))), logs
}

// Exec runs statements on the test's database, as an operator would.
func (e *Env) Exec(sql string) {
	e.T.Helper()
	if _, err := e.Store.Pool().Exec(context.Background(), sql); err != nil {
		e.T.Fatal(err)
	}
}

// Within sends req with a deadline, so that a request the server never
// answers fails the test instead of hanging it.
func (e *Env) Within(d time.Duration, req *http.Request) (*http.Response, []byte) {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		e.T.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		e.T.Fatal(err)
	}
	return resp, raw
}

// LockTable holds an ACCESS EXCLUSIVE lock on table until the test ends,
// so that any read of it waits.
func (e *Env) LockTable(table string) {
	e.T.Helper()
	ctx := context.Background()
	tx, err := e.Store.Pool().Begin(ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	e.T.Cleanup(func() { tx.Rollback(ctx) })
	if _, err := tx.Exec(ctx, `LOCK TABLE `+table+` IN ACCESS EXCLUSIVE MODE`); err != nil {
		e.T.Fatal(err)
	}
}

// Signed builds a standard delivery to acme/crm signed with secret.
func Signed(t *testing.T, base, secret, id string, body []byte) *http.Request {
	t.Helper()
	ts := time.Now().Unix()
	sig, err := provider.SignStandard(secret, id, ts, body)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/webhooks/acme/crm", bytes.NewReader(body))
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", sig)
	return req
}

// SignupBody is a standard lead.signup delivery body.
func SignupBody(email, name, campaign string) []byte {
	data, _ := json.Marshal(map[string]string{"email": email, "name": name, "company": "Example",
		"campaign": campaign, "source": "webinar"})
	return []byte(`{"type":"lead.signup","data":` + string(data) + `}`)
}

// Strings runs sql and returns its one text column, row by row.
func (e *Env) Strings(sql string, args ...any) []string {
	e.T.Helper()
	rows, err := e.Store.Pool().Query(context.Background(), sql, args...)
	if err != nil {
		e.T.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		e.T.Fatal(err)
	}
	return out
}

// Retry503 sends as a provider does: a 503 ("database unavailable, retry
// later") is sent again, at most 5 times a second apart, and logged. Tests
// of what a large delivery stores use it, so that a CI machine whose load
// outlasts the ingest's budget for a moment does not fail them; the test
// of the 503 itself is web/hook's.
func Retry503(t testing.TB, send func() (int, map[string]any)) (int, map[string]any) {
	t.Helper()
	for try := 1; ; try++ {
		status, answer := send()
		if status != http.StatusServiceUnavailable || try == 5 {
			return status, answer
		}
		t.Logf("try %d: 503 %v; sending again in 1 s", try, answer)
		time.Sleep(time.Second)
	}
}

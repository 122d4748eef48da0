package web_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/web"
	"github.com/tidemark/tidemark/web/provider"
)

// TestOverloadAnswers503: when no database connection frees up within the
// delivery's budget, the receiver answers 503 with Retry-After, stores
// nothing, and the provider's retry is then processed once.
func TestOverloadAnswers503(t *testing.T) {
	t.Parallel()
	e := setup(t)
	cfg, err := pgxpool.ParseConfig(e.store.Pool().Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	store, _ := postgres.New(pool, testKey)
	srv := httptest.NewServer(web.New(web.Config{Services: web.ServicesOf(store),
		Sessions: store.SessionStore(), Ping: pool.Ping, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}).Handler())
	defer srv.Close()
	busy := &env{t: t, store: store, srv: srv, secret: e.secret}

	held, err := pool.Acquire(context.Background()) // the only connection, as if a long lock wait held it
	if err != nil {
		t.Fatal(err)
	}
	req := signed(t, srv.URL, e.secret, "m-busy", snapshotBody("c-1", 1, `{"a":1}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	held.Release()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("overloaded delivery answered %d with Retry-After %q, want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if got := busy.outcome("acme", "crm", e.secret, "m-busy", snapshotBody("c-1", 1, `{"a":1}`)); got != "applied" {
		t.Fatalf("the retry after overload: %s, want applied (nothing was stored the first time)", got)
	}
}

// signed builds a standard delivery request to acme/crm signed with secret.
func signed(t *testing.T, base, secret, id string, body []byte) *http.Request {
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

package main

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/internal/testdb"
)

// TestServeWritesRefusalsOnShutdown: refusals are counted in memory and
// written in batches; those counted just before serve stops are written
// before it exits, not lost.
func TestServeWritesRefusalsOnShutdown(t *testing.T) {
	t.Parallel()
	url := testdb.NewURL(t)
	env := map[string]string{"DATABASE_URL": url, "TIDEMARK_ENCRYPTION_KEY": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}
	if _, _, err := tidemark(t, env, "", "tenant", "create", "acme"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tidemark(t, env, "", "provider", "create", "--tenant", "acme", "--name", "crm", "--kind", "standard"); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0"}, func(k string) string { return env[k] }, nil, &out, &errOut)
	}()
	listening := regexp.MustCompile(`listening on (http://\S+)`)
	deadline := time.Now().Add(30 * time.Second)
	for !listening.MatchString(out.String()) {
		select {
		case err := <-done:
			t.Fatalf("serve exited: %v\n%s", err, errOut.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", errOut.String())
		}
	}
	base := listening.FindStringSubmatch(out.String())[1]
	for range 3 {
		resp, err := http.Post(base+"/webhooks/acme/crm", "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("unsigned delivery answered %d", resp.StatusCode)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v\n%s", err, errOut.String())
	}

	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(),
		`SELECT coalesce(sum(n), 0) FROM outcome_counters WHERE outcome = 'delivery_rejected'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Fatalf("%d refusals written by the time serve exited, want 3", n)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/internal/citustest"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/web"
)

// deliverStandard posts a delivery signed with secret to tenant acme's
// provider name on c's receiver and returns the status.
func (c *sfCLI) deliverStandard(name, secret, id string) int {
	c.t.Helper()
	body := []byte(`{"type":"contact.snapshot","timestamp":"2026-11-29T10:00:00Z","data":{"contact_id":"c-1","revision":1,"snapshot":{"a":1}}}`)
	ts := time.Now().Unix()
	sig, err := provider.SignStandard(secret, id, ts, body)
	if err != nil {
		c.t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, c.srv.URL+"/webhooks/acme/"+name, bytes.NewReader(body))
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", sig)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestProviderDelete: without --confirm nothing changes and the command
// says what it would remove; with it the provider's URL answers 404 to a
// delivery signed with its old secret, nothing of which is stored, its
// history stays as "crm (removed)", and a new provider takes the name.
// --erase (with the --name alias) erases the history.
func TestProviderDelete(t *testing.T) {
	t.Parallel()
	c := newSFCLI(t)
	out, _, err := tidemark(t, c.env, "", "provider", "create", "--tenant", "acme", "--provider", "crm", "--kind", "standard")
	if err != nil {
		t.Fatal(err)
	}
	secret := lastLine(out)
	if status := c.deliverStandard("crm", secret, "evt-1"); status != http.StatusOK {
		t.Fatalf("delivery: %d", status)
	}

	_, _, err = tidemark(t, c.env, "", "provider", "delete", "--tenant", "acme", "--provider", "crm")
	if err == nil || !strings.Contains(err.Error(), "nothing removed without --confirm") ||
		!strings.Contains(err.Error(), "POST /webhooks/acme/crm answer 404, delete 1 signing secret, 0 API credentials, 0 CDC streams and 0 app installs, cancel 0 backfills") ||
		!strings.Contains(err.Error(), `keep its history (1 record, 1 delivery, 1 event) as provider "crm (removed)"`) {
		t.Fatalf("without --confirm: %v", err)
	}
	if status := c.deliverStandard("crm", secret, "evt-2"); status != http.StatusOK {
		t.Fatalf("delivery after a refused delete: %d", status)
	}

	out, _, err = tidemark(t, c.env, "", "provider", "delete", "--tenant", "acme", "--provider", "crm", "--confirm")
	if err != nil {
		t.Fatal(err)
	}
	if want := "removed provider acme/crm: POST /webhooks/acme/crm answers 404\n" +
		"deleted 1 signing secret, 0 API credentials, 0 CDC streams and 0 app installs; cancelled 0 backfills\n" +
		`kept its history (1 record, 2 deliveries, 2 events) as provider "crm (removed)"` + "\n"; out != want {
		t.Fatalf("output:\n%s\nwant:\n%s", out, want)
	}
	pool := checkerPool(t, c.env["DATABASE_URL"])
	if status := c.deliverStandard("crm", secret, "evt-3"); status != http.StatusNotFound {
		t.Fatalf("a delivery signed with the old secret: %d, want 404", status)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM deliveries`); n != 2 {
		t.Fatalf("%d deliveries stored, want the 2 before the removal", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM provider_secrets`); n != 0 {
		t.Fatalf("%d secrets left", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM events e JOIN providers p ON p.tenant_id = e.tenant_id AND p.id = e.provider_id
		WHERE p.name = 'crm (removed)' AND e.payload IS NOT NULL`); n != 2 {
		t.Fatalf("%d events kept as of crm (removed), want 2", n)
	}
	if _, _, err := tidemark(t, c.env, "", "provider", "rotate", "--tenant", "acme", "--provider", "crm"); err == nil {
		t.Fatal("rotated a removed provider")
	}

	// The name is free again; --erase erases the new one's history.
	out, _, err = tidemark(t, c.env, "", "provider", "create", "--tenant", "acme", "--provider", "crm", "--kind", "standard")
	if err != nil {
		t.Fatal(err)
	}
	if status := c.deliverStandard("crm", lastLine(out), "evt-4"); status != http.StatusOK {
		t.Fatalf("the new provider of the name: %d", status)
	}
	out, _, err = tidemark(t, c.env, "", "provider", "delete", "--tenant", "acme", "--name", "crm", "--confirm", "--erase")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "erased 1 record, 1 event, 1 accepted revision, 0 conflicts, 1 delivery body\n") {
		t.Fatalf("erase output:\n%s", out)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM events e JOIN providers p ON p.tenant_id = e.tenant_id AND p.id = e.provider_id
		WHERE p.name = 'crm (removed 2)' AND e.payload IS NULL AND e.snapshot IS NULL`); n != 1 {
		t.Fatalf("%d erased events of crm (removed 2), want 1", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM events WHERE payload IS NOT NULL`); n != 2 {
		t.Fatalf("%d events with content, want the first provider's 2 alone", n)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM audit_log WHERE action = 'provider_delete'`); n != 2 {
		t.Fatalf("%d provider_delete audit entries, want 2", n)
	}
}

// TestProviderDeleteOnCitus removes a provider, its history erased, on a
// Citus coordinator with two workers: one transaction over a reference
// table (the app installs) and the tenant's shard.
func TestProviderDeleteOnCitus(t *testing.T) {
	t.Parallel()
	cl := citustest.Start(t)
	c := &sfCLI{t: t, env: map[string]string{"DATABASE_URL": cl.URL(), "TIDEMARK_ENCRYPTION_KEY": testEncryptionKey}}
	for _, args := range [][]string{{"migrate"}, {"citus", "distribute", "--shards", "4"}, {"tenant", "create", "acme"}} {
		if _, _, err := tidemark(t, c.env, "", args...); err != nil {
			t.Fatalf("%s: %v", args, err)
		}
	}
	pool, err := pgxpool.New(context.Background(), cl.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	key, _ := base64.StdEncoding.DecodeString(testEncryptionKey)
	if c.store, err = postgres.New(pool, key); err != nil {
		t.Fatal(err)
	}
	c.srv = httptest.NewServer(web.New(web.Config{Store: c.store, Sessions: c.store.SessionStore(),
		Ping: pool.Ping, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}).Handler())
	t.Cleanup(c.srv.Close)

	out, _, err := tidemark(t, c.env, "", "provider", "create", "--tenant", "acme", "--provider", "crm", "--kind", "standard")
	if err != nil {
		t.Fatal(err)
	}
	secret := lastLine(out)
	if status := c.deliverStandard("crm", secret, "evt-1"); status != http.StatusOK {
		t.Fatalf("delivery: %d", status)
	}
	if _, _, err := tidemark(t, c.env, "", "provider", "delete", "--tenant", "acme", "--provider", "crm"); err == nil {
		t.Fatal("deleted without --confirm")
	}
	out, _, err = tidemark(t, c.env, "", "provider", "delete", "--tenant", "acme", "--provider", "crm", "--confirm", "--erase")
	if err != nil || !strings.Contains(out, "erased 1 record, 1 event") {
		t.Fatalf("delete --erase: %q, %v", out, err)
	}
	if status := c.deliverStandard("crm", secret, "evt-2"); status != http.StatusNotFound {
		t.Fatalf("a delivery signed with the old secret: %d, want 404", status)
	}
	if _, _, err := tidemark(t, c.env, "", "provider", "create", "--tenant", "acme", "--provider", "crm", "--kind", "standard"); err != nil {
		t.Fatalf("a new provider of the name: %v", err)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/web"
)

const (
	testEncryptionKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	testOrgID         = "00D5e000000AbCdEAK"
)

// sfCLI is a migrated database with tenant acme, the environment the
// commands run in, and a receiver on the same database.
type sfCLI struct {
	t     *testing.T
	env   map[string]string
	store *postgres.Store
	srv   *httptest.Server
}

func newSFCLI(t *testing.T) *sfCLI {
	t.Helper()
	c := &sfCLI{t: t, env: map[string]string{"DATABASE_URL": testdb.NewURL(t), "TIDEMARK_ENCRYPTION_KEY": testEncryptionKey}}
	if _, _, err := tidemark(t, c.env, "", "tenant", "create", "acme"); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(c.env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
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
	return c
}

var sfURL = regexp.MustCompile(`^(https?://[^/]+)(/webhooks/acme/[a-z0-9-]+)\?token=([A-Za-z0-9_-]+)$`)

// deliver posts an outbound message to the path and query of a printed
// webhook URL, on the test receiver, and returns the status.
func (c *sfCLI) deliver(printed, noteID string) int {
	c.t.Helper()
	m := sfURL.FindStringSubmatch(printed)
	if m == nil {
		c.t.Fatalf("%q is not a webhook URL with a token", printed)
	}
	body, err := os.ReadFile(filepath.Join("..", "..", "internal", "provider", "testdata", "salesforce", "contact.xml"))
	if err != nil {
		c.t.Fatal(err)
	}
	body = bytes.ReplaceAll(body, []byte("04l5e00000ZzYxWAAV"), []byte(noteID))
	resp, err := http.Post(c.srv.URL+strings.TrimPrefix(printed, m[1]), "text/xml; charset=utf-8", bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestProviderCreateSalesforceURL: provider create prints, last, the URL
// to paste into Salesforce with a token of at least 128 bits that
// authenticates deliveries.
func TestProviderCreateSalesforceURL(t *testing.T) {
	t.Parallel()
	c := newSFCLI(t)
	create := func(env map[string]string, name string, extra ...string) string {
		t.Helper()
		args := append([]string{"provider", "create", "--tenant", "acme", "--name", name, "--kind", "salesforce", "--org-id", testOrgID}, extra...)
		out, _, err := tidemark(t, env, "", args...)
		if err != nil {
			t.Fatalf("provider create %s: %v\n%s", name, err, out)
		}
		return lastLine(out)
	}
	printed := create(c.env, "sf", "--public-url", "https://hooks.example.com/")
	m := sfURL.FindStringSubmatch(printed)
	if m == nil || m[1] != "https://hooks.example.com" || m[2] != "/webhooks/acme/sf" {
		t.Fatalf("last line %q, want https://hooks.example.com/webhooks/acme/sf?token=...", printed)
	}
	if raw, err := base64.RawURLEncoding.DecodeString(m[3]); err != nil || len(raw)*8 < 128 {
		t.Fatalf("token %q is not at least 128 random bits: %v", m[3], err)
	}
	if status := c.deliver(printed, "04l5e00000Cli0001AAV"); status != http.StatusOK {
		t.Fatalf("delivery with the printed token: %d", status)
	}
	// Another token: its first character changed (to one it is not).
	other := "x"
	if m[3][0] == 'x' {
		other = "y"
	}
	if status := c.deliver(strings.TrimSuffix(printed, m[3])+other+m[3][1:], "04l5e00000Cli0002AAV"); status != http.StatusUnauthorized {
		t.Fatalf("delivery with another token: %d, want 401", status)
	}

	withEnv := map[string]string{"TIDEMARK_PUBLIC_URL": "https://env.example.com"}
	for k, v := range c.env {
		withEnv[k] = v
	}
	if got := create(withEnv, "sf-env"); !strings.HasPrefix(got, "https://env.example.com/webhooks/acme/sf-env?token=") {
		t.Errorf("with TIDEMARK_PUBLIC_URL: %q", got)
	}
	if got := create(c.env, "sf-default"); !strings.HasPrefix(got, "http://127.0.0.1:8080/webhooks/acme/sf-default?token=") {
		t.Errorf("without a public URL: %q", got)
	}
	_, _, err := tidemark(t, c.env, "", "provider", "create", "--tenant", "acme", "--name", "sf-given", "--kind", "salesforce",
		"--org-id", testOrgID, "--secret", "my-own-token-0123456789")
	if err == nil || !strings.Contains(err.Error(), "salesforce providers take no --secret: Tidemark generates the token") {
		t.Fatalf("--secret for salesforce: %v", err)
	}
	// Other kinds still end with their secret.
	out, _, err := tidemark(t, c.env, "", "provider", "create", "--tenant", "acme", "--name", "ship", "--kind", "shippo", "--auth", "token")
	if err != nil || !regexp.MustCompile(`^[A-Za-z0-9_-]{32}$`).MatchString(lastLine(out)) {
		t.Fatalf("shippo token: %v, last line %q", err, lastLine(out))
	}
}

// TestProviderRotateRetireSalesforce: rotate prints the new URL last; the
// previous token works until the next rotation or retire.
func TestProviderRotateRetireSalesforce(t *testing.T) {
	t.Parallel()
	c := newSFCLI(t)
	out, _, err := tidemark(t, c.env, "", "provider", "create", "--tenant", "acme", "--name", "sf", "--kind", "salesforce", "--org-id", testOrgID)
	if err != nil {
		t.Fatal(err)
	}
	first := lastLine(out)
	rotate := func() string {
		t.Helper()
		out, _, err := tidemark(t, c.env, "", "provider", "rotate", "--tenant", "acme", "--name", "sf", "--public-url", "https://hooks.example.com")
		if err != nil || !strings.Contains(out, "previous one stays active") {
			t.Fatalf("rotate: %v\n%s", err, out)
		}
		return lastLine(out)
	}
	second := rotate()
	if !strings.HasPrefix(second, "https://hooks.example.com/webhooks/acme/sf?token=") || second == first {
		t.Fatalf("rotate printed %q", second)
	}
	want := func(step, printed, note string, status int) {
		t.Helper()
		if got := c.deliver(printed, note); got != status {
			t.Errorf("%s: %d, want %d", step, got, status)
		}
	}
	want("first token after one rotation", first, "04l5e00000Rot0001AAV", http.StatusOK)
	want("second token after one rotation", second, "04l5e00000Rot0002AAV", http.StatusOK)
	third := rotate()
	want("first token after two rotations", first, "04l5e00000Rot0003AAV", http.StatusUnauthorized)
	want("second token after two rotations", second, "04l5e00000Rot0004AAV", http.StatusOK)

	out, _, err = tidemark(t, c.env, "", "provider", "retire", "--tenant", "acme", "--name", "sf")
	if err != nil || !strings.HasPrefix(lastLine(out), "retired 1 secret(s) of acme/sf") {
		t.Fatalf("retire: %v\n%s", err, out)
	}
	want("second token after retire", second, "04l5e00000Rot0005AAV", http.StatusUnauthorized)
	want("third token after retire", third, "04l5e00000Rot0006AAV", http.StatusOK)
	if out, _, err = tidemark(t, c.env, "", "provider", "retire", "--tenant", "acme", "--name", "sf"); err != nil || !strings.HasPrefix(lastLine(out), "retired 0 secret(s)") {
		t.Fatalf("second retire: %v\n%s", err, out)
	}
	if _, _, err := tidemark(t, c.env, "", "provider", "rotate", "--tenant", "acme", "--name", "sf", "--secret", "chosen-token-0123456789"); err == nil ||
		!strings.Contains(err.Error(), "generates the token") {
		t.Fatalf("rotate --secret: %v", err)
	}
}

// TestMigrateIssuesSalesforceTokens: a salesforce provider from before
// tokens gets exactly one, not yet shown, however many nodes migrate at once.
func TestMigrateIssuesSalesforceTokens(t *testing.T) {
	t.Parallel()
	c := newSFCLI(t)
	ctx := domain.WithActor(context.Background(), domain.Actor{Kind: domain.ActorCLI, Name: "test"})
	tenant, err := c.store.Tenant(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.store.ConnectProvider(ctx, tenant.ID, "legacy", "salesforce", "", map[string]string{"org_id": testOrgID, "revision_field": "SystemModstamp"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	outs := make([]string, 3)
	for i := range outs {
		wg.Go(func() {
			out, _, err := tidemark(t, c.env, "", "migrate")
			if err != nil {
				t.Error(err)
			}
			outs[i] = out
		})
	}
	wg.Wait()
	if n := strings.Count(strings.Join(outs, ""), "issued a secret to 1 provider(s)"); n != 1 || !strings.Contains(strings.Join(outs, ""), "acme/legacy (salesforce)") {
		t.Fatalf("%d migrations issued a token, want 1:\n%s", n, strings.Join(outs, "\n"))
	}
	if out, _, err := tidemark(t, c.env, "", "migrate"); err != nil || strings.Contains(out, "issued") {
		t.Fatalf("migrate again: %v\n%s", err, out)
	}
	p, err := c.store.ProviderSummary(ctx, tenant.ID, "legacy")
	if err != nil {
		t.Fatal(err)
	}
	info, token, err := c.store.UnshownProviderSecret(ctx, tenant.ID, p.ID)
	if err != nil || p.ActiveSecrets != 1 || info.ID == 0 {
		t.Fatalf("legacy provider: %d active secrets, unshown %v: %v", p.ActiveSecrets, info, err)
	}
	if status := c.deliver(c.srv.URL+"/webhooks/acme/legacy?token="+token, "04l5e00000Mig0001AAV"); status != http.StatusOK {
		t.Fatalf("delivery with the issued token: %d", status)
	}
}

// TestServeRefusesBadTrustedProxies: an unreadable --trusted-proxies stops
// serve before it starts anything.
func TestServeRefusesBadTrustedProxies(t *testing.T) {
	t.Parallel()
	for _, env := range []map[string]string{nil, {"TIDEMARK_TRUSTED_PROXIES": "10.0.0.0/8,proxy.internal"}} {
		args := []string{"serve", "--addr", "127.0.0.1:0"}
		if env == nil {
			args = append(args, "--trusted-proxies", "10.0.0.0/33")
		}
		_, _, err := tidemark(t, env, "", args...)
		if err == nil || !strings.Contains(err.Error(), "--trusted-proxies") || !strings.Contains(err.Error(), "is not a CIDR network") {
			t.Errorf("%v %v: %v, want a refusal naming --trusted-proxies", env, args, err)
		}
	}
}

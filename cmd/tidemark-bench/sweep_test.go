package main

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/cmd/tidemark-bench/internal/pgbench"
	"github.com/tidemark/tidemark/cmd/tidemark-bench/internal/scratch"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/internal/testdb"
)

// The whole sweep runs for real, briefly: the server built from this tree on
// a scratch database, both kinds at two numbers of senders, the floor at
// each, one table with every row. Nothing about the rates is asserted.
func TestBenchIngestSweep(t *testing.T) {
	t.Parallel()
	server := testdb.ServerURL(t) // skips (or fails under CI=true) when no server answers
	var stdout, stderr bytes.Buffer
	args := []string{"ingest", "--senders", "1,2", "--kind", provider.Standard.Name() + "," + provider.HubSpot.Name(),
		"--batch", "5", "--duration", "500ms", "--warmup", "200ms", "--contacts", "1000", "--server-url", server}
	if err := run(context.Background(), args, func(string) string { return "" }, &stdout, &stderr); err != nil {
		t.Fatalf("ingest: %v\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
	}
	out := stdout.String()
	// The floor's rate at the row's clients, its p99 from pgbench's log, the ratio.
	ratio := `[\d ]+ \(\d\) +[\d.]+ ms +\d+\.\d\d$`
	if pgbench.Find() == "" {
		ratio = `no pgbench +- +-$`
	}
	for _, row := range []string{
		`standard +1 +1 `, `standard +1 +2 `, provider.HubSpot.Name() + ` +5 +1 `, provider.HubSpot.Name() + ` +5 +2 `,
	} {
		// Rates, p50, p99, no failure, a group size (n/a before group commit), RSS, floor and ratio.
		want := regexp.MustCompile(`(?m)^` + row + `+[\d ]+  +[\d ]+  +[\d.]+ ms +[\d.]+ ms +none +(n/a|\d+\.\d) +\d+ MiB .*` + ratio)
		if !want.MatchString(out) {
			t.Errorf("no row %q matching %s in:\n%s", row, want, out)
		}
	}
	if n := strings.Count(out, "\n"); n < 5 {
		t.Errorf("only %d lines:\n%s", n, out)
	}
	if pgbench.Find() != "" && (!strings.Contains(out, "): 1 client: ") || !strings.Contains(out, "; 2 clients: ")) {
		t.Errorf("the floor did not run at 1 and 2 clients:\n%s", out)
	}
	if !regexp.MustCompile(`server RSS after all the load: \d+ MiB \(peak \d+ MiB\)`).MatchString(out) {
		t.Errorf("no server RSS:\n%s", out)
	}
}

// Senders spread over tenants reach every one of them, for both kinds: a
// brief real run at one and at three tenants, after which the scratch
// database holds accepted deliveries of each tenant's two providers.
func TestBenchIngestTenants(t *testing.T) {
	t.Parallel()
	server := testdb.ServerURL(t) // skips (or fails under CI=true) when no server answers
	ctx := context.Background()
	var stdout, stderr bytes.Buffer
	env := cliEnv{getenv: func(string) string { return "" }, stdout: &stdout, stderr: &stderr}
	cfg, err := env.benchFlags([]string{"--tenants", "1,3", "--senders", "3", "--kind", provider.Standard.Name() + "," + provider.HubSpot.Name(),
		"--batch", "5", "--duration", "500ms", "--warmup", "200ms", "--contacts", "1000", "--pgbench=false", "--server-url", server})
	if err != nil {
		t.Fatal(err)
	}
	dbs, err := scratch.Open(ctx, server, false, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer dbs.Close(ctx)
	name := "tidemark_bench_test_" + randomHex(6)
	res, err := env.sweep(ctx, cfg, dbs, name)
	if err == nil {
		err = res.problems()
	}
	if err != nil {
		t.Fatalf("ingest: %v\nstderr:\n%s", err, &stderr)
	}
	printSweep(&stdout, cfg, res)
	out := stdout.String()
	for _, row := range []string{`standard +1 +3 `, `standard, 3 tenants +1 +3 `, provider.HubSpot.Name() + ` +5 +3 `,
		provider.HubSpot.Name() + `, 3 tenants +5 +3 `} {
		if !regexp.MustCompile(`(?m)^` + row + `+[\d ]+  +[\d ]+  +[\d.]+ ms +[\d.]+ ms +none `).MatchString(out) {
			t.Errorf("no row %q in:\n%s", row, out)
		}
	}

	url, err := scratch.URL(server, name)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT t.slug, p.name, count(d.id) FROM tenants t JOIN providers p ON p.tenant_id = t.id
		LEFT JOIN deliveries d ON d.tenant_id = t.id AND d.provider_id = p.id AND d.status = 200
		GROUP BY t.slug, p.name ORDER BY t.slug, p.name`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for rows.Next() {
		var slug, name string
		var n int
		if err := rows.Scan(&slug, &name, &n); err != nil {
			t.Fatal(err)
		}
		got[slug+"/"+name] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 6 {
		t.Errorf("providers with their accepted deliveries: %v; want the two of bench, bench-1 and bench-2", got)
	}
	for _, slug := range []string{"bench", "bench-1", "bench-2"} {
		for _, p := range []string{benchProvider, batchProvider} {
			if got[slug+"/"+p] == 0 {
				t.Errorf("tenant %s received no delivery to %s: %v", slug, p, got)
			}
		}
	}
}

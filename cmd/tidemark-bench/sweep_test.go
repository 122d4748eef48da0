package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/cmd/tidemark-bench/internal/pgbench"
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

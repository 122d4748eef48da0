package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"testing"

	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/internal/testdb"
)

// ingest --citus runs the rows on plain PostgreSQL, then on a Citus cluster
// it starts, and prints both and their ratio. Briefly, for real; nothing
// about the rates is asserted.
func TestBenchIngestOnCitus(t *testing.T) {
	if os.Getenv("TIDEMARK_E2E") != "1" {
		t.Skip("starts a Citus cluster (scripts/citus-build): set TIDEMARK_E2E=1")
	}
	t.Parallel()
	server := testdb.ServerURL(t)
	var stdout, stderr bytes.Buffer
	args := []string{"ingest", "--citus", "--senders", "2", "--kind", provider.Standard.Name(), "--duration", "500ms",
		"--warmup", "200ms", "--contacts", "1000", "--pgbench=false", "--server-url", server}
	if err := run(context.Background(), args, func(string) string { return "" }, &stdout, &stderr); err != nil {
		t.Fatalf("ingest --citus: %v\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
	}
	out := stdout.String()
	for _, want := range []string{
		`(?m)^On Citus: `,
		// Both tables' rows: rates, p50, p99 and no failure.
		`(?s)standard +1 +2 +[\d ]+  +[\d ]+  +[\d.]+ ms +[\d.]+ ms +none .*standard +1 +2 +[\d ]+  +[\d ]+  +[\d.]+ ms +[\d.]+ ms +none `,
		// The comparison: both rates, the ratio, the ratio to the floor
		// (none run here), both p99s and the floor's.
		`(?m)^standard +2 +[\d ]+  +[\d ]+  +\d+\.\d\d +n/a +[\d.]+ ms +[\d.]+ ms +n/a$`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("no match for %s in:\n%s", want, out)
		}
	}
}

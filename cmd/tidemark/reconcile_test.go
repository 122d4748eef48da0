package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/cmd/tidemark/internal/demo"
	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
)

func TestAuditCommand(t *testing.T) {
	t.Parallel()
	env, conn := dbEnv(t)
	ctx := context.Background()
	for _, slug := range []string{"acme", "globex"} {
		if _, _, err := tidemark(t, env, "", "tenant", "create", slug); err != nil {
			t.Fatal(err)
		}
	}
	out, _, err := tidemark(t, env, "", "audit")
	if err != nil || out != "no violations of the 8 invariants (every tenant)\n" {
		t.Fatalf("audit of a sound database: %v\n%s", err, out)
	}

	// The same person twice, by the case of their email.
	if _, err := conn.Exec(ctx, `INSERT INTO people (tenant_id, email) SELECT id, e FROM tenants, unnest(ARRAY['ann@example.com', 'Ann@example.com']) e
		WHERE slug = 'acme'`); err != nil {
		t.Fatal(err)
	}
	out, _, err = tidemark(t, env, "", "audit")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err == nil || err.Error() != "audit found 1 violation" || len(lines) != 2 ||
		!strings.HasPrefix(lines[0], "duplicate_person: tenant acme, email ann@example.com: people ") ||
		lines[1] != "1 violation (duplicate_person 1) of the 8 invariants (every tenant)" {
		t.Fatalf("audit with a duplicate: %v\n%s", err, out)
	}
	if out, _, err = tidemark(t, env, "", "audit", "--tenant", "globex"); err != nil || out != "no violations of the 8 invariants (tenant globex)\n" {
		t.Fatalf("audit --tenant globex: %v\n%s", err, out)
	}
	if _, _, err = tidemark(t, env, "", "audit", "--tenant", "nobody"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("audit of an unknown tenant: %v", err)
	}
	// The runs across every tenant were stored, the last one last.
	var stored int
	var last int64
	if err := conn.QueryRow(ctx, `SELECT count(*), (array_agg((counts->>'duplicate_person')::bigint ORDER BY id DESC))[1]
		FROM reconciliation_reports`).Scan(&stored, &last); err != nil || stored != 2 || last != 1 {
		t.Fatalf("%d reports stored, the last with %d duplicates: %v", stored, last, err)
	}
}

// auditChild is set in the environment of a copy of this test binary that
// runs main with the arguments that follow it.
const auditChild = "TIDEMARK_TEST_MAIN_ARGS"

// The process exits with status 1 when the audit finds violations, 0 when
// it finds none, and says so on its last line.
func TestAuditExitStatus(t *testing.T) {
	if args := os.Getenv(auditChild); args != "" {
		os.Args = append([]string{"tidemark"}, strings.Fields(args)...)
		main()
		os.Exit(0)
	}
	t.Parallel()
	env, conn := dbEnv(t)
	if _, _, err := tidemark(t, env, "", "tenant", "create", "acme"); err != nil {
		t.Fatal(err)
	}
	audit := func() (int, string) {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^TestAuditExitStatus$")
		cmd.Env = append(os.Environ(), auditChild+"=audit", "DATABASE_URL="+env["DATABASE_URL"])
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), lastLine(stderr.String())
	}
	if code, _ := audit(); code != 0 {
		t.Fatalf("sound database: exit status %d", code)
	}
	if _, err := conn.Exec(context.Background(), `INSERT INTO accounts (tenant_id, domain, name)
		SELECT id, d, d FROM tenants, unnest(ARRAY['example.com', 'EXAMPLE.COM']) d`); err != nil {
		t.Fatal(err)
	}
	if code, last := audit(); code != 1 || last != "tidemark: audit found 1 violation" {
		t.Fatalf("with a violation: exit status %d, last line %q", code, last)
	}
}

// The demo's history is sound: the console's reconciliation page of a
// fresh embedded database shows no violation.
func TestDemoReconciles(t *testing.T) {
	t.Parallel()
	ctx := domain.WithActor(context.Background(), domain.Actor{Kind: domain.ActorCLI, Name: "test"})
	store, err := postgres.New(testdb.New(t), []byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := demo.Create(ctx, store); err != nil {
		t.Fatal(err)
	}
	if err := demo.Seed(ctx, store, io.Discard); err != nil {
		t.Fatal(err)
	}
	r, err := store.Reconcile(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range r.Violations {
		t.Error(v)
	}
}

func TestHistoryRetentionFlag(t *testing.T) {
	t.Parallel()
	env, _ := dbEnv(t)
	want := "history retention must be at least 7 days (168h), got 72h; pass a longer --history-retention"
	for _, cmd := range [][]string{{"cleanup"}, {"serve", "--addr", "127.0.0.1:0"}} {
		if _, _, err := tidemark(t, env, "", append(cmd, "--history-retention", "72h")...); err == nil || err.Error() != want {
			t.Errorf("%s --history-retention 72h: %v, want %q", cmd[0], err, want)
		}
	}
	if out, _, err := tidemark(t, env, "", "cleanup", "--history-retention", "2160h"); err != nil || !strings.Contains(out, "expired idempotency keys") {
		t.Fatalf("cleanup --history-retention 2160h: %v\n%s", err, out)
	}
}

package main

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
)

// TestTenantLifecycleCommands: tenant list, rename, archive, unarchive and
// delete, each audited outside any tenant; delete without --confirm says
// what would go and erases nothing.
func TestTenantLifecycleCommands(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": testdb.NewURL(t), "TIDEMARK_ENCRYPTION_KEY": testEncryptionKey, "USER": "ann"}
	run := func(args ...string) string {
		t.Helper()
		out, _, err := tidemark(t, env, "", args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return out
	}
	run("tenant", "create", "acme", "--name", "Acme Corp")
	run("tenant", "create", "globex")
	run("provider", "create", "--tenant", "acme", "--name", "crm", "--kind", "standard")
	run("token", "create", "--tenant", "acme", "--name", "ci")

	list := func() []string {
		t.Helper()
		lines := strings.Split(strings.TrimSuffix(run("tenant", "list"), "\n"), "\n")
		for i, l := range lines {
			lines[i] = strings.Join(strings.Fields(l), " ")
		}
		return lines
	}
	created := regexp.MustCompile(` \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`)
	got := list()
	if len(got) != 3 || got[0] != "SLUG NAME STATUS CREATED" || !created.MatchString(got[1]) ||
		created.ReplaceAllString(got[1], "") != "acme Acme Corp active" || created.ReplaceAllString(got[2], "") != "globex globex active" {
		t.Fatalf("tenant list:\n%s", strings.Join(got, "\n"))
	}

	if out := run("tenant", "rename", "acme", "--name", "Acme Inc"); out != "renamed tenant acme: Acme Inc\n" {
		t.Fatalf("rename: %q", out)
	}
	if _, _, err := tidemark(t, env, "", "tenant", "rename", "acme", "--name", " "); domain.ErrorCode(err) != domain.EINVALID {
		t.Fatalf("rename to nothing: %v", err)
	}
	run("tenant", "archive", "acme")
	if got := list(); created.ReplaceAllString(got[1], "") != "acme Acme Inc archived" {
		t.Fatalf("after archive: %q", got[1])
	}
	if _, _, err := tidemark(t, env, "", "tenant", "archive", "acme"); err == nil || !strings.Contains(err.Error(), "archived already") {
		t.Fatalf("archive twice: %v", err)
	}
	if out := run("tenant", "unarchive", "acme"); out != "unarchived tenant acme\n" {
		t.Fatalf("unarchive: %q", out)
	}

	// Without --confirm: what would go, and nothing goes.
	out, _, err := tidemark(t, env, "", "tenant", "delete", "acme")
	if domain.ErrorCode(err) != domain.EINVALID || !strings.Contains(err.Error(), "run again with --confirm") ||
		!strings.HasPrefix(out, "tenant acme (Acme Inc, active) would be deleted with ") ||
		!strings.Contains(out, "\n  providers 1\n") || !strings.Contains(out, "\n  api_tokens 1\n") {
		t.Fatalf("delete without --confirm: %v\n%s", err, out)
	}
	if got := list(); len(got) != 3 {
		t.Fatalf("deleted without --confirm: %v", got)
	}
	conn, err := pgx.Connect(context.Background(), env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var acmeID int64
	if err := conn.QueryRow(context.Background(), `SELECT id FROM tenants WHERE slug = 'acme'`).Scan(&acmeID); err != nil {
		t.Fatal(err)
	}
	out = run("tenant", "delete", "acme", "--confirm")
	if !strings.HasPrefix(out, "deleted tenant acme: ") || !strings.Contains(out, "\n  providers 1\n") {
		t.Fatalf("delete: %q", out)
	}
	if got := list(); len(got) != 2 || !strings.HasPrefix(got[1], "globex ") {
		t.Fatalf("after delete: %v", got)
	}
	rows, _ := conn.Query(context.Background(), `SELECT DISTINCT table_name FROM information_schema.columns
		WHERE column_name = 'tenant_id' AND table_schema = current_schema() AND table_name <> 'audit_log'`)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tables) < 30 {
		t.Fatalf("tenant tables %v: %v", tables, err)
	}
	for _, table := range tables {
		var n int
		if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM "+pgx.Identifier{table}.Sanitize()+" WHERE tenant_id = $1", acmeID).Scan(&n); err != nil || n != 0 {
			t.Errorf("%s: %d rows of the deleted tenant (%v)", table, n, err)
		}
	}
	rows, _ = conn.Query(context.Background(), `SELECT actor || ' ' || action || ' ' || target FROM audit_log
		WHERE tenant_id = 0 AND action LIKE 'tenant\_%' ORDER BY id`)
	audit, err := pgx.CollectRows(rows, pgx.RowTo[string])
	want := "ann tenant_rename tenant acme\nann tenant_archive tenant acme\nann tenant_unarchive tenant acme\nann tenant_delete tenant acme"
	if err != nil || strings.Join(audit, "\n") != want {
		t.Fatalf("audit (%v):\n%s\nwant:\n%s", err, strings.Join(audit, "\n"), want)
	}
	if _, _, err := tidemark(t, env, "", "tenant", "delete", "acme", "--confirm"); err == nil || !strings.Contains(err.Error(), `tenant "acme" not found`) {
		t.Fatalf("delete again: %v", err)
	}
}

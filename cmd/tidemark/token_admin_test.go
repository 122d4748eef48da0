package main

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark/internal/testdb"
)

// TestAdminTokenCommands: token create --admin answers for an enabled
// admin named by --by and prints the token last; a tenant, a missing --by
// or an operator who is not an admin is refused; token list --admin shows
// it working, and token revoke --admin --id revokes it.
func TestAdminTokenCommands(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": testdb.NewURL(t)}
	for _, args := range [][]string{{"migrate"}, {"tenant", "create", "acme"}} {
		if _, _, err := tidemark(t, env, "", args...); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	for _, u := range []struct {
		email string
		admin bool
	}{{"root@example.com", true}, {"ann@example.com", false}} {
		args := []string{"user", "create", "--email", u.email, "--password-stdin"}
		if u.admin {
			args = append(args, "--admin")
		}
		if _, _, err := tidemark(t, env, "a long enough password\n", args...); err != nil {
			t.Fatalf("user create %s: %v", u.email, err)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--admin"}, "--admin requires --by"},
		{[]string{"--admin", "--by", "root@example.com", "--tenant", "acme"}, "not both"},
		{[]string{"--by", "root@example.com", "--tenant", "acme"}, "give it with --admin"},
		{[]string{}, "--tenant is required"},
		{[]string{"--admin", "--by", "ann@example.com"}, "not an enabled admin"},
		{[]string{"--admin", "--by", "nobody@example.com"}, "no operator"},
	} {
		if _, _, err := tidemark(t, env, "", append([]string{"token", "create"}, c.args...)...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("token create %v: %v, want %q", c.args, err, c.want)
		}
	}
	out, _, err := tidemark(t, env, "", "token", "create", "--admin", "--by", "Root@Example.com", "--name", "ops", "--expires", "90d")
	if err != nil || !strings.HasPrefix(lastLine(out), "tmka_") || !strings.Contains(out, "answering for admin root@example.com") {
		t.Fatalf("token create --admin: %v\n%s", err, out)
	}
	out, _, err = tidemark(t, env, "", "token", "list", "--admin")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || len(lines) != 2 || !strings.Contains(lines[1], "ops") || !strings.Contains(lines[1], "root@example.com") ||
		!strings.Contains(lines[1], "works") {
		t.Fatalf("token list --admin: %v\n%s", err, out)
	}
	id := strings.Fields(lines[1])[0]
	if _, _, err := tidemark(t, env, "", "token", "list"); err == nil || !strings.Contains(err.Error(), "--admin is required") {
		t.Errorf("token list without --admin: %v", err)
	}
	if out, _, err := tidemark(t, env, "", "token", "revoke", "--admin", "--id", id); err != nil || !strings.Contains(out, "revoked") {
		t.Fatalf("token revoke: %v\n%s", err, out)
	}
	if out, _, _ := tidemark(t, env, "", "token", "list", "--admin"); !strings.Contains(out, "revoked") {
		t.Errorf("after revoke:\n%s", out)
	}
	pool := checkerPool(t, env["DATABASE_URL"])
	var n int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM audit_log WHERE tenant_id = 0 AND action IN ('admin_token_create', 'admin_token_revoke')`).
		Scan(&n); err != nil || n != 2 {
		t.Errorf("audited %d (%v), want the create and the revoke", n, err)
	}
}

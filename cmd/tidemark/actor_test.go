package main

import (
	"errors"
	"os/user"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/internal/testdb"
)

// TestCLIActorWithoutUSER: a change made from the command line where $USER
// is unset (a container, cron) is recorded as the process's OS user, not
// "unknown", and the token list names that user too.
func TestCLIActorWithoutUSER(t *testing.T) {
	t.Parallel()
	want := "cli"
	if u, err := user.Current(); err == nil && u.Username != "" {
		want = u.Username
	}
	env := map[string]string{"DATABASE_URL": testdb.NewURL(t)} // no USER
	if _, _, err := tidemark(t, env, "", "tenant", "create", "acme"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tidemark(t, env, "", "token", "create", "--tenant", "acme", "--name", "ci"); err != nil {
		t.Fatal(err)
	}
	pool := checkerPool(t, env["DATABASE_URL"])
	var kind, actor, address string
	err := pool.QueryRow(t.Context(), `SELECT actor_kind, actor, client_address FROM audit_log WHERE action = 'token_create'`).
		Scan(&kind, &actor, &address)
	if err != nil {
		t.Fatal(err)
	}
	if kind != "cli" || actor != want || address != "" {
		t.Errorf("token_create recorded as %s %q from %q, want cli %q", kind, actor, address, want)
	}
	var by string
	if err := pool.QueryRow(t.Context(), `SELECT created_by FROM api_tokens`).Scan(&by); err != nil || by != "tidemark CLI ("+want+")" {
		t.Errorf("token created by %q (%v)", by, err)
	}
}

// TestCLIUser: $USER first, then the account of the uid, then "cli".
func TestCLIUser(t *testing.T) {
	env := func(v string) func(string) string { return func(string) string { return v } }
	found := func() (*user.User, error) { return &user.User{Username: "deploy"}, nil }
	failed := func() (*user.User, error) { return nil, errors.New("no passwd entry") }
	for _, tc := range []struct {
		user    string
		current func() (*user.User, error)
		want    string
	}{
		{"ann", failed, "ann"},
		{"", found, "deploy"},
		{"  ", found, "deploy"},
		{"", failed, "cli"},
		{"", func() (*user.User, error) { return &user.User{}, nil }, "cli"},
	} {
		if got := cliUser(env(tc.user), tc.current); got != tc.want || strings.Contains(got, "unknown") {
			t.Errorf("USER=%q: %q, want %q", tc.user, got, tc.want)
		}
	}
}

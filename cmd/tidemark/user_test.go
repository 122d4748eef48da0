package main

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
)

// TestUserPassword resets an operator's password from the command line:
// the new one signs in, the old one no longer does, their sessions end,
// and the audit log names the OS user who did it.
func TestUserPassword(t *testing.T) {
	t.Parallel()
	url := testdb.NewURL(t)
	env := map[string]string{"DATABASE_URL": url, "USER": "deploy"}
	if _, _, err := tidemark(t, env, "", "migrate"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tidemark(t, env, "correct horse battery\n", "user", "create", "--email", "ops@example.com", "--password-stdin"); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	store, err := postgres.Open(postgres.Pools{Write: pool}, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := domain.WithActor(context.Background(), domain.Actor{Kind: domain.ActorOperator, Name: "ops@example.com"})
	before, err := store.Authenticate(ctx, "ops@example.com", "correct horse battery", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}

	out, _, err := tidemark(t, env, "a fresh passphrase\n", "user", "password", "--email", "OPS@example.com", "--password-stdin")
	if err != nil || !strings.Contains(out, "set a new password for operator ops@example.com") {
		t.Fatalf("user password: %v\n%s", err, out)
	}
	if _, err := store.Authenticate(ctx, "ops@example.com", "correct horse battery", "192.0.2.1"); domain.ErrorCode(err) != domain.EUNAUTHORIZED {
		t.Fatalf("the old password: %v", err)
	}
	after, err := store.Authenticate(ctx, "ops@example.com", "a fresh passphrase", "192.0.2.1")
	if err != nil || after.SessionEpoch != before.SessionEpoch+1 {
		t.Fatalf("the new password: %+v, %v (epoch before %d)", after, err, before.SessionEpoch)
	}
	entries, _, err := store.AuditLog(ctx, domain.AuditQuery{Action: domain.AuditOperatorPassword}, domain.Page{})
	if err != nil || len(entries) != 1 || entries[0].Actor != "deploy" || entries[0].ActorKind != domain.ActorCLI ||
		entries[0].Target != "ops@example.com" {
		t.Fatalf("audit entries %+v, %v", entries, err)
	}

	for _, c := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"a fresh passphrase\n", []string{"--email", "ops@example.com"}, "--email and --password-stdin are required"},
		{"", []string{"--email", "ops@example.com", "--password-stdin"}, "no password on standard input"},
		{"short\n", []string{"--email", "ops@example.com", "--password-stdin"}, "at least 8 characters"},
		{"a fresh passphrase\n", []string{"--email", "nobody@example.com", "--password-stdin"}, `there is no operator "nobody@example.com"`},
	} {
		if _, _, err := tidemark(t, env, c.stdin, append([]string{"user", "password"}, c.args...)...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("user password %v: %v, want %q", c.args, err, c.want)
		}
	}
}

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/internal/testdb"
)

func TestTokenAndMemberFlags(t *testing.T) {
	t.Parallel()
	url := testdb.NewURL(t)
	env := map[string]string{"DATABASE_URL": url, "USER": "ops"}
	if _, _, err := tidemark(t, env, "", "tenant", "create", "acme"); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })

	for _, tc := range []struct {
		name   string
		args   []string
		access string
		expiry time.Duration // 0: never
		fails  string        // the error's text when it must fail
	}{
		{"defaults", nil, "write", 0, ""},
		{"read for 90 days", []string{"--access", "read", "--expires", "90d"}, "read", 90 * 24 * time.Hour, ""},
		{"12 hours", []string{"--expires", "12h"}, "write", 12 * time.Hour, ""},
		{"never", []string{"--expires", "never"}, "write", 0, ""},
		{"unknown access", []string{"--access", "admin"}, "", 0, "--access: access must be read or write"},
		{"months", []string{"--expires", "3m"}, "", 0, "--expires: expiry must be whole days or hours"},
		{"too long", []string{"--expires", "3651d"}, "", 0, "--expires"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"token", "create", "--tenant", "acme", "--name", tc.name}, tc.args...)
			out, _, err := tidemark(t, env, "", args...)
			if tc.fails != "" {
				if err == nil || !strings.Contains(err.Error(), tc.fails) {
					t.Fatalf("%v: %v, want %q", tc.args, err, tc.fails)
				}
				return
			}
			if err != nil || !strings.HasPrefix(lastLine(out), "tmk_") {
				t.Fatalf("%v: %v, last line %q", tc.args, err, lastLine(out))
			}
			var (
				access, by string
				left       *time.Duration
			)
			err = conn.QueryRow(context.Background(), `SELECT access, created_by, expires_at - now() FROM api_tokens WHERE name = $1`, tc.name).
				Scan(&access, &by, &left)
			if err != nil || access != tc.access || by != "tidemark CLI (ops)" || (left == nil) != (tc.expiry == 0) ||
				(left != nil && (*left > tc.expiry || *left < tc.expiry-time.Minute)) {
				t.Fatalf("stored access %q, by %q, expiring in %v (%v); want %q, in %v", access, by, left, err, tc.access, tc.expiry)
			}
		})
	}

	for _, tc := range []struct {
		args  []string
		role  string // stored in acme; "" for no membership
		fails string
	}{
		{[]string{"--tenant", "acme"}, "operator", ""},
		{[]string{"--tenant", "acme", "--role", "viewer"}, "viewer", ""},
		{[]string{"--tenant", "acme", "--role", "owner"}, "owner", ""},
		{nil, "", ""},
		{[]string{"--role", "owner"}, "", "give --tenant too"},
		{[]string{"--tenant", "acme", "--role", "king"}, "", "role must be viewer, operator or owner"},
	} {
		email := "u" + strings.Join(tc.args, "") + "@example.com"
		_, _, err := tidemark(t, env, "correct horse battery\n", append([]string{"user", "create", "--email", email, "--password-stdin"}, tc.args...)...)
		if tc.fails != "" {
			if err == nil || !strings.Contains(err.Error(), tc.fails) {
				t.Errorf("%v: %v, want %q", tc.args, err, tc.fails)
			}
			continue
		}
		var role string
		err = conn.QueryRow(context.Background(), `
SELECT coalesce((SELECT m.role FROM memberships m JOIN users u ON u.id = m.user_id WHERE u.email = $1), '')`, email).Scan(&role)
		if err != nil || role != tc.role {
			t.Errorf("%v: role %q (%v), want %q", tc.args, role, err, tc.role)
		}
	}
}

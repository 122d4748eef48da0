package main

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/internal/testdb"
)

// TestDestinationCommands: a destination on loopback only with
// --allow-private, its secret as the last line, then list, rotate, pause,
// resume, rewind and delete, each audited with the OS user.
func TestDestinationCommands(t *testing.T) {
	t.Parallel()
	dbURL := testdb.NewURL(t)
	env := map[string]string{"DATABASE_URL": dbURL, "TIDEMARK_ENCRYPTION_KEY": testEncryptionKey, "USER": "ann"}
	if _, _, err := tidemark(t, env, "", "tenant", "create", "acme"); err != nil {
		t.Fatal(err)
	}
	secretLine := regexp.MustCompile(`^whsec_[A-Za-z0-9+/=]{40,}$`)

	noKey := map[string]string{"DATABASE_URL": dbURL}
	if _, _, err := tidemark(t, noKey, "", "destination", "create", "--tenant", "acme", "--url", "http://127.0.0.1:9/hook",
		"--allow-private"); err == nil || !strings.Contains(err.Error(), "TIDEMARK_ENCRYPTION_KEY is not set") {
		t.Fatalf("create without a key: %v; want a refusal saying how to set one", err)
	}
	out, _, err := tidemark(t, env, "", "destination", "create", "--tenant", "acme", "--url", "http://127.0.0.1:9/hook")
	if err == nil || !strings.Contains(err.Error(), "url: host 127.0.0.1 is a loopback address") || !strings.Contains(err.Error(), "--allow-private") || out != "" {
		t.Fatalf("create to loopback without --allow-private: %v, %q; want a refusal naming the address", err, out)
	}
	out, _, err = tidemark(t, env, "", "destination", "create", "--tenant", "acme", "--url", "http://127.0.0.1:9/hook",
		"--types", "record.applied,record.erased", "--max-in-flight", "2", "--allow-private")
	if err != nil || !strings.HasPrefix(out, "destination 1: http://127.0.0.1:9/hook\n") || !secretLine.MatchString(lastLine(out)) {
		t.Fatalf("create --allow-private: %v\n%s", err, out)
	}
	first := lastLine(out)
	out, _, err = tidemark(t, env, "", "destination", "create", "--tenant", "acme", "--nats", "nats://127.0.0.1:4222",
		"--subject", "crm.changes", "--allow-private")
	if err != nil || !strings.HasPrefix(out, "destination 2: nats://127.0.0.1:4222 crm.changes.>\n") || !secretLine.MatchString(lastLine(out)) {
		t.Fatalf("create NATS: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--url", "http://127.0.0.1:9/", "--provider", "nope", "--allow-private"}, `provider "nope"`},
		{[]string{"--url", "http://127.0.0.1:9/", "--types", "record.created", "--allow-private"}, "is not a change type"},
		{[]string{"--url", "http://127.0.0.1:9/", "--max-in-flight", "0"}, "--max-in-flight: give 1 to 64"},
		{[]string{"--nats", "nats://127.0.0.1:4222", "--allow-private"}, "subject is required"},
		{[]string{}, "--tenant is required, and --url, or --nats with --subject"},
	} {
		_, _, err := tidemark(t, env, "", append([]string{"destination", "create", "--tenant", "acme"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("create %v: %v, want %q", tc.args, err, tc.want)
		}
	}

	out, _, err = tidemark(t, env, "", "destination", "list", "--tenant", "acme")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "ID STATUS TARGET FILTERS PENDING LAG" ||
		strings.Join(strings.Fields(lines[1]), " ") != "1 active http://127.0.0.1:9/hook types=record.applied,record.erased 0 -" {
		t.Fatalf("list: %v\n%s", err, out)
	}

	out, _, err = tidemark(t, env, "", "destination", "rotate", "--tenant", "acme", "--id", "1")
	if err != nil || !secretLine.MatchString(lastLine(out)) || lastLine(out) == first {
		t.Fatalf("rotate: %v\n%s", err, out)
	}
	for _, args := range [][]string{
		{"pause", "--tenant", "acme", "--id", "1"},
		{"resume", "--tenant", "acme", "--id", "1"},
		{"rewind", "--tenant", "acme", "--id", "1", "--after", ""},
		{"pause", "--tenant", "acme", "--id", "2"},
		{"delete", "--tenant", "acme", "--id", "1"},
	} {
		if out, _, err := tidemark(t, env, "", append([]string{"destination"}, args...)...); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	if _, _, err := tidemark(t, env, "", "destination", "rewind", "--tenant", "acme", "--id", "2"); err == nil ||
		!strings.Contains(err.Error(), "--tenant, --id and --after are required") {
		t.Fatalf("rewind without --after: %v", err)
	}
	if _, _, err := tidemark(t, env, "", "destination", "pause", "--tenant", "acme", "--id", "1"); err == nil ||
		!strings.Contains(err.Error(), "destination 1 not found") {
		t.Fatalf("pause a deleted destination: %v", err)
	}
	out, _, _ = tidemark(t, env, "", "destination", "list", "--tenant", "acme")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[1], "2 ") ||
		!strings.Contains(lines[1], " paused ") {
		t.Fatalf("list after delete:\n%s", out)
	}

	pool := checkerPool(t, dbURL)
	rows, err := pool.Query(context.Background(), `SELECT actor_kind || ' ' || actor || ' ' || action || ' ' || target || ': ' || summary
		FROM audit_log WHERE action LIKE 'destination%' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var audit []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		audit = append(audit, line)
	}
	if len(audit) != 8 || audit[0] != "cli ann destination_create destination 1: http://127.0.0.1:9/hook; types record.applied,record.erased; "+
		"max in flight 2; private addresses allowed" || !strings.HasPrefix(audit[7], "cli ann destination_delete destination 1:") {
		t.Fatalf("audit:\n%s", strings.Join(audit, "\n"))
	}
	if strings.Contains(strings.Join(audit, "\n"), "whsec_") {
		t.Fatal("the audit log holds a secret")
	}
}

// TestDestinationCreateAlerts: --types takes alert types beside record
// types, --format slack takes alert types only (alert.* by default), and
// the list shows the format.
func TestDestinationCreateAlerts(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": testdb.NewURL(t), "TIDEMARK_ENCRYPTION_KEY": testEncryptionKey, "USER": "ann"}
	if _, _, err := tidemark(t, env, "", "tenant", "create", "acme"); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--types", "record.*,alert.*"},
		{"--format", "slack"},
	} {
		args = append([]string{"destination", "create", "--tenant", "acme", "--url", "http://127.0.0.1:9/hook", "--allow-private"}, args...)
		if out, _, err := tidemark(t, env, "", args...); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--format", "slack", "--types", "record.*"}, "format slack takes alert types only"},
		{[]string{"--format", "teams"}, "format must be standard or slack"},
		{[]string{"--types", "alert.created"}, "nor an alert type (alert.fired, alert.resolved) or alert.*"},
	} {
		args := append([]string{"destination", "create", "--tenant", "acme", "--url", "http://127.0.0.1:9/hook", "--allow-private"}, tc.args...)
		if _, _, err := tidemark(t, env, "", args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("create %v: %v, want %q", tc.args, err, tc.want)
		}
	}
	out, _, err := tidemark(t, env, "", "destination", "list", "--tenant", "acme")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || len(lines) != 3 ||
		strings.Join(strings.Fields(lines[1]), " ") != "1 active http://127.0.0.1:9/hook types=record.*,alert.* 0 -" ||
		strings.Join(strings.Fields(lines[2]), " ") != "2 active http://127.0.0.1:9/<redacted> types=alert.* format=slack 0 -" {
		t.Fatalf("list: %v\n%s", err, out)
	}
}

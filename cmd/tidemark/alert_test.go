package main

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/internal/testdb"
)

// TestAlertCommands: alert set changes only what it is given and prints
// the setting, audited with the OS user; bad values are refused naming
// the flag; alert list shows every rule and the alerts firing now, of
// its tenant only.
func TestAlertCommands(t *testing.T) {
	t.Parallel()
	dbURL := testdb.NewURL(t)
	env := map[string]string{"DATABASE_URL": dbURL, "USER": "ann"}
	for _, slug := range []string{"acme", "globex"} {
		if _, _, err := tidemark(t, env, "", "tenant", "create", slug); err != nil {
			t.Fatal(err)
		}
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rule", "refusals", "--threshold", "50", "--window", "10m"}, "alert rule refusals in acme: enabled, threshold 50, window 10m0s\n"},
		{[]string{"--rule", "refusals", "--disable"}, "alert rule refusals in acme: disabled, threshold 50, window 10m0s\n"},
		{[]string{"--rule", "refusals", "--enable", "--window", "90s"}, "alert rule refusals in acme: enabled, threshold 50, window 1m30s\n"},
		{[]string{"--rule", "provider_silent", "--window", "12h"}, "alert rule provider_silent in acme: enabled, threshold 1, window 12h0m0s\n"},
	} {
		out, _, err := tidemark(t, env, "", append([]string{"alert", "set", "--tenant", "acme"}, tc.args...)...)
		if err != nil || out != tc.want {
			t.Fatalf("alert set %v: %v %q, want %q", tc.args, err, out, tc.want)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rule", "nope"}, `--rule: no alert rule "nope"`},
		{[]string{"--rule", "refusals", "--threshold", "0"}, "threshold must be at least 1"},
		{[]string{"--rule", "refusals", "--window", "soon"}, "window must be a duration"},
		{[]string{"--rule", "refusals", "--window", "30s"}, "window must be from 1m0s"},
		{[]string{"--rule", "refusals", "--disable", "--enable"}, "not both"},
		{[]string{}, "--tenant and --rule are required"},
	} {
		args := append([]string{"alert", "set"}, tc.args...)
		if len(tc.args) > 0 {
			args = append(args, "--tenant", "acme")
		}
		if _, _, err := tidemark(t, env, "", args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("alert set %v: %v, want %q", tc.args, err, tc.want)
		}
	}

	pool := checkerPool(t, dbURL)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `
INSERT INTO alerts (tenant_id, rule, provider, subject, summary, value, threshold, window_seconds, started_at, resolved_at)
SELECT id, 'provider_silent', 'crm', 'crm', slug || ': crm has sent no authenticated delivery for 12h.', 0, 1, 43200,
       '2026-11-02T09:00:00Z'::timestamptz, NULL::timestamptz
FROM tenants UNION ALL
SELECT id, 'refusals', 'crm', 'crm', 'crm refusals resolved.', 60, 50, 90, '2026-11-02T08:00:00Z'::timestamptz, '2026-11-02T08:30:00Z'::timestamptz
FROM tenants WHERE slug = 'acme'`); err != nil {
		t.Fatal(err)
	}
	out, _, err := tidemark(t, env, "", "alert", "list", "--tenant", "acme")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	want := []string{
		"RULE ENABLED THRESHOLD WINDOW",
		"provider_silent yes 1 12h0m0s",
		"refusals yes 50 1m30s",
		"conflicts_open yes 1 1h0m0s",
		"destination_failing yes 1 15m0s",
		"queue_backlog yes 1 15m0s",
		"dead_letters yes 1 1h0m0s",
		"reconciliation yes 1 15m0s",
		"cdc_allocation yes 80 1h0m0s",
		"",
		"1 firing:",
		"ID SINCE RULE SUMMARY",
	}
	if len(lines) != len(want)+1 || strings.Join(lines[:len(want)], "\n") != strings.Join(want, "\n") ||
		!strings.HasSuffix(lines[len(want)], " 2026-11-02 09:00:00Z provider_silent acme: crm has sent no authenticated delivery for 12h.") {
		t.Errorf("alert list:\n%s", out)
	}
	out, _, err = tidemark(t, env, "", "alert", "list", "--tenant", "globex")
	if words := strings.Join(strings.Fields(out), " "); err != nil || !strings.Contains(words, "refusals yes 20 5m0s") ||
		!strings.Contains(out, "globex: crm") || strings.Contains(out, "acme:") || strings.Contains(out, "resolved") {
		t.Errorf("globex's alert list:\n%s", out)
	}

	rows, err := pool.Query(ctx, `SELECT actor_kind || ' ' || actor || ' ' || target || ': ' || summary
		FROM audit_log WHERE action = 'alert_rule_set' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	audit, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(audit) != 4 || audit[0] != "cli ann alert rule refusals: enabled, threshold 50, window 10m0s (was enabled, threshold 20, window 5m0s)" {
		t.Errorf("audit %q", audit)
	}
}

package postgres

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Migration 00048 redacts the destination URLs stored before the code did
// (review 4, M2), as domain/stream.RedactURL does: the queries of
// transport errors in status reasons, attempts and queued changes; the
// target and the receiver's error in destination_failing summaries; the
// path of a slack destination or a Slack webhook everywhere, audit log
// included. Nothing else changes.
func TestMigrationRedactsStoredDestinationURLs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, p := migratedTo(t, 45)
	const (
		query = "https://hooks.example.net/in?token=S3cr3t"
		chat  = "https://chat.example.com/hooks/S3cr3t"
		slack = "https://hooks.slack.com/services/T0/B0/S3cr3t"
		dial  = `: dial tcp 203.0.113.9:443: connect: connection refused`
	)
	args := pgx.NamedArgs{"query": query, "chat": chat, "slack": slack, "dial": dial}
	for _, sql := range []string{`
WITH t AS (INSERT INTO tenants (slug, name) VALUES ('acme', '') RETURNING id)
INSERT INTO destinations (tenant_id, id, url, types, format, status, status_reason)
OVERRIDING SYSTEM VALUE
SELECT t.id, 1, @query, '{record.*}'::text[], 'standard', 'failing',
       'change 41 has not been delivered since 2026-01-01T00:00:00Z: Post "' || @query || '"' || @dial FROM t
UNION ALL SELECT t.id, 2, @chat, '{alert.*}', 'slack', 'active', NULL FROM t
UNION ALL SELECT t.id, 3, @slack, '{alert.*}', 'standard', 'active', NULL FROM t`, `
INSERT INTO destination_attempts (tenant_id, destination_id, position, status, error, duration_ms)
SELECT t.id, d.id, 1, 0, 'Post "' || d.url || '"' || @dial, 5 FROM tenants t JOIN destinations d ON d.tenant_id = t.id
UNION ALL SELECT t.id, 1, 2, 500, 'answered 500 Internal Server Error: see https://status.example.net/?x=1', 5 FROM tenants t`, `
INSERT INTO destination_queue (tenant_id, destination_id, position, record_key, committed_at, last_error)
SELECT t.id, 1, 1, 'k', now(), 'Post "' || @query || '"' || @dial FROM tenants t`, `
INSERT INTO alerts (tenant_id, rule, subject, summary, value, threshold, window_seconds, started_at)
SELECT t.id, 'destination_failing', '1', 'Destination 1 (' || @query || ') was paused as failing: change 41 has not been ' ||
       'delivered since 2026-01-01T00:00:00Z: answered 401 Unauthorized: token S3cr3t expired.', 1, 1, 900, now() FROM tenants t
UNION ALL SELECT t.id, 'destination_failing', '2', 'Destination 2 (' || @chat || ') has answered no attempt with a 2xx for 15m0s ' ||
       '(4 failed attempts).', 4, 1, 900, now() FROM tenants t
UNION ALL SELECT t.id, 'refusals', 'crm', 'crm had 21 refused deliveries in 5m0s.', 21, 20, 300, now() FROM tenants t`, `
INSERT INTO audit_log (tenant_id, actor_kind, actor, action, target, summary)
SELECT t.id, 'cli', 'test', a.action, a.target, a.summary FROM tenants t, (VALUES
    ('destination_create', 'destination 1', 'https://hooks.example.net/in?…; types record.*; max in flight 8'),
    ('destination_create', 'destination 2', @chat || '; types alert.*; format slack; max in flight 8'),
    ('destination_delete', 'destination 2', 'deleted ' || @chat || ' with 2 pending change(s)'),
    ('destination_delete', 'destination 3', 'deleted ' || @slack || ' with 0 pending change(s)'),
    ('tenant_create', 'tenant acme', 'see https://docs.example.net/x?y=1')) AS a (action, target, summary)`} {
		if _, err := pool.Exec(ctx, sql, args); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if _, err := p.UpTo(ctx, 48); err != nil {
		t.Fatal(err)
	}
	const refused = dial
	for _, c := range []struct {
		sql  string
		want []string
	}{
		{`SELECT status_reason FROM destinations WHERE status_reason IS NOT NULL`, []string{
			`change 41 has not been delivered since 2026-01-01T00:00:00Z: Post "https://hooks.example.net/in?<redacted>"` + refused}},
		{`SELECT error FROM destination_attempts ORDER BY destination_id, position`, []string{
			`Post "https://hooks.example.net/in?<redacted>"` + refused,
			`answered 500 Internal Server Error: see https://status.example.net/?x=1`,
			`Post "https://chat.example.com/<redacted>"` + refused,
			`Post "https://hooks.slack.com/<redacted>"` + refused}},
		{`SELECT last_error FROM destination_queue`, []string{`Post "https://hooks.example.net/in?<redacted>"` + refused}},
		{`SELECT summary FROM alerts ORDER BY id`, []string{
			"Destination 1 (https://hooks.example.net/in?<redacted>) was paused as failing: change 41 has not been delivered since 2026-01-01T00:00:00Z.",
			"Destination 2 (https://chat.example.com/<redacted>) has answered no attempt with a 2xx for 15m0s (4 failed attempts).",
			"crm had 21 refused deliveries in 5m0s."}},
		{`SELECT summary FROM audit_log ORDER BY id`, []string{
			"https://hooks.example.net/in?<redacted>; types record.*; max in flight 8",
			"https://chat.example.com/<redacted>; types alert.*; format slack; max in flight 8",
			"deleted https://chat.example.com/<redacted> with 2 pending change(s)",
			"deleted https://hooks.slack.com/<redacted> with 0 pending change(s)",
			"see https://docs.example.net/x?y=1"}},
	} {
		got := strs(t, pool, c.sql)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s:\n%s\nwant\n%s", c.sql, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
		}
	}
	if _, err := pool.Exec(ctx, `UPDATE audit_log SET summary = ''`); err == nil {
		t.Error("the audit log is no longer append-only")
	}
}

// strs is the one text column of sql's rows.
func strs(t *testing.T, pool *pgxpool.Pool, sql string) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}

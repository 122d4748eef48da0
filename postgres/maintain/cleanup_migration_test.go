package maintain_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/postgres/internal/pg"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
	"github.com/tidemark/tidemark/postgres/maintain"
)

// Migration 00010 replaces the DEFAULT partitions by daily ones and a
// catch-all: the rows the default partitions held move to their days, and
// the way down puts them back. It also raises TTLs under a day to a day.
func TestMigrationReplacesDefaultPartitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, p := pgtest.MigratedTo(t, 9)
	// As the old maintenance left it: a daily partition for yesterday, and
	// rows the default partition caught, some of days without partitions.
	today := pg.UTCDay(time.Now())
	yesterday := today.AddDate(0, 0, -1)
	_, err := pool.Exec(ctx, `CREATE TABLE `+maintain.Ident(maintain.PartitionName("events", yesterday))+` PARTITION OF events FOR VALUES FROM ('`+
		yesterday.Format(maintain.PartitionBoundFormat)+`') TO ('`+today.Format(maintain.PartitionBoundFormat)+`')`)
	if err != nil {
		t.Fatal(err)
	}
	at := []time.Time{today.AddDate(0, 0, -50), yesterday.Add(time.Hour), today.Add(time.Hour), today.AddDate(0, 0, 200)}
	for i, when := range at {
		_, err := pool.Exec(ctx, `
INSERT INTO events (tenant_id, received_at, delivery_id, seq, provider_id, object_type, action, event_id, outcome, payload)
VALUES (1, $1, gen_random_uuid(), 0, 1, 'contact', 'snapshot', $2, 'applied', '\x00')`, when, string(rune('a'+i)))
		if err == nil {
			_, err = pool.Exec(ctx, `
INSERT INTO deliveries (tenant_id, id, received_at, provider_id, status, signature)
VALUES (1, gen_random_uuid(), $1, 1, 200, 'valid')`, when)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// A scope set to an hour before the smallest TTL was a day.
	_, err = pool.Exec(ctx, `
WITH t AS (INSERT INTO tenants (slug, name) VALUES ('acme', '') RETURNING id),
     p AS (INSERT INTO providers (tenant_id, name, kind) SELECT id, 'crm', 'standard' FROM t RETURNING tenant_id, id)
INSERT INTO scopes (tenant_id, provider_id, object_type, action, ttl_seconds) SELECT tenant_id, id, 'contact', 'snapshot', 3600 FROM p`)
	if err != nil {
		t.Fatal(err)
	}
	if n := cleanupCountOn(t, pool, `SELECT count(*) FROM events_default`); n != 3 {
		t.Fatalf("%d events in the default partition before the migration, want 3", n)
	}

	if _, err := p.UpTo(ctx, 10); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"a": maintain.PartitionName("events", at[0]),                                     // a day of its own
		"b": maintain.PartitionName("events", yesterday),                                 // already had one
		"c": maintain.PartitionName("events", today),                                     // today, made by the migration
		"d": "events_from" + today.AddDate(0, 0, 31).Format(maintain.PartitionDayFormat), // the catch-all
	}
	for id, partition := range want {
		var got string
		if err := pool.QueryRow(ctx, `SELECT tableoid::regclass::text FROM events WHERE event_id = $1`, id).Scan(&got); err != nil || got != partition {
			t.Errorf("event %s in %q (%v), want %s", id, got, err, partition)
		}
	}
	if n := cleanupCountOn(t, pool, `SELECT count(*) FROM deliveries`); n != len(at) {
		t.Errorf("%d deliveries after the migration, want %d", n, len(at))
	}
	if n := cleanupCountOn(t, pool, `SELECT ttl_seconds FROM scopes`); n != 86400 {
		t.Errorf("the scope's TTL is %d s after the migration, want a day", n)
	}
	var names []string
	rows, _ := pool.Query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'deliveries'::regclass`)
	for rows.Next() {
		var n string
		rows.Scan(&n)
		names = append(names, n)
	}
	for d := range 31 {
		if !slices.Contains(names, maintain.PartitionName("deliveries", today.AddDate(0, 0, d))) {
			t.Errorf("no deliveries partition %d days ahead: %v", d, names)
		}
	}

	if _, err := p.DownTo(ctx, 9); err != nil {
		t.Fatal(err)
	}
	if n := cleanupCountOn(t, pool, `SELECT count(*) FROM events_default`); n != 1 {
		t.Errorf("%d events in the default partition after the way down, want the catch-all's 1", n)
	}
	if n := cleanupCountOn(t, pool, `SELECT count(*) FROM events`); n != len(at) {
		t.Errorf("%d events after the way down, want %d", n, len(at))
	}
}

func cleanupCountOn(t *testing.T, pool *pgxpool.Pool, sql string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

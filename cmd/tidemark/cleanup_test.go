package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/internal/testdb"
)

// dbEnv is a command environment on a fresh migrated database.
func dbEnv(t *testing.T) (map[string]string, *pgx.Conn) {
	t.Helper()
	url := testdb.NewURL(t)
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return map[string]string{"DATABASE_URL": url,
		"TIDEMARK_ENCRYPTION_KEY": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}, conn
}

// missingDays lists the UTC days from today through 30 days ahead that a
// log has no partition for.
func missingDays(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	var missing []string
	err := conn.QueryRow(context.Background(), `
SELECT coalesce(array_agg(l || '_p' || to_char(d, 'YYYYMMDD')), '{}')
FROM unnest(ARRAY['deliveries', 'events']) l,
     generate_series((now() AT TIME ZONE 'UTC')::date, (now() AT TIME ZONE 'UTC')::date + 30, interval '1 day') d
WHERE to_regclass(l || '_p' || to_char(d, 'YYYYMMDD')) IS NULL`).Scan(&missing)
	if err != nil {
		t.Fatal(err)
	}
	return missing
}

func TestCleanupCommand(t *testing.T) {
	t.Parallel()
	env, conn := dbEnv(t)
	out, _, err := tidemark(t, env, "", "cleanup")
	if err != nil || !strings.Contains(out, "expired idempotency keys") {
		t.Fatalf("cleanup: %v\n%s", err, out)
	}
	if missing := missingDays(t, conn); len(missing) > 0 {
		t.Errorf("after cleanup, no partitions for %v", missing)
	}

	_, _, err = tidemark(t, env, "", "cleanup", "--retention", "72h")
	if want := "--retention: retention must be at least 7 days (168h), got 72h; pass a longer --retention"; err == nil || err.Error() != want {
		t.Fatalf("cleanup --retention 72h: %v, want %q", err, want)
	}

	// A scope that remembers keys for 60 days needs 60 days of log.
	if _, _, err := tidemark(t, env, "", "tenant", "create", "acme"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tidemark(t, env, "", "provider", "create", "--tenant", "acme", "--name", "crm", "--kind", "standard"); err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(context.Background(), `
INSERT INTO scopes (tenant_id, provider_id, object_type, action, ttl_seconds)
SELECT tenant_id, id, 'contact', 'snapshot', 60 * 86400 FROM providers`)
	if err != nil {
		t.Fatal(err)
	}
	const want = "--retention: retention 720h is shorter than the 1440h TTL of scope contact.snapshot of provider crm of tenant acme; " +
		"pass --retention 1440h or more, or lower that TTL"
	if _, _, err := tidemark(t, env, "", "cleanup"); err == nil || err.Error() != want {
		t.Fatalf("cleanup under the largest TTL: %v, want %q", err, want)
	}
	if _, _, err := tidemark(t, env, "", "serve", "--addr", "127.0.0.1:0"); err == nil || err.Error() != want {
		t.Fatalf("serve under the largest TTL: %v, want %q", err, want)
	}
	if out, _, err := tidemark(t, env, "", "cleanup", "--retention", "1440h"); err != nil {
		t.Fatalf("cleanup --retention 1440h: %v\n%s", err, out)
	}
}

// serve prepares the partitions of the next 30 days before it listens.
func TestServePreparesPartitions(t *testing.T) {
	t.Parallel()
	env, conn := dbEnv(t)
	// As a database last maintained 40 days ago: nothing ahead of today.
	_, err := conn.Exec(context.Background(), fmt.Sprintf(`
DO $$ DECLARE r record; BEGIN
  FOR r IN SELECT i.inhparent::regclass AS log, c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
           WHERE c.relname ~ '_p[0-9]{8}$' AND to_date(right(c.relname, 8), 'YYYYMMDD') >= %s LOOP
    EXECUTE format('ALTER TABLE %%s DETACH PARTITION %%I', r.log, r.relname);
    EXECUTE format('DROP TABLE %%I', r.relname);
  END LOOP;
END $$`, "(now() AT TIME ZONE 'UTC')::date"))
	if err != nil {
		t.Fatal(err)
	}
	if len(missingDays(t, conn)) == 0 {
		t.Fatal("the partitions ahead were not removed")
	}

	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0"}, func(k string) string { return env[k] }, nil, &out, &errOut)
	}()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out.String(), "listening on"); {
		select {
		case err := <-done:
			cancel()
			t.Fatalf("serve exited: %v\n%s", err, errOut.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve did not start:\n%s", errOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if missing := missingDays(t, conn); len(missing) > 0 {
		t.Errorf("serve listens with no partitions for %v", missing)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
}

package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/domain"
)

// cleanupIngestAt delivers one event received at the given time.
func cleanupIngestAt(t *testing.T, s *Store, p domain.ProviderEndpoint, e domain.Event, at time.Time) domain.Delivery {
	t.Helper()
	d := delivery(p)
	d.ReceivedAt = at
	if _, err := s.Ingest(context.Background(), d, p, []domain.Event{e}); err != nil {
		t.Fatalf("ingest %s at %s: %v", e.EventID, at, err)
	}
	return d
}

// cleanupTablesOf returns the partitions holding an event and its delivery.
func cleanupTablesOf(t *testing.T, s *Store, eventID string) (event, delivery string) {
	t.Helper()
	err := s.pool.QueryRow(context.Background(), `
SELECT e.tableoid::regclass::text, d.tableoid::regclass::text
FROM events e JOIN deliveries d ON d.tenant_id = e.tenant_id AND d.id = e.delivery_id AND d.received_at = e.received_at
WHERE e.event_id = $1`, eventID).Scan(&event, &delivery)
	if err != nil {
		t.Fatalf("locate event %s: %v", eventID, err)
	}
	return event, delivery
}

func cleanupCount(t *testing.T, s *Store, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := s.pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func TestEnsurePartitions(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	ctx := context.Background()

	got, err := s.EnsurePartitions(ctx, time.Date(2026, 11, 29, 23, 30, 0, 0, time.FixedZone("x", -5*3600)), 1)
	if err != nil {
		t.Fatal(err)
	}
	// 23:30 at UTC-5 is Nov 30 in UTC.
	want := []string{"deliveries_p20261130", "deliveries_p20261201", "events_p20261130", "events_p20261201"}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("created %v, want %v", got, want)
	}
	again, err := s.EnsurePartitions(ctx, time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), 1)
	if err != nil || len(again) != 0 {
		t.Fatalf("second call created %v (%v), want none", again, err)
	}
	var lo, hi time.Time
	err = s.pool.QueryRow(ctx, `
SELECT b[1]::timestamptz, b[2]::timestamptz FROM (
    SELECT regexp_match(pg_get_expr(relpartbound, oid), 'FROM \(''([^'']+)''\) TO \(''([^'']+)''\)') AS b
    FROM pg_class WHERE relname = 'events_p20261130') x`).Scan(&lo, &hi)
	if err != nil {
		t.Fatal(err)
	}
	if !lo.Equal(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)) || !hi.Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("events_p20261130 holds [%s, %s)", lo.UTC(), hi.UTC())
	}

	// An event ingested now lands in today's partition (tomorrow's, if
	// midnight passes in between).
	if _, err := s.EnsurePartitions(ctx, time.Now(), 1); err != nil {
		t.Fatal(err)
	}
	ingest(t, s, p, event("ev-now", "c1", 1, `{"a":1}`))
	var received time.Time
	if err := s.pool.QueryRow(ctx, `SELECT received_at FROM events WHERE event_id = 'ev-now'`).Scan(&received); err != nil {
		t.Fatal(err)
	}
	ev, dl := cleanupTablesOf(t, s, "ev-now")
	if ev != partitionName("events", received) || dl != partitionName("deliveries", received) {
		t.Fatalf("event in %s, delivery in %s; want the partitions of %s", ev, dl, received.UTC())
	}
}

func TestEnsurePartitionsMovesDefaultRows(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	ctx := context.Background()
	day := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)

	cleanupIngestAt(t, s, p, event("ev-1", "c1", 1, `{"a":1}`), day)                       // first instant of the day
	cleanupIngestAt(t, s, p, event("ev-2", "c2", 1, `{"a":1}`), day.Add(10*time.Hour))     //
	cleanupIngestAt(t, s, p, event("ev-3", "c3", 1, `{"a":1}`), day.Add(24*time.Hour-1))   // last instant
	cleanupIngestAt(t, s, p, event("ev-4", "c4", 1, `{"a":1}`), day.Add(24*time.Hour))     // next day: stays
	cleanupIngestAt(t, s, p, event("ev-5", "c5", 1, `{"a":1}`), day.Add(-time.Nanosecond)) // previous day: stays
	const all = `SELECT count(*) FROM events`
	if n := cleanupCount(t, s, `SELECT count(*) FROM events_default`); n != 5 {
		t.Fatalf("%d events in the default partition, want 5", n)
	}

	created, err := s.EnsurePartitions(ctx, day, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(created) != 2 {
		t.Fatalf("created %v", created)
	}
	if n := cleanupCount(t, s, all); n != 5 {
		t.Fatalf("%d events after the move, want 5", n)
	}
	if n := cleanupCount(t, s, `SELECT count(*) FROM deliveries`); n != 5 {
		t.Fatalf("%d deliveries after the move, want 5", n)
	}
	for id, want := range map[string]string{"ev-1": "_p20261129", "ev-2": "_p20261129", "ev-3": "_p20261129",
		"ev-4": "_default", "ev-5": "_default"} {
		ev, dl := cleanupTablesOf(t, s, id)
		if ev != "events"+want || dl != "deliveries"+want {
			t.Errorf("%s: event in %s, delivery in %s; want *%s", id, ev, dl, want)
		}
	}
	// The moved rows are still found through the parent's indexes.
	if n := cleanupCount(t, s, `SELECT count(*) FROM events WHERE tenant_id = $1 AND provider_id = $2 AND event_id = 'ev-2'`, p.TenantID, p.ID); n != 1 {
		t.Fatalf("ev-2 found %d times", n)
	}
}

func TestCleanup(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	ctx := context.Background()
	now := time.Now()
	old := now.Add(-40 * 24 * time.Hour)

	if _, err := s.EnsurePartitions(ctx, old, 0); err != nil {
		t.Fatal(err)
	}
	cleanupIngestAt(t, s, p, event("ev-old", "c1", 1, `{"a":1}`), old)                         // old partition
	cleanupIngestAt(t, s, p, event("ev-older", "c2", 1, `{"a":1}`), now.Add(-50*24*time.Hour)) // default, past retention
	cleanupIngestAt(t, s, p, event("ev-now", "c3", 1, `{"a":1}`), now)                         // default until Cleanup ensures today
	// Both old events' keys expired (scope TTL: 7 days); ev-now's has not.
	// Keys expire by the database's clock, so age them as the weeks would.
	if _, err := s.pool.Exec(ctx, `UPDATE idempotency_keys SET expires_at = now() - interval '1 day' WHERE identifier IN ('ev-old', 'ev-older')`); err != nil {
		t.Fatal(err)
	}
	for i, expires := range []time.Time{now.Add(-time.Hour), now.Add(-time.Minute), now, now.Add(time.Hour)} {
		_, err := s.pool.Exec(ctx, `
INSERT INTO idempotency_keys (tenant_id, key, provider_id, identifier, content_hash, delivery_id, seq, expires_at)
VALUES ($1, $2, $3, 'x', '\x00', $4, 0, $5)`, p.TenantID, []byte{byte(i)}, p.ID, uuid.New(), expires)
		if err != nil {
			t.Fatal(err)
		}
	}

	r, err := s.cleanup(ctx, now, 30*24*time.Hour, 2) // small batches: several rounds
	if err != nil {
		t.Fatal(err)
	}
	oldDay := old.UTC().Format("20060102")
	wantDropped := []string{"deliveries_p" + oldDay, "events_p" + oldDay}
	if r.ExpiredKeys != 5 || !slices.Equal(r.DroppedPartitions, wantDropped) || r.DefaultRowsDeleted != 2 || len(r.CreatedPartitions) != 16 {
		t.Fatalf("report %+v", r)
	}
	str := r.String()
	for _, want := range []string{"removed 5 expired idempotency keys", "dropped 2 partitions (deliveries_p" + oldDay + ", events_p" + oldDay + ")",
		"deleted 2 old rows from default partitions"} {
		if !strings.Contains(str, want) {
			t.Errorf("report %q does not say %q", str, want)
		}
	}

	if n := cleanupCount(t, s, `SELECT count(*) FROM idempotency_keys WHERE expires_at > $1`, now); n != 2 {
		t.Fatalf("%d live keys left, want 2", n)
	}
	if n := cleanupCount(t, s, `SELECT count(*) FROM idempotency_keys`); n != 2 {
		t.Fatalf("%d keys left, want only the 2 live ones", n)
	}
	if n := cleanupCount(t, s, `SELECT count(*) FROM pg_class WHERE relname = ANY($1)`, wantDropped); n != 0 {
		t.Fatalf("%d old partitions still exist", n)
	}
	if n := cleanupCount(t, s, `SELECT count(*) FROM events`); n != 1 {
		t.Fatalf("%d events left, want only the recent one", n)
	}
	if n := cleanupCount(t, s, `SELECT count(*) FROM deliveries`); n != 1 {
		t.Fatalf("%d deliveries left, want only the recent one", n)
	}
	if ev, dl := cleanupTablesOf(t, s, "ev-now"); ev != partitionName("events", now) || dl != partitionName("deliveries", now) {
		t.Fatalf("recent event in %s, delivery in %s", ev, dl)
	}

	// A second run finds nothing more to do.
	r, err = s.Cleanup(ctx, now, 30*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if r.ExpiredKeys != 0 || len(r.DroppedPartitions) != 0 || r.DefaultRowsDeleted != 0 || len(r.CreatedPartitions) != 0 {
		t.Fatalf("second report %+v", r)
	}
	if got, want := r.String(), "removed 0 expired idempotency keys; dropped 0 partitions; deleted 0 old rows from default partitions"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}

	if _, err := s.Cleanup(ctx, now, 0); domain.ErrorCode(err) != domain.EINVALID {
		t.Fatalf("zero retention: %v, want invalid", err)
	}
}

// Two nodes preparing the same day while deliveries for it keep arriving:
// the partitions are created once, and no row is lost or left behind.
func TestEnsurePartitionsConcurrentWithIngest(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	ctx := context.Background()
	day := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)

	const writers, each = 6, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers*each+2)
	created := make(chan []string, 2)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				id := fmt.Sprintf("ev-%d-%d", w, i)
				d := delivery(p)
				d.ReceivedAt = day.Add(time.Duration(w*each+i) * time.Minute)
				if _, err := s.Ingest(ctx, d, p, []domain.Event{event(id, id, 1, `{"a":1}`)}); err != nil {
					errs <- fmt.Errorf("ingest %s: %w", id, err)
				}
			}
		}()
	}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(20 * time.Millisecond)
			names, err := s.EnsurePartitions(ctx, day, 0)
			if err != nil {
				errs <- err
			}
			created <- names
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if all := append(<-created, <-created...); len(all) != 2 {
		t.Errorf("created %v, want each partition once", all)
	}
	if n := cleanupCount(t, s, `SELECT count(*) FROM events_p20261129`); n != writers*each {
		t.Errorf("%d events in events_p20261129, want %d", n, writers*each)
	}
	if n := cleanupCount(t, s, `SELECT count(*) FROM deliveries_p20261129`); n != writers*each {
		t.Errorf("%d deliveries in deliveries_p20261129, want %d", n, writers*each)
	}
	if n := cleanupCount(t, s, `SELECT (SELECT count(*) FROM events_default) + (SELECT count(*) FROM deliveries_default)`); n != 0 {
		t.Errorf("%d rows left in the default partitions", n)
	}
}

package postgres

import (
	"github.com/tidemark/tidemark/postgres/internal/pg"

	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
)

// storeOn opens a store on url whose connections carry application_name
// app, so that pg_stat_activity tells them apart.
func storeOn(t testing.TB, url, app string, conns int32) *Store {
	t.Helper()
	return storeConfigured(t, url, func(cfg *pgxpool.Config) {
		cfg.MaxConns = conns
		cfg.ConnConfig.RuntimeParams["application_name"] = app
	})
}

// storeConfigured is a store on the database at url, its pool configured
// by configure.
func storeConfigured(t testing.TB, url string, configure func(*pgxpool.Config)) *Store {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	configure(cfg)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s, err := New(pool, testKey)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// longReader opens a transaction that reads table and keeps it open, as a
// pg_dump or a long API read would, until the returned func ends it.
func longReader(t *testing.T, url, table string) (end func()) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err == nil {
		_, err = tx.Exec(ctx, "SELECT count(*) FROM "+table)
	}
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	end = func() {
		once.Do(func() {
			tx.Rollback(ctx)
			conn.Close(ctx)
		})
	}
	t.Cleanup(end)
	return end
}

// lockWait is a moment a backend waited on another's lock.
type lockWait struct {
	what   string
	waited time.Duration
}

// waitsOnOthers samples, every few milliseconds until stop is closed, the
// backends of application app that wait on a lock another application's
// backend holds or waits for ahead of them (pg_blocking_pids counts both),
// with how long each has waited so far.
func waitsOnOthers(t *testing.T, url, app string, stop <-chan struct{}) <-chan []lockWait {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	found := make(chan []lockWait, 1)
	go func() {
		defer conn.Close(ctx)
		var seen []lockWait
		defer func() { found <- seen }()
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			// pg_locks and pg_blocking_pids lock the whole lock manager
			// for a moment: they are asked only when a backend waits.
			var waiting bool
			err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity
WHERE datname = current_database() AND application_name = $1 AND wait_event_type = 'Lock')`, app).Scan(&waiting)
			if err == nil && waiting {
				var rows pgx.Rows
				rows, err = conn.Query(ctx, `
SELECT format('%s (%s) waits for %s on %s: %s (%s)', w.pid, left(w.query, 40), w.mode, w.locked, b.application_name, left(b.query, 70)),
       coalesce(now() - w.waitstart, '0')
FROM (SELECT a.pid, a.query, l.mode, coalesce(l.relation::regclass::text, l.locktype) AS locked, l.waitstart
      FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid AND NOT l.granted
      WHERE a.datname = current_database() AND a.application_name = $1) w
CROSS JOIN LATERAL unnest(pg_blocking_pids(w.pid)) AS blocker(pid)
JOIN pg_stat_activity b ON b.pid = blocker.pid
WHERE b.application_name <> $1`, app)
				if err == nil {
					var more []lockWait
					more, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (lockWait, error) {
						var w lockWait
						return w, row.Scan(&w.what, &w.waited)
					})
					seen = append(seen, more...)
				}
			}
			if err != nil {
				seen = append(seen, lockWait{what: err.Error(), waited: time.Hour})
				return
			}
		}
	}()
	return found
}

// percentile returns the p-th percentile of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	return sorted[min(len(sorted)-1, int(float64(len(sorted))*p))]
}

// While a long transaction keeps a read lock on one log, a maintenance pass
// drops the expired partitions and another creates the next days.
// Deliveries keep being ingested meanwhile, and none waits behind the
// maintenance. Before migration 00010 and this maintenance, the partition
// DDL queued behind the reader and every delivery queued behind the DDL
// until the reader ended.
func TestCleanupNeverBlocksIngest(t *testing.T) {
	t.Parallel()
	for i, table := range partitionedTables {
		other := partitionedTables[1-i]
		t.Run(table, func(t *testing.T) {
			t.Parallel()
			url := testdb.NewURL(t)
			const ingestApp = "ingest"
			in := storeOn(t, url, ingestApp, 6)
			maint := storeOn(t, url, "maintenance caller", 2)
			p := newProvider(t, in, "acme", "crm")
			ctx := context.Background()
			now := time.Now()
			old := now.AddDate(0, 0, -40)
			for _, from := range []time.Time{old, now} {
				if _, err := maint.EnsurePartitions(ctx, from, PartitionsAhead); err != nil {
					t.Fatal(err)
				}
			}
			cleanupIngestAt(t, in, p, event("ev-old", "c-old", 1, `{"a":1}`), old)

			endReader := longReader(t, url, table)
			stop := make(chan struct{})
			waits := waitsOnOthers(t, url, ingestApp, stop)
			var (
				mu        sync.Mutex
				latencies []time.Duration
				failures  []string
				wg        sync.WaitGroup
			)
			for w := range 4 {
				wg.Go(func() {
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						id := fmt.Sprintf("ev-%d-%d", w, i)
						// The webhook's budget for its database work.
						dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
						start := time.Now()
						_, err := in.Ingest(dctx, delivery(p), p, []domain.Event{event(id, id, 1, `{"a":1}`)})
						took := time.Since(start)
						cancel()
						mu.Lock()
						latencies = append(latencies, took)
						if err != nil {
							failures = append(failures, fmt.Sprintf("%s: %v", id, err))
						}
						mu.Unlock()
					}
				})
			}

			// The reader ends once both passes are done, or after 8 s if
			// they wait behind it.
			passesDone := make(chan struct{})
			go func() {
				select {
				case <-passesDone:
				case <-time.After(8 * time.Second):
				}
				endReader()
			}()
			time.Sleep(200 * time.Millisecond) // deliveries before the passes
			dropPass, err := maint.Cleanup(ctx, now, testRetention)
			if err != nil {
				t.Errorf("pass while %s is read: %v", table, err)
			}
			// Two days on, two days past the catch-all need partitions.
			later := now.AddDate(0, 0, 2)
			createPass, err := maint.Cleanup(ctx, later, testRetention)
			if err != nil {
				t.Errorf("second pass while %s is read: %v", table, err)
			}
			close(passesDone)
			time.Sleep(300 * time.Millisecond) // deliveries after the reader
			close(stop)
			wg.Wait()
			t.Logf("while %s was read: %s", table, dropPass)
			t.Logf("while %s was read: %s", table, createPass)

			slices.Sort(latencies)
			t.Logf("%d deliveries: p50 %s, p99 %s, max %s", len(latencies), percentile(latencies, 0.5),
				percentile(latencies, 0.99), latencies[len(latencies)-1])
			for _, f := range failures {
				t.Errorf("delivery failed: %s", f)
			}
			// Generous bounds (the machine is shared): a delivery queued
			// behind the DDL would wait until the reader ends.
			if worst := latencies[len(latencies)-1]; worst > 2*time.Second {
				t.Errorf("a delivery took %s", worst)
			}
			var longest time.Duration
			for _, w := range <-waits {
				t.Logf("ingest waited %s on another backend: %s", w.waited, w.what)
				longest = max(longest, w.waited)
				// A stale cached plan may lock a partition being
				// detached, and wait for the detach's last, brief step
				// (see docs/architecture.md); never for long.
				if w.waited > 500*time.Millisecond {
					t.Errorf("ingest waited %s on another backend: %s", w.waited, w.what)
				}
			}
			t.Logf("longest wait of ingest on another backend: %s", longest)

			// Beside the reader, the other log was maintained; the read
			// one's steps were deferred.
			if !slices.Contains(dropPass.DroppedPartitions, partitionName(other, old)) ||
				!strings.Contains(strings.Join(dropPass.Deferred, " "), partitionName(table, old)) {
				t.Errorf("first pass: %s", dropPass)
			}
			newDay := pg.UTCDay(later).AddDate(0, 0, PartitionsAhead)
			if !slices.Contains(createPass.CreatedPartitions, partitionName(other, newDay)) || len(createPass.Deferred) == 0 {
				t.Errorf("second pass: %s", createPass)
			}
			// Once the reader is gone, the next pass does what was deferred.
			r, err := maint.Cleanup(ctx, later, testRetention)
			if err != nil || len(r.Deferred) != 0 || !slices.Contains(r.DroppedPartitions, partitionName(table, old)) {
				t.Fatalf("pass after the reader: %v, %s", err, r)
			}
			wantPartitionsAhead(t, maint, later)
			if n := cleanupCount(t, maint, `SELECT count(*) FROM events`); n != len(latencies) {
				t.Errorf("%d events in the log, want the %d ingested", n, len(latencies))
			}
		})
	}
}

// Two passes at once, as two serve processes would run them: one runs,
// the other skips.
func TestCleanupTakesTurns(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	ctx := context.Background()
	now := time.Now()
	// Enough expired keys, deleted 10 at a time, to keep the first pass busy.
	const keys = 5000
	_, err := s.pool.Exec(ctx, `
INSERT INTO idempotency_keys (tenant_id, key, provider_id, identifier, content_hash, delivery_id, seq, expires_at)
SELECT $1, int4send(i), $2, 'x', '\x00', gen_random_uuid(), 0, $3 FROM generate_series(1, $4) i`,
		p.TenantID, p.ID, now.Add(-time.Hour), keys)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		r   CleanupReport
		err error
	}
	first := make(chan result, 1)
	go func() {
		r, err := s.cleanup(ctx, now, testRetention, 10)
		first <- result{r, err}
	}()
	for deadline := time.Now().Add(10 * time.Second); ; {
		held := cleanupCount(t, s, `
SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND a.datname = current_database() AND a.application_name = $1`, maintenanceApp)
		if held > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first pass never took the maintenance lock")
		}
		time.Sleep(2 * time.Millisecond)
	}
	second, err := s.Cleanup(ctx, now, testRetention)
	if err != nil || !second.Skipped || second.ExpiredKeys != 0 || len(second.CreatedPartitions) != 0 {
		t.Fatalf("second pass: %v, %+v", err, second)
	}
	if got := second.String(); got != "skipped: another process is running maintenance" {
		t.Errorf("String() = %q", got)
	}
	res := <-first
	if res.err != nil || res.r.Skipped || res.r.ExpiredKeys != keys {
		t.Fatalf("first pass: %v, %+v", res.err, res.r)
	}
	// The lock goes with the pass: the next one runs.
	if r, err := s.Cleanup(ctx, now, testRetention); err != nil || r.Skipped {
		t.Fatalf("third pass: %v, %+v", err, r)
	}
}

// detachPending leaves the detach of partition pending, as a pass cut
// short while a reader held the log does.
func detachPending(t *testing.T, s *Store, url, table, partition string) {
	t.Helper()
	ctx := context.Background()
	end := longReader(t, url, table)
	defer end()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SET lock_timeout = '50ms'"); err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, fmt.Sprintf(detachPartitionSQL, ident(table), ident(partition)))
	if why, ok := gaveUp(err); !ok {
		t.Fatalf("detach beside a reader: %v %s", err, why)
	}
	if n := cleanupCount(t, s, `SELECT count(*) FROM pg_inherits WHERE inhrelid = $1::regclass AND inhdetachpending`, partition); n != 1 {
		t.Fatalf("the detach of %s is not pending", partition)
	}
}

// A detach an earlier pass left pending is finished by the next pass: an
// old daily partition is then dropped, and a catch-all replaced, its rows
// kept.
func TestCleanupFinishesInterruptedDetach(t *testing.T) {
	t.Parallel()
	url := testdb.NewURL(t)
	s := storeOn(t, url, "test", 4)
	p := newProvider(t, s, "acme", "crm")
	ctx := context.Background()
	now := time.Now()
	old := now.AddDate(0, 0, -40)
	for _, from := range []time.Time{old, now} {
		if _, err := s.EnsurePartitions(ctx, from, PartitionsAhead); err != nil {
			t.Fatal(err)
		}
	}
	cleanupIngestAt(t, s, p, event("ev-old", "c-old", 1, `{"a":1}`), old)
	ahead := pg.UTCDay(now).AddDate(0, 0, PartitionsAhead+1) // the catch-all's first day
	cleanupIngestAt(t, s, p, event("ev-ahead", "c-ahead", 1, `{"a":1}`), ahead.Add(time.Hour))

	detachPending(t, s, url, "events", partitionName("events", old))
	detachPending(t, s, url, "deliveries", "deliveries_from"+ahead.Format(partitionDayFormat))
	// While the catch-all's detach is pending, a row dated after the daily
	// partitions has nowhere to go.
	d := delivery(p)
	d.ReceivedAt = ahead.AddDate(0, 0, 3)
	if _, err := s.Ingest(ctx, d, p, []domain.Event{event("ev-lost", "c-lost", 1, `{"a":1}`)}); err == nil {
		t.Error("a delivery dated after the daily partitions was stored beside a pending detach")
	}

	r, err := s.Cleanup(ctx, now, testRetention)
	if err != nil || len(r.Deferred) != 0 {
		t.Fatalf("pass: %v, %s", err, r)
	}
	for _, name := range []string{partitionName("events", old), partitionName("deliveries", old)} {
		if !slices.Contains(r.DroppedPartitions, name) {
			t.Errorf("%s not dropped: %s", name, r)
		}
	}
	if n := cleanupCount(t, s, `SELECT count(*) FROM pg_inherits WHERE inhdetachpending`); n != 0 {
		t.Fatalf("%d detaches still pending", n)
	}
	wantPartitionsAhead(t, s, now)
	// The row the old catch-all held is in the new one, found as before.
	ev, dl := cleanupTablesOf(t, s, "ev-ahead")
	if !strings.HasPrefix(ev, "events_from") || !strings.HasPrefix(dl, "deliveries_from") {
		t.Errorf("ev-ahead: event in %s, delivery in %s", ev, dl)
	}
	if n := cleanupCount(t, s, `SELECT count(*) FROM pg_class WHERE relname ~ '^(deliveries|events)_(p|from)[0-9]{8}$' AND NOT relispartition`); n != 0 {
		t.Errorf("%d detached tables left behind", n)
	}
}

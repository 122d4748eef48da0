package maintain_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pg"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
	"github.com/tidemark/tidemark/postgres/maintain"
)

// While a long transaction keeps a read lock on one log, a maintenance pass
// drops the expired partitions and another creates the next days.
// Deliveries keep being ingested meanwhile, and none waits behind the
// maintenance. Before migration 00010 and this maintenance, the partition
// DDL queued behind the reader and every delivery queued behind the DDL
// until the reader ended.
func TestCleanupNeverBlocksIngest(t *testing.T) {
	testdb.SkipOnCitus(t, "on Citus a partition is detached with a plain DETACH, which blocks ingest for that moment (docs/scale.md#on-citus)")
	t.Parallel()
	for i, table := range maintain.PartitionedTables {
		other := maintain.PartitionedTables[1-i]
		t.Run(table, func(t *testing.T) {
			t.Parallel()
			url := testdb.NewURL(t)
			const ingestApp = "ingest"
			in := pgtest.StoreOn(t, postgres.New, url, ingestApp, 6)
			maint := pgtest.StoreOn(t, postgres.New, url, "maintenance caller", 2)
			p := pgtest.Provider(t, in, "acme", "crm")
			ctx := context.Background()
			now := time.Now()
			old := now.AddDate(0, 0, -40)
			for _, from := range []time.Time{old, now} {
				if _, err := maint.EnsurePartitions(ctx, from, maintain.PartitionsAhead); err != nil {
					t.Fatal(err)
				}
			}
			cleanupIngestAt(t, in, p, pgtest.Event("ev-old", "c-old", 1, `{"a":1}`), old)

			endReader := pgtest.LongReader(t, url, table)
			stop := make(chan struct{})
			waits := pgtest.WaitsOnOthers(t, url, ingestApp, stop)
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
						_, err := in.Ingest(dctx, pgtest.Delivery(p), p, []domain.Event{pgtest.Event(id, id, 1, `{"a":1}`)})
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
			t.Logf("%d deliveries: p50 %s, p99 %s, max %s", len(latencies), pgtest.Percentile(latencies, 0.5),
				pgtest.Percentile(latencies, 0.99), latencies[len(latencies)-1])
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
				t.Logf("ingest waited %s on another backend: %s", w.Waited, w.What)
				longest = max(longest, w.Waited)
				// A stale cached plan may lock a partition being
				// detached, and wait for the detach's last, brief step
				// (see docs/architecture.md); never for long.
				if w.Waited > 500*time.Millisecond {
					t.Errorf("ingest waited %s on another backend: %s", w.Waited, w.What)
				}
			}
			t.Logf("longest wait of ingest on another backend: %s", longest)

			// Beside the reader, the other log was maintained; the read
			// one's steps were deferred.
			if !slices.Contains(dropPass.DroppedPartitions, maintain.PartitionName(other, old)) ||
				!strings.Contains(strings.Join(dropPass.Deferred, " "), maintain.PartitionName(table, old)) {
				t.Errorf("first pass: %s", dropPass)
			}
			newDay := pg.UTCDay(later).AddDate(0, 0, maintain.PartitionsAhead)
			if !slices.Contains(createPass.CreatedPartitions, maintain.PartitionName(other, newDay)) || len(createPass.Deferred) == 0 {
				t.Errorf("second pass: %s", createPass)
			}
			// Once the reader is gone, the next pass does what was deferred.
			r, err := maint.Cleanup(ctx, later, testRetention)
			if err != nil || len(r.Deferred) != 0 || !slices.Contains(r.DroppedPartitions, maintain.PartitionName(table, old)) {
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
	s, p := pgtest.Setup(t, postgres.New)
	ctx := context.Background()
	now := time.Now()
	// Enough expired keys, deleted 10 at a time, to keep the first pass busy.
	const keys = 5000
	_, err := s.Pool().Exec(ctx, `
INSERT INTO idempotency_keys (tenant_id, key, provider_id, identifier, content_hash, delivery_id, seq, expires_at)
SELECT $1, int4send(i), $2, 'x', '\x00', gen_random_uuid(), 0, $3 FROM generate_series(1, $4) i`,
		p.TenantID, p.ID, now.Add(-time.Hour), keys)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		r   maintain.Report
		err error
	}
	first := make(chan result, 1)
	go func() {
		r, err := s.CleanupInBatches(ctx, now, testRetention, 10)
		first <- result{r, err}
	}()
	for deadline := time.Now().Add(10 * time.Second); ; {
		held := cleanupCount(t, s, `
SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND a.datname = current_database() AND a.application_name = $1`, maintain.App)
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
func detachPending(t *testing.T, s *postgres.Store, url, table, partition string) {
	t.Helper()
	ctx := context.Background()
	end := pgtest.LongReader(t, url, table)
	defer end()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SET lock_timeout = '50ms'"); err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, fmt.Sprintf(maintain.DetachPartitionSQL, maintain.Ident(table), maintain.Ident(partition)))
	if why, ok := maintain.GaveUp(err); !ok {
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
	testdb.SkipOnCitus(t, "Citus refuses DETACH ... CONCURRENTLY, so no detach is left half done there")
	t.Parallel()
	url := testdb.NewURL(t)
	s := pgtest.StoreOn(t, postgres.New, url, "test", 4)
	p := pgtest.Provider(t, s, "acme", "crm")
	ctx := context.Background()
	now := time.Now()
	old := now.AddDate(0, 0, -40)
	for _, from := range []time.Time{old, now} {
		if _, err := s.EnsurePartitions(ctx, from, maintain.PartitionsAhead); err != nil {
			t.Fatal(err)
		}
	}
	cleanupIngestAt(t, s, p, pgtest.Event("ev-old", "c-old", 1, `{"a":1}`), old)
	ahead := pg.UTCDay(now).AddDate(0, 0, maintain.PartitionsAhead+1) // the catch-all's first day
	cleanupIngestAt(t, s, p, pgtest.Event("ev-ahead", "c-ahead", 1, `{"a":1}`), ahead.Add(time.Hour))

	detachPending(t, s, url, "events", maintain.PartitionName("events", old))
	detachPending(t, s, url, "deliveries", "deliveries_from"+ahead.Format(maintain.PartitionDayFormat))
	// While the catch-all's detach is pending, a row dated after the daily
	// partitions has nowhere to go.
	d := pgtest.Delivery(p)
	d.ReceivedAt = ahead.AddDate(0, 0, 3)
	if _, err := s.Ingest(ctx, d, p, []domain.Event{pgtest.Event("ev-lost", "c-lost", 1, `{"a":1}`)}); err == nil {
		t.Error("a delivery dated after the daily partitions was stored beside a pending detach")
	}

	r, err := s.Cleanup(ctx, now, testRetention)
	if err != nil || len(r.Deferred) != 0 {
		t.Fatalf("pass: %v, %s", err, r)
	}
	for _, name := range []string{maintain.PartitionName("events", old), maintain.PartitionName("deliveries", old)} {
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

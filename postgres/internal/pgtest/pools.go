package pgtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// StoreOn opens a store on url whose connections carry application_name
// app, so that pg_stat_activity tells them apart.
func StoreOn[S Store](t testing.TB, open Open[S], url, app string, conns int32) S {
	t.Helper()
	return StoreConfigured(t, open, url, func(cfg *pgxpool.Config) {
		cfg.MaxConns = conns
		cfg.ConnConfig.RuntimeParams["application_name"] = app
	})
}

// StoreConfigured is a store on the database at url, its pool configured
// by configure.
func StoreConfigured[S Store](t testing.TB, open Open[S], url string, configure func(*pgxpool.Config)) S {
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
	return On(t, open, pool)
}

// LongReader opens a transaction that reads table and keeps it open, as a
// pg_dump or a long API read would, until the returned func ends it.
func LongReader(t testing.TB, url, table string) (end func()) {
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

// LockWait is a moment a backend waited on another's lock.
type LockWait struct {
	What   string
	Waited time.Duration
}

// WaitsOnOthers samples, every few milliseconds until stop is closed, the
// backends of application app that wait on a lock another application's
// backend holds or waits for ahead of them (pg_blocking_pids counts both),
// with how long each has waited so far.
func WaitsOnOthers(t testing.TB, url, app string, stop <-chan struct{}) <-chan []LockWait {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	found := make(chan []LockWait, 1)
	go func() {
		defer conn.Close(ctx)
		var seen []LockWait
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
					var more []LockWait
					more, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (LockWait, error) {
						var w LockWait
						return w, row.Scan(&w.What, &w.Waited)
					})
					seen = append(seen, more...)
				}
			}
			if err != nil {
				seen = append(seen, LockWait{What: err.Error(), Waited: time.Hour})
				return
			}
		}
	}()
	return found
}

// Percentile returns the p-th percentile of sorted durations.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	return sorted[min(len(sorted)-1, int(float64(len(sorted))*p))]
}

// WarmPool opens a pool of maxConns connections on the database at url,
// tagged app in pg_stat_activity, and opens them all first, so that the
// goroutines of a race do not queue behind dialing.
func WarmPool(t testing.TB, url, app string, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = maxConns
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	conns := make([]*pgxpool.Conn, 0, maxConns)
	for range maxConns {
		c, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Release()
	}
	return pool
}

// Package leases holds the queue workers' partition leases as session
// advisory locks on a connection of their own: a lease lasts as long as
// the worker's session, so a worker that dies or loses its connection
// loses its leases at once, and no lease outlives its holder.
//
// The locks use PostgreSQL's two-key form (class, id), whose keys never
// meet the one-key locks of leads, maintenance and alert evaluation.
package leases

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5"
)

// Classes of the locks: a worker's session ("TDMW") and a partition's
// lease ("TDMQ").
const (
	workerClass    int32 = 0x54444d57
	partitionClass int32 = 0x54444d51
)

const (
	joinSQL    = `SELECT pg_advisory_lock(@class, pg_backend_pid())`
	takeSQL    = `SELECT pg_try_advisory_lock(@class, @id)`
	releaseSQL = `SELECT pg_advisory_unlock(@class, @id)`
	aliveSQL   = `SELECT 1`
	// workersSQL counts the sessions of workers on this database.
	workersSQL = `
SELECT count(*) FROM pg_locks
WHERE locktype = 'advisory' AND granted AND classid = @class::oid AND objsubid = 2
  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`
)

// Partitions are one worker's leases.
type Partitions struct {
	cfg *pgx.ConnConfig

	mu   sync.Mutex
	conn *pgx.Conn    // nil until the first Take, and after a lost session
	held map[int]bool // the partitions whose leases conn holds
}

// New returns the leases of a worker connecting with cfg (the pool's
// connection settings: the session is not the pool's).
func New(cfg *pgx.ConnConfig) *Partitions { return &Partitions{cfg: cfg.Copy(), held: map[int]bool{}} }

// session returns the worker's session, starting one if there is none.
// Called with mu held.
func (l *Partitions) session(ctx context.Context) (*pgx.Conn, error) {
	if l.conn != nil {
		return l.conn, nil
	}
	conn, err := pgx.ConnectConfig(ctx, l.cfg)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, joinSQL, pgx.NamedArgs{"class": workerClass}); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	l.conn = conn
	return conn, nil
}

// do runs sql on the session; an error ends the session, whose leases
// are then lost.
func (l *Partitions) do(ctx context.Context, sql string, args pgx.NamedArgs, dest any) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	conn, err := l.session(ctx)
	if err != nil {
		return err
	}
	if err = conn.QueryRow(ctx, sql, args).Scan(dest); err != nil {
		l.lost(ctx)
	}
	return err
}

// lost ends the session after an error: its leases are gone. Called with
// mu held.
func (l *Partitions) lost(ctx context.Context) {
	l.conn.Close(context.WithoutCancel(ctx))
	l.conn = nil
	clear(l.held)
}

// Take implements queue.Leases.
func (l *Partitions) Take(ctx context.Context, p int) (bool, error) {
	var ok bool
	err := l.do(ctx, takeSQL, pgx.NamedArgs{"class": partitionClass, "id": int32(p)}, &ok)
	if ok && err == nil {
		l.mu.Lock()
		l.held[p] = true
		l.mu.Unlock()
	}
	return ok && err == nil, err
}

// Release implements queue.Leases.
func (l *Partitions) Release(ctx context.Context, p int) error {
	l.mu.Lock()
	delete(l.held, p)
	l.mu.Unlock()
	var ok bool
	return l.do(ctx, releaseSQL, pgx.NamedArgs{"class": partitionClass, "id": int32(p)}, &ok)
}

// Workers implements queue.Leases.
func (l *Partitions) Workers(ctx context.Context) (int, error) {
	var n int
	err := l.do(ctx, workersSQL, pgx.NamedArgs{"class": workerClass}, &n)
	return n, err
}

// Holding implements queue.Leases: the partitions whose leases this
// worker's session holds, once the session answered; none after it ended.
func (l *Partitions) Holding(ctx context.Context) ([]int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return nil, nil
	}
	if _, err := l.conn.Exec(ctx, aliveSQL); err != nil {
		l.lost(ctx)
		return nil, err
	}
	held := make([]int, 0, len(l.held))
	for p := range l.held {
		held = append(held, p)
	}
	return held, nil
}

// Close ends the session, releasing every lease.
func (l *Partitions) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil {
		l.lost(context.Background())
	}
}

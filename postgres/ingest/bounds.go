package ingest

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// bounds are the limits a write's transaction sets itself (genericPlansSQL);
// zero ones keep the connection's.
type bounds struct {
	lockWait  time.Duration // each lock wait: a lane's group (committer.go)
	statement time.Duration // each statement: until the senders' deadline
}

// commitGrace is how long past its senders' deadline a write's connection
// is kept waiting for the database's answer.
//
// A write is bounded by the database, not by cancelling its connection:
// each statement stops at the deadline (statement_timeout), which rolls
// the transaction back and says so. Cancelling the connection instead can
// cut the answer of a COMMIT the database made, and the sender is told 503
// for a delivery that was stored (the contract says nothing of a 503 is),
// so its provider's retry comes out duplicate. Only a database that has
// not answered commitGrace after the deadline leaves a write's outcome
// unknown.
const commitGrace = 10 * time.Second

// boundedWrite is how a write due by deadline (none when !has) runs: the
// context that takes its connection, ending at the deadline; the one its
// statements are sent with, which no sender cancels and which lasts
// commitGrace longer; and its statements' limit, the time left.
func boundedWrite(deadline time.Time, has bool) (acquire, send context.Context, cancel context.CancelFunc, statement time.Duration) {
	if !has {
		ctx, cancel := context.WithCancel(context.Background())
		return ctx, ctx, cancel, 0
	}
	acquire, cancelAcquire := context.WithDeadline(context.Background(), deadline)
	send, cancelSend := context.WithDeadline(context.Background(), deadline.Add(commitGrace))
	return acquire, send, func() { cancelAcquire(); cancelSend() }, max(time.Until(deadline), time.Millisecond)
}

// sendBounded takes a connection of pool by acquire's deadline and sends
// batch on it with send.
func sendBounded(acquire, send context.Context, pool *pgxpool.Pool, batch *pgx.Batch) error {
	conn, err := pool.Acquire(acquire)
	if err != nil {
		return err
	}
	defer conn.Release()
	return conn.SendBatch(send, batch).Close()
}

package pg

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
)

// setStatementTimeoutSQL is SET LOCAL statement_timeout with a parameter.
const setStatementTimeoutSQL = `SELECT set_config('statement_timeout', @ms, true)`

// WithTx runs fn in a transaction and commits it. The rollback uses a
// context that survives the request's cancellation, so a cancelled request
// never leaves a connection in a failed transaction. When ctx carries a
// write timeout (domain.WithWriteTimeout) each statement stops after it,
// and the transaction answers domain.ErrWriteTimeout.
func WithTx(ctx context.Context, pool *pgxpool.Pool, fn func(tx pgx.Tx) error) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return Translate(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	timeout, timed := domain.WriteTimeout(ctx)
	if timed {
		if _, err := tx.Exec(ctx, setStatementTimeoutSQL,
			pgx.NamedArgs{"ms": strconv.FormatInt(max(timeout.Milliseconds(), 1), 10)}); err != nil {
			return Translate(err)
		}
	}
	if err := fn(tx); err != nil {
		return writeTimedOut(timed, err)
	}
	return writeTimedOut(timed, Translate(tx.Commit(ctx)))
}

// writeTimedOut names a statement stopped by the write timeout as such,
// not as a read stopped by the read timeout.
func writeTimedOut(timed bool, err error) error {
	var pgErr *pgconn.PgError
	if timed && (errors.Is(err, domain.ErrReadTimeout) || errors.As(err, &pgErr) && pgErr.Code == "57014") {
		return fmt.Errorf("%w (%s)", domain.ErrWriteTimeout, err)
	}
	return err
}

// sequentialSQL makes the rest of a transaction send its statements on
// distributed tables one connection per node under Citus (a placeholder
// setting on plain PostgreSQL): Citus refuses to change a reference table
// after a parallel read of distributed tables in the same transaction.
const sequentialSQL = `SET LOCAL citus.multi_shard_modify_mode = 'sequential'`

// WithSequentialTx is WithTx for a transaction that changes reference
// tables (apps, users, single sign-on's) beside reads of distributed ones.
func WithSequentialTx(ctx context.Context, pool *pgxpool.Pool, fn func(tx pgx.Tx) error) error {
	return Translate(WithTx(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, sequentialSQL); err != nil {
			return err
		}
		return fn(tx)
	}))
}

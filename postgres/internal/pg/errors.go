package pg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tidemark/tidemark/domain"
)

// Translate maps connection failures, and deadlocks that outlasted their
// retries, to EUNAVAILABLE so callers can answer "retry later"; other errors
// pass through.
func Translate(err error) error {
	if err == nil {
		return nil
	}
	var derr *domain.Error
	if errors.As(err, &derr) {
		return err
	}
	if Unavailable(err) || Retryable(err) {
		return fmt.Errorf("%w: %w", domain.Errorf(domain.EUNAVAILABLE, "database unavailable, retry later"), err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "57014" {
		// query_canceled: the read pool's statement_timeout (a cancelled
		// context closes the connection instead, see pgconn's
		// DeadlineContextWatcherHandler).
		return fmt.Errorf("%w (%s)", domain.ErrReadTimeout, pgErr.Message)
	}
	if errors.As(err, &pgErr) && pgErr.Code[:2] == "22" {
		// Class 22, data exception: a value the sender chose that PostgreSQL
		// cannot store, such as a lone UTF-16 surrogate in a JSON string.
		return domain.Errorf(domain.EINVALID, "the delivery holds a value that cannot be stored: %s", pgErr.Message)
	}
	return err
}

func Unavailable(err error) bool {
	// A server that crashed or shut down in immediate mode closes the
	// connection with no error message: pgconn reads an unexpected EOF.
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08: connection exception; 57P: operator intervention (shutdown); 53: insufficient resources.
		c := pgErr.Code
		return c[:2] == "08" || c[:3] == "57P" || c[:2] == "53"
	}
	return pgconn.SafeToRetry(err)
}

// Retryable reports whether a transaction failed only because it lost a
// deadlock or serialization race and can simply run again.
func Retryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

// LockNotAvailable reports whether err is a lock wait cut short by
// lock_timeout (or a NOWAIT lock not granted).
func LockNotAvailable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "55P03"
}

func NotFound(format string, args ...any) error {
	return domain.Errorf(domain.ENOTFOUND, format, args...)
}

func UniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

package domain

import (
	"context"
	"time"
)

type writeTimeoutKey struct{}

// WithWriteTimeout returns ctx whose database transactions stop each
// statement after d: writes that a console or API request starts must not
// hold a connection of the shared ingest pool for as long as a lock or a
// big scan lasts.
func WithWriteTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, writeTimeoutKey{}, d)
}

// WriteTimeout returns the statement timeout of ctx's writes, if one was set.
func WriteTimeout(ctx context.Context) (time.Duration, bool) {
	d, ok := ctx.Value(writeTimeoutKey{}).(time.Duration)
	return d, ok && d > 0
}

// ErrWriteTimeout is returned when a write a request started ran into its
// write timeout and was rolled back.
var ErrWriteTimeout = &Error{Code: EUNAVAILABLE,
	Message: "The change took too long and was stopped; nothing was changed. Try again in a moment."}

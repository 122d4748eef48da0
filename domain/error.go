// Package domain holds Tidemark's nouns, rules and the interfaces the web
// layer calls. It has no dependencies beyond the standard library.
package domain

import (
	"errors"
	"fmt"
)

// Error codes, mapped to HTTP statuses in one place by the web package.
const (
	EINVALID      = "invalid"   // the caller sent something unusable
	ENOTFOUND     = "not_found" // no such thing, or not visible to the caller
	ECONFLICT     = "conflict"  // the request contradicts the current state
	EUNAUTHORIZED = "unauthorized"
	EFORBIDDEN    = "forbidden"   // authenticated, but the role does not allow it
	EUNAVAILABLE  = "unavailable" // the database cannot be reached; retry later
	EINTERNAL     = "internal"
)

// Error is an error with a code and a message safe to show to the caller.
type Error struct {
	Code    string
	Message string
}

// Error names the code before the message, so logs and wrapped errors say
// what kind of failure it was; callers are shown ErrorMessage instead.
func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf returns an *Error with the given code.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, or EINTERNAL.
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the caller-safe message of err; internal errors are
// not described to callers.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// ErrReadTimeout is returned when a read of the console or the API ran into
// the read timeout (serve --read-timeout) and was stopped, so that a search
// the indexes cannot answer fails fast instead of holding a connection.
var ErrReadTimeout = &Error{Code: EUNAVAILABLE,
	Message: "The search took too long and was stopped. Narrow it: choose a time range, a provider or a record id."}

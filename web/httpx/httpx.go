// Package httpx holds what the web surfaces (hook, api, console) share:
// the one mapping of domain errors to statuses, JSON answers, URL
// parameters and the client's address.
package httpx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/reqlog"
)

// ErrorStatus maps a domain error code to an HTTP status.
func ErrorStatus(err error) int {
	switch domain.ErrorCode(err) {
	case domain.EINVALID:
		return http.StatusBadRequest
	case domain.ENOTFOUND:
		return http.StatusNotFound
	case domain.ECONFLICT:
		return http.StatusConflict
	case domain.EUNAUTHORIZED:
		return http.StatusUnauthorized
	case domain.EFORBIDDEN:
		return http.StatusForbidden
	case domain.EUNAVAILABLE:
		return http.StatusServiceUnavailable
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// Fail answers err as {"error": ...}. Internal errors are logged under a
// request id, not shown; an unavailable database asks the caller to retry,
// and a read stopped by the read timeout to narrow it.
func Fail(log *slog.Logger, w http.ResponseWriter, r *http.Request, err error) {
	status := ErrorStatus(err)
	msg := domain.ErrorMessage(err)
	switch {
	case status == http.StatusInternalServerError:
		InternalError(log, w, r, err)
		return
	case errors.Is(err, domain.ErrReadTimeout):
		log.WarnContext(r.Context(), "read stopped by the read timeout", "method", r.Method, "path", r.URL.Path, "err", err)
	case errors.Is(err, domain.ErrWriteTimeout):
		log.WarnContext(r.Context(), "write stopped by the write timeout", "method", r.Method, "path", r.URL.Path, "err", err)
	case status == http.StatusServiceUnavailable:
		log.WarnContext(r.Context(), "database unavailable", "path", r.URL.Path, "err", err)
		msg = "database unavailable, retry later"
	}
	WriteError(w, status, msg)
}

// InternalError answers 500 with {"error": "internal error", "request_id":
// ...}: the details stay in the log, under the same id.
func InternalError(log *slog.Logger, w http.ResponseWriter, r *http.Request, err error) {
	id := LogInternal(log, w, r, err)
	WriteJSON(w, http.StatusInternalServerError, map[string]string{"error": "internal error", "request_id": id})
}

// LogInternal logs err under the request's id (reqlog: every line logged
// for the request carries it), which it also sets as the answer's
// X-Request-Id header, and returns the id. Only the method and the path are
// logged with it: never a query (it can carry a URL token), a header or a
// body.
func LogInternal(log *slog.Logger, w http.ResponseWriter, r *http.Request, err error) string {
	id := reqlog.ID(r.Context())
	w.Header().Set("X-Request-Id", id)
	log.ErrorContext(r.Context(), "internal error", "request_id", id, "method", r.Method, "path", r.URL.Path, "err", err)
	return id
}

// RecoverPanics answers a panicking handler like any internal error, with
// the stack in the log. http.ErrAbortHandler is left to net/http.
func RecoverPanics(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				v := recover()
				if v == nil {
					return
				}
				if v == http.ErrAbortHandler {
					panic(v)
				}
				InternalError(log, w, r, fmt.Errorf("panic: %v\n%s", v, debug.Stack()))
			}()
			next.ServeHTTP(w, r)
		})
	}
}

// BaseURL is the URL providers and operators reach this server at: public
// when set, else built from the request.
func BaseURL(public string, r *http.Request) string {
	if public != "" {
		return public
	}
	scheme := "http://"
	if r.TLS != nil {
		scheme = "https://"
	}
	return scheme + r.Host
}

// WriteError answers {"error": msg}; internal errors go through Fail or
// InternalError instead, which add the request id. A 503 or 429 always
// tells when to retry: 5 s unless the caller set a Retry-After of its own.
func WriteError(w http.ResponseWriter, status int, msg string) {
	if (status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests) && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", "5")
	}
	WriteJSON(w, status, map[string]string{"error": msg})
}

// WriteJSON answers v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// PathParam is a URL parameter as sent, unescaped: chi routes on the
// escaped path when the request has one (an id holding "/" or "%"), and
// then hands its parameters out still escaped.
func PathParam(r *http.Request, name string) string {
	v := chi.URLParam(r, name)
	if r.URL.RawPath == "" {
		return v
	}
	if u, err := url.PathUnescape(v); err == nil {
		return u
	}
	return v
}

// RecordRef reads {provider}/{object_type}/{object_id}.
func RecordRef(r *http.Request) domain.RecordRef {
	return domain.RecordRef{Provider: PathParam(r, "provider"), ObjectType: PathParam(r, "object_type"),
		ObjectID: PathParam(r, "object_id")}
}

// ReplayJobID reads {id}; no job can have an id that is not a positive
// integer.
func ReplayJobID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil || id < 1 {
		return 0, domain.Errorf(domain.ENOTFOUND, "replay job not found")
	}
	return id, nil
}

// DestinationID reads {id}; no destination can have an id that is not a
// positive integer.
func DestinationID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil || id < 1 {
		return 0, domain.Errorf(domain.ENOTFOUND, "destination not found")
	}
	return id, nil
}

// ClientAddress is the peer's IP (after ClientAddr), for login throttling,
// the delivery log and the audit log.
func ClientAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// NoSniff sets X-Content-Type-Options: nosniff on every answer, so that a
// browser never reads a JSON or webhook answer echoing a sender's text as
// HTML or script.
func NoSniff(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}

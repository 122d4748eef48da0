package provider

import (
	"encoding/json"
	"net/http"
)

// queuedResponder is implemented by kinds whose provider needs an answer of
// its own to stop retrying: that answer, for a delivery stored in the
// delivery queue.
type queuedResponder interface {
	RespondQueued(w http.ResponseWriter, deliveryID, status string) int
}

// RespondQueued acknowledges a delivery stored in the delivery queue
// (serve --queue) to be applied later, and returns the HTTP status written:
// the kind's own acknowledgement where its provider expects one, else 202
// with {"delivery_id": ..., "status": status} (status is "queued", or
// "duplicate" for a retry the queue already held). Providers only need a
// 2xx after durable storage.
func RespondQueued(k Kind, w http.ResponseWriter, deliveryID, status string) int {
	if qr, ok := k.(queuedResponder); ok {
		return qr.RespondQueued(w, deliveryID, status)
	}
	return writeQueued(w, http.StatusAccepted, deliveryID, status)
}

// writeQueued writes the JSON answer of a queued delivery.
func writeQueued(w http.ResponseWriter, code int, deliveryID, status string) int {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"delivery_id": deliveryID, "status": status})
	return code
}

// Package retryafter reads how long an HTTP answer asks its client to wait
// before asking again: the bench's senders and its feed consumers both
// honour it, as the providers and consumers they stand for do.
package retryafter

import (
	"net/http"
	"strconv"
	"time"
)

// Of is the delay resp asks for in seconds, 0 for none.
func Of(resp *http.Response) time.Duration {
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
		return time.Duration(secs) * time.Second
	}
	return 0
}

package outbound

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/alertjson"
	"github.com/tidemark/tidemark/internal/changejson"
	"github.com/tidemark/tidemark/internal/whsig"
)

// answer is what an attempt got: an HTTP status (200 for a JetStream
// acknowledgement, 0 for none), an error to record, and the wait the
// destination asked for (Retry-After).
type answer struct {
	status     int
	err        string
	retryAfter time.Duration
}

// Bounds of what is read of an answer, and kept of it in an attempt's
// error.
const (
	maxAnswerRead = 4 << 10
	maxAnswerKept = 200
)

// post POSTs c to d's URL, signed with d's secrets.
func (s *Sender) post(ctx context.Context, d stream.LeasedDestination, c stream.Change) answer {
	body, err := changejson.MarshalMessage(c)
	if err != nil {
		return answer{err: "encode: " + err.Error()}
	}
	return s.postBody(ctx, d, c.ID(), body)
}

// postAlert POSTs alert event e to d's URL in d's format, signed with d's
// secrets like a change. A NATS destination takes no alert types (refused
// at creation).
func (s *Sender) postAlert(ctx context.Context, d stream.LeasedDestination, e alerting.Event) answer {
	if d.URL == "" {
		return answer{err: "not sent: alert events are sent to url destinations only"}
	}
	body, err := alertjson.Marshal(d.Format, d.TenantSlug, e)
	if err != nil {
		return answer{err: "encode: " + err.Error()}
	}
	return s.postBody(ctx, d, e.MessageID(), body)
}

// postBody POSTs body, the message id, to d's URL, signed with d's
// secrets.
func (s *Sender) postBody(ctx context.Context, d stream.LeasedDestination, id string, body []byte) answer {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(body))
	if err != nil {
		return answer{err: s.transportError(d, err)}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Tidemark")
	if err := whsig.Headers(req.Header, d.Secrets, id, time.Now(), body); err != nil {
		return answer{err: err.Error()}
	}
	resp, err := s.clients[d.AllowPrivate].Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			return answer{err: fmt.Sprintf("timeout: no answer within %s", s.o.Timeout)}
		}
		return answer{err: s.transportError(d, err)}
	}
	defer resp.Body.Close()
	excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswerRead))
	a := answer{status: resp.StatusCode, retryAfter: retryAfter(resp.Header.Get("Retry-After"))}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		a.err = fmt.Sprintf("answered %s", resp.Status)
		if e := printable(excerpt); e != "" {
			a.err += ": " + e
		}
	}
	return a
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// retryAfter reads Retry-After: seconds or an HTTP date; 0 when absent or
// unreadable.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// printable is the start of an answer's body as one line of text.
func printable(b []byte) string {
	var sb strings.Builder
	for len(b) > 0 && sb.Len() < maxAnswerKept {
		r, n := utf8.DecodeRune(b)
		b = b[n:]
		switch {
		case r == utf8.RuneError:
			sb.WriteRune('?')
		case unicode.IsSpace(r):
			sb.WriteByte(' ')
		case unicode.IsPrint(r):
			sb.WriteRune(r)
		}
	}
	return strings.TrimSpace(sb.String())
}

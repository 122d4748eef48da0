package hubspot

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/egress"
)

// AppConfig is a HubSpot public app as its API clients need it: the
// OAuth client and the API base (HubSpot's own unless a test or a sandbox
// gives another).
type AppConfig struct {
	BaseURL      string // DefaultBaseURL when empty
	ClientID     string
	ClientSecret string
	AllowPrivate bool // the base URL may be a private address (tests, sandboxes)
}

// Client calls the APIs of one public app: OAuth (oauth.go), the Webhooks
// Journal (journal.go), its subscriptions and snapshots. It retries 429 and
// 5xx answers as Source.call does, after Retry-After when HubSpot sends one,
// and never puts a token or the client secret in an error or a log.
type Client struct {
	base   string
	app    AppConfig
	http   *http.Client
	log    *slog.Logger
	secret []string // what must never be repeated: the client secret
}

// NewClient returns the client of an app. It returns an EINVALID error when
// the client id or secret is missing or the base URL is not an http(s) URL.
func NewClient(c AppConfig, log *slog.Logger) (*Client, error) {
	if c.ClientID == "" || c.ClientSecret == "" {
		return nil, domain.Errorf(domain.EINVALID, "a HubSpot app needs its client id and client secret")
	}
	u, err := egress.CheckURL(context.Background(), cmp.Or(c.BaseURL, DefaultBaseURL), true)
	if err != nil {
		return nil, domain.Errorf(domain.EINVALID, "the HubSpot API base %v", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Client{
		base:   strings.TrimRight(u.String(), "/"),
		app:    c,
		http:   egress.NewClient(c.AllowPrivate, requestLimit),
		log:    log,
		secret: []string{c.ClientSecret},
	}, nil
}

// request is one API call. Exactly one of form and body may be set; a
// bearer is sent as Authorization unless empty (token endpoints, signed
// URLs). what names the call in errors and logs instead of its path, which
// may hold a token.
type request struct {
	method, url, what string
	form              url.Values
	body              any
	bearer            string
	secrets           []string // more values to scrub from HubSpot's messages
}

// send makes the request, retrying network errors, 429 and 5xx, and decodes
// a 2xx answer into out (unless out is nil or the answer is empty; a
// *[]byte gets the answer as it is). Another
// status is an *apiError.
func (c *Client) send(ctx context.Context, r request, out any) error {
	var payload []byte
	contentType := ""
	switch {
	case r.form != nil:
		payload, contentType = []byte(r.form.Encode()), "application/x-www-form-urlencoded"
	case r.body != nil:
		var err error
		if payload, err = json.Marshal(r.body); err != nil {
			return fmt.Errorf("hubspot: encode %s: %w", r.what, err)
		}
		contentType = "application/json"
	}
	scrub := append(append([]string{r.bearer}, r.secrets...), c.secret...)
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, r.method, r.url, bytes.NewReader(payload))
		if err != nil {
			return fmt.Errorf("hubspot: %s: %s", r.what, redact(err.Error(), scrub))
		}
		req.Header.Set("Accept", "application/json")
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		if r.bearer != "" {
			req.Header.Set("Authorization", "Bearer "+r.bearer)
		}
		resp, err := c.http.Do(req)
		if err != nil {
			// A url.Error repeats the URL, which may hold a token or a signature.
			msg := err.Error()
			var ue *url.Error
			if errors.As(err, &ue) {
				msg = ue.Err.Error()
			}
			msg = redact(msg, scrub)
			if ctx.Err() != nil || errors.Is(err, egress.ErrPrivate) || attempt == maxAttempts {
				if ctx.Err() != nil {
					return fmt.Errorf("hubspot: %s: %w", r.what, ctx.Err())
				}
				return fmt.Errorf("hubspot: %s: %s", r.what, msg)
			}
			wait := backoff(attempt)
			c.log.Info("hubspot: request failed, retrying", "call", r.what, "err", msg, "wait", wait)
			if err := sleep(ctx, wait); err != nil {
				return err
			}
			continue
		}
		data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
		resp.Body.Close()
		c.log.Debug("hubspot: request", "call", r.what, "status", resp.StatusCode)
		if err != nil {
			return fmt.Errorf("hubspot: %s: read the answer: %w", r.what, err)
		}
		status := resp.StatusCode
		if status >= 200 && status < 300 {
			if raw, ok := out.(*[]byte); ok {
				*raw = data
				return nil
			}
			if out == nil || len(bytes.TrimSpace(data)) == 0 {
				return nil
			}
			if err := json.Unmarshal(data, out); err != nil {
				return fmt.Errorf("hubspot: %s: the answer is not the documented JSON: %w", r.what, err)
			}
			return nil
		}
		refusal := refusalOf(status, data, scrub)
		if status != http.StatusTooManyRequests && status < 500 {
			return refusal
		}
		wait, ok := retryAfter(resp.Header)
		if !ok {
			wait = backoff(attempt)
		}
		if attempt == maxAttempts || wait > maxRetryAfter {
			return domain.Errorf(domain.EUNAVAILABLE, "HubSpot answered %d to %s %d times (last asked to wait %s): %s", status, r.what, attempt, wait, refusal.Message)
		}
		c.log.Info("hubspot: rate limited or unavailable, waiting", "call", r.what, "status", status, "wait", wait, "attempt", attempt)
		if err := sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// oauthAnswer is an error answer: the API's (message, category) or the
// OAuth endpoints' (status such as BAD_REFRESH_TOKEN, message).
type oauthAnswer struct {
	Status   string `json:"status"`
	Message  string `json:"message"`
	Category string `json:"category"`
}

// refusalOf is a refused answer as an *apiError, its message scrubbed.
func refusalOf(status int, data []byte, scrub []string) *apiError {
	var a oauthAnswer
	json.Unmarshal(data, &a)
	reason := cmp.Or(a.Category, a.Status)
	msg := clip(redact(a.Message, scrub))
	if reason != "" && reason != "error" {
		msg = strings.TrimSpace(reason + " " + msg)
	}
	return &apiError{Status: status, Message: msg}
}

// redact replaces every secret in s (tokens, the client secret, codes).
func redact(s string, secrets []string) string {
	for _, v := range secrets {
		if len(v) >= 4 {
			s = strings.ReplaceAll(s, v, "[redacted]")
			s = strings.ReplaceAll(s, url.QueryEscape(v), "[redacted]")
		}
	}
	return s
}

// statusOf is the HTTP status of a refused answer, 0 for other errors.
func statusOf(err error) int {
	var refused *apiError
	if errors.As(err, &refused) {
		return refused.Status
	}
	return 0
}

// unauthorized reports whether err is HubSpot refusing the bearer token.
func unauthorized(err error) bool { return statusOf(err) == http.StatusUnauthorized }

// millis is HubSpot's epoch-milliseconds time in JSON.
func millis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

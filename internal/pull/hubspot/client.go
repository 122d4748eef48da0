package hubspot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/egress"
)

// The limits of https://developers.hubspot.com/docs/api/usage-details and
// https://developers.hubspot.com/docs/api/crm/search: the search endpoints
// take a few requests per second per account (4 per token in the changelog,
// 5 per account in the guide), so searches are spaced by searchGap; a 429
// or 5xx is retried, after Retry-After when HubSpot sends one.
const (
	searchGap     = 250 * time.Millisecond
	maxAttempts   = 5
	firstBackoff  = 500 * time.Millisecond
	maxRetryAfter = 2 * time.Minute
	maxAnswer     = 32 << 20
	requestLimit  = 60 * time.Second
)

// apiError is an answer HubSpot refused with; Message is HubSpot's.
type apiError struct {
	Status  int
	Message string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("HubSpot answered %d: %s", e.Status, e.Message)
}

// hubspotAnswer is the part of HubSpot's error body that explains it.
type hubspotAnswer struct {
	Message    string `json:"message"`
	Category   string `json:"category"`
	PolicyName string `json:"policyName"`
}

// call sends one request (body marshalled as JSON when not nil) and decodes
// a 200 or 207 answer into out. It spaces searches, retries 429 and 5xx, and
// stops before a request would pass the daily budget share.
func (s *Source) call(ctx context.Context, method, path string, body, out any) error {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return fmt.Errorf("hubspot: encode %s: %w", path, err)
		}
	}
	endpoint, _, _ := strings.Cut(path, "?")
	search := strings.HasSuffix(endpoint, "/search")
	bearer, err := s.bearer(ctx)
	if err != nil {
		return err
	}
	renewed := false
	for attempt := 1; ; attempt++ {
		if err := s.reserve(ctx, search); err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, method, s.base+path, bytes.NewReader(payload))
		if err != nil {
			return fmt.Errorf("hubspot: %s %s: %w", method, endpoint, err)
		}
		req.Header.Set("Authorization", "Bearer "+bearer)
		req.Header.Set("Accept", "application/json")
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		start := time.Now()
		resp, err := s.http.Do(req)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, egress.ErrPrivate) || attempt == maxAttempts {
				return fmt.Errorf("hubspot: %s %s: %w", method, endpoint, err)
			}
			wait := backoff(attempt)
			s.log.Info("hubspot: request failed, retrying", "method", method, "endpoint", endpoint, "err", err, "wait", wait)
			if err := sleep(ctx, wait); err != nil {
				return err
			}
			continue
		}
		data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
		resp.Body.Close()
		s.noteBudget(resp.Header)
		s.log.Debug("hubspot: request", "method", method, "endpoint", endpoint, "status", resp.StatusCode, "took", time.Since(start))
		if err != nil {
			return fmt.Errorf("hubspot: %s %s: read the answer: %w", method, endpoint, err)
		}
		var answer hubspotAnswer
		if resp.StatusCode >= 300 {
			json.Unmarshal(data, &answer)
			answer.Message = clip(answer.Message)
		}
		switch status := resp.StatusCode; {
		case status == http.StatusOK || status == http.StatusMultiStatus:
			if err := json.Unmarshal(data, out); err != nil {
				return fmt.Errorf("hubspot: %s %s: the answer is not the documented JSON: %w", method, endpoint, err)
			}
			return nil
		case status == http.StatusUnauthorized && s.tokens != nil && !renewed:
			// An install's token: renewed once, as the app's client does.
			if bearer, err = s.tokens.Rejected(ctx, bearer); err != nil {
				return err
			}
			renewed = true
		case status == http.StatusUnauthorized && s.tokens != nil:
			return domain.Errorf(domain.EINVALID, "HubSpot refused the install's access token for %s (401 %s), even renewed", endpoint, answer.Category)
		case status == http.StatusUnauthorized:
			return domain.Errorf(domain.EINVALID, "HubSpot refused the private app access token (401 %s): it is invalid, expired or revoked; set a new token with provider update --api-token-stdin", answer.Category)
		case status == http.StatusForbidden:
			return domain.Errorf(domain.EINVALID, "HubSpot refused the private app access token for %s (403 %s): it lacks the scopes to read %s (%s)", endpoint, answer.Category, objectTypeOf(endpoint), answer.Message)
		case status == http.StatusTooManyRequests && answer.PolicyName == "DAILY":
			return domain.Errorf(domain.EUNAVAILABLE, "backfill stopped: the HubSpot account's daily API limit is spent (%s)", answer.Message)
		case status == http.StatusTooManyRequests || status >= 500:
			wait, ok := retryAfter(resp.Header)
			if !ok {
				wait = backoff(attempt)
			}
			if attempt == maxAttempts || wait > maxRetryAfter {
				return domain.Errorf(domain.EUNAVAILABLE, "HubSpot answered %d to %s %d times (last asked to wait %s): %s", status, endpoint, attempt, wait, answer.Message)
			}
			s.log.Info("hubspot: rate limited or unavailable, waiting", "endpoint", endpoint, "status", status, "wait", wait, "attempt", attempt)
			if err := sleep(ctx, wait); err != nil {
				return err
			}
		default:
			return &apiError{Status: status, Message: answer.Message}
		}
	}
}

// bearer is the token calls carry: the private app's, or the install's.
func (s *Source) bearer(ctx context.Context) (string, error) {
	if s.tokens == nil {
		return s.token, nil
	}
	return s.tokens.AccessToken(ctx)
}

// objectTypeOf names the object type of an endpoint's path, for messages.
func objectTypeOf(endpoint string) string {
	rest := strings.TrimPrefix(endpoint, "/crm/v3/objects/")
	typ, _, _ := strings.Cut(rest, "/")
	return typ
}

// clip bounds a message HubSpot sent before it is repeated.
func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// reserve waits for the request's turn: a search not sooner than searchGap
// after the previous one (across every Pull of this Source, as the limit is
// the account's). It first refuses a request that would take the account's
// daily usage past the budget share.
func (s *Source) reserve(ctx context.Context, search bool) error {
	s.mu.Lock()
	if s.daily > 0 {
		used := s.daily - s.remaining + 1
		if float64(used) > s.share*float64(s.daily) {
			s.mu.Unlock()
			return domain.Errorf(domain.EUNAVAILABLE,
				"backfill stopped: it would use more than %s of the account's daily API budget (%d of %d calls used today)",
				percent(s.share), used-1, s.daily)
		}
		// Until an answer says otherwise, this request spends one call.
		s.remaining--
	}
	var wait time.Duration
	if search {
		next := time.Now()
		if earliest := s.lastSearch.Add(s.searchGap); earliest.After(next) {
			next = earliest
		}
		s.lastSearch = next
		wait = time.Until(next)
	}
	s.mu.Unlock()
	return sleep(ctx, wait)
}

// noteBudget takes the daily budget from HubSpot's rate-limit headers.
// Answers without them (the search API's) leave the running estimate.
func (s *Source) noteBudget(h http.Header) {
	daily, err1 := strconv.ParseInt(h.Get("X-HubSpot-RateLimit-Daily"), 10, 64)
	remaining, err2 := strconv.ParseInt(h.Get("X-HubSpot-RateLimit-Daily-Remaining"), 10, 64)
	if err1 != nil || err2 != nil || daily <= 0 {
		return
	}
	s.mu.Lock()
	s.daily, s.remaining = daily, remaining
	s.mu.Unlock()
}

func percent(share float64) string {
	return strconv.FormatFloat(math.Round(share*1000)/10, 'f', -1, 64) + "%"
}

// retryAfter reads Retry-After in seconds (HubSpot sends no dates).
func retryAfter(h http.Header) (time.Duration, bool) {
	n, err := strconv.Atoi(strings.TrimSpace(h.Get("Retry-After")))
	if err != nil || n < 0 {
		return 0, false
	}
	return time.Duration(n) * time.Second, true
}

// backoff is the wait before attempt+1 when HubSpot gave no Retry-After.
func backoff(attempt int) time.Duration { return firstBackoff << (attempt - 1) }

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

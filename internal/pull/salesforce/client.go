package salesforce

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ErrBudgetSpent is wrapped by the error of a pull stopped because the
// org's daily API usage passed the share of its limit the credentials
// allow.
var ErrBudgetSpent = errors.New("salesforce: the API budget share for backfill is spent")

// maxBody bounds an answer: a page of 2,000 records with many fields.
const maxBody = 32 << 20

var limitInfoPattern = regexp.MustCompile(`api-usage=([0-9]+)/([0-9]+)`)

// apiError is a refusal by Salesforce, as its REST API documents them (an
// array of {message, errorCode}) or its token endpoint ({error,
// error_description}).
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string {
	if e.code == "" {
		return fmt.Sprintf("salesforce answered %d", e.status)
	}
	return fmt.Sprintf("salesforce answered %d %s: %.300s", e.status, e.code, e.message)
}

// readError reads a refusal's body in either documented shape.
func readError(status int, body []byte) *apiError {
	e := &apiError{status: status}
	var list []struct{ Message, ErrorCode string }
	var oauth struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if json.Unmarshal(body, &list) == nil && len(list) > 0 {
		e.code, e.message = list[0].ErrorCode, list[0].Message
	} else if json.Unmarshal(body, &oauth) == nil {
		e.code, e.message = oauth.Error, oauth.Description
	}
	return e
}

// retryable is true for what Salesforce asks to be tried later: 429, 503,
// and 403 REQUEST_LIMIT_EXCEEDED (its answer when the org is over its
// request limits).
func retryable(e *apiError) bool {
	return e.status == http.StatusTooManyRequests || e.status == http.StatusServiceUnavailable ||
		(e.status == http.StatusForbidden && e.code == "REQUEST_LIMIT_EXCEEDED")
}

// send makes the request build returns, again after a pause while
// Salesforce answers retryable or the connection fails, at most s.retries
// times more. It returns the body of a 2xx answer, or the refusal.
func (s *Source) send(ctx context.Context, build func() (*http.Request, error)) ([]byte, error) {
	for attempt := 0; ; attempt++ {
		req, err := build()
		if err != nil {
			return nil, err
		}
		body, header, err := s.roundTrip(req)
		if err == nil {
			return body, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var refusal *apiError
		isAPI := errors.As(err, &refusal)
		if (isAPI && !retryable(refusal)) || attempt == s.retries {
			return nil, err
		}
		pause, err := s.pause(attempt, header, err)
		if err != nil {
			return nil, err
		}
		s.log.Info("salesforce: trying again", "path", req.URL.Path, "after", pause, "reason", err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pause):
		}
	}
}

// roundTrip makes one request and reads the answer, noting the org's API
// usage. A transport error is returned without the URL, whose query may be
// long; an answer other than 2xx as an *apiError.
func (s *Source) roundTrip(req *http.Request) ([]byte, http.Header, error) {
	resp, err := s.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, nil, fmt.Errorf("salesforce %s %s: %w", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	s.noteUsage(resp.Header.Get("Sforce-Limit-Info"))
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, resp.Header, fmt.Errorf("salesforce %s %s: reading the answer: %w", req.Method, req.URL.Path, err)
	}
	if len(body) > maxBody {
		return nil, resp.Header, fmt.Errorf("salesforce %s %s: the answer is over %d MiB", req.Method, req.URL.Path, maxBody>>20)
	}
	s.log.Debug("salesforce: request", "method", req.Method, "path", req.URL.Path, "status", resp.StatusCode)
	if resp.StatusCode/100 != 2 {
		return nil, resp.Header, readError(resp.StatusCode, body)
	}
	return body, resp.Header, nil
}

// pause is how long to wait before attempt+1: Retry-After when the answer
// has one (in seconds or as a date), else s.wait doubled per attempt, at
// most s.maxWait. A Retry-After beyond maxWait fails with cause.
func (s *Source) pause(attempt int, header http.Header, cause error) (time.Duration, error) {
	if ra := strings.TrimSpace(header.Get("Retry-After")); ra != "" {
		var d time.Duration
		if secs, err := strconv.Atoi(ra); err == nil && secs >= 0 {
			d = time.Duration(secs) * time.Second
		} else if at, err := http.ParseTime(ra); err == nil {
			d = max(time.Until(at), 0)
		}
		if d > s.maxWait {
			return 0, fmt.Errorf("%w; Salesforce asks to wait %s, longer than %s", cause, d, s.maxWait)
		}
		return d, nil
	}
	return min(s.wait<<attempt, s.maxWait), nil
}

// noteUsage keeps the org's API usage from a Sforce-Limit-Info header
// (api-usage=USED/LIMIT).
func (s *Source) noteUsage(h string) {
	m := limitInfoPattern.FindStringSubmatch(h)
	if m == nil {
		return
	}
	used, err1 := strconv.Atoi(m[1])
	limit, err2 := strconv.Atoi(m[2])
	if err1 != nil || err2 != nil || limit <= 0 {
		return
	}
	s.mu.Lock()
	s.used, s.limit = used, limit
	s.mu.Unlock()
}

// checkBudget fails with ErrBudgetSpent once the last usage seen is over
// the share.
func (s *Source) checkBudget() error {
	s.mu.Lock()
	used, limit := s.used, s.limit
	s.mu.Unlock()
	if limit > 0 && float64(used)/float64(limit) > s.share {
		return fmt.Errorf("%w: the org has used %d of its %d daily API requests, more than the %g%% a backfill may use",
			ErrBudgetSpent, used, limit, s.share*100)
	}
	return nil
}

// session returns the cached access token and instance URL, signing in
// first when there are none.
func (s *Source) session(ctx context.Context) (string, *url.URL, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token != "" {
		return s.token, s.instance, nil
	}
	// Holding the lock while signing in makes concurrent pulls wait for
	// one token rather than each fetch their own.
	token, instance, err := s.signIn(ctx)
	if err != nil {
		return "", nil, err
	}
	s.token, s.instance = token, instance
	return token, instance, nil
}

// forget drops token from the cache, unless another request renewed it
// already.
func (s *Source) forget(token string) {
	s.mu.Lock()
	if s.token == token {
		s.token, s.instance = "", nil
	}
	s.mu.Unlock()
}

// signIn runs the client credentials flow: POST
// {LoginURL}/services/oauth2/token with grant_type, client_id and
// client_secret; the answer has access_token and instance_url. Salesforce
// says nothing of when the token expires (the org's session timeout
// decides), so it is used until a request answers 401.
func (s *Source) signIn(ctx context.Context) (string, *url.URL, error) {
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {s.clientID}, "client_secret": {s.clientSecret}}.Encode()
	body, err := s.send(ctx, func() (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.loginURL+"/services/oauth2/token", strings.NewReader(form))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "application/json")
		return req, nil
	})
	if err != nil {
		return "", nil, fmt.Errorf("salesforce: signing in with the client credentials flow: %w", err)
	}
	var answer struct {
		AccessToken string `json:"access_token"`
		InstanceURL string `json:"instance_url"`
	}
	if err := json.Unmarshal(body, &answer); err != nil || answer.AccessToken == "" {
		return "", nil, errors.New("salesforce: the token endpoint's answer has no access_token")
	}
	instance, err := checkBaseURL(answer.InstanceURL, s.allowPrivate)
	if err != nil {
		return "", nil, fmt.Errorf("salesforce: the token endpoint's instance_url: %w", err)
	}
	s.log.Info("salesforce: signed in", "instance", instance.Host)
	return answer.AccessToken, instance, nil
}

// get reads the REST resource at path (with query) on the instance into
// out. A 401 signs in again and tries once more; the budget is checked
// before each request.
func (s *Source) get(ctx context.Context, path string, query url.Values, out any) error {
	for renewed := false; ; renewed = true {
		if err := s.checkBudget(); err != nil {
			return err
		}
		token, instance, err := s.session(ctx)
		if err != nil {
			return err
		}
		body, err := s.send(ctx, func() (*http.Request, error) {
			u := *instance
			u.Path, u.RawQuery = path, query.Encode()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
			if err != nil {
				return nil, err
			}
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Accept", "application/json")
			return req, nil
		})
		var refusal *apiError
		if errors.As(err, &refusal) && refusal.status == http.StatusUnauthorized && !renewed {
			s.log.Info("salesforce: the access token was refused; signing in again", "code", refusal.code)
			s.forget(token)
			continue
		}
		if err != nil {
			return err
		}
		d := json.NewDecoder(bytes.NewReader(body))
		d.UseNumber() // numbers keep the text Salesforce wrote
		if err := d.Decode(out); err != nil {
			return fmt.Errorf("salesforce GET %s: the answer is not the documented JSON: %w", path, err)
		}
		return nil
	}
}

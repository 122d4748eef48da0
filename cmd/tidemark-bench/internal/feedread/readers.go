// Package feedread is the two readers of the feed bench, and what they got
// of a run's changes: a consumer following a tenant's GET .../changes with
// long polls, and the endpoint of a destination the server pushes every
// change to, which checks each message's signature.
package feedread

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidemark/tidemark/internal/changejson"
	"github.com/tidemark/tidemark/internal/whsig"
)

// sighting is one arrival of a change at a reader.
type sighting struct {
	id              string
	committed, seen time.Time
}

// sightings collects a reader's arrivals, repeats included.
type sightings struct {
	mu  sync.Mutex
	all []sighting
}

func (s *sightings) add(batch ...sighting) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all = append(s.all, batch...)
}

func (s *sightings) list() []sighting {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sighting(nil), s.all...)
}

// distinct is how many different changes arrived.
func (s *sightings) distinct() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make(map[string]bool, len(s.all))
	for _, x := range s.all {
		ids[x.id] = true
	}
	return len(ids)
}

// Feed pages as the contract's consumer asks for them.
const (
	PageLimit = 1000
	Wait      = 5 // seconds
)

// followFeed reads tenant's feed from its start, as a consumer following
// the tail does, recording each change when its page has been read, until
// ctx ends.
func followFeed(ctx context.Context, base, tenant, token string, into *sightings) error {
	client := &http.Client{Timeout: (Wait + 30) * time.Second}
	cursor := ""
	for {
		page, err := readFeedPage(ctx, client, base, tenant, token, cursor)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		seen := time.Now()
		batch := make([]sighting, len(page.Changes))
		for i, c := range page.Changes {
			if batch[i], err = changeSighting(c, seen); err != nil {
				return err
			}
		}
		into.add(batch...)
		cursor = page.NextCursor
	}
}

// feedPage is the feed's answer.
type feedPage struct {
	Changes    []changejson.Change `json:"changes"`
	NextCursor string              `json:"next_cursor"`
}

// readFeedPage long-polls one page after cursor; a 503 (the tenant's read
// slots busy) is asked again after its Retry-After.
func readFeedPage(ctx context.Context, client *http.Client, base, tenant, token, cursor string) (feedPage, error) {
	target := fmt.Sprintf("%s/api/v1/tenants/%s/changes?limit=%d&wait=%d&after=%s",
		base, tenant, PageLimit, Wait, url.QueryEscape(cursor))
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return feedPage{}, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		status, body, retryAfter, err := readAll(client, req)
		switch {
		case err != nil:
			return feedPage{}, err
		case status == http.StatusServiceUnavailable:
			select {
			case <-ctx.Done():
				return feedPage{}, ctx.Err()
			case <-time.After(max(retryAfter, 100*time.Millisecond)):
			}
			continue
		case status != http.StatusOK:
			return feedPage{}, fmt.Errorf("GET changes: %d %.200s", status, body)
		}
		var page feedPage
		if err := json.Unmarshal(body, &page); err != nil {
			return feedPage{}, fmt.Errorf("GET changes: %w", err)
		}
		return page, nil
	}
}

// readAll sends req and reads the whole answer.
func readAll(client *http.Client, req *http.Request) (status int, body []byte, retryAfter time.Duration, err error) {
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, 0, err
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(resp.Body)
	return resp.StatusCode, body, retryDelay(resp), err
}

// retryDelay is the wait resp's Retry-After asks for (whole seconds), 0
// for none: the feed's consumer honours it, as a real one would. (The
// bench's senders have their own: this package cannot import them.)
func retryDelay(resp *http.Response) time.Duration {
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
		return time.Duration(secs) * time.Second
	}
	return 0
}

// changeSighting is c arriving at seen.
func changeSighting(c changejson.Change, seen time.Time) (sighting, error) {
	committed, err := time.Parse(time.RFC3339Nano, c.CommittedAt)
	if err != nil {
		return sighting{}, fmt.Errorf("change %s: committed_at: %w", c.ID, err)
	}
	return sighting{id: c.ID, committed: committed, seen: seen}, nil
}

// Receiver is the destination's endpoint on the loopback: it checks each
// message's Standard Webhooks signature with the destination's secret and
// that its webhook-id is its change's id, records its arrival, and answers
// 204. A message it refuses is answered 400 and counted: the sender retries
// it, and the run fails.
type Receiver struct {
	URL     string                 // where the destination is to send
	secret  atomic.Pointer[string] // set once the destination exists
	got     sightings
	refused atomic.Int64
	// firstRefusal says why the first refused message was.
	firstRefusal atomic.Pointer[string]
	server       *http.Server
	served       chan error
}

// signatureTolerance is how far a message's timestamp may be from the
// receiver's clock, as the Standard Webhooks libraries allow by default.
const signatureTolerance = 5 * time.Minute

// StartReceiver listens on a free loopback port. Until SetSecret, every
// message is answered 503.
func StartReceiver() (*Receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rc := &Receiver{URL: "http://" + ln.Addr().String() + "/tidemark", served: make(chan error, 1)}
	rc.server = &http.Server{Handler: rc, ReadHeaderTimeout: 10 * time.Second}
	go func() { rc.served <- rc.server.Serve(ln) }()
	return rc, nil
}

// SetSecret is the destination's signing secret, once it exists.
func (rc *Receiver) SetSecret(secret string) { rc.secret.Store(&secret) }

func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	arrived := time.Now()
	secret := rc.secret.Load()
	if err != nil || secret == nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	got, err := verifiedSighting(*secret, r.Header, body, arrived)
	if err != nil {
		rc.refused.Add(1)
		why := err.Error()
		rc.firstRefusal.CompareAndSwap(nil, &why)
		http.Error(w, why, http.StatusBadRequest)
		return
	}
	rc.got.add(got)
	w.WriteHeader(http.StatusNoContent)
}

// verifiedSighting is the change of a destination's message that arrived
// at arrived, if its signature is secret's and its webhook-id its id.
func verifiedSighting(secret string, h http.Header, body []byte, arrived time.Time) (sighting, error) {
	if err := whsig.Verify(secret, h, body, arrived, signatureTolerance); err != nil {
		return sighting{}, err
	}
	var m changejson.Message
	if err := json.Unmarshal(body, &m); err != nil {
		return sighting{}, fmt.Errorf("body: %w", err)
	}
	if id := h.Get("webhook-id"); id != m.Data.ID {
		return sighting{}, fmt.Errorf("webhook-id %q is not the change's id %q", id, m.Data.ID)
	}
	return changeSighting(m.Data, arrived)
}

// Stop closes the endpoint at once: the run is over.
func (rc *Receiver) Stop() error {
	rc.server.Close()
	if err := <-rc.served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

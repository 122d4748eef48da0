package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/e2e"
	"github.com/tidemark/tidemark/internal/embedpg"
	"github.com/tidemark/tidemark/internal/provider"
)

// The database restarts of TestPostgresRestart: after how much of the load
// was acknowledged, how the server goes down, and for how long at least.
var pgRestarts = []pgRestart{
	{share: 0.25, mode: "immediate", pause: 1500 * time.Millisecond},
	{share: 0.60, mode: "fast", pause: time.Second},
}

// pgRestartSenders is the number of concurrent senders.
const pgRestartSenders = 24

type pgRestart struct {
	share float64
	mode  string        // immediate: a crash of the database, no checkpoint; fast: a clean shutdown
	pause time.Duration // between the stop and the start

	// Filled in while the test runs.
	inFlight      int64     // requests open when the stop began
	stopped, down time.Time // the stop began; the server exited
	ready         time.Time // the restarted server accepts connections
}

// TestPostgresRestart runs `tidemark serve` on a PostgreSQL cluster of the
// test's own and restarts that database under a load of signed deliveries:
// first in immediate mode (a crash: what was not committed is lost), then in
// fast mode. Senders keep sending through the outages, retrying 503s. Every
// delivery answered 200 must be in the event log with the outcomes it was
// answered, each event decided once and applied at most once, and the same
// serve process must answer 200 again within 30 s of the database's return.
func TestPostgresRestart(t *testing.T) {
	e2e.Require(t, "the go command and PostgreSQL's server binaries (the test builds tidemark and restarts a database of its own under load)")
	t.Parallel()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))

	db := startRestartCluster(t)
	const key = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	env := map[string]string{"DATABASE_URL": db.url, "TIDEMARK_ENCRYPTION_KEY": key}
	if out, _, err := tidemark(t, env, "", "migrate"); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	secrets := crashProviders(t, env, map[string]string{crashStandard: provider.Standard.Name()})

	load := newRestartLoad(t, rng)
	t.Logf("load: %d deliveries, %d records, %d senders", len(load.deliveries), len(load.maxRev), pgRestartSenders)
	srv := startServer(t, buildTidemark(t), serverEnv(db.url, key))

	run := &restartRun{load: load, secrets: secrets, srv: srv, acked: map[int]crashAnswer{},
		client: &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: pgRestartSenders}}}
	defer run.client.CloseIdleConnections()
	restarts := slices.Clone(pgRestarts)
	run.sendAll(t, func() { db.restartDuringLoad(t, run, restarts) })

	select {
	case <-srv.exited:
		t.Fatalf("serve exited during the load: %v\n%s", srv.cmd.ProcessState, srv.stderr.String())
	default:
	}
	if len(run.acked) != len(load.deliveries) {
		t.Fatalf("%d of %d deliveries acknowledged; serve's log:\n%s", len(run.acked), len(load.deliveries), tailLines(srv.stderr.String(), 30))
	}
	run.report(t, restarts)
	if t.Failed() {
		t.Logf("serve's errors:\n%s", tailLines(grepLines(srv.stderr.String(), "level=ERROR"), 10))
	}

	// Checked with serve gone, so that nothing of it is still committing.
	srv.kill()
	pool := checkerPool(t, db.url)
	awaitBackends(t, pool)
	tenantID := int64(queryInt(t, pool, `SELECT id FROM tenants WHERE slug = $1`, crashTenant))
	committed := queryInt(t, pool, `SELECT count(*) FROM deliveries WHERE tenant_id = $1 AND status = 200`, tenantID)
	t.Logf("%d deliveries committed with status 200, %d acknowledged: %d committed whose answer was lost with the connection (sent again, duplicates)",
		committed, len(run.acked), committed-len(run.acked))
	if committed < len(run.acked) {
		t.Errorf("%d deliveries acknowledged but only %d committed: acknowledged deliveries were lost", len(run.acked), committed)
	}
	checkEventLog(t, pool, tenantID, load, []crashPass{{acked: run.acked}})
}

// newRestartLoad builds revisions 1..15 of 120 standard contacts, roughly
// in revision order with neighbours mixed (so some arrive stale), a tenth
// of them again under another id with the same content (redundant), and a
// tenth of all deliveries sent twice (duplicates).
func newRestartLoad(t *testing.T, rng *rand.Rand) crashLoad {
	t.Helper()
	l := crashLoad{maxRev: map[crashRecord]int64{}}
	for c := range 120 {
		rec := crashRecord{crashStandard, fmt.Sprintf("c-%03d", c)}
		for r := int64(1); r <= 15; r++ {
			body, err := snapshotDelivery("contact.snapshot", rec.objectID, strconv.FormatInt(r, 10),
				fmt.Sprintf(`{"job_title":"title %d","n":%d}`, r, r))
			if err != nil {
				t.Fatal(err)
			}
			d := crashDelivery{provider: crashStandard, id: fmt.Sprintf("restart-%s-r%d", rec.objectID, r), body: body,
				records: []crashRecord{rec}, order: float64(r) + 2*rng.Float64()}
			l.add(d, r)
			if rng.IntN(10) == 0 {
				d.id, d.order = d.id+"-twin", float64(r)+2*rng.Float64()
				l.add(d, r)
			}
		}
	}
	for _, d := range slices.Clone(l.deliveries) {
		if rng.IntN(10) == 0 {
			d.order += rng.Float64()
			l.add(d, 0)
		}
	}
	slices.SortStableFunc(l.deliveries, func(a, b crashDelivery) int { return cmp.Compare(a.order, b.order) })
	return l
}

// restartCluster is the test's own PostgreSQL, which it stops and starts
// on the same folder, so the URL stays the same.
type restartCluster struct {
	dir, url string
	mu       sync.Mutex
	c        *embedpg.Cluster
}

func startRestartCluster(t *testing.T) *restartCluster {
	t.Helper()
	// When root, the server runs as the postgres user, which must enter
	// the folder: t.TempDir() and its parent are created 0700.
	tmp := t.TempDir()
	for _, d := range []string{tmp, filepath.Dir(tmp)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	db := &restartCluster{dir: filepath.Join(tmp, "pg")}
	c, err := embedpg.Start(context.Background(), db.dir, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	db.c, db.url = c, c.URL()
	t.Cleanup(func() {
		db.mu.Lock()
		defer db.mu.Unlock()
		db.c.Stop()
	})
	return db
}

// restartDuringLoad restarts the database once the load has reached each
// restart's share of acknowledged deliveries; it returns early when the
// senders are done.
func (db *restartCluster) restartDuringLoad(t *testing.T, run *restartRun, restarts []pgRestart) {
	for i := range restarts {
		r := &restarts[i]
		want := int(r.share * float64(len(run.load.deliveries)))
		for run.ackCount() < want {
			if run.finished.Load() {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		r.inFlight = run.open.Load()
		r.stopped = time.Now()
		db.mu.Lock()
		stop := db.c.Stop
		if r.mode == "immediate" {
			stop = db.c.StopImmediate
		}
		err := stop()
		r.down = time.Now()
		if err == nil {
			time.Sleep(r.pause)
			db.c, err = embedpg.Start(context.Background(), db.dir, io.Discard)
		}
		db.mu.Unlock()
		if err != nil {
			t.Errorf("restart %d (%s): %v; PostgreSQL's log:\n%s", i+1, r.mode, err, postgresLog(db.dir))
			run.abort.Store(true)
			return
		}
		r.ready = time.Now()
	}
}

// restartRun is the load's progress: answers, acknowledgements, requests
// open.
type restartRun struct {
	load     crashLoad
	secrets  map[string]string
	srv      *child
	client   *http.Client
	next     atomic.Int64
	open     atomic.Int64
	finished atomic.Bool // every sender has returned
	abort    atomic.Bool // the database could not be started again

	mu      sync.Mutex
	acked   map[int]crashAnswer
	answers []restartAnswer
}

// restartAnswer is one attempt: when it was sent, when it was answered,
// and its HTTP status (0 when there was none).
type restartAnswer struct {
	sent, at time.Time
	status   int
}

func (run *restartRun) ackCount() int {
	run.mu.Lock()
	defer run.mu.Unlock()
	return len(run.acked)
}

// sendAll sends every delivery until it is answered 200, with
// pgRestartSenders senders, while restart runs beside them.
func (run *restartRun) sendAll(t *testing.T, restart func()) {
	var senders, controller sync.WaitGroup
	controller.Go(restart)
	for range pgRestartSenders {
		senders.Go(func() {
			for {
				i := int(run.next.Add(1) - 1)
				if i >= len(run.load.deliveries) || !run.send(t, i) {
					return
				}
			}
		})
	}
	senders.Wait()
	run.finished.Store(true)
	controller.Wait()
}

// send posts delivery i until it is answered 200, retrying 503, 429 and
// lost connections after a short pause (shorter than Retry-After, to keep
// the test short). Any other answer fails the test but is retried too, so
// that the event log can still be checked. It returns false when the
// sender should stop.
func (run *restartRun) send(t *testing.T, i int) bool {
	d := run.load.deliveries[i]
	deadline := time.Now().Add(3 * time.Minute)
	for {
		run.open.Add(1)
		sent := time.Now()
		status, body, err := postSigned(run.client, run.srv.base, d, run.secrets[d.provider])
		run.open.Add(-1)
		run.mu.Lock()
		run.answers = append(run.answers, restartAnswer{sent, time.Now(), status})
		run.mu.Unlock()
		switch {
		case err == nil && status == http.StatusOK:
			var a crashAnswer
			if err := json.Unmarshal(body, &a); err != nil || a.DeliveryID == "" || len(a.Results) != len(d.records) {
				t.Errorf("delivery %s answered 200 with %q (%v), want a delivery id and %d results", d.label(), body, err, len(d.records))
				return false
			}
			run.mu.Lock()
			run.acked[i] = a
			run.mu.Unlock()
			return true
		case err == nil && status != http.StatusServiceUnavailable && status != http.StatusTooManyRequests:
			t.Errorf("delivery %s answered %d, want 200 or, while the database is away, 503: %s", d.label(), status, body)
		}
		select {
		case <-run.srv.exited:
			return false
		default:
		}
		if run.abort.Load() {
			return false
		}
		if time.Now().After(deadline) {
			t.Errorf("delivery %s not answered 200 within 3 minutes: last %d %v", d.label(), status, err)
			return false
		}
		time.Sleep(time.Duration(50+rand.IntN(200)) * time.Millisecond)
	}
}

// report logs the figures of each restart and checks that serve answered
// 200 to a delivery sent after the database's return within 30 s of it.
func (run *restartRun) report(t *testing.T, restarts []pgRestart) {
	t.Helper()
	answers := slices.Clone(run.answers)
	slices.SortFunc(answers, func(a, b restartAnswer) int { return a.at.Compare(b.at) })
	// between counts the answers from from until to: 200, 503, and others.
	between := func(from, to time.Time) (ok, unavailable, other int) {
		for _, a := range answers {
			if a.at.Before(from) || !a.at.Before(to) {
				continue
			}
			switch a.status {
			case http.StatusOK:
				ok++
			case http.StatusServiceUnavailable:
				unavailable++
			default:
				other++
			}
		}
		return ok, unavailable, other
	}
	var from time.Time
	for i, r := range restarts {
		if r.ready.IsZero() {
			t.Errorf("restart %d (%s) did not happen", i+1, r.mode)
			continue
		}
		recovered := time.Duration(-1)
		for _, a := range answers {
			if a.status == http.StatusOK && !a.sent.Before(r.ready) {
				recovered = a.at.Sub(r.ready)
				break
			}
		}
		switch {
		case recovered < 0:
			t.Errorf("restart %d (%s): serve never answered 200 again", i+1, r.mode)
		case recovered > 30*time.Second:
			t.Errorf("restart %d (%s): serve answered 200 again only %v after the database was back, want within 30s", i+1, r.mode, recovered)
		}
		beforeOK, before503, beforeOther := between(from, r.stopped)
		awayOK, away503, awayOther := between(r.stopped, r.ready)
		t.Logf("restart %d (%s): before it %d acknowledged, %d answered 503, %d other; %d requests open at the stop; "+
			"database away %v (stopping %v, starting %v): %d acknowledged (commits before the stop), %d answered 503, %d other; "+
			"serve answered 200 again %v after its return",
			i+1, r.mode, beforeOK, before503, beforeOther, r.inFlight,
			r.ready.Sub(r.stopped).Round(time.Millisecond), r.down.Sub(r.stopped).Round(time.Millisecond),
			r.ready.Sub(r.down.Add(r.pause)).Round(time.Millisecond), awayOK, away503, awayOther, recovered.Round(time.Millisecond))
		from = r.ready
	}
	if !from.IsZero() {
		afterOK, after503, afterOther := between(from, answers[len(answers)-1].at.Add(time.Second))
		t.Logf("after the last restart: %d acknowledged, %d answered 503, %d other", afterOK, after503, afterOther)
	}
	statuses := map[string]int{}
	for _, a := range answers {
		statuses[strconv.Itoa(a.status)]++
	}
	t.Logf("answers over the run: %s (0: no HTTP answer)", tally(statuses))
}

// postgresLog returns the end of the cluster's server log.
func postgresLog(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, "postgres.log"))
	return tailLines(string(b), 20)
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mathrand "math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/cmd/tidemark-bench/internal/scratch"
	"github.com/tidemark/tidemark/cmd/tidemark-bench/internal/table"
)

// queueConfig is the command line of queue.
type queueConfig struct {
	deliveries, senders, workers, contacts int
	modes                                  []string
	natsServer                             string // "" builds the nats-server module this bench requires
	serverURL                              string
	keep                                   bool
}

// The modes compared: synchronous ingest, and queued mode on a NATS server
// of the bench's own, as configured by default (its files synced every two
// minutes) and syncing every write.
const (
	modeSync        = "sync"
	modeQueued      = "queued"
	modeQueuedFsync = "queued-fsync"
)

var modeLabels = map[string]string{
	modeSync:        "synchronous",
	modeQueued:      "queued, NATS default (sync every 2 min)",
	modeQueuedFsync: "queued, NATS sync_interval: always",
}

func (e cliEnv) benchQueue(ctx context.Context, args []string) error {
	fs := e.flags("queue", "queue [flags]\n\n"+
		"Send one burst of signed standard deliveries (each sent once, and again after its\n"+
		"Retry-After when answered 503, as providers do) to a receiver in each --mode in turn:\n"+
		"synchronous, and serve --queue with --workers tidemark worker processes on a NATS\n"+
		"server the bench starts, as configured by default and with sync_interval: always.\n"+
		"Print answers/s, p50 and p99 of the answers, the 503s, and the time until the last\n"+
		"answer and until the last event was applied.")
	var cfg queueConfig
	fs.IntVar(&cfg.deliveries, "deliveries", 20000, "deliveries in the burst")
	fs.IntVar(&cfg.senders, "senders", 256, "concurrent senders")
	fs.IntVar(&cfg.workers, "workers", 1, "tidemark worker processes in queued mode")
	fs.IntVar(&cfg.contacts, "contacts", 20000, "distinct contact ids the deliveries are spread over")
	modes := fs.String("mode", strings.Join([]string{modeSync, modeQueued, modeQueuedFsync}, ","), "comma-separated modes to measure")
	fs.StringVar(&cfg.natsServer, "nats-server", "", "nats-server binary (2.10 or later, for sync_interval); default: built from the nats-server module this bench requires")
	fs.StringVar(&cfg.serverURL, "server-url", e.serverURL(), "maintenance URL of the PostgreSQL server the scratch databases are created on (default DATABASE_URL)")
	fs.BoolVar(&cfg.keep, "keep", false, "keep the scratch databases, the NATS store and the logs")
	if err := parse(fs, args); err != nil {
		return err
	}
	for _, m := range strings.Split(*modes, ",") {
		if m = strings.TrimSpace(m); modeLabels[m] == "" {
			return fmt.Errorf("queue: --mode %q: one of %s, %s, %s", m, modeSync, modeQueued, modeQueuedFsync)
		}
		cfg.modes = append(cfg.modes, m)
	}
	if cfg.deliveries < 1 || cfg.senders < 1 || cfg.workers < 1 || cfg.contacts < 1 {
		return errors.New("queue: --deliveries, --senders, --workers and --contacts must be positive")
	}
	dbs, err := scratch.Open(ctx, cfg.serverURL, cfg.keep, e.stderr)
	if err != nil {
		return err
	}
	defer dbs.Close(ctx)
	tmp, err := os.MkdirTemp("", "tidemark-bench-queue-*")
	if err != nil {
		return err
	}
	if !cfg.keep {
		defer os.RemoveAll(tmp)
	}
	if cfg.natsServer == "" && slices.ContainsFunc(cfg.modes, func(m string) bool { return m != modeSync }) {
		cfg.natsServer = filepath.Join(tmp, "nats-server")
		fmt.Fprintf(e.stderr, "building nats-server: go build -o %s github.com/nats-io/nats-server/v2\n", cfg.natsServer)
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", cfg.natsServer, "github.com/nats-io/nats-server/v2").CombinedOutput(); err != nil {
			return fmt.Errorf("build nats-server (run the bench from cmd/tidemark-bench): %w\n%s", err, out)
		}
	}
	name := scratchName()
	var rows []queueRow
	for _, mode := range cfg.modes {
		r, err := e.burstMode(ctx, cfg, dbs, mode, name+"_"+strings.ReplaceAll(mode, "-", "_"), filepath.Join(tmp, mode))
		if err != nil {
			return err
		}
		rows = append(rows, r)
	}
	printBursts(e.stdout, cfg, rows)
	return nil
}

// queueRow is one row: what the senders saw and when the last event
// was applied, from the first request.
type queueRow struct {
	mode        string
	answered    int
	latencies   []time.Duration // of the 2xx answers, sorted
	unavailable int             // 503 answers, each retried
	lastAnswer  time.Duration
	lastApplied time.Duration
}

// burstMode runs one burst on a fresh database (and NATS store).
func (e cliEnv) burstMode(ctx context.Context, cfg queueConfig, dbs *scratch.Databases, mode, dbName, dir string) (queueRow, error) {
	res := queueRow{mode: mode}
	db, err := createReceiver(ctx, dbs, dbName)
	if err != nil {
		return res, err
	}
	var extra []string
	if mode != modeSync {
		nats, err := startBenchNATS(ctx, cfg.natsServer, dir, mode == modeQueuedFsync)
		if err != nil {
			return res, err
		}
		defer nats.stop()
		extra = []string{"--queue", nats.url}
	}
	srv, err := startServer(ctx, db.url, db.key, e.stderr, extra...)
	if err != nil {
		return res, err
	}
	defer srv.stop()
	if mode != modeSync {
		for i := range cfg.workers {
			w, err := startWorker(srv.exe(), db, extra, filepath.Join(dir, fmt.Sprintf("worker-%d.log", i+1)))
			if err != nil {
				return res, err
			}
			defer w.stop()
		}
	}
	pool, err := pgx.Connect(ctx, db.url)
	if err != nil {
		return res, err
	}
	defer pool.Close(context.WithoutCancel(ctx))

	fmt.Fprintf(e.stderr, "%s: %d deliveries from %d senders\n", modeLabels[mode], cfg.deliveries, cfg.senders)
	start := time.Now()
	res.answered, res.latencies, res.unavailable, err = sendBurst(ctx, cfg, srv.webhookURL(benchProvider), db.secret)
	res.lastAnswer = time.Since(start)
	if err != nil {
		return res, fmt.Errorf("%s: %w; server log: %s", mode, err, srv.logPath)
	}
	for {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM deliveries WHERE status = 200`).Scan(&n); err != nil {
			return res, err
		}
		if n >= cfg.deliveries {
			break
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	res.lastApplied = time.Since(start)
	return res, nil
}

// sendBurst sends deliveries numbered 1..n from the senders, each until it
// is answered 2xx; a 503 or 429 is sent again after its Retry-After.
func sendBurst(ctx context.Context, cfg queueConfig, target, secret string) (int, []time.Duration, int, error) {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost, transport.MaxIdleConns = cfg.senders, cfg.senders
	client := &http.Client{Transport: transport, Timeout: time.Minute}
	defer transport.CloseIdleConnections()
	var (
		next                atomic.Int64
		mu                  sync.Mutex
		latencies           []time.Duration
		unavailable, failed int
		firstErr            error
		wg                  sync.WaitGroup
	)
	for range cfg.senders {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := next.Add(1)
				if i > int64(cfg.deliveries) {
					return
				}
				id := "burst-" + strconv.FormatInt(i, 10)
				rev := mathrand.IntN(1_000_000) + 1
				body, _ := json.Marshal(map[string]any{"type": "contact.snapshot", "timestamp": time.Now().UTC().Format(time.RFC3339),
					"data": map[string]any{"contact_id": "c-" + strconv.Itoa(mathrand.IntN(cfg.contacts)+1), "revision": rev,
						"snapshot": map[string]any{"company": "Co-" + strconv.Itoa(rev), "job_title": "Director"}}})
				for ctx.Err() == nil {
					req, err := signedRequest(ctx, target, secret, id, body)
					if err != nil {
						return
					}
					begin := time.Now()
					resp, err := client.Do(req)
					if err != nil {
						mu.Lock()
						failed++
						firstErr = cmpErr(firstErr, err)
						mu.Unlock()
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					took := time.Since(begin)
					mu.Lock()
					switch {
					case resp.StatusCode/100 == 2:
						latencies = append(latencies, took)
					case resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests:
						unavailable++
					default:
						failed++
						firstErr = cmpErr(firstErr, fmt.Errorf("delivery %s answered %d", id, resp.StatusCode))
					}
					mu.Unlock()
					if resp.StatusCode/100 == 2 {
						break
					}
					if resp.StatusCode/100 != 5 && resp.StatusCode != http.StatusTooManyRequests {
						return
					}
					select {
					case <-ctx.Done():
					case <-time.After(max(retryDelay(resp), time.Second)):
					}
				}
			}
		})
	}
	wg.Wait()
	slices.Sort(latencies)
	if failed > 0 {
		return len(latencies), latencies, unavailable, fmt.Errorf("%d deliveries failed, the first: %v", failed, firstErr)
	}
	return len(latencies), latencies, unavailable, ctx.Err()
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// printBursts writes the table of a run and how it was obtained.
func printBursts(w io.Writer, cfg queueConfig, rows []queueRow) {
	cells := [][]string{{"mode", "answers/s", "p50", "p99", "503s", "last answer", "last event applied"}}
	for _, r := range rows {
		cells = append(cells, []string{modeLabels[r.mode], table.Thousands(int64(float64(r.answered)/r.lastAnswer.Seconds() + 0.5)),
			table.Millis(percentile(r.latencies, 0.50)), table.Millis(percentile(r.latencies, 0.99)), strconv.Itoa(r.unavailable),
			table.Seconds(r.lastAnswer), table.Seconds(r.lastApplied)})
	}
	table.Print(w, cells)
	fmt.Fprintf(w, "\n%s standard deliveries (one event each) from %d senders, each sent once and again after Retry-After when\n"+
		"answered 503; times from the first request. Queued mode: %d tidemark worker process(es), each tenant's\n"+
		"deliveries applied one at a time in order (one tenant here). One machine for everything.\n",
		table.Thousands(int64(cfg.deliveries)), cfg.senders, cfg.workers)
}

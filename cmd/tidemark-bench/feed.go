package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain/stream"
)

// feedConfig is the command line of feed.
type feedConfig struct {
	senders, consumers, contacts int
	maxInFlight                  int // the destination's; 0 for the product's default
	duration, warmup, drain      time.Duration
	serverURL                    string
	keep                         bool
}

func (e cliEnv) benchFeed(ctx context.Context, args []string) error {
	cfg, err := e.feedFlags(args)
	if err != nil {
		return err
	}
	dbs, err := openScratch(ctx, cfg.serverURL, cfg.keep, e.stderr)
	if err != nil {
		return err
	}
	defer dbs.close(ctx)
	name := scratchName()
	res := feedResult{}
	if res.alone, err = e.feedPhase(ctx, cfg, dbs, name+"_alone", false); err != nil {
		return err
	}
	if res.read, err = e.feedPhase(ctx, cfg, dbs, name+"_read", true); err != nil {
		return err
	}
	printFeed(e.stdout, cfg, res)
	return res.problems()
}

func (e cliEnv) feedFlags(args []string) (feedConfig, error) {
	fs := e.flags("feed", "feed [flags]\n\n"+
		"Measure the change feed at the ingest rate of --senders standard senders (one event per\n"+
		"delivery, every one applied): once with nobody reading, then, on a fresh database, with\n"+
		"--consumers following GET .../changes (long polls, 1000 a page) and a destination pushing\n"+
		"every change to a receiver of the bench on the loopback, which checks each signature and\n"+
		"answers 204. Print events/s of both and their ratio, commit-to-feed and commit-to-2xx\n"+
		"latencies, the backlog of each reader over the run and after the senders stop, duplicates\n"+
		"and missing changes, in one table and a README row.")
	var cfg feedConfig
	fs.IntVar(&cfg.senders, "senders", 32, "concurrent senders")
	fs.DurationVar(&cfg.duration, "duration", 10*time.Second, "how long each run's measured load lasts")
	fs.DurationVar(&cfg.warmup, "warmup", 2*time.Second, "unmeasured load before each measurement (0 for none)")
	fs.IntVar(&cfg.consumers, "consumers", 1, "feed consumers, each following the whole feed")
	fs.IntVar(&cfg.maxInFlight, "max-in-flight", 0, "the destination's --max-in-flight (0: tidemark's default)")
	fs.IntVar(&cfg.contacts, "contacts", 20000, "distinct contact ids the events are spread over")
	fs.DurationVar(&cfg.drain, "drain-timeout", 30*time.Second, "how long the readers may take to catch up after the senders stop")
	fs.StringVar(&cfg.serverURL, "server-url", e.serverURL(), "maintenance URL of the PostgreSQL server the scratch databases are created on (default DATABASE_URL)")
	fs.BoolVar(&cfg.keep, "keep", false, "keep the scratch databases and the server logs")
	if err := parse(fs, args); err != nil {
		return cfg, err
	}
	if cfg.senders < 1 || cfg.consumers < 1 || cfg.contacts < 1 || cfg.duration <= 0 || cfg.drain <= 0 {
		return cfg, errors.New("feed: --senders, --consumers, --contacts, --duration and --drain-timeout must be positive")
	}
	if cfg.warmup < 0 || cfg.maxInFlight < 0 {
		return cfg, errors.New("feed: --warmup and --max-in-flight must not be negative")
	}
	return cfg, nil
}

// feedPhase is one run of the senders, with or without readers.
type feedPhase struct {
	load      loadResult
	window    window
	committed int           // changes committed in the window
	readers   []readerStats // none when nobody read
	refused   int64         // messages the receiver refused
	whyRefused,
	serverLog string
	readErr error // a consumer's
}

// feedPhase runs the senders on a fresh database and server, with the
// readers following from before the warm-up when reading.
func (e cliEnv) feedPhase(ctx context.Context, cfg feedConfig, dbs *scratchDatabases, name string, reading bool) (ph feedPhase, err error) {
	db, err := dbs.createReceiver(ctx, name)
	if err != nil {
		return ph, err
	}
	srv, err := startServer(ctx, db.url, db.key, e.stderr)
	if err != nil {
		return ph, err
	}
	ph.serverLog = srv.logPath
	defer func() {
		srv.stop()
		if err == nil && !cfg.keep && ph.problems() == nil && ctx.Err() == nil {
			os.Remove(srv.logPath)
		}
	}()
	conn, err := pgx.Connect(ctx, db.url)
	if err != nil {
		return ph, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	src := &standardLoad{target: srv.webhookURL(benchProvider), secret: db.secret, contacts: cfg.contacts, applying: true}
	var rd *feedReaders
	if reading {
		if rd, err = startFeedReaders(ctx, cfg, srv); err != nil {
			return ph, err
		}
		defer rd.stop()
		// The destination is sent only once a node takes its lease: one
		// change through both readers first, so the load meets them running.
		if err := sendOne(ctx, src); err != nil {
			return ph, err
		}
		if err := rd.awaitDrain(ctx, conn, cfg.drain); err != nil {
			return ph, err
		}
	}
	checkpoint(ctx, dbs.admin)
	e.warmUp(ctx, cfg.warmup, src, cfg.senders)
	fmt.Fprintf(e.stderr, "tidemark receiver: %d senders for %s, %s\n", cfg.senders, cfg.duration, phaseLabel(reading, cfg.consumers))
	start := time.Now()
	ph.load = runLoad(ctx, cfg.senders, cfg.duration, src, e.stderr)
	ph.window = window{start: start, end: start.Add(ph.load.elapsed)}
	if ctx.Err() != nil {
		return ph, ctx.Err()
	}
	if rd != nil {
		if err := rd.awaitDrain(ctx, conn, cfg.drain); err != nil {
			return ph, err
		}
	}
	changes, err := readCommitted(ctx, conn)
	if err != nil {
		return ph, err
	}
	ph.committed = committedIn(changes, ph.window)
	if rd != nil {
		ph.readErr = rd.stop()
		ph.readers = rd.stats(changes, ph.window)
		ph.refused = rd.receiver.refused.Load()
		if why := rd.receiver.firstRefusal.Load(); why != nil {
			ph.whyRefused = *why
		}
	}
	return ph, nil
}

// sendOne sends one delivery of src, which must be answered 200.
func sendOne(ctx context.Context, src loadSource) error {
	req, err := src.request(ctx)
	if err != nil {
		return err
	}
	status, body, _, err := do(http.DefaultClient, req)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("the first delivery was answered %d %s", status, body)
	}
	return err
}

// phaseLabel names a run in progress lines and the table.
func phaseLabel(reading bool, consumers int) string {
	switch {
	case !reading:
		return "nobody reading"
	case consumers == 1:
		return "consumer + destination"
	default:
		return strconv.Itoa(consumers) + " consumers + destination"
	}
}

// problems is what fails a run: deliveries that failed, a reader's error,
// refused messages, missing changes.
func (ph feedPhase) problems() error {
	var errs []error
	if n := ph.load.failed(); n > 0 {
		errs = append(errs, fmt.Errorf("%d deliveries failed, the first: %s", n, ph.load.firstError))
	}
	if ph.readErr != nil {
		errs = append(errs, fmt.Errorf("feed consumer: %w", ph.readErr))
	}
	if ph.refused > 0 {
		errs = append(errs, fmt.Errorf("the receiver refused %d messages, the first: %s", ph.refused, ph.whyRefused))
	}
	for _, r := range ph.readers {
		if r.missing > 0 {
			errs = append(errs, fmt.Errorf("%s: %d changes had not arrived by the end of --drain-timeout", r.name, r.missing))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w; server log: %s", err, ph.serverLog)
	}
	return nil
}

// feedReaders are the consumers and the destination's receiver.
type feedReaders struct {
	receiver  *receiver
	consumers []*sightings
	errs      []error // each consumer's, once stopped
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	stopOnce  sync.Once
	stopErr   error
}

// startFeedReaders creates the destination (pointing at a receiver of the
// bench) and a read-only token with the tidemark CLI, and starts the
// consumers at the start of the feed.
func startFeedReaders(ctx context.Context, cfg feedConfig, srv *serverProcess) (*feedReaders, error) {
	rc, err := startReceiver()
	if err != nil {
		return nil, err
	}
	create := []string{"destination", "create", "--tenant", benchTenant, "--url", rc.url, "--allow-private"}
	if cfg.maxInFlight > 0 {
		create = append(create, "--max-in-flight", strconv.Itoa(cfg.maxInFlight))
	}
	secret, err := srv.runCLI(ctx, create...)
	if err == nil {
		rc.secret.Store(&secret)
	}
	token := ""
	if err == nil {
		token, err = srv.runCLI(ctx, "token", "create", "--tenant", benchTenant, "--access", "read", "--name", "tidemark-bench feed")
	}
	if err != nil {
		rc.stop()
		return nil, err
	}
	follow, cancel := context.WithCancel(ctx)
	r := &feedReaders{receiver: rc, errs: make([]error, cfg.consumers), cancel: cancel}
	for i := range cfg.consumers {
		got := &sightings{}
		r.consumers = append(r.consumers, got)
		r.wg.Go(func() { r.errs[i] = followFeed(follow, srv.base, token, got) })
	}
	return r, nil
}

// awaitDrain waits until every reader has every change committed so far,
// or timeout has passed.
func (r *feedReaders) awaitDrain(ctx context.Context, conn *pgx.Conn, timeout time.Duration) error {
	var total int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM changes`).Scan(&total); err != nil {
		return err
	}
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); {
		caughtUp := r.receiver.got.distinct() >= total
		for _, c := range r.consumers {
			caughtUp = caughtUp && c.distinct() >= total
		}
		if caughtUp {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// stop ends the consumers and the receiver, and returns the consumers'
// errors.
func (r *feedReaders) stop() error {
	r.stopOnce.Do(func() {
		r.cancel()
		r.wg.Wait()
		r.stopErr = errors.Join(append(r.errs, r.receiver.stop())...)
	})
	return r.stopErr
}

// stats are each reader's, the consumers' first.
func (r *feedReaders) stats(changes []committedChange, w window) []readerStats {
	var out []readerStats
	for i, c := range r.consumers {
		name := "feed consumer"
		if len(r.consumers) > 1 {
			name += " " + strconv.Itoa(i+1)
		}
		out = append(out, readerStatsOf(name, changes, c.list(), w))
	}
	return append(out, readerStatsOf("destination", changes, r.receiver.got.list(), w))
}

// readCommitted reads every change of the scratch database.
func readCommitted(ctx context.Context, conn *pgx.Conn) ([]committedChange, error) {
	rows, err := conn.Query(ctx, `SELECT tenant_id, position, committed_at FROM changes`)
	if err != nil {
		return nil, err
	}
	var c stream.Change
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (committedChange, error) {
		var at time.Time
		err := row.Scan(&c.TenantID, &c.Position, &at)
		return committedChange{id: c.ID(), at: at}, err
	})
}

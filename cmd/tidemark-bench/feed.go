package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/cmd/tidemark-bench/internal/feedread"
	"github.com/tidemark/tidemark/cmd/tidemark-bench/internal/scratch"
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
	dbs, err := scratch.Open(ctx, cfg.serverURL, cfg.keep, e.stderr)
	if err != nil {
		return err
	}
	defer dbs.Close(ctx)
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
	window    feedread.Window
	committed int              // changes committed in the window
	readers   []feedread.Stats // none when nobody read
	refused   int64            // messages the receiver refused
	whyRefused,
	serverLog string
	readErr error // a consumer's
}

// feedPhase runs the senders on a fresh database and server, with the
// readers following from before the warm-up when reading.
func (e cliEnv) feedPhase(ctx context.Context, cfg feedConfig, dbs *scratch.Databases, name string, reading bool) (ph feedPhase, err error) {
	db, err := createReceiver(ctx, dbs, name)
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
	var rd *feedread.Readers
	if reading {
		if rd, err = startFeedReaders(ctx, cfg, srv); err != nil {
			return ph, err
		}
		defer rd.Stop()
		// The destination is sent only once a node takes its lease: one
		// change through both readers first, so the load meets them running.
		if err := sendOne(ctx, src); err != nil {
			return ph, err
		}
		if err := rd.AwaitDrain(ctx, conn, cfg.drain); err != nil {
			return ph, err
		}
	}
	dbs.Checkpoint(ctx)
	e.warmUp(ctx, cfg.warmup, senderLoads{src}, cfg.senders)
	fmt.Fprintf(e.stderr, "tidemark receiver: %d senders for %s, %s\n", cfg.senders, cfg.duration, phaseLabel(reading, cfg.consumers))
	start := time.Now()
	ph.load = runLoad(ctx, cfg.senders, cfg.duration, senderLoads{src}, e.stderr)
	ph.window = feedread.Window{Start: start, End: start.Add(ph.load.elapsed)}
	if ctx.Err() != nil {
		return ph, ctx.Err()
	}
	if rd != nil {
		if err := rd.AwaitDrain(ctx, conn, cfg.drain); err != nil {
			return ph, err
		}
	}
	changes, err := feedread.ReadCommitted(ctx, conn)
	if err != nil {
		return ph, err
	}
	ph.committed = feedread.CommittedIn(changes, ph.window)
	if rd != nil {
		ph.readErr = rd.Stop()
		ph.readers = rd.Stats(changes, ph.window)
		ph.refused, ph.whyRefused = rd.Refused()
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
		if r.Missing > 0 {
			errs = append(errs, fmt.Errorf("%s: %d changes had not arrived by the end of --drain-timeout", r.Name, r.Missing))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w; server log: %s", err, ph.serverLog)
	}
	return nil
}

// startFeedReaders creates the destination (pointing at a receiver of the
// bench) and a read-only token with the tidemark CLI, and starts the
// consumers at the start of the feed.
func startFeedReaders(ctx context.Context, cfg feedConfig, srv *serverProcess) (*feedread.Readers, error) {
	rc, err := feedread.StartReceiver()
	if err != nil {
		return nil, err
	}
	create := []string{"destination", "create", "--tenant", benchTenant, "--url", rc.URL, "--allow-private"}
	if cfg.maxInFlight > 0 {
		create = append(create, "--max-in-flight", strconv.Itoa(cfg.maxInFlight))
	}
	secret, err := srv.runCLI(ctx, create...)
	if err == nil {
		rc.SetSecret(secret)
	}
	token := ""
	if err == nil {
		token, err = srv.runCLI(ctx, "token", "create", "--tenant", benchTenant, "--access", "read", "--name", "tidemark-bench feed")
	}
	if err != nil {
		rc.Stop()
		return nil, err
	}
	return feedread.Follow(ctx, rc, srv.base, benchTenant, token, cfg.consumers), nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/tidemark/tidemark/cmd/tidemark-bench/internal/procmem"
	"github.com/tidemark/tidemark/cmd/tidemark-bench/internal/scratch"
	"github.com/tidemark/tidemark/cmd/tidemark-bench/internal/table"
	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
)

// benchConfig is the command line of ingest.
type benchConfig struct {
	senders  []int           // each is one measurement per kind
	tenants  []int           // each is one measurement per kind and number of senders
	kinds    []provider.Kind // standard and/or HubSpot
	batch    int             // events per HubSpot delivery
	duration time.Duration
	warmup   time.Duration
	contacts int
	// floorClients caps pgbench's clients: more senders than that are
	// compared with the floor at floorClients.
	floorClients int
	serverURL    string
	pgbench      bool
	keep         bool
	// trace also measures each row with tracing on (tracing.go).
	trace bool
	// citus also runs every row on a local Citus cluster (citus.go).
	citus bool
}

func (e cliEnv) benchIngest(ctx context.Context, args []string) error {
	cfg, err := e.benchFlags(args)
	if err != nil {
		return err
	}
	dbs, err := scratch.Open(ctx, cfg.serverURL, cfg.keep, e.stderr)
	if err != nil {
		return err
	}
	defer dbs.Close(ctx)

	res, err := e.sweep(ctx, cfg, dbs, scratchName())
	if err != nil {
		return err
	}
	if cfg.citus && res.problems() == nil {
		distributed, err := e.citusSweep(ctx, cfg)
		if err != nil {
			return err
		}
		printSweep(e.stdout, cfg, res)
		printCitus(e.stdout, cfg, res, distributed)
		return distributed.problems()
	}
	printSweep(e.stdout, cfg, res)
	return res.problems()
}

func (e cliEnv) benchFlags(args []string) (benchConfig, error) {
	fs := e.flags("ingest", "ingest [flags]\n\n"+
		"Start a receiver on a scratch database and send it signed deliveries from concurrent\n"+
		"senders: standard contact.snapshot deliveries (one event each) and/or HubSpot batches\n"+
		"(--kind), at each number of --senders in turn. Compare its events/s with pgbench running\n"+
		"the PostgreSQL floor (claim + guarded upsert, one event per transaction) on the same\n"+
		"server in the same run, and print one table. --tenants spreads the senders over several\n"+
		"tenants, each with its own providers and secrets, as the floor spreads its work over 50.")
	var cfg benchConfig
	senders := fs.String("senders", "32", "concurrent senders, or a comma-separated list measured in turn (1,8,32,128)")
	kinds := fs.String("kind", provider.Standard.Name(), "comma-separated provider kinds to send, each at every --senders: "+
		provider.Standard.Name()+" (one contact.snapshot per delivery) and "+provider.HubSpot.Name()+" (v3-signed batches of --batch events)")
	fs.IntVar(&cfg.batch, "batch", 100, "events per "+provider.HubSpot.Name()+" delivery (1 to 100)")
	fs.DurationVar(&cfg.duration, "duration", 10*time.Second, "how long each measurement runs")
	fs.DurationVar(&cfg.warmup, "warmup", time.Second, "unmeasured load before each receiver measurement (0 for none)")
	tenants := fs.String("tenants", "1", fmt.Sprintf("tenants the senders are spread over (each delivery to one drawn at random), each with its own "+
		"providers and secrets, or a comma-separated list measured in turn (1,50); at most %d", maxTenants))
	fs.IntVar(&cfg.contacts, "contacts", 20000, "distinct contact ids the events of each tenant are spread over")
	fs.StringVar(&cfg.serverURL, "server-url", e.serverURL(), "maintenance URL of the PostgreSQL server the scratch databases are created on (default DATABASE_URL)")
	fs.BoolVar(&cfg.pgbench, "pgbench", true, "also run the pgbench floor baseline")
	fs.IntVar(&cfg.floorClients, "floor-max-clients", 32, "the most pgbench clients: the floor runs at min(senders, this)")
	fs.BoolVar(&cfg.keep, "keep", false, "keep the scratch databases and files")
	fs.BoolVar(&cfg.trace, "trace", false, "also measure each row on a second server with tracing on, exporting every span over "+
		"OTLP/HTTP to a local sink, interleaved off, on, on, off, and print the overhead")
	fs.BoolVar(&cfg.citus, "citus", false, "also run every row against a receiver whose database is distributed over a local Citus cluster "+
		"(a coordinator and two workers; scripts/citus-build installs Citus), and print both and their ratio")
	if err := parse(fs, args); err != nil {
		return cfg, err
	}
	var err error
	if cfg.senders, err = parseCounts("ingest: --senders", *senders); err != nil {
		return cfg, err
	}
	if cfg.kinds, err = parseKinds(*kinds); err != nil {
		return cfg, err
	}
	if cfg.tenants, err = parseTenants(*tenants); err != nil {
		return cfg, err
	}
	if cfg.contacts < 1 || cfg.duration <= 0 || cfg.warmup < 0 || cfg.floorClients < 1 {
		return cfg, errors.New("ingest: --contacts, --duration and --floor-max-clients must be positive, --warmup not negative")
	}
	if cfg.batch < 1 || cfg.batch > 100 {
		return cfg, fmt.Errorf("ingest: --batch %d: a %s delivery carries 1 to 100 events", cfg.batch, provider.HubSpot.Name())
	}
	return cfg, nil
}

// maxTenants bounds ingest --tenants: every tenant is created before the
// load, and the endpoints of all of them (two each) must fit the server's
// endpoint cache (4,096 entries) for the rows to measure ingest, not lookups.
const maxTenants = 1000

// parseTenants reads --tenants: numbers of tenants from 1 to maxTenants.
func parseTenants(s string) ([]int, error) {
	counts, err := parseCounts("ingest: --tenants", s)
	if err != nil {
		return nil, err
	}
	for _, n := range counts {
		if n > maxTenants {
			return nil, fmt.Errorf("ingest: --tenants %d: the bench creates at most %d tenants", n, maxTenants)
		}
	}
	return counts, nil
}

// parseKinds reads --kind: the kinds the bench knows how to send.
func parseKinds(s string) ([]provider.Kind, error) {
	known := []provider.Kind{provider.Standard, provider.HubSpot}
	var out []provider.Kind
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		i := slices.IndexFunc(known, func(k provider.Kind) bool { return k.Name() == f })
		if i < 0 {
			return nil, fmt.Errorf("ingest: --kind %q: the bench sends %s and %s deliveries only", f, known[0].Name(), known[1].Name())
		}
		if !slices.Contains(out, known[i]) {
			out = append(out, known[i])
		}
	}
	if len(out) == 0 {
		return nil, errors.New("ingest: --kind is empty")
	}
	return out, nil
}

// measurement is one row of the table: one kind at one number of senders
// spread over one number of tenants.
type measurement struct {
	kind    string
	batch   int // events per delivery
	senders int
	tenants int // the senders were spread over; 0 and 1 both mean the bench tenant alone
	load    loadResult
	// groupSize is the mean deliveries per committed group; known is false
	// when the server has no group-size histogram.
	groupSize  float64
	groupKnown bool
	rejected   float64            // events the server rejected: a mistake of the bench
	overloads  map[string]float64 // 503s for overload, by reason (overloadMetric)
	rss        int64              // the server's resident memory after the load
	floor      *floorResult
	traced     *tracedRow    // with --trace: the same row with tracing on
	cpu        time.Duration // with --trace: the server's CPU time during the load
}

func (m measurement) eventsPerSecond() float64 { return m.load.perSecond() * float64(m.batch) }

// sweepResult is a whole run: the rows, the floor runs and the server.
type sweepResult struct {
	rows      []measurement
	floors    []*floorResult // in the order they ran
	mem       procmem.Memory // of the server after all the load
	serverLog string
}

// problems is the error a run ends with: failed deliveries (the table shows
// them by status) or events the server rejected.
func (r *sweepResult) problems() error {
	failed, rejected := 0, 0.0
	for _, m := range r.rows {
		failed += m.load.failed()
		if m.traced != nil { // --trace: failures with tracing on too
			failed += m.traced.on.load.failed()
		}
		rejected += m.rejected
	}
	switch {
	case failed > 0:
		return fmt.Errorf("ingest: %d deliveries failed; server log: %s", failed, r.serverLog)
	case rejected > 0:
		return fmt.Errorf("ingest: the server rejected %.0f events of the bench's deliveries; server log: %s", rejected, r.serverLog)
	}
	return nil
}

// sweep runs every measurement on one receiver (one database, one server
// process, so its memory is measured after all the load), and the floor at
// each number of clients the rows need, each right after the receiver's
// rows at that many senders so both see databases grown alike.
func (e cliEnv) sweep(ctx context.Context, cfg benchConfig, dbs *scratch.Databases, name string) (res *sweepResult, err error) {
	res = &sweepResult{}
	db, err := createReceiver(ctx, dbs, name)
	if err != nil {
		return nil, err
	}
	// Before the server starts, which then finds them all in place.
	tenants, err := db.benchTenants(ctx, slices.Max(cfg.tenants))
	if err != nil {
		return nil, err
	}
	srv, err := startServer(ctx, db.url, db.key, e.stderr)
	if err != nil {
		return nil, err
	}
	res.serverLog = srv.logPath
	defer func() {
		srv.stop()
		// The log only matters when something went wrong or was asked for.
		if err == nil && !cfg.keep && res.problems() == nil && ctx.Err() == nil {
			os.Remove(srv.logPath)
		}
	}()
	var floor *floorBench
	if cfg.pgbench {
		if floor, err = e.prepareFloor(ctx, dbs, name+"_floor"); err != nil {
			return nil, err
		}
		defer floor.close(cfg.keep)
	}

	// One source per kind and tenant for the whole run, so no delivery id
	// repeats within a tenant; a row over n tenants uses the first n.
	sources := map[string]senderLoads{}
	for _, t := range tenants {
		sources[provider.Standard.Name()] = append(sources[provider.Standard.Name()],
			&standardLoad{target: srv.tenantWebhookURL(t.slug, benchProvider), secret: t.secret, contacts: cfg.contacts})
		sources[provider.HubSpot.Name()] = append(sources[provider.HubSpot.Name()],
			&hubspotLoad{target: srv.tenantWebhookURL(t.slug, batchProvider), secret: t.hubspotSecret, contacts: cfg.contacts, batch: cfg.batch})
	}
	var traced *tracedServer
	if cfg.trace {
		if traced, err = startTraced(ctx, db, e.stderr); err != nil {
			return nil, err
		}
		traced.keep = cfg.keep
		defer traced.stop()
	}
	floors := map[int]*floorResult{}
	for _, n := range cfg.senders {
		for _, k := range cfg.kinds {
			for _, t := range cfg.tenants {
				m, err := e.measureTraced(ctx, cfg, dbs, srv, traced, k, sources[k.Name()][:t], n)
				if err != nil {
					return nil, err
				}
				res.rows = append(res.rows, m)
			}
		}
		if c := min(n, cfg.floorClients); floor != nil && floors[c] == nil {
			if floors[c], err = floor.run(ctx, cfg, c); err != nil {
				return nil, err
			}
			res.floors = append(res.floors, floors[c])
		}
	}
	for i := range res.rows {
		res.rows[i].floor = floors[min(res.rows[i].senders, cfg.floorClients)]
	}
	if res.mem, err = procmem.Read(srv.cmd.Process.Pid); err != nil {
		fmt.Fprintf(e.stderr, "server memory unknown: %v\n", err)
	}
	return res, nil
}

// measure sends kind's deliveries from senders senders, spread over the
// tenants of loads, for cfg.duration after an unmeasured warm-up, and reads
// the server's metrics and memory around it.
func (e cliEnv) measure(ctx context.Context, cfg benchConfig, dbs *scratch.Databases, srv *serverProcess,
	kind provider.Kind, loads senderLoads, senders int) (measurement, error) {
	m := measurement{kind: kind.Name(), batch: 1, senders: senders, tenants: len(loads)}
	if kind == provider.HubSpot {
		m.batch = cfg.batch
	}
	dbs.Checkpoint(ctx)
	e.warmUp(ctx, cfg.warmup, loads, senders)
	before, err := srv.scrapeMetrics(ctx)
	if err != nil {
		return m, err
	}
	fmt.Fprintf(e.stderr, "tidemark receiver: %s, %d senders for %s on %s\n", m.label(), senders, cfg.duration, srv.base)
	m.load = runLoad(ctx, senders, cfg.duration, loads, e.stderr)
	if ctx.Err() != nil {
		return m, ctx.Err()
	}
	after, err := srv.scrapeMetrics(ctx)
	if err != nil {
		return m, err
	}
	m.groupSize, m.groupKnown = after.Histogram(groupSizeMetric).MeanSince(before.Histogram(groupSizeMetric))
	m.rejected = after.Since(before, eventsMetric, map[string]string{"outcome": string(domain.Rejected)})
	m.overloads = overloadsSince(before, after)
	mem, err := procmem.Read(srv.cmd.Process.Pid)
	if err != nil {
		fmt.Fprintf(e.stderr, "server memory unknown: %v\n", err)
	}
	m.rss = mem.Current
	if first := m.load.firstError; first != "" {
		fmt.Fprintf(e.stderr, "first error: %s\nserver log: %s\n", first, srv.logPath)
	}
	return m, nil
}

// name is the row's kind, with its number of tenants when it is more than
// one, so that the rows of several tenant counts tell apart in one table.
func (m measurement) name() string {
	if m.tenants > 1 {
		return fmt.Sprintf("%s, %d tenants", m.kind, m.tenants)
	}
	return m.kind
}

// label names the row's load in progress lines.
func (m measurement) label() string {
	if m.batch == 1 {
		return m.name() + " (one event per delivery)"
	}
	return fmt.Sprintf("%s (%d events per delivery)", m.name(), m.batch)
}

// warmUp sends unmeasured load first, so the measurement does not include
// the server opening its database connections and preparing its statements,
// just as pgbench reports its rate without initial connection time.
func (e cliEnv) warmUp(ctx context.Context, warmup time.Duration, loads senderLoads, senders int) {
	if warmup <= 0 {
		return
	}
	res := runLoad(ctx, senders, warmup, loads, io.Discard)
	fmt.Fprintf(e.stderr, "warm-up: %s deliveries in %s (not measured)\n", table.Thousands(int64(res.ok)), res.elapsed.Round(time.Millisecond))
}

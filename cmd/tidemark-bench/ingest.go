package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// benchConfig is the command line of ingest.
type benchConfig struct {
	senders   int
	duration  time.Duration
	warmup    time.Duration
	contacts  int
	serverURL string
	pgbench   bool
	keep      bool
}

func (e cliEnv) benchIngest(ctx context.Context, args []string) error {
	cfg, err := e.benchFlags(args)
	if err != nil {
		return err
	}
	dbs, err := openScratch(ctx, cfg.serverURL, cfg.keep, e.stderr)
	if err != nil {
		return err
	}
	defer dbs.close(ctx)

	name := fmt.Sprintf("tidemark_bench_%d", time.Now().Unix())
	recv, err := e.benchReceiver(ctx, cfg, dbs, name)
	if err != nil {
		return err
	}
	var floor *floorResult
	if cfg.pgbench {
		floor, err = e.benchFloor(ctx, cfg, dbs, name+"_floor")
		if err != nil {
			return err
		}
	}
	printBenchResults(e.stdout, cfg, recv, floor)
	if recv.load.failed() > 0 {
		return fmt.Errorf("ingest: %d deliveries failed; server log: %s", recv.load.failed(), recv.serverLog)
	}
	return nil
}

func (e cliEnv) benchFlags(args []string) (benchConfig, error) {
	fs := e.flags("ingest", "ingest [flags]\n\n"+
		"Start a receiver on a scratch database, send it signed contact.snapshot deliveries\n"+
		"from concurrent senders, and compare its rate with pgbench running the PostgreSQL\n"+
		"floor (claim + guarded upsert per event) on the same server.")
	var cfg benchConfig
	fs.IntVar(&cfg.senders, "senders", 32, "concurrent senders (and pgbench clients)")
	fs.DurationVar(&cfg.duration, "duration", 10*time.Second, "how long each measurement runs")
	fs.DurationVar(&cfg.warmup, "warmup", time.Second, "unmeasured load before the receiver's measurement (0 for none)")
	fs.IntVar(&cfg.contacts, "contacts", 20000, "distinct contact ids the events are spread over")
	fs.StringVar(&cfg.serverURL, "server-url", e.serverURL(), "maintenance URL of the PostgreSQL server the scratch databases are created on (default DATABASE_URL)")
	fs.BoolVar(&cfg.pgbench, "pgbench", true, "also run the pgbench floor baseline")
	fs.BoolVar(&cfg.keep, "keep", false, "keep the scratch databases and files")
	if err := parse(fs, args); err != nil {
		return cfg, err
	}
	if cfg.senders < 1 || cfg.contacts < 1 || cfg.duration <= 0 || cfg.warmup < 0 {
		return cfg, errors.New("ingest: --senders, --contacts and --duration must be positive, --warmup not negative")
	}
	return cfg, nil
}

// receiverResult is the measurement of the real receiver.
type receiverResult struct {
	load      loadResult
	mem       procMemory
	serverLog string
}

// benchReceiver measures the receiver: a scratch database with a tenant and
// provider, the server as a child process (as it runs in production), and
// the load.
func (e cliEnv) benchReceiver(ctx context.Context, cfg benchConfig, dbs *scratchDatabases, name string) (receiverResult, error) {
	var res receiverResult
	db, err := dbs.createReceiver(ctx, name)
	if err != nil {
		return res, err
	}
	srv, err := startServer(ctx, db.url, db.key, e.stderr)
	if err != nil {
		return res, err
	}
	res.serverLog = srv.logPath
	defer func() {
		srv.stop()
		// The log only matters when something went wrong or was asked for.
		if !cfg.keep && res.load.failed() == 0 && ctx.Err() == nil {
			os.Remove(srv.logPath)
		}
	}()
	checkpoint(ctx, dbs.admin)
	target := srv.webhookURL()
	e.warmUp(ctx, cfg, target, db.secret)
	fmt.Fprintf(e.stderr, "tidemark receiver: %d senders for %s on %s\n", cfg.senders, cfg.duration, srv.base)
	res.load = runLoad(ctx, cfg, target, db.secret, e.stderr)
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	// Read before stopping: the peak is the process's own high-water mark.
	res.mem, err = readProcMemory(srv.cmd.Process.Pid)
	if err != nil {
		fmt.Fprintf(e.stderr, "server memory unknown: %v\n", err)
	}
	if first := res.load.firstError; first != "" {
		fmt.Fprintf(e.stderr, "first error: %s\nserver log: %s\n", first, srv.logPath)
	}
	return res, nil
}

// warmUp sends unmeasured load first, so the measurement does not include
// the server opening its database connections and preparing its statements,
// just as pgbench reports its rate without initial connection time.
func (e cliEnv) warmUp(ctx context.Context, cfg benchConfig, target, secret string) {
	if cfg.warmup <= 0 {
		return
	}
	warm := cfg
	warm.duration = cfg.warmup
	res := runLoad(ctx, warm, target, secret, io.Discard)
	fmt.Fprintf(e.stderr, "warm-up: %s deliveries in %s (not measured)\n", thousands(int64(res.ok)), res.elapsed.Round(time.Millisecond))
}

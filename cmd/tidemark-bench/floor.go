package main

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/cmd/tidemark-bench/internal/pgbench"
	"github.com/tidemark/tidemark/cmd/tidemark-bench/internal/scratch"
)

// The PostgreSQL floor, the floor scripts in cmd/tidemark-bench/benchdata:
// the minimum durable work of one event (claim + guarded upsert), run by
// pgbench. Embedded so the binary measures the floor on whatever server it
// is pointed at.
var (
	//go:embed benchdata/floor-schema.sql
	floorSchema string
	//go:embed benchdata/floor-ingest.sql
	floorIngest string
)

// floorLogPrefix names pgbench's per-transaction logs of the floor.
const floorLogPrefix = "floor"

// floorResult is pgbench's measurement of the floor.
type floorResult struct {
	clients int
	tps     float64 // transactions per second: one event each
	latency float64 // average, in ms
	// p50 and p99 of the transactions' latencies, from pgbench's log, so
	// that a row's latencies are compared with the floor's of the same run.
	p50, p99 time.Duration
	command  []string
	missing  bool // pgbench was not found
}

// floorBench runs the floor script on one scratch database, at whatever
// number of clients a measurement needs.
type floorBench struct {
	bin, dbURL, script string
	missing            bool // pgbench was not found
	dbs                *scratch.Databases
	log                io.Writer
}

// prepareFloor loads the floor schema into a scratch database of its own.
// Without pgbench it says so and returns a floorBench whose results are
// marked missing.
func (e cliEnv) prepareFloor(ctx context.Context, dbs *scratch.Databases, name string) (*floorBench, error) {
	f := &floorBench{bin: pgbench.Find(), dbs: dbs, log: e.stderr}
	if f.bin == "" {
		fmt.Fprintln(e.stderr, "pgbench not found on PATH or under /usr/lib/postgresql/*/bin: skipping the floor baseline")
		f.missing = true
		return f, nil
	}
	var err error
	if f.dbURL, err = dbs.Create(ctx, name); err != nil {
		return nil, err
	}
	if err := loadFloorSchema(ctx, f.dbURL); err != nil {
		return nil, err
	}
	if f.script, err = writeTemp("tidemark-bench-floor-*.sql", floorIngest); err != nil {
		return nil, err
	}
	return f, nil
}

// close removes the script unless keep.
func (f *floorBench) close(keep bool) {
	if f.script != "" && !keep {
		os.Remove(f.script)
	}
}

// run measures the floor with clients pgbench clients for cfg.duration.
func (f *floorBench) run(ctx context.Context, cfg benchConfig, clients int) (*floorResult, error) {
	if f.missing {
		return &floorResult{clients: clients, missing: true}, nil
	}
	seconds := max(1, int((cfg.duration+time.Second-1)/time.Second))
	logDir, err := os.MkdirTemp("", "tidemark-bench-floor-log-*")
	if err != nil {
		return nil, err
	}
	if cfg.keep {
		fmt.Fprintf(f.log, "pgbench floor logs kept in %s\n", logDir)
	} else {
		defer os.RemoveAll(logDir)
	}
	// The logs go to pgbench's working directory, so that the printed
	// command works wherever it is pasted.
	args := []string{"-n", "-f", f.script, "-c", strconv.Itoa(clients), "-j", strconv.Itoa(min(2, clients)),
		"-T", strconv.Itoa(seconds), "-l", "--log-prefix", floorLogPrefix, f.dbURL}
	f.dbs.Checkpoint(ctx)
	fmt.Fprintf(f.log, "pgbench floor: %d clients for %ds\n", clients, seconds)
	cmd := exec.CommandContext(ctx, f.bin, args...)
	cmd.Dir = logDir
	out, err := cmd.CombinedOutput()
	res := &floorResult{clients: clients, command: append([]string{f.bin}, args...)}
	if err != nil {
		return nil, fmt.Errorf("%s: %w\n%s", shellJoin(res.command), err, out)
	}
	res.tps, res.latency, err = pgbench.ParseSummary(out)
	if err != nil {
		return nil, fmt.Errorf("%w\n%s", err, out)
	}
	latencies, err := pgbench.ReadLogs(logDir, floorLogPrefix)
	if err != nil {
		return nil, err
	}
	res.p50, res.p99 = percentile(latencies, 0.50), percentile(latencies, 0.99)
	return res, nil
}

func loadFloorSchema(ctx context.Context, dbURL string) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	// The simple protocol runs the whole multi-statement script.
	if _, err := conn.PgConn().Exec(ctx, floorSchema).ReadAll(); err != nil {
		return fmt.Errorf("load floor schema: %w", err)
	}
	return nil
}

func writeTemp(pattern, content string) (string, error) {
	f, err := os.CreateTemp("", pattern)
	if err != nil {
		return "", err
	}
	_, err = f.WriteString(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return f.Name(), err
}

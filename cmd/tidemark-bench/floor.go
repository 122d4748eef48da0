package main

import (
	"bufio"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
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
	dbs                *scratchDatabases
	log                io.Writer
}

// prepareFloor loads the floor schema into a scratch database of its own.
// Without pgbench it says so and returns a floorBench whose results are
// marked missing.
func (e cliEnv) prepareFloor(ctx context.Context, dbs *scratchDatabases, name string) (*floorBench, error) {
	f := &floorBench{bin: findPgbench(), dbs: dbs, log: e.stderr}
	if f.bin == "" {
		fmt.Fprintln(e.stderr, "pgbench not found on PATH or under /usr/lib/postgresql/*/bin: skipping the floor baseline")
		f.missing = true
		return f, nil
	}
	var err error
	if f.dbURL, err = dbs.create(ctx, name); err != nil {
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
		"-T", strconv.Itoa(seconds), "-l", "--log-prefix", "floor", f.dbURL}
	checkpoint(ctx, f.dbs.admin)
	fmt.Fprintf(f.log, "pgbench floor: %d clients for %ds\n", clients, seconds)
	cmd := exec.CommandContext(ctx, f.bin, args...)
	cmd.Dir = logDir
	out, err := cmd.CombinedOutput()
	res := &floorResult{clients: clients, command: append([]string{f.bin}, args...)}
	if err != nil {
		return nil, fmt.Errorf("%s: %w\n%s", shellJoin(res.command), err, out)
	}
	res.tps, res.latency, err = parsePgbench(out)
	if err != nil {
		return nil, fmt.Errorf("%w\n%s", err, out)
	}
	latencies, err := readPgbenchLogs(logDir)
	if err != nil {
		return nil, err
	}
	res.p50, res.p99 = percentile(latencies, 0.50), percentile(latencies, 0.99)
	return res, nil
}

// readPgbenchLogs reads the latencies of every transaction from the
// per-transaction logs pgbench -l wrote into dir (one file per thread),
// sorted.
func readPgbenchLogs(dir string) ([]time.Duration, error) {
	files, err := filepath.Glob(filepath.Join(dir, "floor.*"))
	if err != nil {
		return nil, err
	}
	var latencies []time.Duration
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		latencies, err = parsePgbenchLog(f, latencies)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("pgbench log %s: %w", name, err)
		}
	}
	if len(latencies) == 0 {
		return nil, fmt.Errorf("pgbench logged no transaction in %s", dir)
	}
	slices.Sort(latencies)
	return latencies, nil
}

// parsePgbenchLog appends the latencies of a pgbench -l log to latencies.
// Each line is "client_id transaction_no time script_no time_epoch time_us",
// time in microseconds; pgbench writes "skipped" or "failed" there for a
// transaction that did not run, which has no latency.
func parsePgbenchLog(r io.Reader, latencies []time.Duration) ([]time.Duration, error) {
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 {
			return nil, fmt.Errorf("line %d: %q is not a transaction of pgbench -l", n, sc.Text())
		}
		if fields[2] == "skipped" || fields[2] == "failed" {
			continue
		}
		us, err := strconv.ParseInt(fields[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: latency %q: %w", n, fields[2], err)
		}
		latencies = append(latencies, time.Duration(us)*time.Microsecond)
	}
	return latencies, sc.Err()
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

// findPgbench prefers PATH, then the newest Debian-style install.
func findPgbench() string {
	if p, err := exec.LookPath("pgbench"); err == nil {
		return p
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pgbench")
	version := func(p string) int {
		n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(p))))
		return n
	}
	slices.SortFunc(found, func(a, b string) int { return version(a) - version(b) })
	if len(found) == 0 {
		return ""
	}
	return found[len(found)-1]
}

var (
	tpsLine     = regexp.MustCompile(`(?m)^tps = ([0-9.]+) \(without initial connection time\)`)
	latencyLine = regexp.MustCompile(`(?m)^latency average = ([0-9.]+) ms`)
)

// parsePgbench reads the rate and average latency of pgbench's summary.
func parsePgbench(out []byte) (tps, latencyMS float64, err error) {
	m := tpsLine.FindSubmatch(out)
	if m == nil {
		return 0, 0, errors.New(`pgbench printed no "tps = ... (without initial connection time)" line`)
	}
	tps, err = strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		return 0, 0, err
	}
	if m := latencyLine.FindSubmatch(out); m != nil {
		latencyMS, _ = strconv.ParseFloat(string(m[1]), 64)
	}
	return tps, latencyMS, nil
}

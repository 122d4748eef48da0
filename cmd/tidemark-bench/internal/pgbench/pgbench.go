// Package pgbench finds PostgreSQL's pgbench and reads what it reports: the
// rate and average latency of its summary, and the latency of every
// transaction from the logs of pgbench -l.
package pgbench

import (
	"bufio"
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
)

// Find is the pgbench binary to run: on PATH, else the newest Debian-style
// install; "" when there is none.
func Find() string {
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

// ParseSummary reads the rate and average latency of pgbench's summary.
func ParseSummary(out []byte) (tps, latencyMS float64, err error) {
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

// ReadLogs reads the latencies of every transaction from the
// per-transaction logs pgbench -l --log-prefix prefix wrote into dir (one
// file per thread), sorted.
func ReadLogs(dir, prefix string) ([]time.Duration, error) {
	files, err := filepath.Glob(filepath.Join(dir, prefix+".*"))
	if err != nil {
		return nil, err
	}
	var latencies []time.Duration
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		latencies, err = parseLog(f, latencies)
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

// parseLog appends the latencies of a pgbench -l log to latencies. Each
// line is "client_id transaction_no time script_no time_epoch time_us",
// time in microseconds; pgbench writes "skipped" or "failed" there for a
// transaction that did not run, which has no latency.
func parseLog(r io.Reader, latencies []time.Duration) ([]time.Duration, error) {
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

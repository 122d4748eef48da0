package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	mathrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/web/provider"
)

// The PostgreSQL floor of /work/shared/bench: the minimum durable work of
// one event (claim + guarded upsert), run by pgbench. Embedded so the
// binary measures the floor on whatever server it is pointed at.
var (
	//go:embed benchdata/floor-schema.sql
	floorSchema string
	//go:embed benchdata/floor-ingest.sql
	floorIngest string
)

const defaultServerURL = "postgres:///postgres?host=/var/run/postgresql&sslmode=disable"

// Names of the tenant and provider the load is sent to.
const (
	benchTenant   = "bench"
	benchProvider = "load"
)

// benchConfig is the command line of bench ingest.
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
	// One maintenance connection creates and drops the scratch databases.
	admin, err := pgx.Connect(ctx, cfg.serverURL)
	if err != nil {
		return fmt.Errorf("connect to --server-url: %w", err)
	}
	defer admin.Close(context.WithoutCancel(ctx))
	dbs := &scratchDatabases{admin: admin, serverURL: cfg.serverURL, keep: cfg.keep, log: e.stderr}
	defer dbs.dropAll(ctx)

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
		return fmt.Errorf("bench ingest: %d deliveries failed; server log: %s", recv.load.failed(), recv.serverLog)
	}
	return nil
}

func (e cliEnv) benchFlags(args []string) (benchConfig, error) {
	fs := e.flags("bench ingest", "bench ingest [flags]\n\n"+
		"Start a receiver on a scratch database, send it signed contact.snapshot deliveries\n"+
		"from concurrent senders, and compare its rate with pgbench running the PostgreSQL\n"+
		"floor (claim + guarded upsert per event) on the same server.")
	serverURL := e.getenv("DATABASE_URL")
	if serverURL == "" {
		serverURL = defaultServerURL
	}
	var cfg benchConfig
	fs.IntVar(&cfg.senders, "senders", 32, "concurrent senders (and pgbench clients)")
	fs.DurationVar(&cfg.duration, "duration", 10*time.Second, "how long each measurement runs")
	fs.DurationVar(&cfg.warmup, "warmup", time.Second, "unmeasured load before the receiver's measurement (0 for none)")
	fs.IntVar(&cfg.contacts, "contacts", 20000, "distinct contact ids the events are spread over")
	fs.StringVar(&cfg.serverURL, "server-url", serverURL, "maintenance URL of the PostgreSQL server the scratch databases are created on (default DATABASE_URL)")
	fs.BoolVar(&cfg.pgbench, "pgbench", true, "also run the pgbench floor baseline")
	fs.BoolVar(&cfg.keep, "keep", false, "keep the scratch databases and files")
	if _, err := parse(fs, args, 0); err != nil {
		return cfg, err
	}
	if cfg.senders < 1 || cfg.contacts < 1 || cfg.duration <= 0 || cfg.warmup < 0 {
		return cfg, errors.New("bench ingest: --senders, --contacts and --duration must be positive, --warmup not negative")
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
	dbURL, err := dbs.create(ctx, name)
	if err != nil {
		return res, err
	}
	key := make([]byte, 32)
	rand.Read(key)
	secret, err := prepareReceiverDatabase(ctx, dbURL, key)
	if err != nil {
		return res, err
	}
	srv, err := startServer(dbURL, key)
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
	if err := srv.waitReady(ctx, 30*time.Second); err != nil {
		return res, err
	}
	checkpoint(ctx, dbs.admin)
	target := srv.base + "/webhooks/" + benchTenant + "/" + benchProvider
	e.warmUp(ctx, cfg, target, secret)
	fmt.Fprintf(e.stderr, "tidemark receiver: %d senders for %s on %s\n", cfg.senders, cfg.duration, srv.base)
	res.load = runLoad(ctx, cfg, target, secret, e.stderr)
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

// prepareReceiverDatabase migrates the scratch database and creates the
// bench tenant with a standard provider, returning its signing secret.
func prepareReceiverDatabase(ctx context.Context, dbURL string, key []byte) (string, error) {
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return "", err
	}
	defer pool.Close()
	store, err := postgres.New(pool, key)
	if err != nil {
		return "", err
	}
	if err := postgres.Migrate(ctx, pool, io.Discard); err != nil {
		return "", err
	}
	if _, err := store.CreateTenant(ctx, benchTenant, "Bench"); err != nil {
		return "", err
	}
	secret := provider.NewStandardSecret()
	if _, err := store.CreateProvider(ctx, benchTenant, benchProvider, provider.Standard.Name(), secret); err != nil {
		return "", err
	}
	return secret, nil
}

// scratchDatabases creates databases and drops them all at the end.
type scratchDatabases struct {
	admin     *pgx.Conn
	serverURL string
	keep      bool
	log       io.Writer
	names     []string
}

func (s *scratchDatabases) create(ctx context.Context, name string) (string, error) {
	if _, err := s.admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create scratch database %s: %w", name, err)
	}
	s.names = append(s.names, name)
	return databaseURL(s.serverURL, name)
}

// dropAll runs even after an interrupt, so it uses a context of its own.
func (s *scratchDatabases) dropAll(ctx context.Context) {
	if s.keep {
		for _, name := range s.names {
			url, _ := databaseURL(s.serverURL, name)
			fmt.Fprintf(s.log, "kept scratch database %s (%s)\n", name, url)
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	for _, name := range s.names {
		// FORCE ends connections a killed child may have left behind.
		if _, err := s.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			fmt.Fprintf(s.log, "could not drop scratch database %s: %v\n", name, err)
		}
	}
}

// databaseURL points a connection string at another database on the same
// server, in URL or keyword/value form.
func databaseURL(serverURL, name string) (string, error) {
	if strings.HasPrefix(serverURL, "postgres://") || strings.HasPrefix(serverURL, "postgresql://") {
		u, err := url.Parse(serverURL)
		if err != nil {
			return "", fmt.Errorf("--server-url: %w", err)
		}
		q := u.Query()
		if q.Has("dbname") {
			q.Set("dbname", name)
			u.RawQuery = q.Encode()
		}
		u.Path = "/" + name
		return u.String(), nil
	}
	// In keyword/value form a later keyword overrides an earlier one.
	return strings.TrimSpace(serverURL) + " dbname=" + name, nil
}

// checkpoint flushes dirty buffers before a measurement so it does not pay
// for the previous one's writes. Best effort: it needs pg_checkpoint rights.
func checkpoint(ctx context.Context, admin *pgx.Conn) {
	admin.Exec(ctx, "CHECKPOINT")
}

// serverProcess is the receiver running as a child process.
type serverProcess struct {
	cmd     *exec.Cmd
	base    string
	logPath string
	logFile *os.File
	exited  chan struct{}
	waitErr error
}

// startServer runs this binary's serve command on a free local port.
func startServer(dbURL string, key []byte) (*serverProcess, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logFile, err := os.CreateTemp("", "tidemark-bench-serve-*.log")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "serve", "--addr", addr)
	cmd.Env = append(withoutEnv(os.Environ(), "DATABASE_URL", "TIDEMARK_ENCRYPTION_KEY"),
		"DATABASE_URL="+dbURL, "TIDEMARK_ENCRYPTION_KEY="+base64.StdEncoding.EncodeToString(key))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start server: %w", err)
	}
	p := &serverProcess{cmd: cmd, base: "http://" + addr, logPath: logFile.Name(), logFile: logFile, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// freeAddr asks the kernel for a free port. Another process could take it
// before the child listens; the readiness wait would then report the error.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func withoutEnv(env []string, names ...string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(names, name)
	})
}

// waitReady polls /readyz until it answers 200, the child exits, or the
// timeout passes.
func (p *serverProcess) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		resp, err := client.Get(p.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.exited:
			return fmt.Errorf("server exited before it was ready (%v); server log: %s", p.waitErr, p.logPath)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("server not ready after %s; server log: %s", timeout, p.logPath)
		}
	}
}

// stop asks the server to shut down gracefully, and kills it if it has not
// within 15 seconds.
func (p *serverProcess) stop() {
	defer p.logFile.Close()
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
}

// procMemory is a process's resident memory, in bytes.
type procMemory struct {
	peak, current int64
}

func readProcMemory(pid int) (procMemory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procMemory{}, err
	}
	defer f.Close()
	return parseProcStatus(f)
}

// parseProcStatus reads VmHWM (peak resident set) and VmRSS, given in kB.
func parseProcStatus(r io.Reader) (procMemory, error) {
	var m procMemory
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmHWM" && key != "VmRSS") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(value), "kB")), 10, 64)
		if err != nil {
			return m, fmt.Errorf("%s: %w", key, err)
		}
		if key == "VmHWM" {
			m.peak = kb << 10
		} else {
			m.current = kb << 10
		}
	}
	if m.peak == 0 {
		return m, errors.New("no VmHWM in /proc status")
	}
	return m, sc.Err()
}

// loadResult is what the senders saw.
type loadResult struct {
	elapsed    time.Duration
	latencies  []time.Duration // of every answered request, sorted
	ok         int             // 200 answers
	statuses   map[int]int     // other answers
	transport  int             // requests that got no answer
	firstError string
}

func (r loadResult) failed() int {
	n := r.transport
	for _, c := range r.statuses {
		n += c
	}
	return n
}

func (r loadResult) perSecond() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.ok) / r.elapsed.Seconds()
}

// recorder collects the senders' observations. One mutex is enough at
// tens of thousands of requests per second, and lets the progress line see
// the latencies of the last second.
type recorder struct {
	mu sync.Mutex
	loadResult
}

func (r *recorder) record(latency time.Duration, status int, body []byte, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case err != nil:
		r.transport++
		if r.firstError == "" {
			r.firstError = err.Error()
		}
		return
	case status == http.StatusOK:
		r.ok++
	default:
		r.statuses[status]++
		if r.firstError == "" {
			r.firstError = fmt.Sprintf("%d %s", status, bytes.TrimSpace(body))
		}
	}
	r.latencies = append(r.latencies, latency)
}

// since returns the answers recorded after the first n, and the new count.
func (r *recorder) since(n int) ([]time.Duration, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.latencies[n:]), len(r.latencies)
}

// runLoad sends deliveries from cfg.senders goroutines until cfg.duration
// has passed. Requests in flight at the end complete and count, and the
// rate is taken over the time until the last one answered.
func runLoad(ctx context.Context, cfg benchConfig, target, secret string, progress io.Writer) loadResult {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	// Every sender keeps its connection: no reconnects in the measurement.
	transport.MaxIdleConnsPerHost = cfg.senders
	transport.MaxIdleConns = cfg.senders
	client := &http.Client{Transport: transport, Timeout: 30 * time.Second}
	defer transport.CloseIdleConnections()

	rec := &recorder{loadResult: loadResult{statuses: map[int]int{}}}
	start := time.Now()
	deadline := start.Add(cfg.duration)
	stopProgress := startProgress(rec, start, progress)
	var wg sync.WaitGroup
	for i := range cfg.senders {
		wg.Go(func() {
			runSender(ctx, client, target, secret, i, cfg.contacts, deadline, rec)
		})
	}
	wg.Wait()
	stopProgress()

	res := rec.loadResult
	res.elapsed = time.Since(start)
	slices.Sort(res.latencies)
	return res
}

// runSender sends one delivery at a time, as a provider's worker does.
func runSender(ctx context.Context, client *http.Client, target, secret string, sender, contacts int, deadline time.Time, rec *recorder) {
	prefix := fmt.Sprintf("bench-%d-%d-", time.Now().UnixNano(), sender)
	for n := 0; ctx.Err() == nil && time.Now().Before(deadline); n++ {
		req, err := benchRequest(ctx, target, secret, prefix+strconv.Itoa(n), contacts)
		if err != nil {
			rec.record(0, 0, nil, err)
			return
		}
		begin := time.Now()
		status, body, err := do(client, req)
		if ctx.Err() != nil {
			return // interrupted: not a server error
		}
		rec.record(time.Since(begin), status, body, err)
	}
}

// benchRequest builds a signed contact.snapshot delivery for a random
// contact and revision, drawn like the floor script's.
func benchRequest(ctx context.Context, target, secret, id string, contacts int) (*http.Request, error) {
	r := mathrand.IntN(1_000_000) + 1
	contact := "c-" + strconv.Itoa(mathrand.IntN(contacts)+1)
	snapshot := `{"company":"Co-` + strconv.Itoa(r) + `","job_title":"Director","lead_status":"customer"}`
	body, err := snapshotDelivery("contact.snapshot", contact, strconv.Itoa(r), snapshot)
	if err != nil {
		return nil, err
	}
	ts := time.Now().Unix()
	sig, err := provider.SignStandard(secret, id, ts, body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", sig)
	return req, nil
}

// do sends req and reads the answer; the body is kept only for errors, and
// always drained so the connection is reused.
func do(client *http.Client, req *http.Request) (int, []byte, error) {
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		_, err = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil, err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, body, nil
}

// startProgress rewrites one status line every second with the last
// second's rate and p99; the returned func ends it with a newline.
func startProgress(rec *recorder, start time.Time, w io.Writer) func() {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		ticker := time.NewTicker(time.Second)
		defer ticker.Stop()
		seen := 0
		last := start
		for {
			select {
			case <-done:
				fmt.Fprintln(w)
				return
			case now := <-ticker.C:
				var window []time.Duration
				window, seen = rec.since(seen)
				slices.Sort(window)
				rate := float64(len(window)) / now.Sub(last).Seconds()
				last = now
				fmt.Fprintf(w, "\r  %3ds  %s events/s  p99 %s    ",
					int(now.Sub(start).Round(time.Second).Seconds()), thousands(int64(rate+0.5)), compactMillis(percentile(window, 0.99)))
			}
		}
	}()
	return func() { close(done); <-finished }
}

// percentile returns the nearest-rank q-quantile of sorted durations.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// floorResult is pgbench's measurement of the floor.
type floorResult struct {
	tps     float64
	latency float64 // average, in ms
	command []string
	missing bool // pgbench was not found
}

// benchFloor loads the floor schema into a second scratch database and runs
// the floor script with as many clients as there were senders.
func (e cliEnv) benchFloor(ctx context.Context, cfg benchConfig, dbs *scratchDatabases, name string) (*floorResult, error) {
	bin := findPgbench()
	if bin == "" {
		fmt.Fprintln(e.stderr, "pgbench not found on PATH or under /usr/lib/postgresql/*/bin: skipping the floor baseline")
		return &floorResult{missing: true}, nil
	}
	dbURL, err := dbs.create(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := loadFloorSchema(ctx, dbURL); err != nil {
		return nil, err
	}
	script, err := writeTemp("tidemark-bench-floor-*.sql", floorIngest)
	if err != nil {
		return nil, err
	}
	if !cfg.keep {
		defer os.Remove(script)
	}
	seconds := max(1, int((cfg.duration+time.Second-1)/time.Second))
	args := []string{"-n", "-f", script, "-c", strconv.Itoa(cfg.senders), "-j", strconv.Itoa(min(2, cfg.senders)),
		"-T", strconv.Itoa(seconds), dbURL}
	checkpoint(ctx, dbs.admin)
	fmt.Fprintf(e.stderr, "pgbench floor: %d clients for %ds\n", cfg.senders, seconds)
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	res := &floorResult{command: append([]string{bin}, args...)}
	if err != nil {
		return nil, fmt.Errorf("%s: %w\n%s", shellJoin(res.command), err, out)
	}
	res.tps, res.latency, err = parsePgbench(out)
	if err != nil {
		return nil, fmt.Errorf("%w\n%s", err, out)
	}
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

// printBenchResults writes the result table and how it was obtained.
func printBenchResults(w io.Writer, cfg benchConfig, recv receiverResult, floor *floorResult) {
	l := recv.load
	const row = "%-20s%-11s%-9s%-9s%s\n"
	fmt.Fprintf(w, row, "", "events/s", "p50", "p99", "server RSS peak")
	fmt.Fprintf(w, row, "tidemark receiver", thousands(int64(l.perSecond()+0.5)),
		millis(percentile(l.latencies, 0.50)), millis(percentile(l.latencies, 0.99)), mib(recv.mem.peak))
	switch {
	case floor == nil:
	case floor.missing:
		fmt.Fprintf(w, "%-20s%s\n", "pgbench floor", "not run: pgbench not found")
	default:
		fmt.Fprintf(w, "%-20s%-11s(avg %.1f ms)\n", "pgbench floor", thousands(int64(floor.tps+0.5)), floor.latency)
		if floor.tps > 0 {
			fmt.Fprintf(w, "%-20s%.2f of the floor\n", "ratio", l.perSecond()/floor.tps)
		}
	}
	fmt.Fprintf(w, "\ntidemark: %s deliveries answered 200 in %s (after a %s warm-up) by %d senders over %s contacts; %d failed",
		thousands(int64(l.ok)), l.elapsed.Round(time.Millisecond), cfg.warmup, cfg.senders, thousands(int64(cfg.contacts)), l.failed())
	if len(l.statuses) > 0 || l.transport > 0 {
		fmt.Fprintf(w, " (statuses %v, no answer %d)", l.statuses, l.transport)
	}
	fmt.Fprintf(w, "; server RSS at end %s\n", mib(recv.mem.current))
	if floor != nil && !floor.missing {
		fmt.Fprintf(w, "pgbench: %s\n", shellJoin(floor.command))
	}
}

// thousands groups digits by three with spaces: 12 345.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func millis(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

func compactMillis(d time.Duration) string {
	return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
}

func mib(bytes int64) string {
	if bytes == 0 {
		return "?"
	}
	return fmt.Sprintf("%d MiB", (bytes+1<<19)>>20)
}

// shellJoin quotes arguments so the printed command can be pasted into a
// shell (URLs carry & and ?).
func shellJoin(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,@+", r))
		}) < 0 {
			quoted[i] = a
		} else {
			quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(quoted, " ")
}

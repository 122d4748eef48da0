package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/replay"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/ingest"
	"github.com/tidemark/tidemark/web"
)

// cleanupEvery is how often serve runs the TTL and retention cleanup;
// cleanupRetry, how soon it tries again when a pass deferred steps.
const (
	cleanupEvery = time.Hour
	cleanupRetry = 5 * time.Minute
)

// The HTTP server's timeouts. A delivery may be up to 5 MiB (Salesforce's
// default body limit): at a slow 100 KiB/s that is about 50 s of upload,
// which the read timeout allows while still closing connections that
// trickle forever. The header timeout is short because headers are small
// and a client that withholds them holds a connection for nothing. The
// write timeout runs from the end of the headers, so it covers the read
// timeout plus the handler's database work (the ingest budget, a read
// timeout). Idle keep-alive connections are closed after a while so that
// many senders cannot pin sockets.
const (
	httpReadHeaderTimeout = 10 * time.Second
	httpReadTimeout       = 60 * time.Second
	httpWriteTimeout      = httpReadTimeout + 30*time.Second
	httpIdleTimeout       = 2 * time.Minute
)

// serveOptions are serve's flags.
type serveOptions struct {
	addr, metricsAddr, publicURL, proxies, memoryLimit *string
	allowRemote                                        *bool
	retention, historyRetention, readTimeout           *time.Duration
	queue                                              queueFlags
}

// serveFlags declares serve's flags; serve and its help (commands.go) call it.
func (e cliEnv) serveFlags(fs *flag.FlagSet) serveOptions {
	return serveOptions{
		addr:             fs.String("addr", "127.0.0.1:8080", "address to listen on"),
		allowRemote:      fs.Bool("allow-remote", false, "with the embedded database, allow an --addr that is not a loopback address"),
		metricsAddr:      fs.String("metrics-addr", "", "serve /metrics on this address instead of --addr (default: on --addr)"),
		publicURL:        fs.String("public-url", e.getenv("TIDEMARK_PUBLIC_URL"), "base URL providers call (default: built from each request)"),
		retention:        fs.Duration("retention", defaultRetention, retentionUsage),
		historyRetention: historyRetentionFlag(fs),
		proxies: fs.String("trusted-proxies", e.getenv("TIDEMARK_TRUSTED_PROXIES"),
			"comma-separated CIDRs of reverse proxies whose X-Forwarded-For names the client (default: none; the peer is the client)"),
		readTimeout: fs.Duration("read-timeout", postgres.DefaultReadTimeout,
			"longest a read statement of the console or the API may run; a longer one answers 503 asking for a narrower filter"),
		memoryLimit: fs.String("memory-limit", cmp.Or(e.getenv("TIDEMARK_MEMORY_LIMIT"), defaultMemoryLimit),
			"soft memory limit of the Go runtime, such as 48MiB; 0 means none (GOMEMLIMIT, when set, wins)"),
		queue: e.addQueueFlags(fs, true),
	}
}

func (e cliEnv) serve(ctx context.Context, args []string) error {
	fs := e.flags("serve")
	o := e.serveFlags(fs)
	addr, allowRemote, metricsAddr, publicURL, proxies, memoryLimit := o.addr, o.allowRemote, o.metricsAddr, o.publicURL, o.proxies, o.memoryLimit
	retention, historyRetention, readTimeout, qf := o.retention, o.historyRetention, o.readTimeout, o.queue
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	if err := setMemoryLimit(*memoryLimit, e.getenv); err != nil {
		return err
	}
	if *readTimeout < time.Millisecond {
		return fmt.Errorf("serve: --read-timeout must be at least 1ms, such as 5s; got %s", *readTimeout)
	}
	trusted, err := domain.ParseNetworks(*proxies)
	if err != nil {
		return fmt.Errorf("--trusted-proxies (or TIDEMARK_TRUSTED_PROXIES): %w", err)
	}
	if e.getenv("DATABASE_URL") == "" && !*allowRemote && !isLoopback(*addr) {
		return fmt.Errorf("serve: --addr %s is not a loopback address, and the embedded database's demo would be reachable "+
			"from the network: listen on 127.0.0.1, set DATABASE_URL, or pass --allow-remote", *addr)
	}
	log := slog.New(slog.NewTextHandler(e.stderr, nil))

	db, err := e.openDatabase(ctx, openOptions{startEmbedded: true, ingest: true})
	if err != nil {
		return err
	}
	defer func() { db.close() }()
	if err := db.useReadPool(ctx, *readTimeout); err != nil {
		return err
	}
	store := db.store
	if err := postgres.Migrate(ctx, store.Pool(), e.stderr); err != nil {
		return err
	}
	// A node started without the key its secrets were stored with would
	// refuse every signed delivery; it does not start instead.
	if err := store.CheckSecrets(ctx); err != nil {
		return fmt.Errorf("refusing to start: %w", err)
	}
	if err := checkRetention(ctx, store, *retention); err != nil {
		return err
	}
	if err := keepHistory(store, *historyRetention); err != nil {
		return err
	}
	// A long transaction on the logs can make this give up (EUNAVAILABLE):
	// the days ahead that exist are kept, and the cleanup pass retries.
	if _, err := store.EnsurePartitions(ctx, time.Now(), postgres.PartitionsAhead); err != nil {
		if domain.ErrorCode(err) != domain.EUNAVAILABLE {
			return fmt.Errorf("prepare event log partitions: %w", err)
		}
		log.Warn("prepare event log partitions", "err", err)
	}
	issued, err := issueMissingSecrets(ctx, store)
	if err != nil {
		return err
	}
	if len(issued) > 0 {
		log.Warn(issuedSecretsNotice(issued), "count", len(issued), "providers", strings.Join(issued, ","))
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	base := "http://" + ln.Addr().String()
	if *publicURL != "" {
		base = strings.TrimRight(*publicURL, "/")
	}
	if db.embedded != nil {
		if err := e.announceDemo(ctx, store, base); err != nil {
			return fmt.Errorf("prepare demo tenant: %w", err)
		}
	}

	queued, closeQueue, err := qf.startQueue(ctx, log)
	if err != nil {
		return err
	}
	defer closeQueue()
	handler := web.New(web.Config{Services: servicesOf(store), Sessions: store.SessionStore(),
		Ping: store.Pool().Ping, Logger: log, PublicURL: *publicURL, TrustedProxies: trusted, Queue: queued.queue,
		Collectors: append([]prometheus.Collector{ingest.GroupSize, store.ReconciliationMetrics()}, queued.collectors...), IngestConns: int(store.Pool().Config().MaxConns),
		MetricsElsewhere: *metricsAddr != ""})
	srv := newHTTPServer(handler.Handler())
	errc := make(chan error, 2)
	if *metricsAddr != "" {
		mln, err := net.Listen("tcp", *metricsAddr)
		if err != nil {
			return fmt.Errorf("--metrics-addr: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", handler.MetricsHandler())
		msrv := newHTTPServer(mux)
		defer msrv.Close()
		go func() { errc <- msrv.Serve(mln) }()
		fmt.Fprintf(e.stdout, "Metrics are served on http://%s/metrics\n", mln.Addr())
	}
	go runCleanup(ctx, store, *retention, log)
	go runReconciliation(ctx, store, log)
	go runSearchIndex(ctx, store, log)
	go store.ListenForChanges(ctx) // caches endpoints; errors only when called twice
	go handler.RunRefusalFlusher(ctx)
	// Bulk replay jobs; on shutdown the worker gives its job back for
	// another node (or the next start) to continue.
	replays := make(chan struct{})
	go func() {
		defer close(replays)
		replay.Worker{Replayer: handler.Replayer(), Deliveries: store, Log: log}.Run(ctx)
	}()
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(e.stdout, "Tidemark is listening on http://%s\n", ln.Addr())

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	fmt.Fprintln(e.stderr, "shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	err = srv.Shutdown(shutdownCtx)
	<-replays
	// Refusals counted until the last request ended are written before exit,
	// even when a slow request used up the shutdown's time.
	flushCtx, cancelFlush := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancelFlush()
	if ferr := handler.FlushRefusals(flushCtx); ferr != nil {
		log.Error("could not write refused deliveries", "err", ferr)
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func newHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: httpReadHeaderTimeout,
		ReadTimeout:       httpReadTimeout,
		WriteTimeout:      httpWriteTimeout,
		IdleTimeout:       httpIdleTimeout,
	}
}

// isLoopback reports whether addr (host:port) listens on loopback only;
// an empty host means every interface.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// runCleanup runs one cleanup pass now and then every cleanupEvery (or
// cleanupRetry after a pass that deferred steps) until ctx ends. Several
// nodes may run it at once: one runs each pass, the others skip it.
func runCleanup(ctx context.Context, store *postgres.Store, retention time.Duration, log *slog.Logger) {
	for {
		report, err := store.Cleanup(ctx, time.Now(), retention)
		next := cleanupEvery
		switch {
		case ctx.Err() != nil:
		case err != nil:
			log.Error("cleanup failed", "err", err, "report", report.String())
		case report.Skipped:
			log.Info("cleanup skipped: another process is running maintenance")
		case len(report.Deferred) > 0:
			log.Warn("cleanup deferred steps to the next pass", "report", report.String())
			next = cleanupRetry
		default:
			log.Info("cleanup", "report", report.String())
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(next):
		}
	}
}

// runSearchIndex keeps the records directory's search index current,
// every postgres.SearchIndexEvery, off the ingest path. Several nodes may
// run it: each run waits for the one in progress and then finds little
// left to do.
func runSearchIndex(ctx context.Context, store *postgres.Store, log *slog.Logger) {
	for {
		if _, err := store.IndexSearch(ctx); err != nil && ctx.Err() == nil {
			log.Error("search index", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(postgres.SearchIndexEvery):
		}
	}
}

// selfCommand is how the user can run this binary again: "go run
// ./cmd/tidemark" when started with go run, else the executable's path.
func selfCommand() string {
	exe, err := os.Executable()
	if err != nil || strings.Contains(exe, "go-build") {
		return "go run ./cmd/tidemark"
	}
	if dir, _ := os.Getwd(); dir != "" {
		if rel, err := filepath.Rel(dir, exe); err == nil && !strings.HasPrefix(rel, "..") {
			return "./" + rel
		}
	}
	return exe
}

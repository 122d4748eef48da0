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
	"syscall"
	"time"

	"github.com/tidemark/tidemark/cmd/tidemark/internal/cli"
	"github.com/tidemark/tidemark/cmd/tidemark/internal/demo"
	"github.com/tidemark/tidemark/cmd/tidemark/internal/memlimit"
	"github.com/tidemark/tidemark/domain/alerting"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/backfill"
	"github.com/tidemark/tidemark/internal/journal"
	"github.com/tidemark/tidemark/internal/metriccache"
	"github.com/tidemark/tidemark/internal/netlist"
	"github.com/tidemark/tidemark/internal/pull/salesforce/cdc"
	"github.com/tidemark/tidemark/internal/queue"
	"github.com/tidemark/tidemark/internal/replay"
	"github.com/tidemark/tidemark/internal/supervisor"
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

// defaultMetricsAddr keeps /metrics off the public address unless asked:
// it names the node's services and alert counts, and costs a read.
const defaultMetricsAddr = "127.0.0.1:9464"

// serveOptions are serve's flags.
type serveOptions struct {
	addr, metricsAddr, publicURL, proxies, memoryLimit *string
	logFormat                                          *string
	allowRemote, tenantLabels, verbose                 *bool
	metricsAddrSet                                     bool // --metrics-addr given, not its default
	retention, historyRetention, readTimeout           *time.Duration
	sweepInterval, journalInterval, cdcInterval        *time.Duration
	queue                                              queueFlags
}

// serveFlags declares serve's flags; serve and its help (commands.go) call it.
func (e cliEnv) serveFlags(fs *flag.FlagSet) serveOptions {
	return serveOptions{
		addr:        fs.String("addr", "127.0.0.1:8080", "address to listen on"),
		allowRemote: fs.Bool("allow-remote", false, "with the embedded database, allow an --addr that is not a loopback address"),
		metricsAddr: fs.String("metrics-addr", defaultMetricsAddr,
			"serve /metrics on this address; empty: on --addr, beside the webhooks, API and console"),
		tenantLabels:     fs.Bool("metrics-tenant-labels", false, "label /metrics series by tenant (default: no tenant is named)"),
		publicURL:        fs.String("public-url", e.getenv("TIDEMARK_PUBLIC_URL"), "base URL providers call (default: built from each request)"),
		retention:        fs.Duration("retention", defaultRetention, retentionUsage),
		historyRetention: historyRetentionFlag(fs),
		proxies: fs.String("trusted-proxies", e.getenv("TIDEMARK_TRUSTED_PROXIES"),
			"comma-separated CIDRs of reverse proxies whose X-Forwarded-For names the client (default: none; the peer is the client)"),
		readTimeout: fs.Duration("read-timeout", postgres.DefaultReadTimeout,
			"longest a read statement of the console or the API may run; a longer one answers 503 asking for a narrower filter"),
		memoryLimit: fs.String("memory-limit", cmp.Or(e.getenv("TIDEMARK_MEMORY_LIMIT"), memlimit.Default),
			"soft memory limit of the Go runtime, such as 48MiB; 0 means none (GOMEMLIMIT, when set, wins)"),
		sweepInterval: fs.Duration("sweep-interval", backfill.DefaultSweepInterval,
			"how often every provider with API credentials is swept for what its webhooks missed (0: never)"),
		journalInterval: fs.Duration("journal-interval", journal.DefaultInterval,
			"how often each HubSpot app install's Webhooks Journal is read (0: never)"),
		cdcInterval: fs.Duration("cdc-interval", cdc.DefaultInterval,
			"how often this node looks for Change Data Capture streams no node subscribes to, to subscribe (0: never)"),
		queue:     e.addQueueFlags(fs, true),
		logFormat: logFormatFlag(fs),
		verbose:   verboseFlag(fs),
	}
}

// verboseFlag declares serve's --verbose, -v for short.
func verboseFlag(fs *flag.FlagSet) *bool {
	v := fs.Bool("verbose", false, "at start, list each database migration applied (default: one line for them all)")
	cli.Alias(fs, "v", "verbose")
	return v
}

func (e cliEnv) serve(ctx context.Context, args []string) error {
	fs := e.flags("serve")
	o := e.serveFlags(fs)
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	fs.Visit(func(f *flag.Flag) { o.metricsAddrSet = o.metricsAddrSet || f.Name == "metrics-addr" })
	if *o.sweepInterval != 0 && *o.sweepInterval < time.Minute {
		return fmt.Errorf("serve: --sweep-interval %s: sweep at most every minute (or 0 for never)", *o.sweepInterval)
	}
	if *o.journalInterval < 0 {
		return fmt.Errorf("serve: --journal-interval %s: give a positive interval, or 0 to read no journal", *o.journalInterval)
	}
	if *o.cdcInterval < 0 {
		return fmt.Errorf("serve: --cdc-interval %s: give a positive interval, or 0 to subscribe to no stream", *o.cdcInterval)
	}
	return e.serveNode(ctx, o)
}

// serveNode checks serve's options, prepares the database (migrations,
// keys, retention, partitions, secrets, the demo) and runs the node's
// services until ctx ends.
func (e cliEnv) serveNode(ctx context.Context, o serveOptions) error {
	if err := memlimit.Set(*o.memoryLimit, e.getenv); err != nil {
		return err
	}
	if *o.readTimeout < time.Millisecond {
		return fmt.Errorf("serve: --read-timeout must be at least 1ms, such as 5s; got %s", *o.readTimeout)
	}
	trusted, err := netlist.Parse(*o.proxies)
	if err != nil {
		return fmt.Errorf("--trusted-proxies (or TIDEMARK_TRUSTED_PROXIES): %w", err)
	}
	if e.getenv("DATABASE_URL") == "" && !*o.allowRemote && !isLoopback(*o.addr) {
		return fmt.Errorf("serve: --addr %s is not a loopback address, and the embedded database's demo would be reachable "+
			"from the network: listen on 127.0.0.1, set DATABASE_URL, or pass --allow-remote", *o.addr)
	}
	log, err := newLogger(*o.logFormat, e.stderr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	traces, stopTracing, err := e.startTracing(ctx, "tidemark", log)
	if err != nil {
		return err
	}
	defer stopTracing() // when serve stops early; else the node stops it before the pools

	db, err := e.openDatabase(ctx, openOptions{startEmbedded: true, ingest: true, migrate: true, verbose: *o.verbose, readTimeout: *o.readTimeout})
	if err != nil {
		return err
	}
	defer db.close() // when serve stops early; else the pools service closes it
	store := db.store
	if err := e.prepareStore(ctx, store, o, log); err != nil {
		return err
	}

	ln, err := net.Listen("tcp", *o.addr)
	if err != nil {
		return err
	}
	base := "http://" + ln.Addr().String()
	if *o.publicURL != "" {
		base = strings.TrimRight(*o.publicURL, "/")
	}
	if db.embedded != nil {
		actx := domain.WithActor(ctx, cliActor(e.getenv))
		a := demo.Announcement{Self: selfCommand(), Base: base, DataDir: dataDir}
		if err := demo.Announce(actx, store, e.stdout, e.stderr, a); err != nil {
			return fmt.Errorf("prepare demo tenant: %w", err)
		}
	}

	q, err := o.queue.open("tidemark serve", log, db.keys, *o.retention)
	if err != nil {
		return err
	}
	node := newNode(log)
	cfg := web.Config{Store: store, Sessions: store.SessionStore(),
		Ping: store.Pool().Ping, Logger: log, PublicURL: *o.publicURL, TrustedProxies: trusted,
		Collectors: []prometheus.Collector{ingest.GroupSize, healthCollector{node},
			metriccache.New(store.ReconciliationMetrics(), metriccache.Period),
			metriccache.New(store.AlertMetrics(log, *o.tenantLabels), metriccache.Period)},
		IngestConns:      int(store.Pool().Config().MaxConns),
		MetricsElsewhere: *o.metricsAddr != "", ReadConns: readPoolConns}
	services := append(append([]supervisor.Service{poolsService(db)}, traces...), listenerService(store))
	var watcher alerting.QueueWatcher // the queue rules' stream: none outside queued mode
	if q != nil {
		watcher = q
		defer q.Close() // when serve stops early; else the queue's service closes it
		cfg.Queue, cfg.Collectors = q, append(cfg.Collectors, q.Collector())
		services = append(services, queueCloser(q), queueStreams(q))
		log.Info("queued mode: accepted deliveries are stored in the delivery queue for tidemark worker", "queue", queue.Redact(*o.queue.url), "stream", q.Stream())
	}
	handler := web.New(cfg)
	// Bulk replay jobs write like deliveries; on shutdown the worker gives
	// its job back for another node (or the next start) to continue.
	replays := replay.Worker{Replayer: handler.Replayer(), Deliveries: store, Log: log}
	services = append(services,
		cleanupService(store, *o.retention, log), reconcileService(store, log), searchIndexService(store, log),
		refusalFlusher{handler: handler, log: log}, committersService(store),
		supervisor.Func("replay worker", replays.Run), senderService(store, log), alertService(store, watcher, log),
		backfill.Service(backfill.NewJobs(store, log), *o.sweepInterval, log))
	if *o.journalInterval > 0 {
		services = append(services, journal.Service(journal.New(store, log), *o.journalInterval))
	}
	if *o.cdcInterval > 0 {
		services = append(services, cdc.Service(cdc.New(store, log, *o.cdcInterval)))
	}
	if *o.metricsAddr != "" {
		mln, err := net.Listen("tcp", *o.metricsAddr)
		switch {
		case err != nil && (o.metricsAddrSet || !errors.Is(err, syscall.EADDRINUSE)):
			return fmt.Errorf("--metrics-addr: %w", err)
		case err != nil: // another node on this machine serves its metrics there
			fmt.Fprintf(e.stdout, "Metrics are not served: %s is in use; give this node its own with --metrics-addr\n", *o.metricsAddr)
		default:
			mux := http.NewServeMux()
			mux.Handle("GET /metrics", handler.MetricsHandler())
			services = append(services, httpService("metrics http", mux, mln))
			fmt.Fprintf(e.stdout, "Metrics are served on http://%s/metrics\n", mln.Addr())
		}
	}
	services = append(services, httpService("http", handler.Handler(), ln))
	fmt.Fprintf(e.stdout, "Tidemark is listening on http://%s\n", ln.Addr())
	return node.Run(ctx, services...)
}

// prepareStore readies the migrated database for serving: the keys of
// the stored secrets, the retention against the scopes' TTLs, the event
// log's partitions ahead and the secrets of providers that lack one.
func (e cliEnv) prepareStore(ctx context.Context, store *postgres.Store, o serveOptions, log *slog.Logger) error {
	// A node started without the key its secrets were stored with would
	// refuse every signed delivery; it does not start instead.
	if err := store.CheckSecrets(ctx); err != nil {
		return fmt.Errorf("refusing to start: %w", err)
	}
	if err := checkRetention(ctx, store, *o.retention); err != nil {
		return err
	}
	if err := keepHistory(store, *o.historyRetention); err != nil {
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
	return nil
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

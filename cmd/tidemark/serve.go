package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/web"
	"github.com/tidemark/tidemark/web/provider"
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

func (e cliEnv) serve(ctx context.Context, args []string) error {
	fs := e.flags("serve", "serve [--addr 127.0.0.1:8080] [--public-url URL] [--retention 720h] [--read-timeout 5s] [--trusted-proxies CIDR,...] [--memory-limit 48MiB]\n\n"+
		"Run the webhook receiver, the JSON API and the console. Applies migrations at start\n"+
		"and runs the cleanup job every hour. Without DATABASE_URL it starts an embedded\n"+
		"PostgreSQL under ./.tidemark with a demo tenant.")
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on")
	publicURL := fs.String("public-url", e.getenv("TIDEMARK_PUBLIC_URL"), "base URL providers call (default: built from each request)")
	retention := fs.Duration("retention", defaultRetention, retentionUsage)
	proxies := fs.String("trusted-proxies", e.getenv("TIDEMARK_TRUSTED_PROXIES"),
		"comma-separated CIDRs of reverse proxies whose X-Forwarded-For names the client (default: none; the peer is the client)")
	readTimeout := fs.Duration("read-timeout", postgres.DefaultReadTimeout,
		"longest a read statement of the console or the API may run; a longer one answers 503 asking for a narrower filter")
	memoryLimit := fs.String("memory-limit", cmp.Or(e.getenv("TIDEMARK_MEMORY_LIMIT"), defaultMemoryLimit),
		"soft memory limit of the Go runtime, such as 48MiB; 0 means none (GOMEMLIMIT, when set, wins)")
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
	log := slog.New(slog.NewTextHandler(e.stderr, nil))

	db, err := e.openDatabase(ctx, true)
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

	handler := web.New(web.Config{Services: web.ServicesOf(store), Sessions: store.SessionStore(),
		Ping: store.Pool().Ping, Logger: log, PublicURL: *publicURL, TrustedProxies: trusted,
		Collectors: []prometheus.Collector{postgres.GroupSize}, IngestConns: int(store.Pool().Config().MaxConns)})
	srv := &http.Server{
		Handler:           handler.Handler(),
		ReadHeaderTimeout: httpReadHeaderTimeout,
		ReadTimeout:       httpReadTimeout,
		WriteTimeout:      httpWriteTimeout,
		IdleTimeout:       httpIdleTimeout,
	}
	go runCleanup(ctx, store, *retention, log)
	go store.ListenForChanges(ctx) // caches endpoints; errors only when called twice
	go handler.Run(ctx)
	errc := make(chan error, 1)
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

// Demo tenant of the embedded default.
const (
	demoTenant   = "demo"
	demoProvider = "crm"
	demoEmail    = "demo@tidemark.local"
)

// announceDemo makes sure the demo tenant, its standard provider and a demo
// operator exist, then prints how to use them.
func (e cliEnv) announceDemo(ctx context.Context, store *postgres.Store, base string) error {
	ctx = domain.WithActor(ctx, cliActor(e.getenv)) // the demo is set up by whoever runs serve
	if _, err := store.Tenant(ctx, demoTenant); err != nil {
		if domain.ErrorCode(err) != domain.ENOTFOUND {
			return err
		}
		t, err := store.CreateTenant(ctx, demoTenant, "Demo workspace")
		if err != nil {
			return err
		}
		if _, err := store.ConnectProvider(ctx, t.ID, demoProvider, provider.Standard.Name(), provider.NewStandardSecret(), nil); err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, "Filling the demo workspace with a few days of sample history...")
		if err := seedDemo(ctx, store, e.stdout); err != nil {
			return fmt.Errorf("seed demo history: %w", err)
		}
	}
	password, err := demoPassword()
	if err != nil {
		return err
	}
	if err := store.CreateUser(ctx, demoEmail, password, true, "", ""); err != nil && domain.ErrorCode(err) != domain.ECONFLICT {
		return err
	}
	p, err := store.Endpoint(ctx, demoTenant, demoProvider)
	if err != nil {
		return err
	}
	if len(p.Secrets) == 0 {
		return fmt.Errorf("the demo provider has no secret that decrypts (see the log): %s provider rotate --tenant %s --name %s",
			selfCommand(), demoTenant, demoProvider)
	}
	fmt.Fprintf(e.stdout, `
Embedded demo (data in ./%s):
  console:     %s/t/%s
  login:       %s / %s
  webhook URL: %s/webhooks/%s/%s
  API token:   %s token create --tenant %s
  send a signed test event:
    %s send --url %s/webhooks/%s/%s --secret %s --contact c-1001 --revision 1 --snapshot '{"job_title":"Director"}'

`, dataDir, base, demoTenant, demoEmail, password, base, demoTenant, demoProvider,
		selfCommand(), demoTenant, selfCommand(), base, demoTenant, demoProvider, p.Secrets[0])
	return nil
}

// demoPassword returns the demo operator's password, generated on first
// start and kept beside the embedded database.
func demoPassword() (string, error) {
	path := filepath.Join(dataDir, "demo-password")
	if b, err := os.ReadFile(path); err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	raw := make([]byte, 12)
	rand.Read(raw)
	password := base64.RawURLEncoding.EncodeToString(raw)
	return password, os.WriteFile(path, []byte(password+"\n"), 0o600)
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

package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/tidemark/tidemark/cmd/tidemark/internal/cli"
	"github.com/tidemark/tidemark/internal/queue"
	"github.com/tidemark/tidemark/internal/supervisor"
	"github.com/tidemark/tidemark/postgres/leases"
)

// queueFlags are the delivery queue's flags of serve and worker.
type queueFlags struct {
	url, stream, creds, nkey, tlsCA *string
	replicas                        *int
	duplicates                      *time.Duration
}

// addQueueFlags declares --queue, its credentials and --stream, and with
// settings (serve, which creates the stream or updates its settings)
// --stream-replicas and --stream-duplicates.
func (e cliEnv) addQueueFlags(fs *flag.FlagSet, settings bool) queueFlags {
	f := queueFlags{
		url: fs.String("queue", e.getenv("TIDEMARK_QUEUE"),
			"NATS server with JetStream (nats://HOST:4222) buffering deliveries for tidemark worker (queued mode)"),
		creds:  fs.String("queue-creds", "", "NATS credentials file (user JWT and nkey seed) of the queue's connection"),
		nkey:   fs.String("queue-nkey", "", "nkey seed file of the queue's connection (a NATS user authenticated by nkey)"),
		tlsCA:  fs.String("queue-tls-ca", "", "CA certificates (PEM) to verify the NATS server's TLS certificate (tls://HOST:4222)"),
		stream: fs.String("stream", queue.DefaultStream, "JetStream stream of queued deliveries; installations sharing one NATS use different names"),
	}
	if settings {
		f.replicas = fs.Int("stream-replicas", queue.DefaultReplicas, "copies of each queued delivery on a NATS cluster (3 in production)")
		f.duplicates = fs.Duration("stream-duplicates", queue.DefaultDuplicates,
			"window within which a provider's retry of a queued delivery is stored once")
	}
	return f
}

// open connects to the queue; nil without --queue. Its messages are signed
// and encrypted under keys (TIDEMARK_ENCRYPTION_KEY's), without which it
// refuses; dead letters are kept deadMaxAge.
func (f queueFlags) open(name string, log *slog.Logger, keys [][]byte, deadMaxAge time.Duration) (*queue.Queue, error) {
	if *f.url == "" {
		return nil, nil
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("refusing to start: queued mode needs TIDEMARK_ENCRYPTION_KEY, which signs and encrypts the queued deliveries")
	}
	cfg := queue.Config{URL: *f.url, Stream: *f.stream, Name: name, Logger: log, Keys: keys, DeadMaxAge: deadMaxAge,
		Credentials: *f.creds, NKey: *f.nkey, TLSCA: *f.tlsCA}
	if f.replicas != nil {
		cfg.Replicas, cfg.Duplicates = *f.replicas, *f.duplicates
	}
	return queue.Open(cfg)
}

func (e cliEnv) worker(ctx context.Context, args []string) error {
	fs := e.flags("worker")
	qf := e.addQueueFlags(fs, false)
	logFormat := logFormatFlag(fs)
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	if *qf.url == "" {
		return fmt.Errorf("worker: --queue (or TIDEMARK_QUEUE) is required, such as nats://127.0.0.1:4222")
	}
	log, err := newLogger(*logFormat, e.stderr)
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	traces, stopTracing, err := e.startTracing(ctx, "tidemark-worker", log)
	if err != nil {
		return err
	}
	defer stopTracing() // when the worker stops early; else the node stops it before the pools
	db, err := e.openDatabase(ctx, openOptions{ingest: true})
	if err != nil {
		return err
	}
	defer db.close() // when the worker stops early; else the pools service closes it
	// A worker without the keys would fail every delivery of a provider
	// with secrets (the endpoint holds them) until it is a dead letter.
	if err := db.store.CheckSecrets(ctx); err != nil {
		return fmt.Errorf("refusing to start: %w", err)
	}
	// A worker that creates the dead-letter stream keeps dead letters the
	// default retention; serve sets its own --retention.
	q, err := qf.open("tidemark worker", log, db.keys, defaultRetention)
	if err != nil {
		return err
	}
	defer q.Close() // when the worker stops early; else the queue's service closes it
	stats := &queue.WorkerStats{}
	consume := supervisor.Func("queue consumer", func(ctx context.Context) error {
		q.Work(ctx, db.store, leases.New(db.store.Pool().Config().ConnConfig), stats)
		log.Info("worker stopped", "work", stats.String())
		return nil
	})
	fmt.Fprintf(e.stdout, "Tidemark worker is consuming stream %s on %s\n", q.Stream(), queue.Redact(*qf.url))
	services := append(append([]supervisor.Service{poolsService(db)}, traces...),
		queueCloser(q), listenerService(db.store), workReport(stats, log), committersService(db.store), consume)
	return newNode(log).Run(ctx, services...)
}

// workReport logs what the worker did every 30 s in which it did something.
func workReport(stats *queue.WorkerStats, log *slog.Logger) supervisor.Service {
	last := stats.String()
	return supervisor.Every("work report", 30*time.Second, func(context.Context) time.Duration {
		if now := stats.String(); now != last {
			log.Info("worker", "work", now)
			last = now
		}
		return 30 * time.Second
	})
}

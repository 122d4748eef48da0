package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/queue"
)

// queueFlags are the delivery queue's flags of serve and worker.
type queueFlags struct {
	url, stream *string
	replicas    *int
	duplicates  *time.Duration
}

// addQueueFlags declares --queue and --stream, and with settings (serve,
// which creates the stream or updates its settings) --stream-replicas and
// --stream-duplicates.
func (e cliEnv) addQueueFlags(fs *flag.FlagSet, settings bool) queueFlags {
	f := queueFlags{
		url: fs.String("queue", e.getenv("TIDEMARK_QUEUE"),
			"NATS server with JetStream (nats://HOST:4222) buffering deliveries for tidemark worker (queued mode)"),
		stream: fs.String("stream", queue.DefaultStream, "JetStream stream of queued deliveries; installations sharing one NATS use different names"),
	}
	if settings {
		f.replicas = fs.Int("stream-replicas", queue.DefaultReplicas, "copies of each queued delivery on a NATS cluster (3 in production)")
		f.duplicates = fs.Duration("stream-duplicates", queue.DefaultDuplicates,
			"window within which a provider's retry of a queued delivery is stored once")
	}
	return f
}

// open connects to the queue; nil without --queue.
func (f queueFlags) open(name string, log *slog.Logger) (*queue.Queue, error) {
	if *f.url == "" {
		return nil, nil
	}
	cfg := queue.Config{URL: *f.url, Stream: *f.stream, Name: name, Logger: log}
	if f.replicas != nil {
		cfg.Replicas, cfg.Duplicates = *f.replicas, *f.duplicates
	}
	return queue.Open(cfg)
}

// queueMode is what serve needs of the queue: nil fields in synchronous
// mode.
type queueMode struct {
	queue      domain.DeliveryQueue
	collectors []prometheus.Collector
}

// startQueue opens the queue of serve --queue and keeps its streams
// created, with serve's settings, until ctx ends.
func (f queueFlags) startQueue(ctx context.Context, log *slog.Logger) (queueMode, func(), error) {
	q, err := f.open("tidemark serve", log)
	if err != nil || q == nil {
		return queueMode{}, func() {}, err
	}
	go q.KeepEnsured(ctx, true)
	log.Info("queued mode: accepted deliveries are stored in the delivery queue for tidemark worker", "queue", *f.url, "stream", q.Stream())
	return queueMode{queue: q, collectors: []prometheus.Collector{q.Collector()}}, q.Close, nil
}

func (e cliEnv) worker(ctx context.Context, args []string) error {
	fs := e.flags("worker")
	qf := e.addQueueFlags(fs, false)
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	if *qf.url == "" {
		return fmt.Errorf("worker: --queue (or TIDEMARK_QUEUE) is required, such as nats://127.0.0.1:4222")
	}
	log := slog.New(slog.NewTextHandler(e.stderr, nil))
	db, err := e.openDatabase(ctx, openOptions{ingest: true})
	if err != nil {
		return err
	}
	defer db.close()
	// A worker without the keys would fail every delivery of a provider
	// with secrets (the endpoint holds them) until it is a dead letter.
	if err := db.store.CheckSecrets(ctx); err != nil {
		return fmt.Errorf("refusing to start: %w", err)
	}
	q, err := qf.open("tidemark worker", log)
	if err != nil {
		return err
	}
	defer q.Close()
	go db.store.ListenForChanges(ctx) // caches endpoints
	stats := &queue.WorkerStats{}
	go reportWork(ctx, stats, log)
	fmt.Fprintf(e.stdout, "Tidemark worker is consuming stream %s on %s\n", q.Stream(), *qf.url)
	q.Work(ctx, db.store, stats)
	log.Info("worker stopped", "work", stats.String())
	return nil
}

// reportWork logs what the worker did every 30 s in which it did something.
func reportWork(ctx context.Context, stats *queue.WorkerStats, log *slog.Logger) {
	last := stats.String()
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(30 * time.Second):
		}
		if now := stats.String(); now != last {
			log.Info("worker", "work", now)
			last = now
		}
	}
}

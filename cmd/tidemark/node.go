package main

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/tidemark/tidemark/domain/alerting"
	alerts "github.com/tidemark/tidemark/internal/alerting"
	"github.com/tidemark/tidemark/internal/backfill"
	"github.com/tidemark/tidemark/internal/outbound"
	"github.com/tidemark/tidemark/internal/queue"
	"github.com/tidemark/tidemark/internal/supervisor"
	"github.com/tidemark/tidemark/internal/tracing"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/web"
)

// The services of a node (serve or worker), each run by one supervisor:
// started in the order a node lists them, stopped in reverse. A node lists
// the database pools first, then what the rest reads, its background work,
// the group committers, the workers that write through the store, and what
// accepts deliveries last (internal/supervisor), so that on SIGTERM it
// stops accepting, stops its workers, writes what it accepted, stops its
// background work and only then closes the pools.

// shutdownTime bounds a node's whole shutdown, under the 30 s that
// container platforms wait before they kill.
const shutdownTime = 25 * time.Second

// flushTime is what the refusal flusher gets for its last write, even when
// the requests before it used up the shutdown time.
const flushTime = 5 * time.Second

// newNode is the supervisor of a node's services; run them with its Run,
// which returns when ctx ends (SIGTERM or SIGINT) or one fails.
func newNode(log *slog.Logger) *supervisor.Supervisor { return supervisor.New(log, shutdownTime) }

// poolsService closes the database's pools (and stops the embedded
// cluster) when the node stops: the last service to stop.
func poolsService(db *database) supervisor.Service {
	return supervisor.OnStop("database pools", func(context.Context) error { db.close(); return nil })
}

// committersService waits, on shutdown, for the group committers to write
// the deliveries they hold.
func committersService(store *postgres.Store) supervisor.Service {
	return supervisor.OnStop("group committers", store.Drain)
}

// listenerService keeps the endpoint cache current.
func listenerService(store *postgres.Store) supervisor.Service {
	return supervisor.Func("endpoint listener", store.ListenForChanges)
}

// queueCloser closes the queue's connection once nothing publishes or
// consumes.
func queueCloser(q *queue.Queue) supervisor.Service {
	return supervisor.OnStop("delivery queue", func(context.Context) error { q.Close(); return nil })
}

// queueStreams keeps the queue's streams created with serve's settings.
func queueStreams(q *queue.Queue) supervisor.Service {
	return supervisor.Func("queue streams", func(ctx context.Context) error { q.KeepEnsured(ctx, true); return nil })
}

// cleanupService runs a cleanup pass at start and then every cleanupEvery,
// or cleanupRetry after a pass that deferred steps. Several nodes may run
// it at once: one runs each pass, the others skip it.
func cleanupService(store *postgres.Store, retention time.Duration, log *slog.Logger) supervisor.Service {
	return supervisor.Every("cleanup", 0, func(ctx context.Context) time.Duration {
		ctx, span := tracing.StartRoot(ctx, "cleanup")
		defer span.End()
		report, err := store.Cleanup(ctx, time.Now(), retention)
		if span.IsRecording() {
			span.SetAttributes(attribute.Bool("tidemark.cleanup.skipped", report.Skipped),
				attribute.Int64("tidemark.cleanup.expired_keys", report.ExpiredKeys),
				attribute.Int("tidemark.cleanup.dropped_partitions", len(report.DroppedPartitions)),
				attribute.Int("tidemark.cleanup.deferred", len(report.Deferred)))
			if err != nil {
				tracing.Fail(span, "cleanup failed")
			}
		}
		switch {
		case ctx.Err() != nil:
		case err != nil:
			log.Error("cleanup failed", "err", err, "report", report.String())
		case report.Skipped:
			log.Info("cleanup skipped: another process is running maintenance")
		case len(report.Deferred) > 0:
			log.Warn("cleanup deferred steps to the next pass", "report", report.String())
			return cleanupRetry
		default:
			log.Info("cleanup", "report", report.String())
		}
		return cleanupEvery
	})
}

// searchIndexService keeps the records directory's search index current,
// off the ingest path. Several nodes may run it: each run waits for the one
// in progress and then finds little left to do.
func searchIndexService(store *postgres.Store, log *slog.Logger) supervisor.Service {
	return supervisor.Every("search indexer", 0, func(ctx context.Context) time.Duration {
		began := time.Now()
		n, err := store.IndexSearch(ctx)
		if n > 0 || err != nil {
			// A span for the passes that did something: one every 2 s
			// that found nothing to do would drown the rest.
			_, span := tracing.StartRoot(ctx, "search index", trace.WithTimestamp(began))
			if span.IsRecording() {
				span.SetAttributes(attribute.Int("tidemark.search.indexed", n))
				if err != nil {
					tracing.Fail(span, "search index failed")
				}
			}
			span.End()
		}
		if err != nil && ctx.Err() == nil {
			log.Error("search index", "err", err)
		}
		return postgres.SearchIndexEvery
	})
}

// senderService pushes the changes of the destinations this node leases;
// stopped, it releases the leases for another node to take at once.
func senderService(store *postgres.Store, log *slog.Logger) supervisor.Service {
	return supervisor.Func("destination sender", outbound.New(store, outbound.Options{Log: log}).Run)
}

// alertService evaluates the alert rules every alerting.EvaluateEvery.
// Every serve node runs it; the evaluation holds a session advisory lock,
// so one node at a time evaluates and the others' turns do nothing. queue
// is queued mode's stream, for the queue rules; nil outside queued mode.
func alertService(store *postgres.Store, queue alerting.QueueWatcher, log *slog.Logger) supervisor.Service {
	return supervisor.Func("alert evaluator", alerts.Evaluator{Store: store, Queue: queue, OnFired: backfill.SweepWhenSilent(store, log), Log: log}.Run)
}

// refusalFlusher writes refused deliveries every few seconds, and once
// more when it stops, after the HTTP server: nothing counted is lost.
type refusalFlusher struct {
	handler *web.Server
	log     *slog.Logger
}

func (f refusalFlusher) Name() string { return "refusal flusher" }

func (f refusalFlusher) Run(ctx context.Context) error {
	f.handler.RunRefusalFlusher(ctx)
	return nil
}

func (f refusalFlusher) Stop(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTime)
	defer cancel()
	if err := f.handler.FlushRefusals(ctx); err != nil {
		f.log.Error("could not write refused deliveries", "err", err)
	}
	return nil
}

// httpService serves h on ln with the HTTP server's timeouts.
func httpService(name string, h http.Handler, ln net.Listener) supervisor.Service {
	return supervisor.HTTP(name, newHTTPServer(h), ln)
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

// serviceUpDesc is each service's health on /metrics: 1 while it runs.
var serviceUpDesc = prometheus.NewDesc("tidemark_service_up",
	"1 while the node's service runs; 0 while it starts, stops or after it failed.", []string{"service"}, nil)

// healthCollector exports the supervisor's health on /metrics, so that a
// background service that failed or hangs in its stop is seen.
type healthCollector struct{ sup *supervisor.Supervisor }

func (c healthCollector) Describe(ch chan<- *prometheus.Desc) { ch <- serviceUpDesc }

func (c healthCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.sup.Health() {
		up := 0.0
		if st.State == supervisor.Running {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(serviceUpDesc, prometheus.GaugeValue, up, st.Name)
	}
}

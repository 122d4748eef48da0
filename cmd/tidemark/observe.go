package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/tidemark/tidemark/internal/reqlog"
	"github.com/tidemark/tidemark/internal/supervisor"
	"github.com/tidemark/tidemark/internal/tracing"
)

// logFormatFlag declares --log-format of serve and worker.
func logFormatFlag(fs *flag.FlagSet) *string {
	return fs.String("log-format", "text",
		"format of the log on standard error: text (key=value lines) or json (one JSON object a line); "+
			"the lines of a request carry request_id, and where known tenant, delivery_id and trace_id")
}

// newLogger is a node's logger on w in format (text or json); the lines
// logged for a request carry its values (reqlog).
func newLogger(format string, w io.Writer) (*slog.Logger, error) {
	switch format {
	case "text":
		return slog.New(reqlog.NewHandler(slog.NewTextHandler(w, nil))), nil
	case "json":
		return slog.New(reqlog.NewHandler(slog.NewJSONHandler(w, nil))), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, got %q", format)
}

// startTracing turns tracing on when the OTEL_* environment asks for it
// (internal/tracing). It returns the services to list after the database
// pools: with tracing on, one that flushes the spans when the node stops,
// after every other service but the pools; and stop, which does the same
// when the node stops before it runs. Off, there is no service and stop
// does nothing.
func (e cliEnv) startTracing(ctx context.Context, service string, log *slog.Logger) (svc []supervisor.Service, stop func(), err error) {
	shutdown, on, err := tracing.Setup(ctx, tracing.Config{Getenv: e.getenv, Console: e.stdout, Service: service})
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: %w", err)
	}
	if !on {
		return nil, func() {}, nil
	}
	log.Info("tracing: exporting spans as the OTEL_* environment says")
	var once sync.Once
	flush := func(ctx context.Context) error {
		once.Do(func() {
			if err := shutdown(ctx); err != nil {
				log.Warn("tracing: could not export the last spans", "err", err)
			}
		})
		return nil
	}
	stop = func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTime)
		defer cancel()
		flush(ctx)
	}
	return []supervisor.Service{supervisor.OnStop("tracing", flush)}, stop, nil
}

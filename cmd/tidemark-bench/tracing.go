package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/tidemark/tidemark/cmd/tidemark-bench/internal/table"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/internal/tracing/otlptest"
)

// ingest --trace: the overhead of tracing. A second server on the same
// database runs with OTEL_EXPORTER_OTLP_ENDPOINT pointing at a local OTLP
// sink in this process (it reads every export and throws it away, as a
// collector forwarding it would cost the server the same). Each row is then
// measured off, on, on, off, so that the database's growth and the
// machine's drift weigh on both alike, and the two runs of each are pooled.

// tracedServer is the server with tracing on and its sink.
type tracedServer struct {
	srv  *serverProcess
	sink *otlptest.Receiver
}

// startTraced starts the traced server on db.
func startTraced(ctx context.Context, db receiverDatabase, log io.Writer) (*tracedServer, error) {
	sink := otlptest.Discard()
	srv, err := startServerEnv(ctx, db.url, db.key, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + sink.URL()}, log)
	if err != nil {
		sink.Close()
		return nil, err
	}
	return &tracedServer{srv: srv, sink: sink}, nil
}

func (t *tracedServer) stop() {
	t.srv.stop() // flushes its last spans to the sink
	t.sink.Close()
}

// tracedRow is a row's measurement with tracing on, and the spans the sink
// received during it.
type tracedRow struct {
	on    measurement
	spans int
}

// measureTraced measures a row off, on, on, off and returns the pooled
// measurement with tracing off, carrying the one with tracing on.
func (e cliEnv) measureTraced(ctx context.Context, cfg benchConfig, dbs *scratchDatabases, off *serverProcess, on *tracedServer,
	kind provider.Kind, src loadSource, senders int) (measurement, error) {
	var offs, ons []measurement
	spans := 0
	for _, traced := range []bool{false, true, true, false} {
		srv := off
		if traced {
			srv = on.srv
			fmt.Fprintf(e.stderr, "tracing on (OTLP/HTTP to the local sink %s):\n", on.sink.URL())
		}
		_, before := on.sink.Counts()
		m, err := e.measure(ctx, cfg, dbs, srv, kind, src, senders)
		if err != nil {
			return m, err
		}
		if traced {
			_, after := on.sink.Counts()
			spans += after - before
			ons = append(ons, m)
		} else {
			offs = append(offs, m)
		}
	}
	m := pool(offs)
	m.traced = &tracedRow{on: pool(ons), spans: spans}
	return m, nil
}

// pool is the measurements of one row as one: their loads together.
func pool(ms []measurement) measurement {
	m := ms[0]
	for _, o := range ms[1:] {
		m.load = poolLoads(m.load, o.load)
		m.groupSize = (m.groupSize + o.groupSize) / 2
		m.rejected += o.rejected
		m.busy += o.busy
		m.rss = max(m.rss, o.rss)
	}
	return m
}

func poolLoads(a, b loadResult) loadResult {
	r := loadResult{elapsed: a.elapsed + b.elapsed, ok: a.ok + b.ok, transport: a.transport + b.transport,
		firstError: cmp.Or(a.firstError, b.firstError), statuses: map[int]int{}}
	for _, s := range []map[int]int{a.statuses, b.statuses} {
		for k, v := range s {
			r.statuses[k] += v
		}
	}
	r.latencies = slices.Concat(a.latencies, b.latencies)
	slices.Sort(r.latencies)
	return r
}

// printTracing writes the overhead table of a run with --trace.
func printTracing(w io.Writer, cfg benchConfig, res *sweepResult) {
	rows := [][]string{{"kind", "senders", "off: deliveries/s", "on: deliveries/s", "on ÷ off", "overhead",
		"p50 off", "p50 on", "p99 off", "p99 on", "spans/delivery"}}
	for _, m := range res.rows {
		t := m.traced
		if t == nil {
			continue
		}
		off, on := m.load.perSecond(), t.on.load.perSecond()
		ratio, overhead, perDelivery := "-", "-", "-"
		if off > 0 {
			ratio = fmt.Sprintf("%.3f", on/off)
			overhead = fmt.Sprintf("%.1f%%", 100*(1-on/off))
		}
		if t.on.load.ok > 0 {
			perDelivery = fmt.Sprintf("%.1f", float64(t.spans)/float64(t.on.load.ok))
		}
		rows = append(rows, []string{m.kind, strconv.Itoa(m.senders), table.Thousands(int64(off + 0.5)),
			table.Thousands(int64(on + 0.5)), ratio, overhead,
			table.Millis(percentile(m.load.latencies, 0.50)), table.Millis(percentile(t.on.load.latencies, 0.50)),
			table.Millis(percentile(m.load.latencies, 0.99)), table.Millis(percentile(t.on.load.latencies, 0.99)), perDelivery})
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "tracing: the same rows on a second server with OTEL_EXPORTER_OTLP_ENDPOINT set (every trace sampled,")
	fmt.Fprintf(w, "  exported over OTLP/HTTP to a local sink that reads and drops them), measured off, on, on, off, %s each\n", cfg.duration)
	table.Print(w, rows)
	fmt.Fprintln(w, "overhead = 1 - on ÷ off; spans/delivery: spans the sink received while tracing was on, per delivery answered")
}

// tracingFailed counts the deliveries that failed while traced: a run
// with any fails, as one without tracing does.
func tracingFailed(rows []measurement) int {
	n := 0
	for _, m := range rows {
		if m.traced != nil {
			n += m.traced.on.load.failed()
		}
	}
	return n
}

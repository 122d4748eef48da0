package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark/cmd/tidemark-bench/internal/procmem"
	"github.com/tidemark/tidemark/cmd/tidemark-bench/internal/scratch"
	"github.com/tidemark/tidemark/cmd/tidemark-bench/internal/table"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/internal/tracing/otlptest"
)

// ingest --trace: a second server on the same database exports its spans
// to an OTLP sink in this process that reads and drops them. Each row runs
// off, on, on, off (the database's growth and the machine's drift weigh on
// both alike), and the two runs of each are pooled.
type tracedServer struct {
	srv  *serverProcess
	sink *otlptest.Receiver
	log  io.Writer
	keep bool // its log, which stop removes otherwise
}

func startTraced(ctx context.Context, db receiverDatabase, log io.Writer) (*tracedServer, error) {
	sink := otlptest.Discard()
	srv, err := startServerEnv(ctx, db.url, db.key, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + sink.URL()}, log)
	if err != nil {
		sink.Close()
		return nil, err
	}
	return &tracedServer{srv: srv, sink: sink, log: log}, nil
}

func (t *tracedServer) stop() {
	t.srv.stop() // flushes its last spans to the sink
	exports, _, bytes := t.sink.Counts()
	fmt.Fprintf(t.log, "the tracing sink received %d exports, %s; traced server's log: %s\n", exports, table.MiB(bytes), t.srv.logPath)
	t.sink.Close()
	if !t.keep {
		os.Remove(t.srv.logPath)
	}
}

// tracedRow is a row with tracing on, and the OTLP bytes exported meanwhile.
type tracedRow struct {
	on    measurement
	bytes int64
}

// measureTraced measures a row off, on, on, off and returns the pooled
// measurement with tracing off, carrying the one with tracing on; without
// a traced server, it measures the row once.
func (e cliEnv) measureTraced(ctx context.Context, cfg benchConfig, dbs *scratch.Databases, off *serverProcess, on *tracedServer,
	kind provider.Kind, loads senderLoads, senders int) (measurement, error) {
	if on == nil {
		return e.measure(ctx, cfg, dbs, off, kind, loads, senders)
	}
	var offs, ons []measurement
	var bytes int64
	tracedLoads := make(senderLoads, len(loads))
	for i, src := range loads {
		tracedLoads[i] = on.source(off, src)
	}
	for _, traced := range []bool{false, true, true, false} {
		srv, load := off, loads
		if traced {
			srv, load = on.srv, tracedLoads
		}
		// Warmed up first, so that the CPU time and the bytes exported
		// (counted until a second after the load, when the last batches
		// are in) are of the measured deliveries.
		e.warmUp(ctx, cfg.warmup, load, senders)
		_, _, before := on.sink.Counts()
		measured := cfg
		measured.warmup = 0
		cpu := procmem.CPU(srv.cmd.Process.Pid)
		m, err := e.measure(ctx, measured, dbs, srv, kind, load, senders)
		if err != nil {
			return m, err
		}
		m.cpu = procmem.CPU(srv.cmd.Process.Pid) - cpu
		if traced {
			time.Sleep(time.Second)
			_, _, after := on.sink.Counts()
			bytes += after - before
			ons = append(ons, m)
		} else {
			offs = append(offs, m)
		}
	}
	m := pool(offs)
	m.traced = &tracedRow{on: pool(ons), bytes: bytes}
	return m, nil
}

// source is src's deliveries for the traced server: standard ones change
// address (their signature does not cover the URL); HubSpot's, signed with
// the URL, come from a source of their own numbering events far from src's.
func (t *tracedServer) source(off *serverProcess, src loadSource) loadSource {
	switch l := src.(type) {
	case *hubspotLoad:
		h := &hubspotLoad{target: t.srv.base + strings.TrimPrefix(l.target, off.base), secret: l.secret,
			contacts: l.contacts, batch: l.batch}
		h.sent.Store(1 << 40)
		return h
	default:
		return readdressed{src: src, host: strings.TrimPrefix(t.srv.base, "http://")}
	}
}

// readdressed sends src's deliveries to host.
type readdressed struct {
	src  loadSource
	host string
}

func (r readdressed) request(ctx context.Context) (*http.Request, error) {
	req, err := r.src.request(ctx)
	if err == nil {
		req.URL.Host, req.Host = r.host, r.host
	}
	return req, err
}

// pool is the measurements of one row as one: their loads together.
func pool(ms []measurement) measurement {
	m := ms[0]
	m.overloads = maps.Clone(m.overloads)
	for _, o := range ms[1:] {
		m.load = poolLoads(m.load, o.load)
		m.groupSize = (m.groupSize + o.groupSize) / 2
		m.rejected += o.rejected
		for r, n := range o.overloads {
			m.overloads[r] += n
		}
		m.rss = max(m.rss, o.rss)
		m.cpu += o.cpu
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
		"p50 off", "p50 on", "p99 off", "p99 on", "server CPU/delivery off", "on", "CPU overhead", "exported/delivery"}}
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
			perDelivery = fmt.Sprintf("%.0f B", float64(t.bytes)/float64(t.on.load.ok))
		}
		cpuOff, cpuOn, cpuOverhead := m.cpu/time.Duration(max(m.load.ok, 1)), t.on.cpu/time.Duration(max(t.on.load.ok, 1)), "-"
		if cpuOff > 0 {
			cpuOverhead = fmt.Sprintf("%.1f%%", 100*(float64(cpuOn)/float64(cpuOff)-1))
		}
		rows = append(rows, []string{m.name(), strconv.Itoa(m.senders), table.Thousands(int64(off + 0.5)),
			table.Thousands(int64(on + 0.5)), ratio, overhead,
			table.Millis(percentile(m.load.latencies, 0.50)), table.Millis(percentile(t.on.load.latencies, 0.50)),
			table.Millis(percentile(m.load.latencies, 0.99)), table.Millis(percentile(t.on.load.latencies, 0.99)),
			fmt.Sprintf("%d µs", cpuOff.Microseconds()), fmt.Sprintf("%d µs", cpuOn.Microseconds()), cpuOverhead, perDelivery})
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "tracing: the same rows on a second server with OTEL_EXPORTER_OTLP_ENDPOINT set (every trace sampled,")
	fmt.Fprintf(w, "  exported over OTLP/HTTP to a local sink that reads and drops them), measured off, on, on, off, %s each\n", cfg.duration)
	table.Print(w, rows)
	fmt.Fprintln(w, "overhead = 1 - on ÷ off; server CPU/delivery: the tidemark process's user+system time (/proc) over the\n"+
		"  deliveries answered, PostgreSQL's not included; exported/delivery: OTLP bytes the sink received per delivery answered")
}

package main

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/tidemark/tidemark/cmd/tidemark-bench/internal/scratch"
	"github.com/tidemark/tidemark/cmd/tidemark-bench/internal/table"
	"github.com/tidemark/tidemark/internal/citustest"
)

// citusSweep runs the rows of cfg again against a receiver whose database
// is distributed over a local Citus cluster (a coordinator and two workers
// on this machine, started for the run and removed after it). The floor is
// PostgreSQL's alone, so it is not run again.
func (e cliEnv) citusSweep(ctx context.Context, cfg benchConfig) (*sweepResult, error) {
	fmt.Fprintln(e.stderr, "starting a Citus cluster (scripts/citus-build installs Citus once per machine)")
	cluster, err := citustest.New(ctx, e.stderr)
	if err != nil {
		return nil, fmt.Errorf("ingest --citus: %w", err)
	}
	defer cluster.Stop()
	dbs, err := scratch.OnCluster(ctx, cluster, false, e.stderr)
	if err != nil {
		return nil, err
	}
	defer dbs.Close(ctx)
	cfg.pgbench, cfg.trace = false, false
	return e.sweep(ctx, cfg, dbs, scratchName())
}

// printCitus writes the Citus run's table, then each row's events/s on
// Citus over the same row's on PostgreSQL.
func printCitus(w io.Writer, cfg benchConfig, plain, distributed *sweepResult) {
	fmt.Fprintln(w, "\nOn Citus: the same rows against a receiver whose database is distributed by tenant (32 shards a table)\n"+
		"over a coordinator and two workers, all on this machine:")
	cfg.pgbench, cfg.trace = false, false
	printSweep(w, cfg, distributed)
	fmt.Fprintln(w)
	rows := [][]string{{"kind", "senders", "PostgreSQL events/s", "Citus events/s", "Citus ÷ PostgreSQL",
		"Citus ÷ floor", "p99 PostgreSQL", "p99 Citus", "floor p99"}}
	for i, c := range distributed.rows {
		p := plain.rows[i]
		toFloor, floorP99 := "n/a", "n/a"
		if f := p.floor; f != nil && !f.missing && f.tps > 0 {
			toFloor, floorP99 = fmt.Sprintf("%.2f", c.eventsPerSecond()/f.tps), table.Millis(f.p99)
		}
		rows = append(rows, []string{c.name(), strconv.Itoa(c.senders), table.Thousands(int64(p.eventsPerSecond() + 0.5)),
			table.Thousands(int64(c.eventsPerSecond() + 0.5)), fmt.Sprintf("%.2f", c.eventsPerSecond()/p.eventsPerSecond()),
			toFloor, table.Millis(percentile(p.load.latencies, 0.99)), table.Millis(percentile(c.load.latencies, 0.99)), floorP99})
	}
	table.Print(w, rows)
	fmt.Fprintln(w, "Citus ÷ floor: the Citus row's events/s over the PostgreSQL floor of the same run, at the clients of its row")
}

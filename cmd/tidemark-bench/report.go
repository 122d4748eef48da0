package main

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/tidemark/tidemark/cmd/tidemark-bench/internal/table"
	"github.com/tidemark/tidemark/domain"
)

// printSweep writes the table of a run and how it was obtained.
func printSweep(w io.Writer, cfg benchConfig, res *sweepResult) {
	rows := [][]string{{"kind", "batch", "senders", "deliveries/s", "events/s", "p50", "p99", "failures",
		"group size", "RSS after", "floor tx/s (clients)", "floor p99", "ratio"}}
	for _, m := range res.rows {
		l := m.load
		group := "n/a"
		if m.groupKnown {
			group = fmt.Sprintf("%.1f", m.groupSize)
		}
		floor, floorP99, ratio := floorCells(m)
		rows = append(rows, []string{m.name(), strconv.Itoa(m.batch), strconv.Itoa(m.senders),
			table.Thousands(int64(l.perSecond() + 0.5)), table.Thousands(int64(m.eventsPerSecond() + 0.5)),
			table.Millis(percentile(l.latencies, 0.50)), table.Millis(percentile(l.latencies, 0.99)), failures(l, m.overloads),
			group, table.MiB(m.rss), floor, floorP99, ratio})
	}
	table.Print(w, rows)
	fmt.Fprintln(w)

	if len(res.floors) > 0 && !res.floors[0].missing {
		runs := make([]string, len(res.floors))
		for i, f := range res.floors {
			runs[i] = fmt.Sprintf("%s: %s tx/s (avg %.1f ms, p50 %s, p99 %s)", clients(f.clients), table.Thousands(int64(f.tps+0.5)),
				f.latency, table.Millis(f.p50), table.Millis(f.p99))
		}
		fmt.Fprintf(w, "floor: pgbench running the seed's two statements (claim + guarded upsert: one event per transaction)\n"+
			"  in this run, at min(senders, %d) clients (--floor-max-clients): %s\n", cfg.floorClients, strings.Join(runs, "; "))
		fmt.Fprintln(w, "ratio = events/s ÷ floor transactions/s at the clients of its row; floor p99: of its transactions, from pgbench -l")
	}
	fmt.Fprintf(w, "each row: %s of load after a %s warm-up over %s contacts; p50 and p99 per delivery;\n"+
		"  failures by HTTP status, a 503's reasons as the server counted them (%s)\n",
		cfg.duration, cfg.warmup, table.Thousands(int64(cfg.contacts)), overloadMetric)
	fmt.Fprintf(w, "group size: mean deliveries per committed group (%s on /metrics), n/a when the server has none\n", groupSizeMetric)
	printTenants(w, res.rows)
	fmt.Fprintf(w, "server RSS after all the load: %s (peak %s)\n", table.MiB(res.mem.Current), table.MiB(res.mem.Peak))
	if n := len(res.floors); n > 0 && !res.floors[n-1].missing {
		fmt.Fprintf(w, "pgbench (at %s): %s\n", clients(res.floors[n-1].clients), shellJoin(res.floors[n-1].command))
	}
	if cfg.trace {
		printTracing(w, cfg, res)
	}
}

// printTenants says how the rows over several tenants spread their load;
// nothing when every row is of the bench tenant alone.
func printTenants(w io.Writer, rows []measurement) {
	for _, m := range rows {
		if m.tenants > 1 {
			fmt.Fprintln(w, "\"N tenants\": each delivery goes to one of N tenants drawn at random, as the floor's transactions do, "+
				"each tenant with its own providers and secrets and the same contact ids")
			return
		}
	}
}

func clients(n int) string {
	if n == 1 {
		return "1 client"
	}
	return strconv.Itoa(n) + " clients"
}

// floorCells are a row's floor, floor p99 and ratio columns.
func floorCells(m measurement) (floor, p99, ratio string) {
	switch f := m.floor; {
	case f == nil:
		return "not run", "-", "-"
	case f.missing:
		return "no pgbench", "-", "-"
	case f.tps <= 0:
		return "0", "-", "-"
	default:
		return fmt.Sprintf("%s (%d)", table.Thousands(int64(f.tps+0.5)), f.clients), table.Millis(f.p99),
			fmt.Sprintf("%.2f", m.eventsPerSecond()/f.tps)
	}
}

// failures lists the failed deliveries by status, 503s first since the
// targets name them (with the reasons the server counted for them), then
// deliveries that got no answer.
func failures(l loadResult, overloads map[string]float64) string {
	if l.failed() == 0 {
		return "none"
	}
	statuses := slices.Collect(maps.Keys(l.statuses))
	slices.SortFunc(statuses, func(a, b int) int {
		if (a == http.StatusServiceUnavailable) != (b == http.StatusServiceUnavailable) {
			if a == http.StatusServiceUnavailable {
				return -1
			}
			return 1
		}
		return a - b
	})
	var parts []string
	for _, s := range statuses {
		parts = append(parts, fmt.Sprintf("%d=%d", s, l.statuses[s]))
		for _, r := range domain.OverloadReasons {
			if n := overloads[r]; s == http.StatusServiceUnavailable && n > 0 {
				parts = append(parts, fmt.Sprintf("(%s %.0f)", r, n))
			}
		}
	}
	if l.transport > 0 {
		parts = append(parts, fmt.Sprintf("no-answer=%d", l.transport))
	}
	return strings.Join(parts, " ")
}

// shellJoin quotes arguments so the printed command can be pasted into a
// shell (URLs carry & and ?).
func shellJoin(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,@+", r))
		}) < 0 {
			quoted[i] = a
		} else {
			quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(quoted, " ")
}

// printBurstResults writes the table, the lock overhead per burst size and
// the errors.
func printBurstResults(w io.Writer, results []burstResult) {
	const row = "%-18s%-13s%-14s%-16s%-13s%-11s%-11s%-10s%-7s%s\n"
	fmt.Fprintf(w, row, "strategy", "concurrency", "dup people %", "dup accounts %", "dup tasks %", "p50", "p99", "total", "503s", "errors")
	for _, r := range results {
		fmt.Fprintf(w, row, r.strategy, strconv.Itoa(r.concurrency),
			fmt.Sprintf("%.1f", dupPercent(r.people, r.distinctPeople)),
			fmt.Sprintf("%.1f", dupPercent(r.accounts, r.distinctAccounts)),
			fmt.Sprintf("%.1f", dupPercent(r.tasks, r.taskPeople)),
			table.Millis(percentile(r.latencies, 0.50)), table.Millis(percentile(r.latencies, 0.99)),
			table.Millis(r.total), strconv.Itoa(r.unavailable), strconv.Itoa(r.errors))
	}
	fmt.Fprintln(w)
	for _, r := range results {
		fmt.Fprintf(w, "%-18s c=%-5d %d signups (%d answered 200): %d people rows (%d emails, %d expected), %d accounts (%d domains, %d expected), %d tasks\n",
			r.strategy, r.concurrency, r.concurrency, r.ok, r.people, r.distinctPeople, r.expectPeople, r.accounts, r.distinctAccounts, r.expectAccounts, r.tasks)
	}
	// Lock overhead: guarded on repeated identities against distinct ones.
	byKey := map[string]burstResult{}
	for _, r := range results {
		byKey[r.strategy+"/"+strconv.Itoa(r.concurrency)] = r
	}
	printed := false
	for _, r := range results {
		if r.strategy != burstGuarded {
			continue
		}
		d, ok := byKey[burstDistinct+"/"+strconv.Itoa(r.concurrency)]
		if !ok {
			continue
		}
		if !printed {
			fmt.Fprintln(w)
			printed = true
		}
		same, distinct := percentile(r.latencies, 0.99), percentile(d.latencies, 0.99)
		fmt.Fprintf(w, "lock overhead c=%-5d p99 same identity %s - distinct %s = %s\n",
			r.concurrency, table.Millis(same), table.Millis(distinct), table.Millis(same-distinct))
	}
	for _, r := range results {
		if len(r.errorKinds) == 0 {
			continue
		}
		fmt.Fprintf(w, "\nerrors of %s c=%d:\n", r.strategy, r.concurrency)
		kinds := make([]string, 0, len(r.errorKinds))
		for k := range r.errorKinds {
			kinds = append(kinds, k)
		}
		slices.Sort(kinds)
		for _, k := range kinds {
			fmt.Fprintf(w, "  %5d  %s\n", r.errorKinds[k], k)
		}
	}
}

// dupPercent is the share of rows beyond one per identity.
func dupPercent(rows, distinct int) float64 {
	if rows == 0 {
		return 0
	}
	return 100 * float64(rows-distinct) / float64(rows)
}

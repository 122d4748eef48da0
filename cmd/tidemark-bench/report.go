package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// printBenchResults writes the result table and how it was obtained.
func printBenchResults(w io.Writer, cfg benchConfig, recv receiverResult, floor *floorResult) {
	l := recv.load
	const row = "%-20s%-11s%-9s%-9s%s\n"
	fmt.Fprintf(w, row, "", "events/s", "p50", "p99", "server RSS peak")
	fmt.Fprintf(w, row, "tidemark receiver", thousands(int64(l.perSecond()+0.5)),
		millis(percentile(l.latencies, 0.50)), millis(percentile(l.latencies, 0.99)), mib(recv.mem.peak))
	switch {
	case floor == nil:
	case floor.missing:
		fmt.Fprintf(w, "%-20s%s\n", "pgbench floor", "not run: pgbench not found")
	default:
		fmt.Fprintf(w, "%-20s%-11s(avg %.1f ms)\n", "pgbench floor", thousands(int64(floor.tps+0.5)), floor.latency)
		if floor.tps > 0 {
			fmt.Fprintf(w, "%-20s%.2f of the floor\n", "ratio", l.perSecond()/floor.tps)
		}
	}
	fmt.Fprintf(w, "\ntidemark: %s deliveries answered 200 in %s (after a %s warm-up) by %d senders over %s contacts; %d failed",
		thousands(int64(l.ok)), l.elapsed.Round(time.Millisecond), cfg.warmup, cfg.senders, thousands(int64(cfg.contacts)), l.failed())
	if len(l.statuses) > 0 || l.transport > 0 {
		fmt.Fprintf(w, " (statuses %v, no answer %d)", l.statuses, l.transport)
	}
	fmt.Fprintf(w, "; server RSS at end %s\n", mib(recv.mem.current))
	if floor != nil && !floor.missing {
		fmt.Fprintf(w, "pgbench: %s\n", shellJoin(floor.command))
	}
}

// thousands groups digits by three with spaces: 12 345.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func millis(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

func compactMillis(d time.Duration) string {
	return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
}

func mib(bytes int64) string {
	if bytes == 0 {
		return "?"
	}
	return fmt.Sprintf("%d MiB", (bytes+1<<19)>>20)
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
			millis(percentile(r.latencies, 0.50)), millis(percentile(r.latencies, 0.99)),
			millis(r.total), strconv.Itoa(r.unavailable), strconv.Itoa(r.errors))
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
			r.concurrency, millis(same), millis(distinct), millis(same-distinct))
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

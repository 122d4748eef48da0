package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/tidemark/tidemark/cmd/tidemark-bench/internal/feedread"
	"github.com/tidemark/tidemark/cmd/tidemark-bench/internal/table"
)

// feedResult is a whole feed run: the senders alone, then with readers.
type feedResult struct {
	alone, read feedPhase
}

func (r feedResult) problems() error {
	return errors.Join(r.alone.problems(), r.read.problems())
}

// ratio is events/s with the readers over events/s with nobody reading.
func (r feedResult) ratio() float64 {
	if r.alone.load.perSecond() <= 0 {
		return 0
	}
	return r.read.load.perSecond() / r.alone.load.perSecond()
}

// printFeed writes the table of a feed run, how it was obtained, and the
// README row.
func printFeed(w io.Writer, cfg feedConfig, r feedResult) {
	rows := [][]string{{"run", "reader", "events/s", "ratio", "failures", "changes", "p50", "p99", "max",
		"backlog early", "backlog end", "drained after", "keeps up", "duplicates", "missing"}}
	rows = append(rows, append(phaseCells(phaseLabel(false, cfg.consumers), "-", r.alone, 1),
		"-", "-", "-", "-", "-", "-", "-", "-", "-"))
	for _, s := range r.read.readers {
		rows = append(rows, append(phaseCells(phaseLabel(true, cfg.consumers), s.Name, r.read, r.ratio()),
			table.Millis(percentile(s.Latencies, 0.50)), table.Millis(percentile(s.Latencies, 0.99)), table.Millis(percentile(s.Latencies, 1)),
			strconv.Itoa(s.Early), strconv.Itoa(s.End), table.Seconds(s.Drained), yesNo(s.KeepsUp()),
			strconv.Itoa(s.Duplicates), strconv.Itoa(s.Missing)))
	}
	table.Print(w, rows)
	fmt.Fprintln(w)

	fmt.Fprintf(w, "each run: %d standard senders (one event per delivery, each applied) for %s after a %s warm-up,\n"+
		"  on a fresh database and server; ratio = events/s ÷ events/s with nobody reading. The readers add %s to\n"+
		"  ingest's time per event (the bench's consumer and receiver share the machine's cores with the server).\n",
		cfg.senders, cfg.duration, cfg.warmup, costPercent(r.ratio()))
	fmt.Fprintf(w, "latency: from committed_at to the page holding the change read (feed consumer, wait=%d limit=%d),\n"+
		"  or to the destination's message received and signature verified (answered 204); of the changes committed\n"+
		"  in the measured %s, first arrivals. The server and the bench share this machine's clock.\n",
		feedread.Wait, feedread.PageLimit, cfg.duration)
	fmt.Fprintf(w, "backlog: changes committed and not yet arrived; early = the largest in the first half of the measured\n"+
		"  load, end = when the senders stopped; keeps up = end <= early, drained within %s, none missing.\n"+
		"  missing: committed and not arrived %s after the senders stopped (--drain-timeout).\n", feedread.DrainLimit, cfg.drain)
	for _, s := range r.read.readers {
		fmt.Fprintf(w, "  %s, each second: %s\n", s.Name, joinInts(s.Backlog))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "README row:")
	fmt.Fprintln(w, "| senders | events/s, nobody reading | events/s, "+phaseLabel(true, cfg.consumers)+
		" | ratio | commit→feed p50 / p99 | commit→2xx p50 / p99 | backlog early → end, drained | duplicates | missing |")
	fmt.Fprintln(w, readmeRow(cfg, r))
}

// phaseCells are a row's run, reader, events/s, ratio, failures and
// changes columns.
func phaseCells(run, reader string, ph feedPhase, ratio float64) []string {
	return []string{run, reader, table.Thousands(int64(ph.load.perSecond() + 0.5)), fmt.Sprintf("%.2f", ratio),
		failures(ph.load, nil), table.Thousands(int64(ph.committed))}
}

// readmeRow is the run as a row of the README's table: the first consumer
// and the destination.
func readmeRow(cfg feedConfig, r feedResult) string {
	cells := []string{strconv.Itoa(cfg.senders), commas(r.alone.load.perSecond()), commas(r.read.load.perSecond()),
		fmt.Sprintf("%.2f", r.ratio())}
	var feed, dest feedread.Stats
	if n := len(r.read.readers); n > 0 {
		feed, dest = r.read.readers[0], r.read.readers[n-1]
	}
	for _, s := range []feedread.Stats{feed, dest} {
		cells = append(cells, table.CompactMillis(percentile(s.Latencies, 0.50))+" / "+table.CompactMillis(percentile(s.Latencies, 0.99)))
	}
	backlog := func(s feedread.Stats) string {
		return fmt.Sprintf("%d → %d, %s", s.Early, s.End, table.Seconds(s.Drained))
	}
	cells = append(cells, "feed "+backlog(feed)+"; destination "+backlog(dest),
		strconv.Itoa(feed.Duplicates+dest.Duplicates), strconv.Itoa(feed.Missing+dest.Missing))
	return "| " + strings.Join(cells, " | ") + " |"
}

// costPercent is the time per event the readers add, from the ratio of
// rates.
func costPercent(ratio float64) string {
	if ratio <= 0 {
		return "an unknown share"
	}
	return fmt.Sprintf("%+.1f%%", (1/ratio-1)*100)
}

// commas writes a rate as the README does: 1,284.
func commas(perSecond float64) string {
	return strings.ReplaceAll(table.Thousands(int64(perSecond+0.5)), " ", ",")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, " ")
}

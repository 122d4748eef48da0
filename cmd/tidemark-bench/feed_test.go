package main

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"testing"
	"time"

	"github.com/tidemark/tidemark/cmd/tidemark-bench/internal/feedread"
	"github.com/tidemark/tidemark/internal/testdb"
)

func TestFeedFlags(t *testing.T) {
	t.Parallel()
	env := cliEnv{getenv: func(string) string { return "" }, stdout: io.Discard, stderr: io.Discard}
	cfg, err := env.feedFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.senders != 32 || cfg.duration != 10*time.Second || cfg.warmup != 2*time.Second || cfg.consumers != 1 ||
		cfg.maxInFlight != 0 || cfg.drain != 30*time.Second || cfg.keep {
		t.Errorf("defaults = %+v", cfg)
	}
	cfg, err = env.feedFlags([]string{"--senders", "8", "--duration", "5s", "--warmup", "0s", "--consumers", "3", "--max-in-flight", "64"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.senders != 8 || cfg.duration != 5*time.Second || cfg.warmup != 0 || cfg.consumers != 3 || cfg.maxInFlight != 64 {
		t.Errorf("flags = %+v", cfg)
	}
	for _, bad := range [][]string{
		{"--senders", "0"}, {"--consumers", "0"}, {"--duration", "0s"}, {"--warmup", "-1s"}, {"--max-in-flight", "-1"},
		{"--drain-timeout", "0s"}, {"--contacts", "0"}, {"extra"},
	} {
		if _, err := env.feedFlags(bad); err == nil {
			t.Errorf("feedFlags(%q) accepted", bad)
		}
	}
}

func TestFeedPrint(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	lat := []time.Duration{10 * ms, 20 * ms, 900 * ms}
	res := feedResult{
		alone: feedPhase{load: loadResult{elapsed: time.Second, ok: 3000, statuses: map[int]int{}}, committed: 3000},
		read: feedPhase{load: loadResult{elapsed: time.Second, ok: 2850, statuses: map[int]int{}}, committed: 2850,
			readers: []feedread.Stats{
				{Name: "feed consumer", Latencies: lat, Backlog: []int{40, 90, 60}, Early: 90, End: 60, Drained: 200 * ms},
				{Name: "destination", Latencies: lat, Backlog: []int{5, 8, 9}, Early: 8, End: 9, Drained: 7 * time.Second, Duplicates: 2},
			}},
	}
	var b bytes.Buffer
	printFeed(&b, feedConfig{senders: 32, consumers: 1, duration: 10 * time.Second, warmup: 2 * time.Second}, res)
	out := b.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^run +reader +events/s +ratio +failures +changes +p50 +p99 +max +backlog early +backlog end +drained after +keeps up +duplicates +missing$`),
		regexp.MustCompile(`(?m)^nobody reading +- +3 000 +1\.00 +none +3 000 +-( +-)+$`),
		regexp.MustCompile(`(?m)^consumer \+ destination +feed consumer +2 850 +0\.95 +none +2 850 +20\.0 ms +900\.0 ms +900\.0 ms +90 +60 +0\.2 s +yes +0 +0$`),
		regexp.MustCompile(`(?m)^consumer \+ destination +destination +2 850 +0\.95 +none +2 850 +20\.0 ms .* +8 +9 +7\.0 s +no +2 +0$`),
		regexp.MustCompile(`The readers add \+5\.3% to`),
		regexp.MustCompile(`(?m)^  feed consumer, each second: 40 90 60$`),
		regexp.MustCompile(`(?m)^\| 32 \| 3,000 \| 2,850 \| 0\.95 \| 20\.0ms / 900\.0ms \| 20\.0ms / 900\.0ms \| ` +
			`feed 90 → 60, 0\.2 s; destination 8 → 9, 7\.0 s \| 2 \| 0 \|$`),
	} {
		if !want.MatchString(out) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
}

// The feed bench runs for real, briefly: the server built from this tree,
// the senders alone and then with a consumer and a destination created by
// the CLI. Every change must reach both readers; nothing about rates or
// latencies is asserted.
func TestBenchFeed(t *testing.T) {
	t.Parallel()
	server := testdb.ServerURL(t) // skips (or fails under CI=true) when no server answers
	var stdout, stderr bytes.Buffer
	args := []string{"feed", "--senders", "2", "--duration", "500ms", "--warmup", "200ms", "--contacts", "100", "--server-url", server}
	if err := run(context.Background(), args, func(string) string { return "" }, &stdout, &stderr); err != nil {
		t.Fatalf("feed: %v\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
	}
	out := stdout.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^nobody reading +- +[\d ]+ +1\.00 +none +[\d ]+ `),
		regexp.MustCompile(`(?m)^consumer \+ destination +feed consumer +[\d ]+ +\d+\.\d\d +none +[\d ]+ +[\d.]+ ms .* \d+ +0$`),
		regexp.MustCompile(`(?m)^consumer \+ destination +destination +[\d ]+ +\d+\.\d\d +none +[\d ]+ +[\d.]+ ms .* \d+ +0$`),
		regexp.MustCompile(`(?m)^\| 2 \| [\d,]+ \| [\d,]+ \| \d+\.\d\d \|.* \| 0 \|$`),
	} {
		if !want.MatchString(out) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
}

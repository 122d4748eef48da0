package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/internal/whsig"
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

// A reader's figures from fixed arrivals: five changes committed a second
// apart from t0 (the window is t0 to t0+4s), the reader 100 ms behind,
// except the third, which arrives twice (first 1.5 s late), and the fifth,
// which never arrives.
func TestFeedReaderStats(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	changes := []committedChange{{"c1", at(0)}, {"c2", at(1000)}, {"c3", at(2000)}, {"c4", at(3000)}, {"c5", at(4000)}}
	got := []sighting{
		{"c1", at(0), at(100)}, {"c2", at(1000), at(1100)}, {"c3", at(2000), at(3600)},
		{"c3", at(2000), at(3500)}, {"c4", at(3000), at(3100)},
	}
	s := readerStatsOf("feed", changes, got, window{start: at(0), end: at(4000)})
	ms := time.Millisecond
	if want := []time.Duration{100 * ms, 100 * ms, 100 * ms, 1500 * ms}; !slices.Equal(s.latencies, want) {
		t.Errorf("latencies = %v, want %v", s.latencies, want)
	}
	// Each second: c1 committed (0 ms); c2 (1 s); c3 (2 s); c3 and c4 (3 s,
	// c3 still late); c5 at the end.
	if want := []int{1, 1, 1, 2, 1}; !slices.Equal(s.backlog, want) {
		t.Errorf("backlog = %v, want %v", s.backlog, want)
	}
	if s.early != 1 || s.end != 1 || s.duplicates != 1 || s.missing != 1 || s.drained != 0 {
		t.Errorf("early %d, end %d, duplicates %d, missing %d, drained %v", s.early, s.end, s.duplicates, s.missing, s.drained)
	}
	if s.keepsUp() {
		t.Error("a reader that missed a change keeps up")
	}

	// Arriving after the window: drained counts from its end; a change
	// committed before the window is not among the latencies.
	got = append(got, sighting{"c5", at(4000), at(6500)})
	s = readerStatsOf("feed", append(changes, committedChange{"c0", at(-500)}), append(got, sighting{"c0", at(-500), at(-400)}),
		window{start: at(0), end: at(4000)})
	if s.missing != 0 || s.drained != 2500*ms || len(s.latencies) != 5 || s.latencies[4] != 2500*ms {
		t.Errorf("missing %d, drained %v, latencies %v", s.missing, s.drained, s.latencies)
	}
	if !s.keepsUp() {
		t.Errorf("a reader with its backlog %v not growing and drained in %v does not keep up", s.backlog, s.drained)
	}
	s.end = s.early + 1
	if s.keepsUp() {
		t.Error("a reader whose backlog grew keeps up")
	}
}

func TestFeedBacklogAt(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_796_000_000, 0)
	committed := []time.Time{t0, t0, t0.Add(time.Second)}
	arrived := []time.Time{t0.Add(time.Second)}
	for _, c := range []struct {
		at   time.Time
		want int
	}{{t0.Add(-time.Second), 0}, {t0, 2}, {t0.Add(time.Second), 2}} {
		if got := backlogAt(committed, arrived, c.at); got != c.want {
			t.Errorf("backlogAt(%v) = %d, want %d", c.at.Sub(t0), got, c.want)
		}
	}
}

// The receiver takes a message signed with the destination's secret whose
// webhook-id is its change's id, and refuses others, counting them.
func TestFeedReceiver(t *testing.T) {
	t.Parallel()
	rc, err := startReceiver()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.stop()
	body := []byte(`{"type":"record.applied","timestamp":"2026-12-03T09:20:00.123456Z",` +
		`"data":{"id":"chg_1_42","type":"record.applied","committed_at":"2026-12-03T09:20:00.123456Z"}}`)
	post := func(secret, id string, body []byte) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, rc.url, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if err := whsig.Headers(req.Header, []string{secret}, id, time.Now(), body); err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	secret := whsig.NewSecret()
	if got := post(secret, "chg_1_42", body); got != http.StatusServiceUnavailable {
		t.Errorf("before the destination exists: %d, want 503", got)
	}
	rc.secret.Store(&secret)
	if got := post(secret, "chg_1_42", body); got != http.StatusNoContent {
		t.Errorf("a good message: %d, want 204", got)
	}
	if got := post(whsig.NewSecret(), "chg_1_42", body); got != http.StatusBadRequest {
		t.Errorf("another secret: %d, want 400", got)
	}
	if got := post(secret, "chg_1_43", body); got != http.StatusBadRequest {
		t.Errorf("another webhook-id: %d, want 400", got)
	}
	list := rc.got.list()
	want := time.Date(2026, 12, 3, 9, 20, 0, 123456000, time.UTC)
	if len(list) != 1 || list[0].id != "chg_1_42" || !list[0].committed.Equal(want) || rc.refused.Load() != 2 {
		t.Errorf("got %+v, %d refused", list, rc.refused.Load())
	}
	if why := rc.firstRefusal.Load(); why == nil || !strings.Contains(*why, "signature") {
		t.Errorf("first refusal = %v", why)
	}
}

func TestFeedPrint(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	lat := []time.Duration{10 * ms, 20 * ms, 900 * ms}
	res := feedResult{
		alone: feedPhase{load: loadResult{elapsed: time.Second, ok: 3000, statuses: map[int]int{}}, committed: 3000},
		read: feedPhase{load: loadResult{elapsed: time.Second, ok: 2850, statuses: map[int]int{}}, committed: 2850,
			readers: []readerStats{
				{name: "feed consumer", latencies: lat, backlog: []int{40, 90, 60}, early: 90, end: 60, drained: 200 * ms},
				{name: "destination", latencies: lat, backlog: []int{5, 8, 9}, early: 8, end: 9, drained: 7 * time.Second, duplicates: 2},
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

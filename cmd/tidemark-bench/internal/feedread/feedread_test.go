package feedread

import (
	"bytes"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/whsig"
)

// A reader's figures from fixed arrivals: five changes committed a second
// apart from t0 (the window is t0 to t0+4s), the reader 100 ms behind,
// except the third, which arrives twice (first 1.5 s late), and the fifth,
// which never arrives.
func TestStats(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	changes := []CommittedChange{{"c1", at(0)}, {"c2", at(1000)}, {"c3", at(2000)}, {"c4", at(3000)}, {"c5", at(4000)}}
	got := []sighting{
		{"c1", at(0), at(100)}, {"c2", at(1000), at(1100)}, {"c3", at(2000), at(3600)},
		{"c3", at(2000), at(3500)}, {"c4", at(3000), at(3100)},
	}
	s := statsOf("feed", changes, got, Window{Start: at(0), End: at(4000)})
	ms := time.Millisecond
	if want := []time.Duration{100 * ms, 100 * ms, 100 * ms, 1500 * ms}; !slices.Equal(s.Latencies, want) {
		t.Errorf("latencies = %v, want %v", s.Latencies, want)
	}
	// Each second: c1 committed (0 ms); c2 (1 s); c3 (2 s); c3 and c4 (3 s,
	// c3 still late); c5 at the end.
	if want := []int{1, 1, 1, 2, 1}; !slices.Equal(s.Backlog, want) {
		t.Errorf("backlog = %v, want %v", s.Backlog, want)
	}
	if s.Early != 1 || s.End != 1 || s.Duplicates != 1 || s.Missing != 1 || s.Drained != 0 {
		t.Errorf("early %d, end %d, duplicates %d, missing %d, drained %v", s.Early, s.End, s.Duplicates, s.Missing, s.Drained)
	}
	if s.KeepsUp() {
		t.Error("a reader that missed a change keeps up")
	}

	// Arriving after the window: drained counts from its end; a change
	// committed before the window is not among the latencies.
	got = append(got, sighting{"c5", at(4000), at(6500)})
	s = statsOf("feed", append(changes, CommittedChange{"c0", at(-500)}), append(got, sighting{"c0", at(-500), at(-400)}),
		Window{Start: at(0), End: at(4000)})
	if s.Missing != 0 || s.Drained != 2500*ms || len(s.Latencies) != 5 || s.Latencies[4] != 2500*ms {
		t.Errorf("missing %d, drained %v, latencies %v", s.Missing, s.Drained, s.Latencies)
	}
	if !s.KeepsUp() {
		t.Errorf("a reader with its backlog %v not growing and drained in %v does not keep up", s.Backlog, s.Drained)
	}
	s.End = s.Early + 1
	if s.KeepsUp() {
		t.Error("a reader whose backlog grew keeps up")
	}
}

func TestBacklogAt(t *testing.T) {
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
func TestReceiver(t *testing.T) {
	t.Parallel()
	rc, err := StartReceiver()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Stop()
	body := []byte(`{"type":"record.applied","timestamp":"2026-12-03T09:20:00.123456Z",` +
		`"data":{"id":"chg_1_42","type":"record.applied","committed_at":"2026-12-03T09:20:00.123456Z"}}`)
	post := func(secret, id string, body []byte) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, rc.URL, bytes.NewReader(body))
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
	rc.SetSecret(secret)
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

package hook

import (
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// TestRefusalSamples: every refusal is counted per provider and minute;
// one per provider and second is kept.
func TestRefusalSamples(t *testing.T) {
	t.Parallel()
	l := newRefusalLog(nil, nil)
	at := time.Date(2026, 11, 29, 10, 59, 59, 0, time.UTC)
	for _, d := range []struct {
		provider int64
		after    time.Duration
	}{{1, 0}, {1, 100 * time.Millisecond}, {2, 200 * time.Millisecond}, {1, 900 * time.Millisecond}, {1, time.Second}, {1, 1500 * time.Millisecond}} {
		l.add(domain.Delivery{TenantID: 7, ProviderID: d.provider, ReceivedAt: at.Add(d.after)})
	}
	if len(l.samples) != 3 || l.samples[0].ReceivedAt != at || l.samples[1].ProviderID != 2 || l.samples[2].ReceivedAt != at.Add(time.Second) {
		t.Fatalf("samples %+v, want provider 1 at :59 and 11:00:00, provider 2 at :59", l.samples)
	}
	want := map[refusalKey]int64{{7, 1, at.Truncate(time.Minute)}: 3, {7, 1, at.Add(time.Second)}: 2, {7, 2, at.Truncate(time.Minute)}: 1}
	if len(l.counts) != len(want) {
		t.Fatalf("counts %v, want %v", l.counts, want)
	}
	for k, n := range want {
		if l.counts[k] != n {
			t.Errorf("count %v = %d, want %d", k, l.counts[k], n)
		}
	}
}

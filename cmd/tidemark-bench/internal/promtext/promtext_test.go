package promtext

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// Names in tidemark's /metrics.
const (
	groupSize = "tidemark_ingest_group_size"
	events    = "tidemark_events_total"
	busy      = "tidemark_tenant_busy_total"
)

// groupHistogram is how client_golang writes the group-size histogram the
// group-commit ingest adds to /metrics.
const groupHistogram = `# HELP tidemark_ingest_group_size Deliveries per committed group.
# TYPE tidemark_ingest_group_size histogram
tidemark_ingest_group_size_bucket{le="1"} 4
tidemark_ingest_group_size_bucket{le="4"} 10
tidemark_ingest_group_size_bucket{le="16"} 12
tidemark_ingest_group_size_bucket{le="+Inf"} 12
tidemark_ingest_group_size_sum 54
tidemark_ingest_group_size_count 12
`

func TestParse(t *testing.T) {
	t.Parallel()
	// testdata/metrics.txt is GET /metrics of a server without group commit
	// after three deliveries: applied, stale and rejected.
	sample, err := os.ReadFile("testdata/metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	today, err := Parse(bytes.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := today.Sum(events, map[string]string{"outcome": "rejected"}); !ok || n != 1 {
		t.Errorf("rejected events = %v, %v; want 1", n, ok)
	}
	if n, ok := today.Sum(events, nil); !ok || n != 3 {
		t.Errorf("events = %v, %v; want 3", n, ok)
	}
	if n, ok := today.Sum("tidemark_ingest_duration_seconds_bucket", map[string]string{"le": "+Inf"}); !ok || n != 3 {
		t.Errorf("+Inf bucket = %v, %v; want 3", n, ok)
	}
	if g := today.Histogram(groupSize); g.ok {
		t.Errorf("groups of a server without the histogram = %+v", g)
	}
	if _, ok := today.Histogram(groupSize).MeanSince(today.Histogram(groupSize)); ok {
		t.Error("a mean group size without the histogram")
	}

	before, err := Parse(strings.NewReader(string(sample) + groupHistogram))
	if err != nil {
		t.Fatal(err)
	}
	after, err := Parse(strings.NewReader(strings.Replace(string(sample), "tidemark_tenant_busy_total 0", "tidemark_tenant_busy_total 7", 1) +
		strings.NewReplacer("_sum 54", "_sum 354", "_count 12", "_count 62").Replace(groupHistogram)))
	if err != nil {
		t.Fatal(err)
	}
	if g := before.Histogram(groupSize); !g.ok || g.sum != 54 || g.count != 12 {
		t.Errorf("groups = %+v", g)
	}
	if mean, ok := after.Histogram(groupSize).MeanSince(before.Histogram(groupSize)); !ok || mean != 6 {
		t.Errorf("mean group size = %v, %v; want 6 (300 deliveries in 50 groups)", mean, ok)
	}
	if n := after.Since(before, busy, nil); n != 7 {
		t.Errorf("tenant-busy 503s = %v; want 7", n)
	}
	if n := after.Since(before, events, map[string]string{"outcome": "rejected"}); n != 0 {
		t.Errorf("rejected events since = %v; want 0", n)
	}
	if _, ok := before.Histogram(groupSize).MeanSince(before.Histogram(groupSize)); ok {
		t.Error("a mean group size without a group committed")
	}
}

func TestParseLines(t *testing.T) {
	t.Parallel()
	m, err := Parse(strings.NewReader("a 1\nb{x=\"q\\\"u,o}te\",y=\"2\"} 2.5 1700000000000\n\nc{} NaN\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 3 || m[1].Labels["x"] != `q"u,o}te` || m[1].Labels["y"] != "2" || m[1].Value != 2.5 {
		t.Errorf("parsed %+v", m)
	}
	for _, bad := range []string{"a", "a{x=\"1\" 2", "a{x=1} 2", "a one", "a 1 2 3"} {
		if _, err := Parse(strings.NewReader(bad)); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

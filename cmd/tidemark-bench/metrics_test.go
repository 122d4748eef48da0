package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
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

func TestMetricsParse(t *testing.T) {
	t.Parallel()
	// testdata/metrics.txt is GET /metrics of a server without group commit
	// after three deliveries: applied, stale and rejected.
	sample, err := os.ReadFile("testdata/metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	today, err := parseMetrics(bytes.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := today.sum(eventsMetric, map[string]string{"outcome": "rejected"}); !ok || n != 1 {
		t.Errorf("rejected events = %v, %v; want 1", n, ok)
	}
	if n, ok := today.sum(eventsMetric, nil); !ok || n != 3 {
		t.Errorf("events = %v, %v; want 3", n, ok)
	}
	if n, ok := today.sum("tidemark_ingest_duration_seconds_bucket", map[string]string{"le": "+Inf"}); !ok || n != 3 {
		t.Errorf("+Inf bucket = %v, %v; want 3", n, ok)
	}
	if g := today.groups(); g.ok {
		t.Errorf("groups of a server without the histogram = %+v", g)
	}
	if _, ok := today.groups().meanSince(today.groups()); ok {
		t.Error("a mean group size without the histogram")
	}

	before, err := parseMetrics(strings.NewReader(string(sample) + groupHistogram))
	if err != nil {
		t.Fatal(err)
	}
	after, err := parseMetrics(strings.NewReader(strings.Replace(string(sample), "tidemark_tenant_busy_total 0", "tidemark_tenant_busy_total 7", 1) +
		strings.NewReplacer("_sum 54", "_sum 354", "_count 12", "_count 62").Replace(groupHistogram)))
	if err != nil {
		t.Fatal(err)
	}
	if g := before.groups(); !g.ok || g.sum != 54 || g.count != 12 {
		t.Errorf("groups = %+v", g)
	}
	if mean, ok := after.groups().meanSince(before.groups()); !ok || mean != 6 {
		t.Errorf("mean group size = %v, %v; want 6 (300 deliveries in 50 groups)", mean, ok)
	}
	if busy := after.since(before, busyMetric, nil); busy != 7 {
		t.Errorf("tenant-busy 503s = %v; want 7", busy)
	}
	if n := after.since(before, eventsMetric, map[string]string{"outcome": "rejected"}); n != 0 {
		t.Errorf("rejected events since = %v; want 0", n)
	}
	if _, ok := before.groups().meanSince(before.groups()); ok {
		t.Error("a mean group size without a group committed")
	}
}

func TestMetricsParseLines(t *testing.T) {
	t.Parallel()
	m, err := parseMetrics(strings.NewReader("a 1\nb{x=\"q\\\"u,o}te\",y=\"2\"} 2.5 1700000000000\n\nc{} NaN\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 3 || m[1].labels["x"] != `q"u,o}te` || m[1].labels["y"] != "2" || m[1].value != 2.5 {
		t.Errorf("parsed %+v", m)
	}
	for _, bad := range []string{"a", "a{x=\"1\" 2", "a{x=1} 2", "a one", "a 1 2 3"} {
		if _, err := parseMetrics(strings.NewReader(bad)); err == nil {
			t.Errorf("parseMetrics(%q) accepted", bad)
		}
	}
}

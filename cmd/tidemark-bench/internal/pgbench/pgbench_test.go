package pgbench

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseSummary(t *testing.T) {
	t.Parallel()
	out := []byte(`pgbench (15.20 (Debian 15.20-0+deb12u1))
transaction type: /tmp/floor.sql
number of clients: 32
number of failed transactions: 0 (0.000%)
latency average = 3.851 ms
initial connection time = 41.337 ms
tps = 8310.482913 (without initial connection time)
`)
	tps, lat, err := ParseSummary(out)
	if err != nil || tps != 8310.482913 || lat != 3.851 {
		t.Fatalf("ParseSummary = %v, %v, %v", tps, lat, err)
	}
	if _, _, err := ParseSummary([]byte("FATAL: nope")); err == nil {
		t.Fatal("ParseSummary accepted output without a tps line")
	}
}

func TestParseLog(t *testing.T) {
	t.Parallel()
	// pgbench -l: client_id transaction_no time(us) script_no time_epoch time_us.
	log := "0 0 812 0 1796197851 120001\n1 0 2500 0 1796197851 121003\n0 1 skipped 0 1796197851 122000\n"
	got, err := parseLog(strings.NewReader(log), []time.Duration{time.Millisecond})
	want := []time.Duration{time.Millisecond, 812 * time.Microsecond, 2500 * time.Microsecond}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("parseLog = %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"0 0 81x 0 1796197851 120001\n", "tps = 8310\n"} {
		if _, err := parseLog(strings.NewReader(bad), nil); err == nil {
			t.Errorf("parseLog(%q) accepted", bad)
		}
	}
}

package procmem

import (
	"strings"
	"testing"
	"time"
)

func TestParseStatus(t *testing.T) {
	t.Parallel()
	m, err := parseStatus(strings.NewReader("Name:\ttidemark\nVmPeak:\t 1000 kB\nVmHWM:\t   49152 kB\nVmRSS:\t   40960 kB\n"))
	if err != nil || m.Peak != 48<<20 || m.Current != 40<<20 {
		t.Fatalf("parseStatus = %+v, %v", m, err)
	}
	if _, err := parseStatus(strings.NewReader("Name:\tx\n")); err == nil {
		t.Fatal("parseStatus accepted a status without VmHWM")
	}
}

func TestParseStat(t *testing.T) {
	stat := "4242 (tidemark (x)) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 75 0 0 20 0 12 0 100 0 0"
	if got := parseStat(stat); got != 3250*time.Millisecond {
		t.Errorf("parseStat = %s, want 3.25s (325 ticks)", got)
	}
}

package main

import (
	"strings"
	"testing"
	"time"
)

func TestBenchParsePgbench(t *testing.T) {
	t.Parallel()
	out := []byte(`pgbench (15.20 (Debian 15.20-0+deb12u1))
transaction type: /tmp/floor.sql
number of clients: 32
number of failed transactions: 0 (0.000%)
latency average = 3.851 ms
initial connection time = 41.337 ms
tps = 8310.482913 (without initial connection time)
`)
	tps, lat, err := parsePgbench(out)
	if err != nil || tps != 8310.482913 || lat != 3.851 {
		t.Fatalf("parsePgbench = %v, %v, %v", tps, lat, err)
	}
	if _, _, err := parsePgbench([]byte("FATAL: nope")); err == nil {
		t.Fatal("parsePgbench accepted output without a tps line")
	}
}

func TestBenchParseProcStatus(t *testing.T) {
	t.Parallel()
	m, err := parseProcStatus(strings.NewReader("Name:\ttidemark\nVmPeak:\t 1000 kB\nVmHWM:\t   49152 kB\nVmRSS:\t   40960 kB\n"))
	if err != nil || m.peak != 48<<20 || m.current != 40<<20 {
		t.Fatalf("parseProcStatus = %+v, %v", m, err)
	}
	if _, err := parseProcStatus(strings.NewReader("Name:\tx\n")); err == nil {
		t.Fatal("parseProcStatus accepted a status without VmHWM")
	}
}

func TestBenchFormatting(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1 000", 5431: "5 431", 1234567: "1 234 567", -1000: "-1 000"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
	if got := mib(48<<20 + 1); got != "48 MiB" {
		t.Errorf("mib = %q", got)
	}
	if got := shellJoin([]string{"pgbench", "-c", "32", "postgres:///x?host=/s&a=b"}); got != "pgbench -c 32 'postgres:///x?host=/s&a=b'" {
		t.Errorf("shellJoin = %q", got)
	}
}

func TestBenchPercentile(t *testing.T) {
	t.Parallel()
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	if p := percentile(d, 0.5); p != 50*time.Millisecond {
		t.Errorf("p50 = %v", p)
	}
	if p := percentile(d, 0.99); p != 99*time.Millisecond {
		t.Errorf("p99 = %v", p)
	}
	if p := percentile(nil, 0.99); p != 0 {
		t.Errorf("empty p99 = %v", p)
	}
}

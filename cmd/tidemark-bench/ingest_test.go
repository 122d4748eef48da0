package main

import (
	"bytes"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/cmd/tidemark-bench/internal/procmem"
	"github.com/tidemark/tidemark/internal/provider"
)

func TestBenchShellJoin(t *testing.T) {
	t.Parallel()
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

func TestBenchFlags(t *testing.T) {
	t.Parallel()
	env := cliEnv{getenv: func(string) string { return "" }, stdout: io.Discard, stderr: io.Discard}
	cfg, err := env.benchFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.senders, []int{32}) || !slices.Equal(cfg.tenants, []int{1}) || len(cfg.kinds) != 1 || cfg.kinds[0] != provider.Standard ||
		cfg.duration != 10*time.Second || cfg.warmup != time.Second || cfg.floorClients != 32 || cfg.batch != 100 || !cfg.pgbench {
		t.Errorf("defaults = %+v", cfg)
	}
	cfg, err = env.benchFlags([]string{"--senders", "1, 8,32,128", "--kind", "standard," + provider.HubSpot.Name(),
		"--batch", "50", "--duration", "5s", "--floor-max-clients", "16", "--pgbench=false", "--tenants", "1, 50,1000"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.senders, []int{1, 8, 32, 128}) || !slices.Equal(cfg.tenants, []int{1, 50, 1000}) || !slices.Equal(cfg.kinds, []provider.Kind{provider.Standard, provider.HubSpot}) ||
		cfg.batch != 50 || cfg.duration != 5*time.Second || cfg.floorClients != 16 || cfg.pgbench {
		t.Errorf("sweep = %+v", cfg)
	}
	// The single number of earlier versions still works.
	if cfg, err := env.benchFlags([]string{"--senders", "64"}); err != nil || !slices.Equal(cfg.senders, []int{64}) {
		t.Errorf("--senders 64 = %v, %v", cfg.senders, err)
	}
	for _, bad := range [][]string{
		{"--senders", "0"}, {"--senders", "8,x"}, {"--senders", ""}, {"--kind", "salesforce"}, {"--kind", ","},
		{"--batch", "0"}, {"--batch", "101"}, {"--duration", "0s"}, {"--floor-max-clients", "0"}, {"extra"},
		{"--tenants", "0"}, {"--tenants", "-1"}, {"--tenants", "1,x"}, {"--tenants", ""}, {"--tenants", ","},
	} {
		if _, err := env.benchFlags(bad); err == nil {
			t.Errorf("benchFlags(%q) accepted", bad)
		}
	}
	// The errors name the flag and the bounds.
	for arg, want := range map[string]string{
		"0":        `ingest: --tenants "0": "0" is not a positive integer`,
		"50,1001":  "ingest: --tenants 1001: the bench creates at most 1000 tenants",
		"1,100000": "ingest: --tenants 100000: the bench creates at most 1000 tenants",
	} {
		if _, err := env.benchFlags([]string{"--tenants", arg}); err == nil || err.Error() != want {
			t.Errorf("--tenants %s: error %v, want %q", arg, err, want)
		}
	}
}

func TestBenchPrintSweep(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	floor1 := &floorResult{clients: 1, tps: 400, latency: 2.5, p50: 2 * ms, p99: 6 * ms, command: []string{"pgbench", "-c", "1"}}
	floor32 := &floorResult{clients: 32, tps: 7000, latency: 4.6, p50: 4 * ms, p99: 12500 * time.Microsecond,
		command: []string{"pgbench", "-c", "32"}}
	load := func(ok int, statuses map[int]int, transport int) loadResult {
		return loadResult{elapsed: time.Second, ok: ok, statuses: statuses, transport: transport,
			latencies: []time.Duration{2 * ms, 3 * ms, 40 * ms}}
	}
	res := &sweepResult{
		rows: []measurement{
			{kind: "standard", batch: 1, senders: 1, load: load(350, map[int]int{}, 0), rss: 20 << 20, floor: floor1},
			{kind: "standard", batch: 1, senders: 128, load: load(7700, map[int]int{503: 12, 400: 1}, 2),
				groupSize: 6.25, groupKnown: true, overloads: map[string]float64{"lookup_gate": 10}, rss: 30 << 20, floor: floor32},
			{kind: provider.HubSpot.Name(), batch: 100, senders: 32, load: load(210, map[int]int{}, 0), rss: 31 << 20, floor: floor32},
		},
		floors: []*floorResult{floor1, floor32},
		mem:    procmem.Memory{Current: 31 << 20, Peak: 40 << 20},
	}
	var b bytes.Buffer
	printSweep(&b, benchConfig{duration: 5 * time.Second, warmup: time.Second, contacts: 20000, floorClients: 32}, res)
	out := b.String()
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], "kind ") || !strings.Contains(lines[0], "failures") || !strings.Contains(lines[0], "group size") {
		t.Errorf("header = %q", lines[0])
	}
	for i, want := range []*regexp.Regexp{
		regexp.MustCompile(`^standard +1 +1 +350 +350 +3\.0 ms +40\.0 ms +none +n/a +20 MiB +400 \(1\) +6\.0 ms +0\.88$`),
		regexp.MustCompile(`^standard +1 +128 +7 700 +7 700 +3\.0 ms +40\.0 ms +503=12 \(lookup_gate 10\) 400=1 no-answer=2 +6\.2 +30 MiB +7 000 \(32\) +12\.5 ms +1\.10$`),
		regexp.MustCompile(`^hubspot +100 +32 +210 +21 000 +.* +none +n/a +31 MiB +7 000 \(32\) +12\.5 ms +3\.00$`),
	} {
		if !want.MatchString(lines[i+1]) {
			t.Errorf("row %d = %q, want %s", i+1, lines[i+1], want)
		}
	}
	for _, want := range []string{
		"at min(senders, 32) clients (--floor-max-clients): 1 client: 400 tx/s (avg 2.5 ms, p50 2.0 ms, p99 6.0 ms); " +
			"32 clients: 7 000 tx/s (avg 4.6 ms, p50 4.0 ms, p99 12.5 ms)",
		"ratio = events/s ÷ floor transactions/s",
		"server RSS after all the load: 31 MiB (peak 40 MiB)",
		"pgbench (at 32 clients): pgbench -c 32",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, " tenants") {
		t.Errorf("rows of the bench tenant alone mention tenants:\n%s", out)
	}
	// Without the floor the ratio is not made up.
	res.rows, res.floors = res.rows[:1], nil
	res.rows[0].floor = nil
	b.Reset()
	printSweep(&b, benchConfig{duration: time.Second, floorClients: 32}, res)
	if !regexp.MustCompile(`(?m)  not run  +-  +-$`).MatchString(b.String()) || strings.Contains(b.String(), "ratio =") {
		t.Errorf("output without the floor:\n%s", b.String())
	}
}

// Rows over several tenants say how many in their kind cell, beside the
// one-tenant rows of the same run, and the notes say how the senders were
// spread and when some tenants had none.
func TestBenchPrintSweepTenants(t *testing.T) {
	t.Parallel()
	floor := &floorResult{clients: 32, tps: 2000, p99: 30 * time.Millisecond, command: []string{"pgbench"}}
	load := loadResult{elapsed: time.Second, ok: 3000, statuses: map[int]int{}, latencies: []time.Duration{time.Millisecond}}
	row := func(kind string, batch, senders, tenants int) measurement {
		return measurement{kind: kind, batch: batch, senders: senders, tenants: tenants, load: load, floor: floor}
	}
	hubspot := provider.HubSpot.Name()
	res := &sweepResult{rows: []measurement{
		row("standard", 1, 32, 1), row("standard", 1, 32, 50), row(hubspot, 100, 32, 1), row(hubspot, 100, 32, 50),
		row("standard", 1, 64, 50),
	}, floors: []*floorResult{floor}}
	var b bytes.Buffer
	printSweep(&b, benchConfig{duration: time.Second, contacts: 20000, floorClients: 32}, res)
	out := b.String()
	lines := strings.Split(out, "\n")
	for i, want := range []string{`standard +1 +32 `, `standard, 50 tenants +1 +32 `, hubspot + ` +100 +32 `,
		hubspot + `, 50 tenants +100 +32 `, `standard, 50 tenants +1 +64 `} {
		if !regexp.MustCompile(`^` + want + `+3 000 +.* 2 000 \(32\) +30\.0 ms +(1\.50|150\.00)$`).MatchString(lines[i+1]) {
			t.Errorf("row %d = %q, want %s", i+1, lines[i+1], want)
		}
	}
	for _, want := range []string{
		`"N tenants": each delivery goes to one of N tenants drawn at random, as the floor's transactions do, ` +
			`each tenant with its own providers and secrets and the same contact ids`,
	} {
		if strings.Count(out, want) != 1 {
			t.Errorf("output lacks %q once:\n%s", want, out)
		}
	}
}

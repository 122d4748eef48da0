package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
)

func TestParseCounts(t *testing.T) {
	t.Parallel()
	got, err := parseCounts("burst: --concurrency", " 50, 100,,2000 ")
	if err != nil || !slices.Equal(got, []int{50, 100, 2000}) {
		t.Fatalf("parseCounts = %v, %v", got, err)
	}
	for _, bad := range []string{"", ",", "0", "-5", "10,x"} {
		if _, err := parseCounts("burst: --concurrency", bad); err == nil {
			t.Errorf("parseCounts(%q) accepted", bad)
		}
	}
}

func TestBurstWithPoolMaxConns(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"postgres:///scratch?host=/var/run/postgresql&sslmode=disable",
			"postgres:///scratch?host=%2Fvar%2Frun%2Fpostgresql&pool_max_conns=16&sslmode=disable"},
		{"postgres://u:p@db/app?pool_max_conns=4", "postgres://u:p@db/app?pool_max_conns=16"},
		{"host=/tmp dbname=app", "host=/tmp dbname=app pool_max_conns=16"},
	} {
		if got := withPoolMaxConns(c.in, 16); got != c.want {
			t.Errorf("withPoolMaxConns(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestBurstLeads(t *testing.T) {
	t.Parallel()
	leads := burstLeads(500, false, "t")
	if len(leads) != 500 {
		t.Fatalf("%d leads", len(leads))
	}
	people, accounts := distinctIdentities(leads)
	if people != 100 || accounts != 25 {
		t.Errorf("repeated identities: %d people, %d accounts; want 100, 25", people, accounts)
	}
	// Every lead is valid, keeps its domain, and one person is always in one campaign.
	campaign := map[string]string{}
	for _, l := range leads {
		n, err := domain.NormalizeLead(l)
		if err != nil || n != l {
			t.Fatalf("lead %+v normalises to %+v, %v", l, n, err)
		}
		if c, ok := campaign[l.Email]; ok && c != l.Campaign {
			t.Fatalf("%s in campaigns %s and %s", l.Email, c, l.Campaign)
		}
		campaign[l.Email] = l.Campaign
	}
	people, accounts = distinctIdentities(burstLeads(500, true, "t"))
	if people != 500 || accounts != 500 {
		t.Errorf("distinct identities: %d people, %d accounts; want 500, 500", people, accounts)
	}
	if people, accounts = distinctIdentities(burstLeads(3, false, "t")); people != 1 || accounts != 1 {
		t.Errorf("tiny burst: %d people, %d accounts; want 1, 1", people, accounts)
	}
}

func TestBurstDupPercent(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		rows, distinct int
		want           float64
	}{{0, 0, 0}, {10, 10, 0}, {20, 10, 50}, {4, 1, 75}} {
		if got := dupPercent(c.rows, c.distinct); got != c.want {
			t.Errorf("dupPercent(%d, %d) = %v, want %v", c.rows, c.distinct, got, c.want)
		}
	}
}

func TestBurstPrintResults(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	var b bytes.Buffer
	printBurstResults(&b, []burstResult{
		{strategy: burstGuarded, concurrency: 50, latencies: []time.Duration{10 * ms, 30 * ms}, total: 31 * ms,
			people: 10, distinctPeople: 10, errorKinds: map[string]int{}},
		{strategy: burstDistinct, concurrency: 50, latencies: []time.Duration{10 * ms, 25 * ms}, total: 26 * ms,
			errorKinds: map[string]int{}},
		{strategy: burstNaive, concurrency: 50, people: 20, distinctPeople: 10, errors: 1,
			errorKinds: map[string]int{"500 boom": 1}},
	})
	out := b.String()
	for _, want := range []string{"dup people %", "naive             50           50.0", "= 5.0 ms", "errors of naive c=50", "500 boom"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

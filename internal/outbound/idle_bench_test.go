package outbound_test

import (
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain/stream"
)

// BenchmarkIdleDestinations: what 64 destinations with nothing to send
// cost the database while one sender runs for a second per iteration:
// transactions per second on the test's database (pg_stat_database), with
// the default poll.
//
//	go test ./internal/outbound -run '^$' -bench IdleDestinations -benchtime 5x
func BenchmarkIdleDestinations(b *testing.B) {
	e := newEnv(b)
	raiseDestinationLimit(b, e, 64)
	for range 64 {
		e.destination(b, stream.NewDestination{URL: "https://203.0.113.1/hook"})
	}
	o := fast()
	o.Poll = 0 // the default
	e.run(b, o)
	time.Sleep(time.Second) // leases settled
	xacts := func() int64 {
		var n int64
		if err := e.pool.QueryRow(b.Context(), `SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()`).Scan(&n); err != nil {
			b.Fatal(err)
		}
		return n
	}
	b.ResetTimer()
	before := xacts()
	for range b.N {
		time.Sleep(time.Second)
	}
	b.ReportMetric(float64(xacts()-before)/b.Elapsed().Seconds(), "xacts/s")
}

package outbound_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain/stream"
)

// BenchmarkSenderFilter: the sender's cost per change, from the queue to
// the receiver's 200, without a filter and with one that every change
// passes (so that both send the same messages): the difference is what
// evaluating the filter adds. Each iteration is one change of its own
// record, ingested before the timer starts. Besides the wall time, which
// a busy machine's other work blurs, it reports the CPU time of this
// process per change (the sender, and the receiver, the same in both).
//
//	go test ./internal/outbound -run '^$' -bench SenderFilter -benchtime 2000x
func BenchmarkSenderFilter(b *testing.B) {
	for _, c := range []struct{ name, filter string }{
		{"none", ""},
		{"filter", `"name" in change.changed && change.snapshot.name.startsWith("n")`},
	} {
		b.Run(c.name, func(b *testing.B) {
			e := newEnv(b)
			rc := newReceiver(b)
			d := e.httpDestination(b, rc, stream.DefaultMaxInFlight)
			if c.filter != "" {
				if _, err := e.store.UpdateDestination(asCLI, e.p.TenantID, d.ID, stream.DestinationUpdate{Filter: &c.filter}); err != nil {
					b.Fatal(err)
				}
			}
			for i := range b.N {
				e.ingest(b, fmt.Sprintf("c%d", i), 1)
			}
			b.ResetTimer()
			cpu := cpuTime(b)
			e.run(b, fast())
			waitFor(b, 10*time.Minute, "every change delivered", func() bool {
				_, delivered, _ := rc.got()
				return len(delivered) == b.N
			})
			b.StopTimer()
			cpu = cpuTime(b) - cpu
			if got := e.reload(b, d.ID); got.Filtered != 0 {
				b.Fatalf("%d filtered; the filter should pass every change", got.Filtered)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/change")
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/change")
		})
	}
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

package postgres

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
)

// BenchmarkCounterShards ingests a burst of events for one tenant and
// provider, each for its own contact, so the only row they share is the
// outcome counter. With one shard every transaction queues on that row's
// lock until the previous one commits; with the default shards they don't.
//
//	go test ./postgres -run '^$' -bench CounterShards -benchtime 3000x
func BenchmarkCounterShards(b *testing.B) {
	for _, shards := range []int{1, defaultCounterShards} {
		b.Run(fmt.Sprintf("shards=%d", shards), func(b *testing.B) {
			cfg, err := pgxpool.ParseConfig(testdb.NewURL(b))
			if err != nil {
				b.Fatal(err)
			}
			cfg.MaxConns = 32
			pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer pool.Close()
			s, _ := New(pool, testKey)
			s.counterShards = shards
			ctx := context.Background()
			s.CreateTenant(ctx, "acme", "")
			if _, err := s.CreateProvider(ctx, "acme", "crm", domain.KindStandard, "whsec_dGVzdA=="); err != nil {
				b.Fatal(err)
			}
			p, _ := s.Endpoint(ctx, "acme", "crm")
			var n atomic.Int64
			b.SetParallelism(16) // 32 concurrent deliveries on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					e := event(fmt.Sprintf("e%d", i), fmt.Sprintf("c%d", i), 1, `{"v":1}`)
					if _, err := s.Ingest(ctx, delivery(p), p, []domain.Event{e}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

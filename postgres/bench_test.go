package postgres

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
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
			ctx := asTest(context.Background())
			t, _ := s.CreateTenant(ctx, "acme", "")
			if _, err := s.ConnectProvider(ctx, t.ID, "crm", "standard", "whsec_dGVzdA==", nil); err != nil {
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

// BenchmarkBatchVersusSingle ingests HubSpot-shaped property changes, 100
// per delivery (one transaction) and one per delivery, from 8 concurrent
// senders, and reports events/s for each.
//
//	go test ./postgres -run '^$' -bench BatchVersusSingle -benchtime 20000x
func BenchmarkBatchVersusSingle(b *testing.B) {
	for _, perDelivery := range []int{1, 100} {
		b.Run(fmt.Sprintf("events-per-delivery=%d", perDelivery), func(b *testing.B) {
			cfg, err := pgxpool.ParseConfig(testdb.NewURL(b))
			if err != nil {
				b.Fatal(err)
			}
			cfg.MaxConns = 16
			pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer pool.Close()
			s, _ := New(pool, testKey)
			ctx := asTest(context.Background())
			t, _ := s.CreateTenant(ctx, "acme", "")
			if _, err := s.ConnectProvider(ctx, t.ID, "hs", "hubspot", "client-secret", nil); err != nil {
				b.Fatal(err)
			}
			p, _ := s.Endpoint(ctx, "acme", "hs")
			var n atomic.Int64
			b.SetParallelism(4) // 8 senders on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				var batch []domain.Event
				for pb.Next() {
					i := n.Add(1)
					e := pgtest.Change(fmt.Sprintf("e%d", i), "jobtitle", "Director", i)
					e.ObjectID = fmt.Sprintf("c-%d", i%5000)
					e.Seq = len(batch)
					batch = append(batch, e)
					if len(batch) < perDelivery {
						continue
					}
					if _, err := s.Ingest(ctx, delivery(p), p, batch); err != nil {
						b.Error(err)
						return
					}
					batch = batch[:0]
				}
				if len(batch) > 0 {
					if _, err := s.Ingest(ctx, delivery(p), p, batch); err != nil {
						b.Error(err)
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

package shape_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/shape"
)

// BenchmarkFilter: one evaluation of a filter on a change, its snapshot
// decoded: what the sender adds per change (BenchmarkSenderFilter in
// internal/outbound measures it against a send).
//
//	go test ./internal/shape -run '^$' -bench Filter -benchtime 2000x
func BenchmarkFilter(b *testing.B) {
	var cache shape.Cache
	rev := int64(2)
	c := stream.Change{TenantID: 1, Position: 42, Type: stream.ChangeApplied, Provider: "crm", ObjectType: "contact", ObjectID: "c-1",
		Revision: &rev, Changed: []string{"lifecyclestage", "name"}, CommittedAt: time.Now(),
		Snapshot: json.RawMessage(`{"name":"Ana","email":"ana@example.com","lifecyclestage":"customer","amount":12000,"notes":"a few words"}`)}
	filter := `"lifecyclestage" in change.changed && change.snapshot.lifecyclestage == "customer"`
	if _, err := cache.Get(filter, ""); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		s, err := cache.Get(filter, "")
		if err != nil {
			b.Fatal(err)
		}
		if r, err := s.Change(c); err != nil || !r.Matched {
			b.Fatal(r, err)
		}
	}
}

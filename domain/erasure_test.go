package domain

import (
	"context"
	"testing"
	"time"
)

type erasedKeys map[ErasureKey]bool

var testHasher = NewIDHasher([]byte("0123456789abcdef0123456789abcdef"))

func (erasedKeys) ErasureHashers(context.Context) ([]IDHasher, error) {
	return []IDHasher{testHasher, LegacyIDHasher}, nil
}

func (k erasedKeys) ErasedSince(_ context.Context, _ int64, _ time.Time, keys []ErasureKey) ([]bool, error) {
	out := make([]bool, len(keys))
	for i, key := range keys {
		out[i] = k[key]
	}
	return out, nil
}

// TestDropErased: a lead is named by its normalised email, a record by
// provider, type and id, under the key or (written before it) without;
// the body goes with the events it carried.
func TestDropErased(t *testing.T) {
	d := Delivery{TenantID: 1, ProviderID: 2, Body: []byte("{}")}
	events := []Event{
		{EventID: "lead", Lead: &Lead{Email: " Ann@Example.com"}},
		{EventID: "other", ObjectID: "c-2", Scope: ScopeName{ObjectType: "contact"}},
		{EventID: "old", ObjectID: "c-3", Scope: ScopeName{ObjectType: "contact"}},
		{EventID: "none"},
	}
	erased := erasedKeys{testHasher.LeadErasureKey(1, "ann@example.com"): true, testHasher.RecordErasureKey(1, 2, "contact", "c-1"): true,
		LegacyIDHasher.RecordErasureKey(1, 2, "contact", "c-3"): true}
	kept, dropped, err := DropErased(context.Background(), erased, &d, events)
	if err != nil || dropped != 2 || len(kept) != 2 || kept[0].EventID != "other" || string(d.Body) != ErasedBody {
		t.Fatalf("kept %v, dropped %d, body %q, %v", kept, dropped, d.Body, err)
	}
	if testHasher.LeadErasureKey(1, "ann@example.com") == testHasher.LeadErasureKey(2, "ann@example.com") {
		t.Error("keys of two tenants are equal")
	}
}

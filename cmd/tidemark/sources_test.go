package main

import (
	"testing"

	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/backfill"
	"github.com/tidemark/tidemark/internal/provider"
)

// TestBackfillSourcesListed: every provider kind whose credentials name an
// API has its backfill source registered in the binary (sources.go).
func TestBackfillSourcesListed(t *testing.T) {
	t.Parallel()
	backfilled := map[string]bool{}
	for _, s := range backfill.Registered() {
		backfilled[s.Kind] = backfilled[s.Kind] || s.Backfill
	}
	for _, kind := range provider.Names() {
		if provider.PullAPI(kind) != pull.NoAPI && !backfilled[kind] {
			t.Errorf("provider kind %s has an API but no backfill source: list its package in cmd/tidemark/sources.go", kind)
		}
	}
}

package main

// The sources backfill reads, each registered from its package's init
// (internal/backfill.Register): add a source's package here.
import (
	_ "github.com/tidemark/tidemark/internal/pull/hubspot"
	_ "github.com/tidemark/tidemark/internal/pull/salesforce"
)

package main

import (
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/web"
)

// servicesOf returns every service the web surfaces call, all implemented
// by store.
func servicesOf(store *postgres.Store) web.Services {
	return web.Services{Ingest: store, Access: store, Operators: store, Providers: store, Tokens: store,
		Events: store, Stats: store, Records: store, Conflicts: store, People: store, Audit: store,
		Reconciliation: store, Deliveries: store, Replays: store,
		Changes: store, Destinations: store, Alerts: store, APICredentials: store, Backfills: store}
}

package ingest

import (
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// deliveriesSQL writes a group's deliveries, one row each, with the time
// of the write (answered_at, the inspector's processing time).
const deliveriesSQL = `
INSERT INTO deliveries (tenant_id, id, received_at, provider_id, status, signature, reason, event_count, body,
                        method, path, query, headers, truncated, client_address, replay_of, source, answered_at)
SELECT d.tenant_id, d.id, d.received_at, d.provider_id, d.status, d.signature, d.reason, d.event_count, d.body,
       d.method, d.path, d.query, d.headers, d.truncated, d.client_address, d.replay_of, d.source, clock_timestamp()
FROM ` + deliveryRowsSQL + ``

// deliveryRows are deliveries as deliveryRowsSQL takes them: one array per
// column, NULL for what a delivery lacks (its request's parts, migration
// 00021).
type deliveryRows struct {
	tenants, providers                      []int64
	ids                                     []string
	times                                   []time.Time
	statuses                                []int16
	signatures                              []string
	reasons, replayOf, sources              []*string
	eventCounts                             []int32
	bodies                                  [][]byte
	methods, paths, queries, headers, hosts []*string
	truncated                               []*bool
}

// deliveryRowsSQL unnests deliveryRows into rows d.
const deliveryRowsSQL = `unnest(@d_tenants::bigint[], @d_ids::uuid[], @d_times::timestamptz[], @d_providers::bigint[],
        @d_statuses::smallint[], @d_signatures::text[], @d_reasons::text[], @d_event_counts::int[], @d_bodies::bytea[],
        @d_methods::text[], @d_paths::text[], @d_queries::text[], @d_headers::jsonb[], @d_truncated::boolean[],
        @d_clients::text[], @d_replay_of::uuid[], @d_sources::text[])
    AS d (tenant_id, id, received_at, provider_id, status, signature, reason, event_count, body,
          method, path, query, headers, truncated, client_address, replay_of, source)`

// add appends d, which carried events events.
func (r *deliveryRows) add(d domain.Delivery, events int) {
	r.tenants, r.ids, r.times, r.providers = append(r.tenants, d.TenantID), append(r.ids, d.ID), append(r.times, d.ReceivedAt), append(r.providers, d.ProviderID)
	r.statuses, r.signatures, r.reasons = append(r.statuses, int16(d.Status)), append(r.signatures, d.Signature), append(r.reasons, pg.NullString(d.Reason))
	r.eventCounts, r.bodies, r.replayOf = append(r.eventCounts, int32(events)), append(r.bodies, d.Body), append(r.replayOf, pg.NullString(d.ReplayOf))
	r.sources = append(r.sources, pg.NullString(d.Source))
	q := d.Request
	var headers *string
	if q.Headers != nil {
		b, _ := json.Marshal(q.Headers)
		headers = pg.NullJSON(b)
	}
	var truncated *bool
	if q.Truncated {
		truncated = &q.Truncated
	}
	r.methods, r.paths, r.queries = append(r.methods, pg.NullString(q.Method)), append(r.paths, pg.NullString(q.Path)), append(r.queries, pg.NullString(q.Query))
	r.headers, r.truncated, r.hosts = append(r.headers, headers), append(r.truncated, truncated), append(r.hosts, pg.NullString(q.ClientAddress))
}

// set puts the arrays into args.
func (r *deliveryRows) set(args pgx.NamedArgs) {
	args["d_tenants"], args["d_ids"], args["d_times"], args["d_providers"] = r.tenants, r.ids, r.times, r.providers
	args["d_statuses"], args["d_signatures"], args["d_reasons"], args["d_event_counts"] = r.statuses, r.signatures, r.reasons, r.eventCounts
	args["d_bodies"], args["d_methods"], args["d_paths"], args["d_queries"] = r.bodies, r.methods, r.paths, r.queries
	args["d_headers"], args["d_truncated"], args["d_clients"], args["d_replay_of"] = r.headers, r.truncated, r.hosts, r.replayOf
	args["d_sources"] = r.sources
}

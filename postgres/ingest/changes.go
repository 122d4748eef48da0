package ingest

import (
	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/changefeed"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// The change feed (postgres/changefeed) gets a row per event the group
// applied, written by the last statement of the group's transaction:
// taking positions from each tenant's head row there holds its lock only
// until commit, so a tenant's transactions receive positions in the order
// they commit. Which events were applied is known only in the database (the
// outcomes come back after the whole batch is sent), so the statement is
// given every event that could have been and keeps those whose accepted
// revision this transaction wrote. A group of several tenants moves each
// one's head by its own changes, locking the heads in tenant order, as
// every group does, so that two groups never wait on each other's heads in
// opposite orders.

// changesSQL writes the group's changes: positions per tenant in arrival
// order, each change's previous revision and snapshot from the record's
// change before it (in this group, else changefeed.PreviousColumns of its
// last in the feed), and changefeed.ChangedFields.
const changesSQL = `
WITH accepted AS (
    SELECT e.i, e.tenant_id, e.provider_id, e.object_type, e.object_id, e.revision, e.event_id, e.delivery_id, a.snapshot,
           CASE WHEN e.property = '` + domain.PropertyDeleted + `' THEN 'record.deleted' ELSE 'record.applied' END AS type
    FROM unnest(@ch_tenant_id::bigint[], @ch_provider_id::bigint[], @ch_object_type::text[], @ch_object_id::text[],
                @ch_revision::bigint[], @ch_property::text[], @ch_event_id::text[], @ch_delivery_id::uuid[])
      WITH ORDINALITY AS e (tenant_id, provider_id, object_type, object_id, revision, property, event_id, delivery_id, i)
    JOIN LATERAL (SELECT a.snapshot FROM accepted_revisions a
                  WHERE a.tenant_id = e.tenant_id AND a.provider_id = e.provider_id
                    AND a.object_type = e.object_type AND a.object_id = e.object_id AND a.revision = e.revision
                    AND a.property IS NOT DISTINCT FROM e.property
                    AND a.event_id = e.event_id AND a.delivery_id = e.delivery_id
                  LIMIT 1) a ON true
), counts AS (
    SELECT tenant_id, count(*) AS n FROM accepted GROUP BY tenant_id
), head AS (
    INSERT INTO change_heads AS h (tenant_id, position)
    SELECT tenant_id, n FROM counts ORDER BY tenant_id
    ON CONFLICT (tenant_id) DO UPDATE SET position = h.position + EXCLUDED.position
    RETURNING h.tenant_id, h.position
), numbered AS (
    SELECT a.*, head.position - counts.n + row_number() OVER (PARTITION BY a.tenant_id ORDER BY a.i) AS position,
           lag(a.i) OVER w AS before_i, lag(a.revision) OVER w AS before_revision, lag(a.snapshot) OVER w AS before_snapshot
    FROM accepted a JOIN counts ON counts.tenant_id = a.tenant_id JOIN head ON head.tenant_id = a.tenant_id
    WINDOW w AS (PARTITION BY a.tenant_id, a.provider_id, a.object_type, a.object_id ORDER BY a.i)
), previous AS (
    SELECT n.*, CASE WHEN n.before_i IS NOT NULL THEN n.before_revision ELSE s.revision END AS previous_revision,
                CASE WHEN n.before_i IS NOT NULL THEN n.before_snapshot ELSE s.snapshot END AS previous_snapshot
    FROM numbered n
    LEFT JOIN LATERAL (
        SELECT ` + changefeed.PreviousColumns + `
        FROM changes c
        WHERE c.tenant_id = n.tenant_id AND c.provider_id = n.provider_id
          AND c.object_type = n.object_type AND c.object_id = n.object_id
        ORDER BY c.position DESC LIMIT 1) s ON n.before_i IS NULL
)
INSERT INTO changes (tenant_id, position, type, provider_id, object_type, object_id, revision, previous_revision,
                     changed, snapshot, event_id, delivery_id, committed_at)
SELECT tenant_id, position, type, provider_id, object_type, object_id, revision, previous_revision,
       ` + changefeed.ChangedFields + `,
       snapshot, event_id, delivery_id, clock_timestamp()
FROM previous`

// changesOneTenantSQL is changesSQL for a group of one tenant, @tenant, as
// on Citus (lanes.go): the tenant a constant in every statement, and its one
// head row moved by one INSERT. changesSQL's joins of its head and counts
// by tenant cost Citus 600-2,100 ms a statement, against under 40 ms for
// this one (the coordinator's log, one delivery at a time).
const changesOneTenantSQL = `
WITH accepted AS (
    SELECT e.i, e.provider_id, e.object_type, e.object_id, e.revision, e.event_id, e.delivery_id, a.snapshot,
           CASE WHEN e.property = '` + domain.PropertyDeleted + `' THEN 'record.deleted' ELSE 'record.applied' END AS type
    FROM unnest(@ch_provider_id::bigint[], @ch_object_type::text[], @ch_object_id::text[], @ch_revision::bigint[],
                @ch_property::text[], @ch_event_id::text[], @ch_delivery_id::uuid[])
      WITH ORDINALITY AS e (provider_id, object_type, object_id, revision, property, event_id, delivery_id, i)
    JOIN LATERAL (SELECT a.snapshot FROM accepted_revisions a
                  WHERE a.tenant_id = @tenant::bigint AND a.provider_id = e.provider_id AND a.object_type = e.object_type
                    AND a.object_id = e.object_id AND a.revision = e.revision
                    AND a.property IS NOT DISTINCT FROM e.property
                    AND a.event_id = e.event_id AND a.delivery_id = e.delivery_id
                  LIMIT 1) a ON true
), head AS (
    INSERT INTO change_heads AS h (tenant_id, position)
    SELECT @tenant::bigint, count(*) FROM accepted HAVING count(*) > 0
    ON CONFLICT (tenant_id) DO UPDATE SET position = h.position + EXCLUDED.position
    RETURNING h.position - (SELECT count(*) FROM accepted) AS base
), numbered AS (
    SELECT a.*, head.base + row_number() OVER (ORDER BY a.i) AS position,
           lag(a.i) OVER w AS before_i, lag(a.revision) OVER w AS before_revision, lag(a.snapshot) OVER w AS before_snapshot
    FROM accepted a, head
    WINDOW w AS (PARTITION BY a.provider_id, a.object_type, a.object_id ORDER BY a.i)
), previous AS (
    SELECT n.*, CASE WHEN n.before_i IS NOT NULL THEN n.before_revision ELSE s.revision END AS previous_revision,
                CASE WHEN n.before_i IS NOT NULL THEN n.before_snapshot ELSE s.snapshot END AS previous_snapshot
    FROM numbered n
    LEFT JOIN LATERAL (
        SELECT ` + changefeed.PreviousColumns + `
        FROM changes c
        WHERE c.tenant_id = @tenant::bigint AND c.provider_id = n.provider_id AND c.object_type = n.object_type
          AND c.object_id = n.object_id
        ORDER BY c.position DESC LIMIT 1) s ON n.before_i IS NULL
)
INSERT INTO changes (tenant_id, position, type, provider_id, object_type, object_id, revision, previous_revision,
                     changed, snapshot, event_id, delivery_id, committed_at)
SELECT @tenant::bigint, position, type, provider_id, object_type, object_id, revision, previous_revision,
       ` + changefeed.ChangedFields + `,
       snapshot, event_id, delivery_id, clock_timestamp()
FROM previous`

// changeCandidate names an event that may become a change.
type changeCandidate struct {
	tenantID, providerID                int64
	objectType, objectID, property, eid string
	deliveryID                          string
	revision                            int64
}

// changeArgs are changesSQL's parameters for the events of a group of
// tenants' deliveries, in arrival order: those that claim a key and carry
// a revision, and the group's first tenant (its only one on Citus). Of
// identical events of one delivery at most one can apply, and only one is
// named, so that the accepted revision it wrote counts once. ok is false
// when no event could become a change.
func changeArgs(tenant int64, events []roundEvent) (args pgx.NamedArgs, ok bool) {
	seen := map[changeCandidate]bool{}
	var (
		tenantID, providerID                      []int64
		objectType, objectID, eventID, deliveryID []string
		property                                  []*string
		revision                                  []int64
	)
	for _, ev := range events {
		e := ev.e
		if ev.key == nil || e.Revision == nil || ev.lead() != nil {
			continue
		}
		c := changeCandidate{ev.job.p.TenantID, ev.job.p.ID, e.Scope.ObjectType, e.ObjectID, e.Property, e.EventID, ev.job.d.ID, *e.Revision}
		if seen[c] {
			continue
		}
		seen[c] = true
		tenantID, providerID = append(tenantID, c.tenantID), append(providerID, c.providerID)
		objectType, objectID = append(objectType, c.objectType), append(objectID, c.objectID)
		property, eventID = append(property, pg.NullString(c.property)), append(eventID, c.eid)
		deliveryID, revision = append(deliveryID, c.deliveryID), append(revision, c.revision)
	}
	return pgx.NamedArgs{"tenant": tenant, "ch_tenant_id": tenantID, "ch_provider_id": providerID, "ch_object_type": objectType,
		"ch_object_id": objectID, "ch_revision": revision, "ch_property": property, "ch_event_id": eventID,
		"ch_delivery_id": deliveryID}, len(providerID) > 0
}

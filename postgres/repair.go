package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/postgres/changefeed"
	"github.com/tidemark/tidemark/postgres/ingest"
	"github.com/tidemark/tidemark/postgres/internal/pg"
	"github.com/tidemark/tidemark/postgres/queuecheck"
	"github.com/tidemark/tidemark/postgres/search"
)

// Record repair: an owner's reset and erase of a record, and erase of a
// lead. Each runs in one transaction with its audit entry.

// repairLockSQL locks the record, so that an event applying to it waits
// for the repair (and a repair for the event).
const repairLockSQL = `
SELECT r.provider_id, r.revision FROM records r JOIN providers p ON p.tenant_id = r.tenant_id AND p.id = r.provider_id
WHERE r.tenant_id = @tenant_id AND p.name = @provider AND r.object_type = @object_type AND r.object_id = @object_id
FOR UPDATE OF r`

// repairLockByIDSQL is repairLockSQL for a provider known by its id.
const repairLockByIDSQL = `
SELECT revision FROM records
WHERE tenant_id = @tenant_id AND provider_id = @provider_id AND object_type = @object_type AND object_id = @object_id
FOR UPDATE`

// resetSQL forgets the revision, each property's and the deletion's. -1 is
// domain.ForgottenRevision.
const resetSQL = `
UPDATE records r SET revision = -1, property_revisions = '{}', deleted_revision = NULL, reset_at = now()
WHERE r.tenant_id = @tenant_id AND r.provider_id = @provider_id AND r.object_type = @object_type AND r.object_id = @object_id`

// markBeforeResetSQL marks the record's accepted revisions as accepted
// before its reset, for reconciliation and history retention, which then
// compare the record only with the revisions accepted since. It runs after
// repairLockSQL, as a statement of its own: its snapshot then sees every
// application that committed before the lock was granted, and any later
// one waits for the reset to commit and stays unmarked. A mark, not an id
// bound: on Citus ids are not in the order rows were written.
const markBeforeResetSQL = `
UPDATE accepted_revisions SET before_reset = true
WHERE tenant_id = @tenant_id AND provider_id = @provider_id AND object_type = @object_type AND object_id = @object_id
  AND NOT before_reset`

// ResetRecord implements domain.RecordService.
func (s *records) ResetRecord(ctx context.Context, tenantID int64, ref domain.RecordRef) (domain.Record, error) {
	h, err := s.ids.Hasher(ctx)
	if err != nil {
		return domain.Record{}, err
	}
	args := refArgs(tenantID, ref)
	err = pg.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		var providerID, revision int64
		err := tx.QueryRow(ctx, repairLockSQL, args).Scan(&providerID, &revision)
		if errors.Is(err, pgx.ErrNoRows) {
			return recordNotFound(ref)
		}
		if err != nil {
			return err
		}
		args["provider_id"] = providerID
		for _, sql := range []string{resetSQL, markBeforeResetSQL} {
			if _, err := tx.Exec(ctx, sql, args); err != nil {
				return err
			}
		}
		was := "revision " + strconv.FormatInt(revision, 10) + " forgotten"
		if revision == domain.ForgottenRevision {
			was = "revision already forgotten"
		}
		if err := pg.Audit(ctx, tx, tenantID, domain.ActionRecordReset, ref.AuditTarget(h), was); err != nil {
			return err
		}
		return changefeed.Append(ctx, tx, tenantID, changefeed.Owned{Type: stream.ChangeReset, ProviderID: providerID, ObjectType: ref.ObjectType, ObjectID: ref.ObjectID})
	})
	if err != nil {
		return domain.Record{}, pg.Translate(err)
	}
	return s.Record(ctx, tenantID, ref)
}

// The erase statements name their events by eraseFilter: a record's (one
// provider, object type and id), or a lead's (the signups naming an email,
// in every provider: @provider_id NULL, @action 'signup').
const eraseFilter = `tenant_id = @tenant_id AND (@provider_id::bigint IS NULL OR provider_id = @provider_id)
    AND object_type = @object_type AND object_id = @object_id AND (@action::text IS NULL OR action = @action)`

// eraseBodiesSQL removes the stored bodies of the deliveries that carried
// the erased events: NULL when every event of the delivery is one of them,
// otherwise domain.ErasedBody (the body cannot be split by kind here; the
// other events keep their own raw payloads in the log).
const eraseBodiesSQL = `
WITH mine AS (
    SELECT DISTINCT received_at, delivery_id FROM events WHERE ` + eraseFilter + `
)
UPDATE deliveries d SET body = CASE WHEN EXISTS (
        SELECT FROM events o
        WHERE o.tenant_id = d.tenant_id AND o.received_at = d.received_at AND o.delivery_id = d.id
          AND NOT ((@provider_id::bigint IS NULL OR o.provider_id = @provider_id) AND o.object_type = @object_type
                   AND o.object_id IS NOT DISTINCT FROM @object_id AND (@action::text IS NULL OR o.action = @action)))
    THEN @erased_body::bytea END
FROM mine
WHERE d.tenant_id = @tenant_id AND d.received_at = mine.received_at AND d.id = mine.delivery_id
  AND d.body IS DISTINCT FROM @erased_body::bytea AND d.body IS NOT NULL`

// eraseKeysSQL empties the identifiers of the erased events' idempotency
// claims (a fields rule builds them from the snapshot); the key itself is
// a hash, and keeps a redelivery a duplicate until its TTL.
const eraseKeysSQL = `
UPDATE idempotency_keys k SET identifier = ''
WHERE k.tenant_id = @tenant_id AND k.identifier <> ''
  AND (k.provider_id, k.delivery_id, k.seq) IN (SELECT provider_id, delivery_id, seq FROM events WHERE ` + eraseFilter + `)`

// eraseEventsSQL keeps each outcome row and drops its content. For a lead
// the object id is the email, so it goes too, with a reason quoting it.
const eraseEventsSQL = `
UPDATE events SET snapshot = NULL, payload = NULL,
    object_id = CASE WHEN @forget_id THEN NULL ELSE object_id END,
    reason = CASE WHEN @forget_id AND strpos(reason, @object_id) > 0 THEN 'erased' ELSE reason END
WHERE ` + eraseFilter + ` AND (payload IS NOT NULL OR snapshot IS NOT NULL OR @forget_id)`

// eraseEventSearchSQL removes the words of the erased events, under
// search.EventLockSQL so that no pass of IndexSearch puts them back. The
// log's record index finds them, so it runs before eraseEventsSQL changes
// the events.
const eraseEventSearchSQL = `DELETE FROM event_search WHERE tenant_id = @tenant_id AND (received_at, delivery_id, seq) IN (
    SELECT received_at, delivery_id, seq FROM events WHERE ` + eraseFilter + `)`

const eraseRevisionsSQL = `DELETE FROM accepted_revisions WHERE tenant_id = @tenant_id AND provider_id = @provider_id
    AND object_type = @object_type AND object_id = @object_id`

// eraseConflictsSQL empties both snapshots; an open conflict is closed,
// as nothing is left to choose between.
const eraseConflictsSQL = `
UPDATE conflicts SET accepted_snapshot = '{}', conflicting_snapshot = '{}',
    note = CASE WHEN status = 'open' THEN 'closed: the record was erased' ELSE note END,
    resolved_by = coalesce(resolved_by, @actor), resolved_at = coalesce(resolved_at, @now::timestamptz),
    status = CASE WHEN status = 'open' THEN '` + domain.ConflictKept + `' ELSE status END
WHERE tenant_id = @tenant_id AND provider_id = @provider_id AND object_type = @object_type AND object_id = @object_id`

const (
	eraseRecordSQL = `DELETE FROM records WHERE tenant_id = @tenant_id AND provider_id = @provider_id
    AND object_type = @object_type AND object_id = @object_id`
	// The record is gone, so is the count of its pruned revisions
	// (reconciliation's application_count).
	erasePrunedSQL = `DELETE FROM pruned_revisions WHERE tenant_id = @tenant_id AND provider_id = @provider_id
    AND object_type = @object_type AND object_id = @object_id`
	erasePersonSQL    = `DELETE FROM people WHERE tenant_id = @tenant_id AND email = @object_id`
	repairProviderSQL = `SELECT id FROM providers WHERE tenant_id = @tenant_id AND name = @provider`
)

// EraseRecord implements domain.RecordService.
func (s *records) EraseRecord(ctx context.Context, tenantID int64, ref domain.RecordRef) (domain.Erasure, error) {
	var e domain.Erasure
	h, err := s.ids.Hasher(ctx)
	if err != nil {
		return e, err
	}
	err = pg.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		var providerID int64
		err := tx.QueryRow(ctx, repairProviderSQL, refArgs(tenantID, ref)).Scan(&providerID)
		if errors.Is(err, pgx.ErrNoRows) {
			return recordNotFound(ref)
		}
		if err != nil {
			return err
		}
		if e, err = eraseRecordIn(ctx, tx, h, tenantID, providerID, ref); err != nil {
			return err
		}
		if e.Records == 0 && e.Events == 0 {
			return recordNotFound(ref)
		}
		return pg.Audit(ctx, tx, tenantID, domain.ActionRecordErase, ref.AuditTarget(h), erasureSummary(e))
	})
	return e, pg.Translate(err)
}

// eraseRecordIn erases the record of the provider in tx, with its
// events, their delivery bodies and the bodies that name it, and appends
// its record.erased change; the caller audits. A provider's removal with
// --erase runs it for each of its records.
func eraseRecordIn(ctx context.Context, tx pgx.Tx, h domain.IDHasher, tenantID, providerID int64, ref domain.RecordRef) (domain.Erasure, error) {
	var e domain.Erasure
	args := refArgs(tenantID, ref)
	args["action"], args["forget_id"], args["erased_body"] = nil, false, []byte(domain.ErasedBody)
	args["provider_id"] = providerID
	var err error
	if args["now"], err = pg.Now(ctx, tx); err != nil { // Citus takes no now() in a coalesce
		return e, err
	}
	if _, err := tx.Exec(ctx, repairLockByIDSQL, args); err != nil {
		return e, err
	}
	if a, ok := domain.ActorFrom(ctx); ok {
		args["actor"] = a.Name
	}
	if err := eraseContent(ctx, tx, args, &e); err != nil {
		return e, err
	}
	bodies, _, err := eraseMentions(ctx, tx, args, ref.ObjectID, false)
	if err != nil {
		return e, err
	}
	e.Bodies += bodies
	if err := queuecheck.WriteTombstone(ctx, tx, tenantID, h.RecordErasureKey(tenantID, providerID, ref.ObjectType, ref.ObjectID)); err != nil {
		return e, err
	}
	for _, st := range []struct {
		sql string
		n   *int64
	}{{eraseRevisionsSQL, &e.Revisions}, {eraseConflictsSQL, &e.Conflicts}, {eraseRecordSQL, &e.Records}, {erasePrunedSQL, nil}} {
		tag, err := tx.Exec(ctx, st.sql, args)
		if err != nil {
			return e, err
		}
		if st.n != nil {
			*st.n = tag.RowsAffected()
		}
	}
	if e.Records == 0 && e.Events == 0 {
		return e, nil
	}
	return e, changefeed.Append(ctx, tx, tenantID, changefeed.Owned{Type: stream.ChangeErased, ProviderID: providerID, ObjectType: ref.ObjectType, ObjectID: ref.ObjectID})
}

// EraseLead implements domain.RecordService. The audit entry names the
// lead by nothing personal: its target is "lead".
func (s *records) EraseLead(ctx context.Context, tenantID int64, email string) (domain.Erasure, error) {
	var e domain.Erasure
	h, err := s.ids.Hasher(ctx)
	if err != nil {
		return e, err
	}
	email = domain.NormalizeEmail(email)
	objectType, action, _ := strings.Cut(domain.LeadSignupType, ".")
	args := pgx.NamedArgs{"tenant_id": tenantID, "provider_id": nil, "object_type": objectType,
		"object_id": email, "action": action, "forget_id": true, "erased_body": []byte(domain.ErasedBody)}
	err = pg.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		// The signup's locks (domain.LeadLockKeys): a signup of this email
		// in flight finishes first, or starts after the erase.
		if _, err := tx.Exec(ctx, ingest.LeadLockSQL.SQL, ingest.LeadLockSQL.Args(pgx.NamedArgs{
			"key": domain.LeadLockKeys(tenantID, domain.Lead{Email: email})[0]})...); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, erasePersonSQL, args)
		if err != nil {
			return err
		}
		e.People = tag.RowsAffected()
		if err := eraseContent(ctx, tx, args, &e); err != nil {
			return err
		}
		bodies, events, err := eraseMentions(ctx, tx, args, email, true)
		if err != nil {
			return err
		}
		e.Bodies, e.Events = e.Bodies+bodies, e.Events+events
		if err := queuecheck.WriteTombstone(ctx, tx, tenantID, h.LeadErasureKey(tenantID, email)); err != nil {
			return err
		}
		if e.People == 0 && e.Events == 0 {
			return pg.NotFound("no person and no lead signup with this email")
		}
		return pg.Audit(ctx, tx, tenantID, domain.ActionLeadErase, "lead", erasureSummary(e))
	})
	return e, pg.Translate(err)
}

// eraseContent removes the events' content: the delivery bodies first,
// while the events still say which deliveries carried them.
func eraseContent(ctx context.Context, tx pgx.Tx, args pgx.NamedArgs, e *domain.Erasure) error {
	tag, err := tx.Exec(ctx, eraseBodiesSQL, args)
	if err != nil {
		return fmt.Errorf("erase delivery bodies: %w", err)
	}
	e.Bodies = tag.RowsAffected()
	if _, err := tx.Exec(ctx, eraseKeysSQL, args); err != nil {
		return fmt.Errorf("erase idempotency identifiers: %w", err)
	}
	if _, err := tx.Exec(ctx, search.EventLockSQL); err != nil {
		return fmt.Errorf("wait for the search index: %w", err)
	}
	if _, err := tx.Exec(ctx, eraseEventSearchSQL, args); err != nil {
		return fmt.Errorf("erase the events' words: %w", err)
	}
	if _, err := tx.Exec(ctx, search.EraseLeadSQL, args); err != nil {
		return fmt.Errorf("erase the lead from the directory: %w", err)
	}
	if tag, err = tx.Exec(ctx, eraseEventsSQL, args); err != nil {
		return fmt.Errorf("erase events: %w", err)
	}
	e.Events = tag.RowsAffected()
	return nil
}

// erasureSummary says how much was erased, never what.
func erasureSummary(e domain.Erasure) string {
	s := fmt.Sprintf("%d events, %d accepted revisions, %d conflicts, %d delivery bodies", e.Events, e.Revisions, e.Conflicts, e.Bodies)
	if e.People > 0 {
		s = fmt.Sprintf("%d people; ", e.People) + s
	}
	return s
}

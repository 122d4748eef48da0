package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// A provider's removal (issue 49). The row stays, renamed "NAME (removed)"
// (migration 00063 lets only a removed provider have such a name), so that
// its history keeps its foreign keys and shows what it came from, while
// the webhook URL, which looks the provider up by name, finds nothing and
// a new provider may take the name. Every key keeps its tenant_id.

const (
	lockRemovableSQL = `SELECT name FROM providers WHERE tenant_id = @tenant_id AND id = @provider_id AND removed_at IS NULL FOR UPDATE`
	readRemovableSQL = `SELECT name FROM providers WHERE tenant_id = @tenant_id AND id = @provider_id AND removed_at IS NULL`

	// removalCountsSQL counts what a removal deletes and what it keeps.
	removalCountsSQL = `
SELECT (SELECT count(*) FROM provider_secrets WHERE tenant_id = @tenant_id AND provider_id = @provider_id),
       (SELECT count(*) FROM provider_api_credentials WHERE tenant_id = @tenant_id AND provider_id = @provider_id),
       (SELECT count(*) FROM cdc_streams WHERE tenant_id = @tenant_id AND provider_id = @provider_id),
       (SELECT count(*) FROM app_installs WHERE tenant_id = @tenant_id AND provider_id = @provider_id),
       (SELECT count(*) FROM backfill_jobs WHERE tenant_id = @tenant_id AND provider_id = @provider_id AND state IN ('queued', 'running')),
       (SELECT count(*) FROM records WHERE tenant_id = @tenant_id AND provider_id = @provider_id),
       (SELECT count(*) FROM deliveries WHERE tenant_id = @tenant_id AND provider_id = @provider_id),
       (SELECT count(*) FROM events WHERE tenant_id = @tenant_id AND provider_id = @provider_id)`

	// The app installs first: app_installs is a Citus reference table.
	removeInstallsSQL    = `DELETE FROM app_installs WHERE tenant_id = @tenant_id AND provider_id = @provider_id`
	removeSecretsSQL     = `DELETE FROM provider_secrets WHERE tenant_id = @tenant_id AND provider_id = @provider_id`
	removeCredentialsSQL = `DELETE FROM provider_api_credentials WHERE tenant_id = @tenant_id AND provider_id = @provider_id`
	removeCDCSQL         = `DELETE FROM cdc_streams WHERE tenant_id = @tenant_id AND provider_id = @provider_id`
	// removeBackfillsSQL cancels as CancelBackfill does: a queued job at
	// once, a running one at its node's next report.
	removeBackfillsSQL = `
UPDATE backfill_jobs j SET cancel_requested = true,
    state = CASE WHEN j.state = 'queued' THEN 'cancelled' ELSE j.state END,
    finished_at = CASE WHEN j.state = 'queued' THEN @now::timestamptz ELSE j.finished_at END
WHERE j.tenant_id = @tenant_id AND j.provider_id = @provider_id AND j.state IN ('queued', 'running')`

	removedNameTakenSQL = `SELECT EXISTS (SELECT FROM providers WHERE tenant_id = @tenant_id AND name = @name)`
	markRemovedSQL      = `UPDATE providers SET name = @name, removed_at = @now WHERE tenant_id = @tenant_id AND id = @provider_id`

	// erasableObjectsSQL is every object of the provider with a record or
	// an event that still has content.
	erasableObjectsSQL = `
SELECT object_type, object_id FROM records WHERE tenant_id = @tenant_id AND provider_id = @provider_id
UNION
SELECT object_type, object_id FROM events
WHERE tenant_id = @tenant_id AND provider_id = @provider_id AND object_id IS NOT NULL
  AND (payload IS NOT NULL OR snapshot IS NOT NULL)`
	// eraseProviderBodiesSQL removes every body the provider's deliveries
	// kept, those of events without an object and refused ones too.
	eraseProviderBodiesSQL = `UPDATE deliveries SET body = NULL
WHERE tenant_id = @tenant_id AND provider_id = @provider_id AND body IS NOT NULL`
)

// ProviderRemoval implements domain.ProviderRemover.
func (s *providers) ProviderRemoval(ctx context.Context, tenantID, providerID int64) (domain.ProviderRemoval, error) {
	var r domain.ProviderRemoval
	err := pg.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		return removalCounts(ctx, tx, readRemovableSQL, tenantID, providerID, &r)
	})
	return r, pg.Translate(err)
}

// removalCounts reads the provider (by lock, which locks or reads it) and
// counts what its removal concerns.
func removalCounts(ctx context.Context, tx pgx.Tx, lock string, tenantID, providerID int64, r *domain.ProviderRemoval) error {
	args := pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID}
	err := tx.QueryRow(ctx, lock, args).Scan(&r.Name)
	if errors.Is(err, pgx.ErrNoRows) {
		return pg.NotFound("provider not found")
	}
	if err != nil {
		return err
	}
	return tx.QueryRow(ctx, removalCountsSQL, args).Scan(&r.Secrets, &r.Credentials, &r.CDCStreams, &r.Installs,
		&r.Backfills, &r.Records, &r.Deliveries, &r.Events)
}

// RemoveProvider implements domain.ProviderRemover.
func (s *providers) RemoveProvider(ctx context.Context, tenantID, providerID int64, erase bool) (domain.ProviderRemoval, error) {
	var r domain.ProviderRemoval
	h, err := s.ids.Hasher(ctx)
	if err != nil {
		return r, err
	}
	err = pg.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		if err := removalCounts(ctx, tx, lockRemovableSQL, tenantID, providerID, &r); err != nil {
			return err
		}
		now, err := pg.Now(ctx, tx)
		if err != nil {
			return err
		}
		args := pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID, "now": now}
		for _, sql := range []string{removeInstallsSQL, removeSecretsSQL, removeCredentialsSQL, removeCDCSQL, removeBackfillsSQL} {
			if _, err := tx.Exec(ctx, sql, args); err != nil {
				return err
			}
		}
		if erase {
			e, err := eraseProvider(ctx, tx, h, tenantID, providerID, r.Name)
			if err != nil {
				return err
			}
			r.Erased = &e
		}
		if r.RemovedAs, err = removedName(ctx, tx, tenantID, r.Name); err != nil {
			return err
		}
		args["name"] = r.RemovedAs
		if _, err := tx.Exec(ctx, markRemovedSQL, args); err != nil {
			return err
		}
		if err := pg.Audit(ctx, tx, tenantID, domain.AuditProviderDelete, r.Name, removalSummary(r)); err != nil {
			return err
		}
		return pg.NotifyEndpoints(ctx, tx, tenantID)
	})
	return r, pg.Translate(err)
}

// removedName is the first of "NAME (removed)", "NAME (removed 2)", ...
// that no provider of the tenant has.
func removedName(ctx context.Context, tx pgx.Tx, tenantID int64, name string) (string, error) {
	for n := 1; ; n++ {
		candidate := name + " (removed)"
		if n > 1 {
			candidate = name + " (removed " + strconv.Itoa(n) + ")"
		}
		var taken bool
		if err := tx.QueryRow(ctx, removedNameTakenSQL, pgx.NamedArgs{"tenant_id": tenantID, "name": candidate}).Scan(&taken); err != nil {
			return "", err
		}
		if !taken {
			return candidate, nil
		}
	}
}

// eraseProvider erases each object of the provider as EraseRecord does,
// after removing every body its deliveries kept (so that the erasure of
// each record finds no body left to scan).
func eraseProvider(ctx context.Context, tx pgx.Tx, h domain.IDHasher, tenantID, providerID int64, name string) (domain.Erasure, error) {
	var total domain.Erasure
	args := pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID}
	tag, err := tx.Exec(ctx, eraseProviderBodiesSQL, args)
	if err != nil {
		return total, fmt.Errorf("erase the provider's delivery bodies: %w", err)
	}
	total.Bodies = tag.RowsAffected()
	rows, err := tx.Query(ctx, erasableObjectsSQL, args)
	if err != nil {
		return total, err
	}
	refs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.RecordRef, error) {
		ref := domain.RecordRef{Provider: name}
		return ref, row.Scan(&ref.ObjectType, &ref.ObjectID)
	})
	if err != nil {
		return total, err
	}
	for _, ref := range refs {
		e, err := eraseRecordIn(ctx, tx, h, tenantID, providerID, ref)
		if err != nil {
			return total, err
		}
		total.Records += e.Records
		total.Revisions += e.Revisions
		total.Events += e.Events
		total.Conflicts += e.Conflicts
		total.Bodies += e.Bodies
	}
	return total, nil
}

// removalSummary is the audit entry's: what was deleted, and what was
// erased or kept, in counts.
func removalSummary(r domain.ProviderRemoval) string {
	s := fmt.Sprintf("removed as %q: deleted %s, %d API credentials, %d CDC streams, %s; cancelled %s; ", r.RemovedAs,
		plural(r.Secrets, "signing secret"), r.Credentials, r.CDCStreams, plural(r.Installs, "app install"), plural(r.Backfills, "backfill"))
	if r.Erased != nil {
		return s + fmt.Sprintf("erased %d records, ", r.Erased.Records) + erasureSummary(*r.Erased)
	}
	return s + fmt.Sprintf("history kept: %d records, %d deliveries, %d events", r.Records, r.Deliveries, r.Events)
}

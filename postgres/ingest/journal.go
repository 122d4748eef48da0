package ingest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// The cursors of the installs' journals (migration 00056,
// domain.JournalService). A page's delivery and its offset's move commit
// together (ingestMoving): the move is a compare-and-set on the offset the
// page was read after, so that of two nodes reading one page, the second
// rolls back.

// leaseJournalSQL creates the cursor when missing and takes its lease when
// free, expired or already the holder's; no row when another holds it.
// @now is the database's clock (Citus takes no now() in an ON CONFLICT's
// WHERE), so that every node's leases are timed by one clock.
var leaseJournalSQL = pg.Named(`
INSERT INTO app_journal_cursors AS c (tenant_id, install_id, leased_by, lease_until)
VALUES (@tenant_id, @install_id, @holder, @now::timestamptz + make_interval(secs => @ttl_seconds::float8))
ON CONFLICT (tenant_id, install_id) DO UPDATE SET leased_by = EXCLUDED.leased_by, lease_until = EXCLUDED.lease_until
WHERE c.lease_until IS NULL OR c.lease_until < @now::timestamptz OR c.leased_by = EXCLUDED.leased_by
RETURNING coalesce(c.journal_offset, ''), c.moved_at, c.entries_read, c.found_missed, c.expirations, c.expired_at`)

// releaseJournalSQL gives a holder's lease back.
var releaseJournalSQL = pg.Named(`
UPDATE app_journal_cursors SET leased_by = NULL, lease_until = NULL
WHERE tenant_id = @tenant_id AND install_id = @install_id AND leased_by = @holder`)

// moveJournalSQL moves the offset from the one the page was read after.
var moveJournalSQL = pg.Named(`
UPDATE app_journal_cursors SET journal_offset = @to, moved_at = now(),
    entries_read = entries_read + @entries, found_missed = found_missed + @applied
WHERE tenant_id = @tenant_id AND install_id = @install_id AND journal_offset IS NOT DISTINCT FROM @from::text`)

// restartJournalSQL clears an expired offset and counts the expiry.
var restartJournalSQL = pg.Named(`
UPDATE app_journal_cursors SET journal_offset = NULL, moved_at = now(), expirations = expirations + 1,
    expired_at = now(), found_missed = found_missed + @found_missed
WHERE tenant_id = @tenant_id AND install_id = @install_id AND journal_offset IS NOT DISTINCT FROM @from::text`)

// LeaseJournal implements domain.JournalService.
func (w *Writer) LeaseJournal(ctx context.Context, tenantID, installID int64, holder string, ttl time.Duration) (domain.JournalCursor, bool, error) {
	c := domain.JournalCursor{TenantID: tenantID, InstallID: installID}
	var moved, expired *time.Time
	now, err := pg.Now(ctx, w.pool)
	if err != nil {
		return c, false, err
	}
	err = w.pool.QueryRow(ctx, leaseJournalSQL.SQL, leaseJournalSQL.Args(pgx.NamedArgs{"tenant_id": tenantID,
		"install_id": installID, "holder": holder, "now": now, "ttl_seconds": ttl.Seconds()})...).
		Scan(&c.Offset, &moved, &c.EntriesRead, &c.FoundMissed, &c.Expirations, &expired)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, false, nil
	}
	if err != nil {
		return c, false, pg.Translate(err)
	}
	if moved != nil {
		c.MovedAt = *moved
	}
	if expired != nil {
		c.ExpiredAt = *expired
	}
	return c, true, nil
}

// ReleaseJournal implements domain.JournalService.
func (w *Writer) ReleaseJournal(ctx context.Context, tenantID, installID int64, holder string) error {
	_, err := w.pool.Exec(ctx, releaseJournalSQL.SQL, releaseJournalSQL.Args(pgx.NamedArgs{"tenant_id": tenantID,
		"install_id": installID, "holder": holder})...)
	return pg.Translate(err)
}

// IngestJournal implements domain.JournalService: the page's delivery and
// the offset's move commit together (ingestMoving).
func (w *Writer) IngestJournal(ctx context.Context, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event, m domain.JournalMove) ([]domain.Result, error) {
	return w.ingestMoving(ctx, d, p, events, cursorMove{stmt: moveJournalSQL,
		args: pgx.NamedArgs{"tenant_id": m.TenantID, "install_id": m.InstallID, "from": pg.NullString(m.From), "to": m.To,
			"entries": m.Entries},
		moved: fmt.Errorf("install %d, page after offset %q: %w", m.InstallID, m.From, domain.ErrJournalMoved)})
}

// RestartJournal implements domain.JournalService.
func (w *Writer) RestartJournal(ctx context.Context, r domain.JournalRestart) error {
	err := pg.WithTx(ctx, w.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, restartJournalSQL.SQL, restartJournalSQL.Args(pgx.NamedArgs{"tenant_id": r.TenantID,
			"install_id": r.InstallID, "from": pg.NullString(r.From), "found_missed": r.FoundMissed})...)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("install %d, expired offset %q: %w", r.InstallID, r.From, domain.ErrJournalMoved)
		}
		return pg.Audit(ctx, tx, r.TenantID, domain.AuditAppJournalExpired, r.Target, r.Summary)
	})
	return pg.Translate(err)
}

package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// A tenant's lifecycle is an admin's (issue 49). Every change is audited
// outside any tenant (tenant 0): a deleted tenant's audit rows stay (the
// log is append-only), and the record of its deletion must outlive it.
const (
	listTenantsSQL  = `SELECT id, slug, name, created_at, max_destinations, archived_at FROM tenants ORDER BY slug`
	lockTenantSQL   = `SELECT id, name, created_at, max_destinations, archived_at FROM tenants WHERE slug = @slug FOR UPDATE`
	renameTenantSQL = `UPDATE tenants SET name = @name WHERE id = @id`
	// archived_at is set from a parameter: Citus evaluates now() on each
	// node of a reference table.
	archiveTenantSQL = `UPDATE tenants SET archived_at = @at::timestamptz WHERE id = @id`
	deleteTenantSQL  = `DELETE FROM tenants WHERE id = @id`

	// tenantTablesSQL lists the tables that hold a tenant_id (partitioned
	// parents, not their partitions), and the foreign keys among them, so
	// that a table is emptied before the tables it refers to. Read from the
	// catalog, a table added later is erased too. The audit log is kept.
	tenantTablesSQL = `
SELECT c.oid::regclass::text,
       coalesce((SELECT array_agg(DISTINCT k.confrelid::regclass::text) FROM pg_constraint k
                 WHERE k.conrelid = c.oid AND k.contype = 'f' AND k.confrelid <> c.oid), '{}')
FROM pg_class c
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped
WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
  AND c.relname NOT IN ('audit_log', 'tenants')
ORDER BY 1`
	// The two templates take a table from tenantTablesSQL, quoted.
	countTenantRowsSQL  = `SELECT count(*) FROM %s WHERE tenant_id = @tenant_id`
	deleteTenantRowsSQL = `DELETE FROM %s WHERE tenant_id = @tenant_id`
	// lockTenantProvidersSQL holds back ingest (its foreign-key checks on
	// providers) until the deletion commits.
	lockTenantProvidersSQL = `SELECT id FROM providers WHERE tenant_id = @tenant_id FOR UPDATE`
)

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func scanTenant(row pgx.CollectableRow) (domain.Tenant, error) {
	var t domain.Tenant
	return t, row.Scan(&t.ID, &t.Slug, &t.Name, &t.CreatedAt, &t.MaxDestinations, &t.ArchivedAt)
}

// Tenants implements domain.TenantLifecycle.
func (s *tenants) Tenants(ctx context.Context) ([]domain.Tenant, error) {
	rows, _ := s.read.Query(ctx, listTenantsSQL)
	ts, err := pgx.CollectRows(rows, scanTenant)
	return ts, pg.Translate(err)
}

// changeTenant runs change on the tenant locked in a transaction, audits
// it at tenant 0 and tells every node's endpoint cache.
func (s *tenants) changeTenant(ctx context.Context, slug string, change func(tx pgx.Tx, t *domain.Tenant) (action, summary string, err error)) (domain.Tenant, error) {
	t := domain.Tenant{Slug: slug}
	err := pg.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, lockTenantSQL, pgx.NamedArgs{"slug": slug}).
			Scan(&t.ID, &t.Name, &t.CreatedAt, &t.MaxDestinations, &t.ArchivedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return pg.NotFound("tenant %q not found", slug)
		}
		if err != nil {
			return err
		}
		action, summary, err := change(tx, &t)
		if err != nil {
			return err
		}
		if err := pg.Audit(ctx, tx, 0, action, "tenant "+slug, summary); err != nil {
			return err
		}
		return pg.NotifyEndpoints(ctx, tx, t.ID)
	})
	return t, pg.Translate(err)
}

// RenameTenant implements domain.TenantLifecycle.
func (s *tenants) RenameTenant(ctx context.Context, slug, name string) (domain.Tenant, error) {
	if err := domain.CheckTenantName(name); err != nil {
		return domain.Tenant{Slug: slug}, err
	}
	return s.changeTenant(ctx, slug, func(tx pgx.Tx, t *domain.Tenant) (string, string, error) {
		was := t.Name
		t.Name = name
		_, err := tx.Exec(ctx, renameTenantSQL, pgx.NamedArgs{"id": t.ID, "name": name})
		return domain.AuditTenantRename, fmt.Sprintf("name %q (was %q)", name, was), err
	})
}

// ArchiveTenant implements domain.TenantLifecycle.
func (s *tenants) ArchiveTenant(ctx context.Context, slug string) (domain.Tenant, error) {
	return s.changeTenant(ctx, slug, func(tx pgx.Tx, t *domain.Tenant) (string, string, error) {
		if t.ArchivedAt != nil {
			return "", "", domain.Errorf(domain.ECONFLICT, "tenant %q is archived already", slug)
		}
		at := time.Now().UTC()
		t.ArchivedAt = &at
		_, err := tx.Exec(ctx, archiveTenantSQL, pgx.NamedArgs{"id": t.ID, "at": at})
		return domain.AuditTenantArchive, "", err
	})
}

// UnarchiveTenant implements domain.TenantLifecycle.
func (s *tenants) UnarchiveTenant(ctx context.Context, slug string) (domain.Tenant, error) {
	return s.changeTenant(ctx, slug, func(tx pgx.Tx, t *domain.Tenant) (string, string, error) {
		if t.ArchivedAt == nil {
			return "", "", domain.Errorf(domain.ECONFLICT, "tenant %q is not archived", slug)
		}
		t.ArchivedAt = nil
		_, err := tx.Exec(ctx, archiveTenantSQL, pgx.NamedArgs{"id": t.ID, "at": nil})
		return domain.AuditTenantUnarchive, "", err
	})
}

// tenantTables returns the tables holding tenant rows, each after every
// table that refers to it, so that deleting in that order breaks no
// foreign key.
func tenantTables(ctx context.Context, q querier) ([]string, error) {
	rows, _ := q.Query(ctx, tenantTablesSQL)
	refs := map[string][]string{}
	var (
		tables []string
		table  string
		to     []string
	)
	if _, err := pgx.ForEachRow(rows, []any{&table, &to}, func() error {
		tables, refs[table] = append(tables, table), slices.Clone(to)
		return nil
	}); err != nil {
		return nil, err
	}
	// Depth-first: a table comes out once every table referring to it has.
	referrers := map[string][]string{}
	for _, t := range tables {
		for _, r := range refs[t] {
			referrers[r] = append(referrers[r], t)
		}
	}
	var (
		order []string
		seen  = map[string]bool{}
		visit func(string)
	)
	visit = func(t string) {
		if seen[t] {
			return
		}
		seen[t] = true
		for _, r := range referrers[t] {
			visit(r)
		}
		order = append(order, t)
	}
	for _, t := range tables {
		visit(t)
	}
	return order, nil
}

// tenantRows counts the tenant's rows in each of tables, leaving out the
// empty ones.
func tenantRows(ctx context.Context, q querier, tenantID int64, tables []string) ([]domain.TableRows, error) {
	var out []domain.TableRows
	for _, t := range tables {
		var n int64
		if err := q.QueryRow(ctx, fmt.Sprintf(countTenantRowsSQL, t), pgx.NamedArgs{"tenant_id": tenantID}).Scan(&n); err != nil {
			return nil, err
		}
		if n > 0 {
			out = append(out, domain.TableRows{Table: t, Rows: n})
		}
	}
	return out, nil
}

// TenantRows implements domain.TenantLifecycle.
func (s *tenants) TenantRows(ctx context.Context, slug string) ([]domain.TableRows, error) {
	t, err := s.Tenant(ctx, slug)
	if err != nil {
		return nil, err
	}
	tables, err := tenantTables(ctx, s.read)
	if err != nil {
		return nil, pg.Translate(err)
	}
	out, err := tenantRows(ctx, s.read, t.ID, tables)
	return out, pg.Translate(err)
}

// DeleteTenant implements domain.TenantLifecycle: one transaction, so no
// one ever sees a half-deleted tenant.
func (s *tenants) DeleteTenant(ctx context.Context, slug string) ([]domain.TableRows, error) {
	var erased []domain.TableRows
	_, err := s.changeTenant(ctx, slug, func(tx pgx.Tx, t *domain.Tenant) (string, string, error) {
		args := pgx.NamedArgs{"tenant_id": t.ID, "id": t.ID}
		if _, err := tx.Exec(ctx, lockTenantProvidersSQL, args); err != nil {
			return "", "", err
		}
		tables, err := tenantTables(ctx, tx)
		if err != nil {
			return "", "", err
		}
		var total int64
		for _, table := range tables {
			tag, err := tx.Exec(ctx, fmt.Sprintf(deleteTenantRowsSQL, table), args)
			if err != nil {
				return "", "", fmt.Errorf("erase %s: %w", table, err)
			}
			if n := tag.RowsAffected(); n > 0 {
				erased, total = append(erased, domain.TableRows{Table: table, Rows: n}), total+n
			}
		}
		if _, err := tx.Exec(ctx, deleteTenantSQL, args); err != nil {
			return "", "", err
		}
		return domain.AuditTenantDelete, fmt.Sprintf("%q: %d rows in %d tables erased", t.Name, total, len(erased)), nil
	})
	return erased, err
}

package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

const (
	createTenantSQL = `INSERT INTO tenants (slug, name) VALUES (@slug, @name) RETURNING id, created_at`
	tenantSQL       = `SELECT id, name, created_at, max_destinations, archived_at FROM tenants WHERE slug = @slug`
	updateTenantSQL = `
UPDATE tenants SET max_destinations = coalesce(@max_destinations::integer, max_destinations)
WHERE slug = @slug
RETURNING id, name, created_at, max_destinations`
)

// CreateTenant creates a tenant; an existing slug is an ECONFLICT error.
func (s *tenants) CreateTenant(ctx context.Context, slug, name string) (domain.Tenant, error) {
	if err := domain.ValidateSlug("tenant", slug); err != nil {
		return domain.Tenant{}, err
	}
	if name == "" {
		name = slug
	}
	if err := domain.CheckTenantName(name); err != nil {
		return domain.Tenant{}, err
	}
	t := domain.Tenant{Slug: slug, Name: name, MaxDestinations: domain.DefaultMaxDestinations}
	err := pg.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, createTenantSQL, pgx.NamedArgs{"slug": slug, "name": name}).Scan(&t.ID, &t.CreatedAt); err != nil {
			return err
		}
		// Audited when an admin creates it in the console, outside any
		// tenant as the rest of the lifecycle; the command line's tenant
		// create, the demo and the test kits are not, as before.
		if a, ok := domain.ActorFrom(ctx); ok && a.Kind != domain.ActorCLI {
			if err := pg.Audit(ctx, tx, 0, domain.AuditTenantCreate, "tenant "+slug, fmt.Sprintf("name %q", name)); err != nil {
				return err
			}
		}
		// Nodes may hold the slug as a cached miss.
		return pg.NotifyEndpoints(ctx, tx, t.ID)
	})
	if pg.UniqueViolation(err) {
		return domain.Tenant{}, domain.Errorf(domain.ECONFLICT, "tenant %q already exists", slug)
	}
	if err != nil {
		return domain.Tenant{}, pg.Translate(err)
	}
	return t, nil
}

// Tenant returns the tenant with that slug, or an ENOTFOUND error.
func (s *tenants) Tenant(ctx context.Context, slug string) (domain.Tenant, error) {
	t := domain.Tenant{Slug: slug}
	err := s.read.QueryRow(ctx, tenantSQL, pgx.NamedArgs{"slug": slug}).Scan(&t.ID, &t.Name, &t.CreatedAt, &t.MaxDestinations, &t.ArchivedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, pg.NotFound("tenant %q not found", slug)
	}
	return t, pg.Translate(err)
}

// UpdateTenant implements domain.TenantService.
func (s *tenants) UpdateTenant(ctx context.Context, slug string, u domain.TenantUpdate) (domain.Tenant, error) {
	t := domain.Tenant{Slug: slug}
	if err := u.Check(); err != nil {
		return t, err
	}
	err := pg.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		var was int
		err := tx.QueryRow(ctx, tenantSQL, pgx.NamedArgs{"slug": slug}).Scan(&t.ID, &t.Name, &t.CreatedAt, &was, &t.ArchivedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return pg.NotFound("tenant %q not found", slug)
		}
		if err != nil {
			return err
		}
		err = tx.QueryRow(ctx, updateTenantSQL, pgx.NamedArgs{"slug": slug, "max_destinations": u.MaxDestinations}).
			Scan(&t.ID, &t.Name, &t.CreatedAt, &t.MaxDestinations)
		if err != nil {
			return err
		}
		return pg.Audit(ctx, tx, t.ID, domain.AuditTenantUpdate, "tenant "+slug,
			fmt.Sprintf("max destinations %d (was %d)", t.MaxDestinations, was))
	})
	return t, pg.Translate(err)
}

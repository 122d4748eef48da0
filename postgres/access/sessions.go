// Package access is who may do what: operators, their memberships and
// lifecycle, sign-in and sessions, and the API tokens of tenants.
package access

import (
	"context"
	"errors"
	"time"

	"github.com/alexedwards/scs/pgxstore"
	"github.com/alexedwards/scs/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// db is the pools the services of the package share.
type db struct {
	pool *pgxpool.Pool // writes
	read *pgxpool.Pool // reads and sign-ins
	// addressChecks is the sign-in limit of an address over all accounts:
	// domain.MaxLoginChecksAddress, lowered by tests that reach it.
	addressChecks int
	ids           *pg.IDHashes // name refused sign-ins in the audit log
}

// The services.
type (
	Users    struct{ *db } // operators, their lifecycle and memberships
	Sessions struct{ *db } // sign-in, sessions, the tenants an operator sees
	Tokens   struct{ *db } // API tokens
)

// New returns the services on pools; ids names refused sign-ins.
func New(pools pg.Pools, ids *pg.IDHashes) (*Users, *Sessions, *Tokens) {
	d := &db{pool: pools.Write, read: pools.ForReads(), addressChecks: domain.MaxLoginChecksAddress, ids: ids}
	return &Users{d}, &Sessions{d}, &Tokens{d}
}

var (
	_ domain.OperatorService = (*Users)(nil)
	_ domain.AccessService   = (*Sessions)(nil)
	_ domain.TokenService    = (*Tokens)(nil)
)

// SessionStore keeps console sessions in PostgreSQL, so every app node
// sees the same sessions.
func (s *Sessions) SessionStore() scs.Store {
	return pgxstore.NewWithCleanupInterval(s.read, 30*time.Minute)
}

// visibleTenantsSQL: the operator's memberships in an uncorrelated
// subquery, which Citus runs across the shards first; a correlated one
// beside the reference table tenants it refuses.
const visibleTenantsSQL = `
SELECT t.id, t.slug, t.name, t.created_at FROM tenants t
WHERE t.archived_at IS NULL AND (@is_admin::boolean OR t.id IN (SELECT m.tenant_id FROM memberships m WHERE m.user_id = @user_id))
ORDER BY t.slug`

// VisibleTenants implements domain.AccessService.
func (s *Sessions) VisibleTenants(ctx context.Context, u domain.User) ([]domain.Tenant, error) {
	rows, _ := s.read.Query(ctx, visibleTenantsSQL, pgx.NamedArgs{"user_id": u.ID, "is_admin": u.IsAdmin})
	tenants, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Tenant, error) {
		var t domain.Tenant
		return t, row.Scan(&t.ID, &t.Slug, &t.Name, &t.CreatedAt)
	})
	return tenants, pg.Translate(err)
}

// tenantForSQL answers the tenant and the operator's role in it; an admin
// acts as an owner, member or not.
const tenantForSQL = `
SELECT t.id, t.name, t.created_at, CASE WHEN @is_admin::boolean THEN 'owner' ELSE m.role END
FROM tenants t
LEFT JOIN memberships m ON m.tenant_id = t.id AND m.user_id = @user_id
WHERE t.slug = @slug AND t.archived_at IS NULL AND (@is_admin::boolean OR m.user_id IS NOT NULL)`

// TenantFor implements domain.AccessService.
func (s *Sessions) TenantFor(ctx context.Context, u domain.User, slug string) (domain.Membership, error) {
	m := domain.Membership{Tenant: domain.Tenant{Slug: slug}}
	err := s.read.QueryRow(ctx, tenantForSQL, pgx.NamedArgs{"slug": slug, "user_id": u.ID, "is_admin": u.IsAdmin}).
		Scan(&m.Tenant.ID, &m.Tenant.Name, &m.Tenant.CreatedAt, &m.Role)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Membership{}, pg.NotFound("not found")
	}
	return m, pg.Translate(err)
}

package access

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/crypto/bcrypt"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

const userSQL = `SELECT email, is_admin, disabled_at IS NOT NULL, session_epoch FROM users WHERE id = @id`

// User implements domain.AccessService.
func (s *Users) User(ctx context.Context, id int64) (domain.User, error) {
	u := domain.User{ID: id}
	err := s.read.QueryRow(ctx, userSQL, pgx.NamedArgs{"id": id}).Scan(&u.Email, &u.IsAdmin, &u.Disabled, &u.SessionEpoch)
	if errors.Is(err, pgx.ErrNoRows) {
		return u, pg.NotFound("user not found")
	}
	return u, pg.Translate(err)
}

const (
	createUserSQL = `INSERT INTO users (email, password_hash, is_admin) VALUES (@email, @password_hash, @is_admin) RETURNING id`
	setAdminSQL   = `UPDATE users SET is_admin = @admin, break_glass = break_glass AND @admin WHERE id = @user_id RETURNING id`
)

// CreateUser creates an operator. tenantSlug, when set, makes the user a
// member of that tenant with role; an existing email is an ECONFLICT error.
func (s *Users) CreateUser(ctx context.Context, email, password string, admin bool, tenantSlug string, role domain.Role) error {
	email = strings.ToLower(strings.TrimSpace(email))
	if !strings.Contains(email, "@") {
		return domain.Errorf(domain.EINVALID, "email %q is not an email address", email)
	}
	if len(password) < 8 {
		return domain.Errorf(domain.EINVALID, "password must be at least 8 characters")
	}
	if tenantSlug != "" {
		if _, err := domain.ParseRole(string(role)); err != nil {
			return err
		}
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return err
	}
	return pg.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		var userID int64
		err := tx.QueryRow(ctx, createUserSQL, pgx.NamedArgs{"email": email, "password_hash": string(hash),
			"is_admin": admin}).Scan(&userID)
		if pg.UniqueViolation(err) {
			return domain.Errorf(domain.ECONFLICT, "user %q already exists", email)
		}
		if err != nil {
			return pg.Translate(err)
		}
		if err := countAdmins(ctx, tx, false, admin); err != nil {
			return err
		}
		if err := pg.Audit(ctx, tx, 0, domain.AuditOperatorCreate, email, fmt.Sprintf("admin %t", admin)); err != nil {
			return pg.Translate(err)
		}
		if tenantSlug == "" {
			return nil
		}
		return addMembership(ctx, tx, domain.NewMembership{UserID: userID, TenantSlug: tenantSlug, Role: role})
	})
}

// Operators and memberships span tenants by nature: these statements are
// the admin pages' and filter by operator, not by tenant.

const operatorsSQL = `
SELECT u.id, u.email, u.is_admin, u.created_at, u.disabled_at,
       coalesce(array_agg(t.slug ORDER BY t.slug) FILTER (WHERE t.slug IS NOT NULL), '{}'),
       coalesce(array_agg(m.role ORDER BY t.slug) FILTER (WHERE t.slug IS NOT NULL), '{}')
FROM users u
LEFT JOIN memberships m ON m.user_id = u.id
LEFT JOIN tenants t ON t.id = m.tenant_id AND t.archived_at IS NULL
GROUP BY u.id
ORDER BY u.email`

// Operators implements domain.OperatorService.
func (s *Users) Operators(ctx context.Context) ([]domain.Operator, error) {
	rows, err := s.read.Query(ctx, operatorsSQL)
	if err != nil {
		return nil, pg.Translate(err)
	}
	ops, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Operator, error) {
		var (
			o        domain.Operator
			roles    []domain.Role
			disabled *time.Time
		)
		if err := row.Scan(&o.ID, &o.Email, &o.IsAdmin, &o.CreatedAt, &disabled, &o.Tenants, &roles); err != nil {
			return o, err
		}
		if disabled != nil {
			o.DisabledAt = *disabled
		}
		o.Roles = make(map[string]domain.Role, len(roles))
		for i, r := range roles {
			o.Roles[o.Tenants[i]] = r
		}
		return o, nil
	})
	return ops, pg.Translate(err)
}

// SetAdmin implements domain.OperatorService. The flag's change is
// recorded before it is made, so that the database's refusal to remove the
// last enabled admin's flag takes the entry back with it.
func (s *Users) SetAdmin(ctx context.Context, actor domain.User, userID int64, admin bool) error {
	if err := domain.CheckAdminChange(actor, userID, admin); err != nil {
		return err
	}
	return pg.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		u, err := lockUser(ctx, tx, userID)
		if err != nil {
			return err
		}
		return setAdmin(ctx, tx, u, admin, fmt.Sprintf("admin %t → %t", u.IsAdmin, admin))
	})
}

// formerAdminTenantsSQL lists the tenants where an operator who was an
// admin made API tokens that still work without being an owner member
// there. Operator administration, it looks across tenants.
const formerAdminTenantsSQL = `
SELECT DISTINCT k.tenant_id FROM api_tokens k
WHERE k.created_by_user_id = @user_id AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())
  AND NOT EXISTS (SELECT FROM memberships m
                  WHERE m.tenant_id = k.tenant_id AND m.user_id = @user_id AND m.role = 'owner')`

// setAdmin sets locked operator u's admin flag in tx, recorded with
// summary, and refuses with domain.ErrLastAdmin to leave no enabled admin.
// An admin who stops being one loses the tokens they made in tenants
// where they are not an owner member.
func setAdmin(ctx context.Context, tx pgx.Tx, u domain.User, admin bool, summary string) error {
	if err := pg.Audit(ctx, tx, 0, domain.AuditOperatorAdmin, u.Email, summary); err != nil {
		return err
	}
	if err := countAdmins(ctx, tx, u.IsAdmin && !u.Disabled, admin && !u.Disabled); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, setAdminSQL, pgx.NamedArgs{"user_id": u.ID, "admin": admin}); err != nil {
		return pg.Translate(err)
	}
	if admin || !u.IsAdmin {
		return nil
	}
	// An admin acted as an owner of every tenant: the tokens they made
	// where they are not an owner member lose their creator's standing.
	rows, _ := tx.Query(ctx, formerAdminTenantsSQL, pgx.NamedArgs{"user_id": u.ID})
	tenants, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return pg.Translate(err)
	}
	for _, tenantID := range tenants {
		if _, err := revokeCreatorTokens(ctx, tx, tenantID, u.ID, "its creator is no longer an admin"); err != nil {
			return err
		}
	}
	return nil
}

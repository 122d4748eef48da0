package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/tidemark/tidemark/domain"
	"golang.org/x/crypto/bcrypt"
)

const userSQL = `SELECT email, is_admin, disabled_at IS NOT NULL, session_epoch FROM users WHERE id = @id`

// User implements domain.AccessService.
func (s *Store) User(ctx context.Context, id int64) (domain.User, error) {
	u := domain.User{ID: id}
	err := s.read.QueryRow(ctx, userSQL, pgx.NamedArgs{"id": id}).Scan(&u.Email, &u.IsAdmin, &u.Disabled, &u.SessionEpoch)
	if errors.Is(err, pgx.ErrNoRows) {
		return u, notFound("user not found")
	}
	return u, translate(err)
}

const (
	createUserSQL       = `INSERT INTO users (email, password_hash, is_admin) VALUES (@email, @password_hash, @is_admin) RETURNING id`
	insertMembershipSQL = `INSERT INTO memberships (tenant_id, user_id) VALUES (@tenant_id, @user_id)`
	setAdminSQL         = `UPDATE users SET is_admin = @admin WHERE id = @user_id RETURNING id`
)

// CreateUser creates an operator. tenantSlug, when set, makes the user a
// member of that tenant; an existing email is an ECONFLICT error.
func (s *Store) CreateUser(ctx context.Context, email, password string, admin bool, tenantSlug string) error {
	email = strings.ToLower(strings.TrimSpace(email))
	if !strings.Contains(email, "@") {
		return domain.Errorf(domain.EINVALID, "email %q is not an email address", email)
	}
	if len(password) < 8 {
		return domain.Errorf(domain.EINVALID, "password must be at least 8 characters")
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return err
	}
	var tenantID *int64
	if tenantSlug != "" {
		t, err := s.Tenant(ctx, tenantSlug)
		if err != nil {
			return err
		}
		tenantID = &t.ID
	}
	return s.withTx(ctx, func(tx pgx.Tx) error {
		var userID int64
		err := tx.QueryRow(ctx, createUserSQL, pgx.NamedArgs{"email": email, "password_hash": string(hash),
			"is_admin": admin}).Scan(&userID)
		if uniqueViolation(err) {
			return domain.Errorf(domain.ECONFLICT, "user %q already exists", email)
		}
		if err != nil || tenantID == nil {
			return translate(err)
		}
		_, err = tx.Exec(ctx, insertMembershipSQL, pgx.NamedArgs{"tenant_id": *tenantID, "user_id": userID})
		return translate(err)
	})
}

// Operators and memberships span tenants by nature: these statements are
// the admin pages' and filter by operator, not by tenant.

const operatorsSQL = `
SELECT u.id, u.email, u.is_admin, u.created_at, u.disabled_at,
       coalesce(array_agg(t.slug ORDER BY t.slug) FILTER (WHERE t.slug IS NOT NULL), '{}')
FROM users u
LEFT JOIN memberships m ON m.user_id = u.id
LEFT JOIN tenants t ON t.id = m.tenant_id
GROUP BY u.id
ORDER BY u.email`

// Operators implements domain.OperatorService.
func (s *Store) Operators(ctx context.Context) ([]domain.Operator, error) {
	rows, err := s.read.Query(ctx, operatorsSQL)
	if err != nil {
		return nil, translate(err)
	}
	ops, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Operator, error) {
		var (
			o        domain.Operator
			disabled *time.Time
		)
		err := row.Scan(&o.ID, &o.Email, &o.IsAdmin, &o.CreatedAt, &disabled, &o.Tenants)
		if disabled != nil {
			o.DisabledAt = *disabled
		}
		return o, err
	})
	return ops, translate(err)
}

// addMembershipSQL answers whether the operator and the tenant exist, and
// inserts the membership when both do.
const addMembershipSQL = `
WITH u AS (SELECT id FROM users WHERE id = @user_id),
     t AS (SELECT id FROM tenants WHERE slug = @tenant),
     added AS (
         INSERT INTO memberships (tenant_id, user_id)
         SELECT t.id, u.id FROM t, u
         ON CONFLICT DO NOTHING
     )
SELECT EXISTS (SELECT FROM u), EXISTS (SELECT FROM t)`

// AddMembership implements domain.OperatorService.
func (s *Store) AddMembership(ctx context.Context, userID int64, tenantSlug string) error {
	var userFound, tenantFound bool
	err := s.pool.QueryRow(ctx, addMembershipSQL, pgx.NamedArgs{"user_id": userID, "tenant": tenantSlug}).
		Scan(&userFound, &tenantFound)
	switch {
	case err != nil:
		return translate(err)
	case !userFound:
		return notFound("operator not found")
	case !tenantFound:
		return notFound("tenant %q not found", tenantSlug)
	}
	return nil
}

const removeMembershipSQL = `
DELETE FROM memberships m USING tenants t
WHERE m.tenant_id = t.id AND t.slug = @tenant AND m.user_id = @user_id`

// RemoveMembership implements domain.OperatorService.
func (s *Store) RemoveMembership(ctx context.Context, userID int64, tenantSlug string) error {
	tag, err := s.pool.Exec(ctx, removeMembershipSQL, pgx.NamedArgs{"user_id": userID, "tenant": tenantSlug})
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("the operator is not a member of %q", tenantSlug)
	}
	return nil
}

// SetAdmin implements domain.OperatorService. The flag's change is
// recorded before it is made, so that the database's refusal to remove the
// last enabled admin's flag takes the entry back with it.
func (s *Store) SetAdmin(ctx context.Context, actor domain.User, userID int64, admin bool) error {
	if err := domain.CheckAdminChange(actor, userID, admin); err != nil {
		return err
	}
	return s.withTx(ctx, func(tx pgx.Tx) error {
		u, err := lockUser(ctx, tx, userID)
		if err != nil {
			return err
		}
		summary := fmt.Sprintf("admin %t → %t", u.IsAdmin, admin)
		if err := audit(ctx, tx, 0, domain.AuditOperatorAdmin, u.Email, summary); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, setAdminSQL, pgx.NamedArgs{"user_id": userID, "admin": admin})
		return lastAdmin(err)
	})
}

package postgres

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/alexedwards/scs/pgxstore"
	"github.com/alexedwards/scs/v2"
	"github.com/jackc/pgx/v5"
	"github.com/tidemark/tidemark/domain"
	"golang.org/x/crypto/bcrypt"
)

// SessionStore keeps console sessions in PostgreSQL, so every app node
// sees the same sessions.
func (s *Store) SessionStore() scs.Store {
	return pgxstore.NewWithCleanupInterval(s.read, 30*time.Minute)
}

// dummyHash is compared against when the email is unknown, so a wrong
// email takes as long as a wrong password.
var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("tidemark timing equaliser"), bcrypt.DefaultCost)

// loginFailuresSQL counts the recent failed sign-ins of the account and of
// the network address.
const loginFailuresSQL = `
SELECT count(*) FILTER (WHERE email = @email), count(*) FILTER (WHERE address = @address)
FROM login_failures WHERE failed_at > now() - @window::interval AND (email = @email OR address = @address)`

// userByEmailSQL finds an operator who may sign in: a disabled one is as
// unknown as an email that matches no one.
const userByEmailSQL = `SELECT id, password_hash, is_admin, session_epoch FROM users WHERE email = @email AND disabled_at IS NULL`

const insertLoginFailureSQL = `INSERT INTO login_failures (email, address) VALUES (@email, @address)`

// clearLoginFailuresSQL forgets the account's failures on success, and
// everyone's once they are past the window.
const clearLoginFailuresSQL = `DELETE FROM login_failures WHERE email = @email OR failed_at < now() - @window::interval`

// Authenticate implements domain.AccessService.
func (s *Store) Authenticate(ctx context.Context, email, password, address string) (domain.User, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	args := pgx.NamedArgs{"email": email, "address": address, "window": domain.LoginWindow.String()}
	var byAccount, byAddress int
	err := s.read.QueryRow(ctx, loginFailuresSQL, args).Scan(&byAccount, &byAddress)
	if err != nil {
		return domain.User{}, translate(err)
	}
	switch {
	case byAccount >= domain.MaxLoginFailuresAccount:
		return domain.User{}, domain.Errorf(domain.EUNAUTHORIZED,
			"Too many failed sign-ins for this account. Wait %d minutes and try again.", int(domain.LoginWindow.Minutes()))
	case byAddress >= domain.MaxLoginFailuresAddress:
		return domain.User{}, domain.Errorf(domain.EUNAUTHORIZED,
			"Too many failed sign-ins from your network address. Wait %d minutes and try again.", int(domain.LoginWindow.Minutes()))
	}

	u := domain.User{Email: email}
	var hash string
	err = s.read.QueryRow(ctx, userByEmailSQL, args).Scan(&u.ID, &hash, &u.IsAdmin, &u.SessionEpoch)
	if errors.Is(err, pgx.ErrNoRows) {
		hash = string(dummyHash)
	} else if err != nil {
		return domain.User{}, translate(err)
	}
	if bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)) != nil || u.ID == 0 {
		if _, err := s.read.Exec(ctx, insertLoginFailureSQL, args); err != nil {
			return domain.User{}, translate(err)
		}
		return domain.User{}, domain.Errorf(domain.EUNAUTHORIZED, "Wrong email or password.")
	}
	_, err = s.read.Exec(ctx, clearLoginFailuresSQL, args)
	return u, translate(err)
}

const visibleTenantsSQL = `
SELECT t.id, t.slug, t.name, t.created_at FROM tenants t
WHERE @is_admin::boolean OR EXISTS (SELECT FROM memberships m WHERE m.tenant_id = t.id AND m.user_id = @user_id)
ORDER BY t.slug`

// VisibleTenants implements domain.AccessService.
func (s *Store) VisibleTenants(ctx context.Context, u domain.User) ([]domain.Tenant, error) {
	rows, _ := s.read.Query(ctx, visibleTenantsSQL, pgx.NamedArgs{"user_id": u.ID, "is_admin": u.IsAdmin})
	tenants, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Tenant, error) {
		var t domain.Tenant
		return t, row.Scan(&t.ID, &t.Slug, &t.Name, &t.CreatedAt)
	})
	return tenants, translate(err)
}

// tenantForSQL answers the tenant and the operator's role in it; an admin
// acts as an owner, member or not.
const tenantForSQL = `
SELECT t.id, t.name, t.created_at, CASE WHEN @is_admin::boolean THEN 'owner' ELSE m.role END
FROM tenants t
LEFT JOIN memberships m ON m.tenant_id = t.id AND m.user_id = @user_id
WHERE t.slug = @slug AND (@is_admin::boolean OR m.user_id IS NOT NULL)`

// TenantFor implements domain.AccessService.
func (s *Store) TenantFor(ctx context.Context, u domain.User, slug string) (domain.Membership, error) {
	m := domain.Membership{Tenant: domain.Tenant{Slug: slug}}
	err := s.read.QueryRow(ctx, tenantForSQL, pgx.NamedArgs{"slug": slug, "user_id": u.ID, "is_admin": u.IsAdmin}).
		Scan(&m.Tenant.ID, &m.Tenant.Name, &m.Tenant.CreatedAt, &m.Role)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Membership{}, notFound("not found")
	}
	return m, translate(err)
}

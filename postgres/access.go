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
	return pgxstore.NewWithCleanupInterval(s.pool, 30*time.Minute)
}

// dummyHash is compared against when the email is unknown, so a wrong
// email takes as long as a wrong password.
var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("tidemark timing equaliser"), bcrypt.DefaultCost)

// Authenticate implements domain.AccessService.
func (s *Store) Authenticate(ctx context.Context, email, password, address string) (domain.User, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	var byAccount, byAddress int
	err := s.pool.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE email = $1), count(*) FILTER (WHERE address = $2)
		FROM login_failures WHERE failed_at > now() - $3::interval AND (email = $1 OR address = $2)`,
		email, address, domain.LoginWindow.String()).Scan(&byAccount, &byAddress)
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
	err = s.pool.QueryRow(ctx, `SELECT id, password_hash, is_admin FROM users WHERE email = $1`, email).
		Scan(&u.ID, &hash, &u.IsAdmin)
	if errors.Is(err, pgx.ErrNoRows) {
		hash = string(dummyHash)
	} else if err != nil {
		return domain.User{}, translate(err)
	}
	if bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)) != nil || u.ID == 0 {
		if _, err := s.pool.Exec(ctx, `INSERT INTO login_failures (email, address) VALUES ($1, $2)`, email, address); err != nil {
			return domain.User{}, translate(err)
		}
		return domain.User{}, domain.Errorf(domain.EUNAUTHORIZED, "Wrong email or password.")
	}
	_, err = s.pool.Exec(ctx, `DELETE FROM login_failures WHERE email = $1 OR failed_at < now() - $2::interval`,
		email, domain.LoginWindow.String())
	return u, translate(err)
}

// VisibleTenants implements domain.AccessService.
func (s *Store) VisibleTenants(ctx context.Context, u domain.User) ([]domain.Tenant, error) {
	rows, _ := s.pool.Query(ctx, `
		SELECT t.id, t.slug, t.name, t.created_at FROM tenants t
		WHERE $2 OR EXISTS (SELECT FROM memberships m WHERE m.tenant_id = t.id AND m.user_id = $1)
		ORDER BY t.slug`, u.ID, u.IsAdmin)
	tenants, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Tenant, error) {
		var t domain.Tenant
		return t, row.Scan(&t.ID, &t.Slug, &t.Name, &t.CreatedAt)
	})
	return tenants, translate(err)
}

// TenantFor implements domain.AccessService.
func (s *Store) TenantFor(ctx context.Context, u domain.User, slug string) (domain.Tenant, error) {
	t := domain.Tenant{Slug: slug}
	err := s.pool.QueryRow(ctx, `
		SELECT t.id, t.name, t.created_at FROM tenants t
		WHERE t.slug = $1 AND ($3 OR EXISTS (SELECT FROM memberships m WHERE m.tenant_id = t.id AND m.user_id = $2))`,
		slug, u.ID, u.IsAdmin).Scan(&t.ID, &t.Name, &t.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, notFound("not found")
	}
	return t, translate(err)
}

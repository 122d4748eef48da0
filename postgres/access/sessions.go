// Package access is who may do what: operators, their memberships and
// lifecycle, sign-in and sessions, and the API tokens of tenants.
package access

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/tidemark/tidemark/postgres/internal/pg"

	"context"
	"errors"
	"time"

	"github.com/alexedwards/scs/pgxstore"
	"github.com/alexedwards/scs/v2"
	"github.com/jackc/pgx/v5"
	"github.com/tidemark/tidemark/domain"
	"golang.org/x/crypto/bcrypt"
)

// db is the pools the services of the package share.
type db struct {
	pool *pgxpool.Pool // writes
	read *pgxpool.Pool // reads and sign-ins; pool until UseReadPool
}

// UseReadPool makes the reads and sign-ins of every service of the
// package use p.
func (d *db) UseReadPool(p *pgxpool.Pool) { d.read = p }

// The services.
type (
	Users    struct{ *db } // operators, their lifecycle and memberships
	Sessions struct{ *db } // sign-in, sessions, the tenants an operator sees
	Tokens   struct{ *db } // API tokens
)

// New returns the services on pool.
func New(pool *pgxpool.Pool) (*Users, *Sessions, *Tokens) {
	d := &db{pool: pool, read: pool}
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

// dummyHash is compared against when the email is unknown, so a wrong
// email takes as long as a wrong password.
var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("tidemark timing equaliser"), bcrypt.DefaultCost)

// reserveLoginCheckSQL takes one password check slot for the email (”
// for all accounts) from the address key, unless max checks were taken
// within the window: no row comes back then. The row stays locked until
// the sign-in commits, so concurrent attempts queue on it and each sees the
// slots taken before it.
const reserveLoginCheckSQL = `
INSERT INTO login_throttle AS t (email, address_key, checks) VALUES (@email, @address_key, ARRAY[now()])
ON CONFLICT (email, address_key) DO UPDATE
SET checks = ARRAY(SELECT c FROM unnest(t.checks) c WHERE c > now() - @window::interval ORDER BY c) || now(),
    last_at = now()
WHERE (SELECT count(*) FROM unnest(t.checks) c WHERE c > now() - @window::interval) < @max::int
RETURNING true`

// returnAddressCheckSQL gives the address's slot back: the sign-in holds
// the row, so its check is the last one.
const returnAddressCheckSQL = `
UPDATE login_throttle SET checks = checks[1:cardinality(checks) - 1] WHERE email = '' AND address_key = @address_key`

// forgetLoginChecksSQL clears the account's checks from the address after
// a success, and drops up to a thousand rows nobody has used within the
// window (skipping rows a sign-in in progress holds), so that each
// success does a bounded share of the tidying.
const forgetLoginChecksSQL = `
WITH stale AS (
    DELETE FROM login_throttle WHERE (email, address_key) IN (
        SELECT email, address_key FROM login_throttle WHERE last_at < now() - @window::interval
        LIMIT 1000 FOR UPDATE SKIP LOCKED))
DELETE FROM login_throttle WHERE email = @email AND address_key = @address_key`

// userByEmailSQL finds an operator who may sign in: a disabled one is as
// unknown as an email that matches no one.
const userByEmailSQL = `SELECT id, password_hash, is_admin, session_epoch FROM users WHERE email = @email AND disabled_at IS NULL`

// signInTimeout bounds a sign-in's transaction, which outlives the request
// that started it: a client that hangs up after its password was checked
// must not roll the check's slot back.
const signInTimeout = 30 * time.Second

// Authenticate implements domain.AccessService. The throttle slots, the
// password check and the audit entry are one transaction.
func (s *Sessions) Authenticate(ctx context.Context, email, password, address string) (domain.User, error) {
	email = domain.NormalizeEmail(email)
	if err := domain.CheckSignIn(email, password); err != nil {
		return domain.User{}, err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), signInTimeout)
	defer cancel()
	tx, err := s.read.Begin(ctx)
	if err != nil {
		return domain.User{}, pg.Translate(err)
	}
	defer tx.Rollback(ctx)
	u, refusal, err := signIn(ctx, tx, email, password, domain.LoginAddressKey(address))
	if err != nil {
		return domain.User{}, pg.Translate(err)
	}
	if err := tx.Commit(ctx); err != nil {
		return domain.User{}, pg.Translate(err)
	}
	return u, refusal
}

// signIn runs one sign-in in tx and returns the operator, or the refusal
// to show; err is for failures of the transaction itself.
func signIn(ctx context.Context, tx pgx.Tx, email, password, addressKey string) (u domain.User, refusal, err error) {
	window, wait := domain.LoginWindow.String(), int(domain.LoginWindow.Minutes())
	args := pgx.NamedArgs{"email": email, "address_key": addressKey, "window": window}
	reserve := func(email string, limit int) (bool, error) {
		var ok bool
		err := tx.QueryRow(ctx, reserveLoginCheckSQL,
			pgx.NamedArgs{"email": email, "address_key": addressKey, "window": window, "max": limit}).Scan(&ok)
		if errors.Is(err, pgx.ErrNoRows) {
			return false, nil
		}
		return ok, err
	}
	refuse := func(summary string, refusal error) (domain.User, error, error) {
		return domain.User{}, refusal, pg.Audit(ctx, tx, 0, "sign_in", email, summary)
	}

	// The address's slot first: every sign-in takes the two rows in the
	// same order, so none waits for another in a cycle.
	if ok, err := reserve("", domain.MaxLoginChecksAddress); err != nil || !ok {
		if err != nil {
			return domain.User{}, nil, err
		}
		return refuse(domain.SignInThrottled, domain.Errorf(domain.EUNAUTHORIZED,
			"Too many failed sign-ins from your network address. Wait %d minutes and try again.", wait))
	}
	if ok, err := reserve(email, domain.MaxLoginChecks); err != nil || !ok {
		if err == nil {
			_, err = tx.Exec(ctx, returnAddressCheckSQL, args)
		}
		if err != nil {
			return domain.User{}, nil, err
		}
		return refuse(domain.SignInThrottled, domain.Errorf(domain.EUNAUTHORIZED,
			"Too many failed sign-ins for this account from your network address. Wait %d minutes and try again.", wait))
	}

	u.Email = email
	var hash string
	err = tx.QueryRow(ctx, userByEmailSQL, args).Scan(&u.ID, &hash, &u.IsAdmin, &u.SessionEpoch)
	if errors.Is(err, pgx.ErrNoRows) {
		hash = string(dummyHash) // a wrong email takes as long as a wrong password
	} else if err != nil {
		return domain.User{}, nil, err
	}
	if bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)) != nil || u.ID == 0 {
		summary := domain.SignInWrongPassword
		if u.ID == 0 {
			summary = domain.SignInUnknownAccount
		}
		return refuse(summary, domain.Errorf(domain.EUNAUTHORIZED, "Wrong email or password."))
	}
	if _, err := tx.Exec(ctx, returnAddressCheckSQL, args); err != nil {
		return domain.User{}, nil, err
	}
	if _, err := tx.Exec(ctx, forgetLoginChecksSQL, args); err != nil {
		return domain.User{}, nil, err
	}
	return u, nil, pg.Audit(ctx, tx, 0, "sign_in", email, domain.SignInSucceeded)
}

const visibleTenantsSQL = `
SELECT t.id, t.slug, t.name, t.created_at FROM tenants t
WHERE @is_admin::boolean OR EXISTS (SELECT FROM memberships m WHERE m.tenant_id = t.id AND m.user_id = @user_id)
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
WHERE t.slug = @slug AND (@is_admin::boolean OR m.user_id IS NOT NULL)`

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

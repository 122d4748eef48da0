package access

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"golang.org/x/crypto/bcrypt"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/identity"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// lockIdentitySQL serialises the sign-ins of one email, so that two first
// sign-ins at once create one operator: the second waits, then finds it.
const lockIdentitySQL = `SELECT pg_advisory_xact_lock(hashtextextended('tidemark sso ' || @email, 0))`

// ssoUserSQL finds the operator an identity names: by its subject, else
// by its email (an operator created before SSO, linked at their first SSO
// sign-in), locked for the rest of the sign-in.
const ssoUserSQL = `
SELECT id, email, is_admin, disabled_at IS NOT NULL, session_epoch, coalesce(sso_subject, '')
FROM users WHERE sso_subject = @subject OR email = @email
ORDER BY sso_subject = @subject DESC NULLS LAST
LIMIT 1
FOR UPDATE`

const (
	createSSOUserSQL = `
INSERT INTO users (email, password_hash, is_admin, sso_subject) VALUES (@email, @password_hash, false, @subject)
RETURNING id`
	linkSSOUserSQL   = `UPDATE users SET sso_subject = @subject WHERE id = @id`
	ssoMembershipSQL = `
SELECT t.slug, m.role FROM memberships m JOIN tenants t ON t.id = m.tenant_id
WHERE m.user_id = @user_id ORDER BY t.slug`
)

// SignInSSO implements identity.SSOService. It runs in one transaction:
// the operator found or created, then their admin flag and memberships set
// to what the rules grant, each change audited with the person signing in
// as actor. An operator the rules no longer grant anything loses their
// access (and the tokens they created) and is refused.
func (s *SSO) SignInSSO(ctx context.Context, id identity.SSOIdentity) (domain.User, error) {
	var u domain.User
	// refused is a refusal that commits what it changed first: the access
	// of someone no rule maps any more.
	var refused error
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		c, err := scanSSOConfig(tx.QueryRow(ctx, ssoConfigSQL))
		if err != nil {
			return err
		}
		if !c.Enabled {
			return domain.Errorf(domain.EUNAVAILABLE, "Single sign-on is turned off. Sign in with your password.")
		}
		if err := identity.CheckSSOIdentity(c, id); err != nil {
			return err
		}
		rules, err := ssoRules(ctx, tx)
		if err != nil {
			return err
		}
		grant := identity.Grant(rules, id.Groups)
		email := domain.NormalizeEmail(id.Email)
		if _, err := tx.Exec(ctx, lockIdentitySQL, pgx.NamedArgs{"email": email}); err != nil {
			return err
		}
		var subject string
		err = tx.QueryRow(ctx, ssoUserSQL, pgx.NamedArgs{"subject": id.Subject, "email": email}).Scan(
			&u.ID, &u.Email, &u.IsAdmin, &u.Disabled, &u.SessionEpoch, &subject)
		switch {
		case errors.Is(err, pgx.ErrNoRows) && grant.Empty():
			refused = identity.ErrNoSSORule // nobody to create
			return pg.Audit(ctx, tx, 0, domain.AuditSignIn, email, domain.SignInSSONoRule)
		case errors.Is(err, pgx.ErrNoRows):
			if u, err = createSSOUser(ctx, tx, email, id.Subject); err != nil {
				return err
			}
		case err != nil:
			return err
		case u.Disabled:
			return domain.Errorf(domain.EFORBIDDEN, "Your operator account %s is disabled. Ask an admin.", u.Email)
		case subject != "" && subject != id.Subject:
			return domain.Errorf(domain.EFORBIDDEN, "%s belongs to another identity of %s. Ask an admin.", u.Email, c.Name)
		case subject == "":
			if _, err := tx.Exec(ctx, linkSSOUserSQL, pgx.NamedArgs{"id": u.ID, "subject": id.Subject}); err != nil {
				return err
			}
			if err := pg.Audit(ctx, tx, 0, domain.AuditOperatorCreate, u.Email, "linked to "+c.Name+" at their first single sign-on"); err != nil {
				return err
			}
		}
		if err := applyGrant(ctx, tx, &u, grant); err != nil {
			return err
		}
		outcome := domain.SignInSSOSucceeded
		if grant.Empty() {
			refused, outcome = identity.ErrNoSSORule, domain.SignInSSONoRule
		}
		return pg.Audit(ctx, tx, 0, domain.AuditSignIn, u.Email, outcome)
	})
	if err == nil && refused != nil {
		return domain.User{}, refused
	}
	return u, err
}

// createSSOUser creates the operator of a first SSO sign-in. Their
// password is random and never shown: they sign in by SSO only, unless an
// admin sets one.
func createSSOUser(ctx context.Context, tx pgx.Tx, email, subject string) (domain.User, error) {
	hash, err := bcrypt.GenerateFromPassword([]byte(rand.Text()), bcrypt.DefaultCost)
	if err != nil {
		return domain.User{}, err
	}
	u := domain.User{Email: email}
	err = tx.QueryRow(ctx, createSSOUserSQL, pgx.NamedArgs{"email": email, "password_hash": string(hash), "subject": subject}).Scan(&u.ID)
	if err != nil {
		return u, err
	}
	return u, pg.Audit(ctx, tx, 0, domain.AuditOperatorCreate, email, "by single sign-on")
}

// applyGrant sets u's admin flag and memberships to grant. The last
// enabled admin keeps the flag (the database refuses otherwise), and the
// audit log says so.
func applyGrant(ctx context.Context, tx pgx.Tx, u *domain.User, grant identity.SSOGrant) error {
	if grant.Admin != u.IsAdmin {
		if err := setSSOAdmin(ctx, tx, u, grant.Admin); err != nil {
			return err
		}
	}
	rows, err := tx.Query(ctx, ssoMembershipSQL, pgx.NamedArgs{"user_id": u.ID})
	if err != nil {
		return err
	}
	held := map[string]domain.Role{}
	var slug string
	var role domain.Role
	if _, err := pgx.ForEachRow(rows, []any{&slug, &role}, func() error { held[slug] = role; return nil }); err != nil {
		return err
	}
	for slug, old := range held {
		want, keep := grant.Roles[slug]
		switch {
		case !keep:
			if _, err := removeMembership(ctx, tx, u.ID, slug); err != nil {
				return err
			}
		case want != old:
			if _, err := setMemberRole(ctx, tx, u.ID, slug, want); err != nil {
				return err
			}
		}
	}
	for slug, role := range grant.Roles {
		if _, ok := held[slug]; ok {
			continue
		}
		if err := addMembership(ctx, tx, domain.NewMembership{UserID: u.ID, TenantSlug: slug, Role: role}); err != nil {
			return err
		}
	}
	return nil
}

// setSSOAdmin sets the admin flag in a savepoint, so that the refusal to
// leave no enabled admin keeps the flag rather than failing the sign-in.
func setSSOAdmin(ctx context.Context, tx pgx.Tx, u *domain.User, admin bool) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	err = setAdmin(ctx, sp, *u, admin, fmt.Sprintf("admin %t → %t by SSO group rules", u.IsAdmin, admin))
	if errors.Is(err, domain.ErrLastAdmin) {
		if err := sp.Rollback(ctx); err != nil {
			return err
		}
		return pg.Audit(ctx, tx, 0, domain.AuditOperatorAdmin, u.Email,
			"kept admin: no SSO group rule makes them one, but they are the last enabled admin")
	}
	if err != nil {
		return err
	}
	if err := sp.Commit(ctx); err != nil {
		return err
	}
	u.IsAdmin = admin
	return nil
}

package access

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/identity"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// SSO is single sign-on's storage: the identity provider's setup with its
// sealed client secret, the group rules, and the sign-in of an SSO
// operator (sso_signin.go).
type SSO struct {
	*db
	keys    *pg.Keyring
	secrets *pg.Secrets // logs a secret it cannot open
}

// SSO returns single sign-on's storage on the same pools, sealing with keys.
func (s *Users) SSO(keys *pg.Keyring, secrets *pg.Secrets) *SSO {
	return &SSO{db: s.db, keys: keys, secrets: secrets}
}

var _ identity.SSOService = (*SSO)(nil)

// withTx runs fn in a transaction whose statements on distributed tables
// (memberships, api_tokens) run sequentially, as Citus requires of one
// that changes reference tables (users, sso_rules) too.
func (s *SSO) withTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pg.WithSequentialTx(ctx, s.pool, fn)
}

const ssoConfigColumns = `name, issuer, client_id, groups_claim, allowed_domains, password_sign_in,
       extract(epoch FROM session_length)::bigint, allow_private, enabled, updated_at`

const ssoConfigSQL = `SELECT ` + ssoConfigColumns + ` FROM sso_config`

func scanSSOConfig(row pgx.Row) (identity.SSOConfig, error) {
	var c identity.SSOConfig
	var seconds int64
	err := row.Scan(&c.Name, &c.Issuer, &c.ClientID, &c.GroupsClaim, &c.AllowedDomains, &c.PasswordSignIn, &seconds,
		&c.AllowPrivate, &c.Enabled, &c.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, pg.NotFound("single sign-on is not set up: tidemark sso set")
	}
	c.SessionLength = time.Duration(seconds) * time.Second
	return c, pg.Translate(err)
}

// SSOConfig implements identity.SSOService.
func (s *SSO) SSOConfig(ctx context.Context) (identity.SSOConfig, error) {
	return scanSSOConfig(s.read.QueryRow(ctx, ssoConfigSQL))
}

const ssoSecretSQL = `SELECT 0::bigint, 0::bigint, 1::bigint, key_id, aad_version, ciphertext FROM sso_config`

// SSOClientSecret implements identity.SSOService.
func (s *SSO) SSOClientSecret(ctx context.Context) (string, error) {
	rows, err := s.read.Query(ctx, ssoSecretSQL)
	if err != nil {
		return "", pg.Translate(err)
	}
	sealed, err := pgx.CollectExactlyOneRow(rows, pg.ScanSealedSecret)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", pg.NotFound("single sign-on is not set up")
	} else if err != nil {
		return "", pg.Translate(err)
	}
	plain, err := s.keys.Open(sealed)
	if err != nil {
		s.secrets.LogUndecryptableSSO(sealed, err)
		return "", domain.Errorf(domain.EINTERNAL, "the SSO client secret cannot be decrypted (see the log)")
	}
	return plain, nil
}

const setSSOSQL = `
INSERT INTO sso_config AS c (name, issuer, client_id, groups_claim, allowed_domains, password_sign_in, session_length,
                             allow_private, enabled, key_id, aad_version, ciphertext, updated_at)
VALUES (@name, @issuer, @client_id, @groups_claim, coalesce(@allowed_domains::text[], '{}'), @password_sign_in, make_interval(secs => @seconds),
        @allow_private, true, @key_id, @aad_version, @ciphertext, @now)
ON CONFLICT (singleton) DO UPDATE
SET name = EXCLUDED.name, issuer = EXCLUDED.issuer, client_id = EXCLUDED.client_id, groups_claim = EXCLUDED.groups_claim,
    allowed_domains = EXCLUDED.allowed_domains, password_sign_in = EXCLUDED.password_sign_in,
    session_length = EXCLUDED.session_length, allow_private = EXCLUDED.allow_private, enabled = true,
    key_id = EXCLUDED.key_id, aad_version = EXCLUDED.aad_version, ciphertext = EXCLUDED.ciphertext, updated_at = EXCLUDED.updated_at`

// SetSSO implements identity.SSOService. The time is a parameter: Citus
// refuses now() in an upsert's update. Under a key that none of the
// secrets in use are stored under it refuses, as every sealing does.
func (s *SSO) SetSSO(ctx context.Context, n identity.NewSSOConfig) error {
	n, err := n.Check()
	if err != nil {
		return err
	}
	if !s.keys.CanSeal() {
		return pg.ErrNoKey
	}
	sealed, err := s.keys.SealSSO(n.ClientSecret)
	if err != nil {
		return err
	}
	return s.withTx(ctx, func(tx pgx.Tx) error {
		if err := pg.CheckSealingKey(ctx, tx, s.keys); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, setSSOSQL, pgx.NamedArgs{"name": n.Name, "issuer": n.Issuer, "client_id": n.ClientID,
			"groups_claim": n.GroupsClaim, "allowed_domains": n.AllowedDomains, "password_sign_in": n.PasswordSignIn,
			"seconds": n.SessionLength.Seconds(), "allow_private": n.AllowPrivate, "key_id": sealed.KeyID,
			"aad_version": sealed.AADVersion, "ciphertext": sealed.Ciphertext, "now": time.Now()}); err != nil {
			return err
		}
		return pg.Audit(ctx, tx, 0, domain.AuditSSOSet, n.Issuer, ssoSummary(n.SSOConfig))
	})
}

// ssoSummary describes a setup for the audit log, without its secret.
func ssoSummary(c identity.SSOConfig) string {
	domains := "any"
	if len(c.AllowedDomains) > 0 {
		domains = strings.Join(c.AllowedDomains, ",")
	}
	summary := fmt.Sprintf("%s: client id %s, groups claim %s, allowed domains %s, password sign-in %s, session length %s",
		c.Name, c.ClientID, c.GroupsClaim, domains, c.PasswordSignIn, c.SessionLength)
	if c.AllowPrivate {
		summary += ", private addresses allowed"
	}
	return summary
}

const disableSSOSQL = `UPDATE sso_config SET enabled = false, updated_at = now() RETURNING issuer`

// DisableSSO implements identity.SSOService.
func (s *SSO) DisableSSO(ctx context.Context) error {
	return s.withTx(ctx, func(tx pgx.Tx) error {
		var issuer string
		if err := tx.QueryRow(ctx, disableSSOSQL).Scan(&issuer); errors.Is(err, pgx.ErrNoRows) {
			return pg.NotFound("single sign-on is not set up")
		} else if err != nil {
			return err
		}
		return pg.Audit(ctx, tx, 0, domain.AuditSSODisable, issuer, "single sign-on off; password sign-in for everyone")
	})
}

const ssoRulesSQL = `
SELECT r.id, r.group_name, coalesce(t.slug, ''), coalesce(r.role, ''), r.is_admin
FROM sso_rules r LEFT JOIN tenants t ON t.id = r.tenant_id
ORDER BY r.group_name, r.is_admin DESC, t.slug`

func scanRule(row pgx.CollectableRow) (identity.SSORule, error) {
	var r identity.SSORule
	err := row.Scan(&r.ID, &r.Group, &r.TenantSlug, &r.Role, &r.Admin)
	return r, err
}

// SSORules implements identity.SSOService.
func (s *SSO) SSORules(ctx context.Context) ([]identity.SSORule, error) {
	return ssoRules(ctx, s.read)
}

func ssoRules(ctx context.Context, q interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}) ([]identity.SSORule, error) {
	rows, err := q.Query(ctx, ssoRulesSQL)
	if err != nil {
		return nil, pg.Translate(err)
	}
	rules, err := pgx.CollectRows(rows, scanRule)
	return rules, pg.Translate(err)
}

const mapSSOGroupSQL = `
INSERT INTO sso_rules (group_name, tenant_id, role, is_admin)
SELECT @group, t.id, nullif(@role, ''), @admin
FROM (SELECT NULL::bigint AS id WHERE @admin UNION ALL SELECT id FROM tenants WHERE slug = @tenant AND NOT @admin) t
RETURNING id`

// MapSSOGroup implements identity.SSOService.
func (s *SSO) MapSSOGroup(ctx context.Context, r identity.SSORule) (identity.SSORule, error) {
	r, err := r.Check()
	if err != nil {
		return r, err
	}
	err = s.withTx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, mapSSOGroupSQL, pgx.NamedArgs{"group": r.Group, "tenant": r.TenantSlug,
			"role": string(r.Role), "admin": r.Admin}).Scan(&r.ID)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return pg.NotFound("tenant %q not found", r.TenantSlug)
		case pg.UniqueViolation(err):
			return domain.Errorf(domain.ECONFLICT, "a rule for group %q exists already there: unmap it first", r.Group)
		case err != nil:
			return err
		}
		return pg.Audit(ctx, tx, 0, domain.AuditSSOMap, r.Group, r.String())
	})
	return r, err
}

const unmapSSOGroupSQL = `
DELETE FROM sso_rules r
WHERE r.group_name = @group AND r.is_admin = @admin
  AND (@admin OR r.tenant_id = (SELECT id FROM tenants WHERE slug = @tenant))
RETURNING coalesce(r.role, '')`

// UnmapSSOGroup implements identity.SSOService. Memberships the rule gave
// end at their operators' next sign-in, when the rules are applied again.
func (s *SSO) UnmapSSOGroup(ctx context.Context, r identity.SSORule) error {
	r.Group = strings.TrimSpace(r.Group)
	return s.withTx(ctx, func(tx pgx.Tx) error {
		var role string
		err := tx.QueryRow(ctx, unmapSSOGroupSQL, pgx.NamedArgs{"group": r.Group, "tenant": r.TenantSlug,
			"admin": r.Admin}).Scan(&role)
		if errors.Is(err, pgx.ErrNoRows) {
			return pg.NotFound("no rule maps group %q there", r.Group)
		} else if err != nil {
			return err
		}
		r.Role = domain.Role(role)
		return pg.Audit(ctx, tx, 0, domain.AuditSSOUnmap, r.Group, r.String())
	})
}

const setBreakGlassSQL = `UPDATE users SET break_glass = @on WHERE email = @email RETURNING is_admin`

// SetBreakGlass implements identity.SSOService.
func (s *SSO) SetBreakGlass(ctx context.Context, email string, on bool) error {
	email = domain.NormalizeEmail(email)
	return s.withTx(ctx, func(tx pgx.Tx) error {
		var admin bool
		if err := tx.QueryRow(ctx, setBreakGlassSQL, pgx.NamedArgs{"email": email, "on": on}).Scan(&admin); errors.Is(err, pgx.ErrNoRows) {
			return pg.NotFound("There is no operator %s.", email)
		} else if err != nil {
			return err
		}
		if on && !admin {
			return domain.Errorf(domain.EINVALID, "%s is not an admin: only admins may be break-glass", email)
		}
		summary := "break-glass: may sign in with a password when password sign-in is kept for admins"
		if !on {
			summary = "no longer break-glass"
		}
		return pg.Audit(ctx, tx, 0, domain.AuditOperatorBreakGlass, email, summary)
	})
}

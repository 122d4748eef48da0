package access

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

const membersSQL = `
SELECT u.id, u.email, u.is_admin, m.role, m.created_at
FROM memberships m JOIN users u ON u.id = m.user_id
WHERE m.tenant_id = @tenant_id
ORDER BY u.email`

// Members implements domain.OperatorService.
func (s *Users) Members(ctx context.Context, tenantID int64) ([]domain.Member, error) {
	rows, err := s.read.Query(ctx, membersSQL, pgx.NamedArgs{"tenant_id": tenantID})
	if err != nil {
		return nil, pg.Translate(err)
	}
	members, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Member, error) {
		var m domain.Member
		return m, row.Scan(&m.UserID, &m.Email, &m.IsAdmin, &m.Role, &m.Since)
	})
	return members, pg.Translate(err)
}

// addMembershipSQL answers the operator's email and the tenant's id when
// they exist (null otherwise), and whether the membership was inserted,
// which it is when both exist and it did not already.
const addMembershipSQL = `
WITH u AS (SELECT id, email FROM users WHERE id = @user_id OR email = @email),
     t AS (SELECT id FROM tenants WHERE slug = @tenant),
     added AS (
         INSERT INTO memberships (tenant_id, user_id, role)
         SELECT t.id, u.id, @role::text FROM t, u
         ON CONFLICT DO NOTHING
         RETURNING tenant_id
     )
SELECT (SELECT email FROM u), (SELECT id FROM t), EXISTS (SELECT FROM added)`

// AddMembership implements domain.OperatorService.
func (s *Users) AddMembership(ctx context.Context, m domain.NewMembership) error {
	return pg.WithTx(ctx, s.pool, func(tx pgx.Tx) error { return addMembership(ctx, tx, m) })
}

// addMembership adds m in tx and records it.
func addMembership(ctx context.Context, tx pgx.Tx, m domain.NewMembership) error {
	if _, err := domain.ParseRole(string(m.Role)); err != nil {
		return err
	}
	email := ""
	if m.UserID == 0 { // no operator has id 0 or an empty email
		email = strings.ToLower(strings.TrimSpace(m.Email))
	}
	var (
		found    *string
		tenantID *int64
		added    bool
	)
	err := tx.QueryRow(ctx, addMembershipSQL, pgx.NamedArgs{"user_id": m.UserID, "email": email,
		"tenant": m.TenantSlug, "role": string(m.Role)}).Scan(&found, &tenantID, &added)
	switch {
	case err != nil:
		return pg.Translate(err)
	case found == nil && email != "":
		return pg.NotFound("There is no operator %s. An admin can add them first.", email)
	case found == nil:
		return pg.NotFound("operator not found")
	case tenantID == nil:
		return pg.NotFound("tenant %q not found", m.TenantSlug)
	case !added:
		return domain.Errorf(domain.ECONFLICT, "%s is already a member of %s: change their role instead.", *found, m.TenantSlug)
	}
	return pg.Translate(pg.Audit(ctx, tx, *tenantID, domain.AuditMemberAdd, *found, "role "+string(m.Role)))
}

// memberForUpdateSQL locks a membership for a change of role, so that an
// API token its member creates meanwhile waits for the change (see
// tokenCreatorSQL).
const memberForUpdateSQL = `
SELECT m.tenant_id, m.role, u.email
FROM memberships m JOIN users u ON u.id = m.user_id
WHERE m.tenant_id = @tenant_id AND m.user_id = @user_id
FOR UPDATE OF m`

const setMemberRoleSQL = `UPDATE memberships SET role = @role WHERE tenant_id = @tenant_id AND user_id = @user_id`

// SetMemberRole implements domain.OperatorService.
func (s *Users) SetMemberRole(ctx context.Context, userID int64, tenantSlug string, role domain.Role) (int, error) {
	if _, err := domain.ParseRole(string(role)); err != nil {
		return 0, err
	}
	revoked := 0
	err := pg.WithTx(ctx, s.pool, func(tx pgx.Tx) (err error) {
		revoked, err = setMemberRole(ctx, tx, userID, tenantSlug, role)
		return err
	})
	return revoked, err
}

// setMemberRole changes a member's role in tx and records it; a member
// who stops being an owner loses the tokens they created there.
func setMemberRole(ctx context.Context, tx pgx.Tx, userID int64, tenantSlug string, role domain.Role) (revoked int, err error) {
	tenantID, old, email, err := member(ctx, tx, memberForUpdateSQL, userID, tenantSlug)
	if err != nil || old == role {
		return 0, err
	}
	args := pgx.NamedArgs{"tenant_id": tenantID, "user_id": userID, "role": string(role)}
	if _, err := tx.Exec(ctx, setMemberRoleSQL, args); err != nil {
		return 0, pg.Translate(err)
	}
	summary := fmt.Sprintf("role %s → %s", old, role)
	if old == domain.RoleOwner {
		if revoked, err = revokeCreatorTokens(ctx, tx, tenantID, userID, "its creator is no longer an owner"); err != nil {
			return 0, err
		}
		summary += revokedSummary(revoked)
	}
	return revoked, pg.Translate(pg.Audit(ctx, tx, tenantID, domain.AuditMemberRole, email, summary))
}

const removeMembershipSQL = `
DELETE FROM memberships m USING users u
WHERE m.tenant_id = @tenant_id AND m.user_id = @user_id AND u.id = m.user_id
RETURNING m.tenant_id, m.role, u.email`

// RemoveMembership implements domain.OperatorService.
func (s *Users) RemoveMembership(ctx context.Context, userID int64, tenantSlug string) (int, error) {
	revoked := 0
	err := pg.WithTx(ctx, s.pool, func(tx pgx.Tx) (err error) {
		revoked, err = removeMembership(ctx, tx, userID, tenantSlug)
		return err
	})
	return revoked, err
}

// removeMembership ends a membership in tx, revokes the tokens its member
// created there and records it.
func removeMembership(ctx context.Context, tx pgx.Tx, userID int64, tenantSlug string) (revoked int, err error) {
	tenantID, role, email, err := member(ctx, tx, removeMembershipSQL, userID, tenantSlug)
	if err != nil {
		return 0, err
	}
	if revoked, err = revokeCreatorTokens(ctx, tx, tenantID, userID, "its creator left the workspace"); err != nil {
		return 0, err
	}
	return revoked, pg.Translate(pg.Audit(ctx, tx, tenantID, domain.AuditMemberRemove, email, "was "+string(role)+revokedSummary(revoked)))
}

// member runs sql, which locks or removes operator userID's membership of
// tenantSlug, and returns the tenant's id, the role and the operator's
// email; ENOTFOUND when they are not a member.
func member(ctx context.Context, tx pgx.Tx, sql string, userID int64, tenantSlug string) (tenantID int64, role domain.Role, email string, err error) {
	// The tenant first: a statement on its id alone is one worker's on Citus.
	err = tx.QueryRow(ctx, tenantIDSQL, pgx.NamedArgs{"tenant": tenantSlug}).Scan(&tenantID)
	if err == nil {
		err = tx.QueryRow(ctx, sql, pgx.NamedArgs{"tenant_id": tenantID, "user_id": userID}).Scan(&tenantID, &role, &email)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, "", "", pg.NotFound("the operator is not a member of %q", tenantSlug)
	}
	return tenantID, role, email, pg.Translate(err)
}

const tenantIDSQL = `SELECT id FROM tenants WHERE slug = @tenant`

// revokeCreatorTokensSQL revokes the tokens an operator created in a
// tenant that still work.
const revokeCreatorTokensSQL = `
UPDATE api_tokens SET revoked_at = now()
WHERE tenant_id = @tenant_id AND created_by_user_id = @user_id
  AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())
RETURNING name`

// revokeCreatorTokens revokes, in tx, the working API tokens operator
// userID created in the tenant, records each with why, and returns how many.
func revokeCreatorTokens(ctx context.Context, tx pgx.Tx, tenantID, userID int64, why string) (int, error) {
	rows, _ := tx.Query(ctx, revokeCreatorTokensSQL, pgx.NamedArgs{"tenant_id": tenantID, "user_id": userID})
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, pg.Translate(err)
	}
	for _, name := range names {
		if err := pg.Audit(ctx, tx, tenantID, domain.AuditTokenRevoke, name, why); err != nil {
			return 0, pg.Translate(err)
		}
	}
	return len(names), nil
}

func revokedSummary(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; revoked %d API token(s) they created", n)
}

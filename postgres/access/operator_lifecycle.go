package access

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"golang.org/x/crypto/bcrypt"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// The lifecycle of operators: disable, enable, password reset and sign out
// everywhere. Each locks the operator's row, records the change and makes
// it in one transaction. Ending sessions raises session_epoch, which the
// console compares with the one a session stored at sign-in; each also
// revokes the API tokens the operator created, in every tenant. That at least
// one enabled admin remains is kept by the count in enabled_admins, which
// every change to an admin moves in its transaction (countAdmins): its row
// lock serialises such changes, so two cannot each leave the other as the
// last. It was a trigger on users (migration 00019) until Citus, where a
// trigger on a reference table runs on the nodes that hold its copies and
// may not write other tables there (migration 00043).

const lockUserSQL = `SELECT id, email, is_admin, disabled_at IS NOT NULL FROM users WHERE id = @id FOR UPDATE`

const lockUserByEmailSQL = `SELECT id, email, is_admin, disabled_at IS NOT NULL FROM users WHERE email = @email FOR UPDATE`

// lockUser locks operator id's row for the rest of tx and returns them.
func lockUser(ctx context.Context, tx pgx.Tx, id int64) (domain.User, error) {
	return scanLockedUser(tx.QueryRow(ctx, lockUserSQL, pgx.NamedArgs{"id": id}))
}

func scanLockedUser(row pgx.Row) (domain.User, error) {
	var u domain.User
	err := row.Scan(&u.ID, &u.Email, &u.IsAdmin, &u.Disabled)
	if errors.Is(err, pgx.ErrNoRows) {
		return u, pg.NotFound("operator not found")
	}
	return u, pg.Translate(err)
}

// countAdminsSQL moves the count of enabled admins by @delta.
const countAdminsSQL = `UPDATE enabled_admins SET n = n + @delta RETURNING n`

// countAdmins moves the count of enabled admins from was to is (each
// whether the operator is an enabled admin) and refuses, with
// domain.ErrLastAdmin, a change that leaves none.
func countAdmins(ctx context.Context, tx pgx.Tx, was, is bool) error {
	delta := 0
	if was {
		delta--
	}
	if is {
		delta++
	}
	if delta == 0 {
		return nil
	}
	var n int
	if err := tx.QueryRow(ctx, countAdminsSQL, pgx.NamedArgs{"delta": delta}).Scan(&n); err != nil {
		return pg.Translate(err)
	}
	if delta < 0 && n < 1 {
		return domain.ErrLastAdmin
	}
	return nil
}

// setDisabledSQL disables (keeping the first instant) or enables an
// operator; disabling also ends their sessions. The time is a parameter:
// Citus refuses now() in a CASE.
const setDisabledSQL = `
UPDATE users
SET disabled_at = CASE WHEN @disabled::boolean THEN coalesce(disabled_at, @now::timestamptz) END,
    session_epoch = session_epoch + CASE WHEN @disabled::boolean THEN 1 ELSE 0 END
WHERE id = @id`

// SetDisabled implements domain.OperatorService. The change is recorded
// before it is made, so that the database's refusal to disable the last
// enabled admin takes the entry back with it.
func (s *Users) SetDisabled(ctx context.Context, actor domain.User, userID int64, disabled bool) error {
	if err := domain.CheckDisable(actor, userID, disabled); err != nil {
		return err
	}
	return pg.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		u, err := lockUser(ctx, tx, userID)
		if err != nil {
			return err
		}
		action, summary := domain.AuditOperatorEnable, "disabled → enabled"
		switch {
		case disabled && u.Disabled:
			summary = "already disabled; sessions ended"
		case disabled:
			summary = "enabled → disabled; sessions ended"
		case !u.Disabled:
			summary = "already enabled"
		}
		if disabled {
			action = domain.AuditOperatorDisable
		}
		if err := pg.Audit(ctx, tx, 0, action, u.Email, summary); err != nil {
			return err
		}
		if err := countAdmins(ctx, tx, u.IsAdmin && !u.Disabled, u.IsAdmin && !disabled); err != nil {
			return err
		}
		now, err := pg.Now(ctx, tx)
		if err != nil {
			return err
		}
		if _, err = tx.Exec(ctx, setDisabledSQL, pgx.NamedArgs{"id": userID, "disabled": disabled, "now": now}); err != nil || !disabled {
			return pg.Translate(err)
		}
		return revokeEveryCreatorToken(ctx, tx, userID, "its creator was disabled")
	})
}

const setPasswordSQL = `UPDATE users SET password_hash = @password_hash, session_epoch = session_epoch + 1 WHERE id = @id`

// ResetPassword implements domain.OperatorService.
func (s *Users) ResetPassword(ctx context.Context, email, password string) error {
	if err := domain.ValidatePassword(password); err != nil {
		return err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return err
	}
	return pg.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		u, err := scanLockedUser(tx.QueryRow(ctx, lockUserByEmailSQL, pgx.NamedArgs{"email": domain.NormalizeEmail(email)}))
		if domain.ErrorCode(err) == domain.ENOTFOUND {
			return pg.NotFound("there is no operator %q", domain.NormalizeEmail(email))
		}
		if err != nil {
			return err
		}
		if err := pg.Audit(ctx, tx, 0, domain.AuditOperatorPassword, u.Email, "password reset; sessions ended"); err != nil {
			return err
		}
		if _, err = tx.Exec(ctx, setPasswordSQL, pgx.NamedArgs{"id": u.ID, "password_hash": string(hash)}); err != nil {
			return pg.Translate(err)
		}
		return revokeEveryCreatorToken(ctx, tx, u.ID, "its creator's password was reset")
	})
}

const endSessionsSQL = `UPDATE users SET session_epoch = session_epoch + 1 WHERE id = @id`

// SignOutEverywhere implements domain.OperatorService.
func (s *Users) SignOutEverywhere(ctx context.Context, userID int64) error {
	return pg.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		u, err := lockUser(ctx, tx, userID)
		if err != nil {
			return err
		}
		if err := pg.Audit(ctx, tx, 0, domain.AuditOperatorSignOut, u.Email, "every session ended"); err != nil {
			return err
		}
		if _, err = tx.Exec(ctx, endSessionsSQL, pgx.NamedArgs{"id": userID}); err != nil {
			return pg.Translate(err)
		}
		return revokeEveryCreatorToken(ctx, tx, userID, "its creator was signed out everywhere")
	})
}

// creatorTenantsSQL lists the tenants where an operator made API tokens
// that still work. Operator administration, it looks across tenants.
const creatorTenantsSQL = `
SELECT DISTINCT k.tenant_id FROM api_tokens k
WHERE k.created_by_user_id = @user_id AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())
ORDER BY 1`

// revokeEveryCreatorToken revokes, in tx, the working API tokens operator
// userID created in every tenant: a token must not outlive the access of
// the person it stands for (disabled, or their credentials suspect).
func revokeEveryCreatorToken(ctx context.Context, tx pgx.Tx, userID int64, why string) error {
	rows, _ := tx.Query(ctx, creatorTenantsSQL, pgx.NamedArgs{"user_id": userID})
	tenants, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return pg.Translate(err)
	}
	for _, tenantID := range tenants {
		if _, err := revokeCreatorTokens(ctx, tx, tenantID, userID, why); err != nil {
			return err
		}
	}
	return nil
}

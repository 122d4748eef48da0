package replay

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// replayTokenSQL says why a job's API token may no longer replay, "" when
// it still may. A job older than actor_id names its token only: a working
// token of that name will do.
const replayTokenSQL = `
SELECT CASE WHEN k.revoked_at IS NOT NULL THEN 'was revoked'
            WHEN k.expires_at <= now() THEN 'has expired'
            WHEN k.access <> 'write' THEN 'is read-only'
            ELSE '' END
FROM api_tokens k
WHERE k.tenant_id = @tenant_id AND (k.id = @id OR (@id = 0 AND k.name = @name))
ORDER BY 1 LIMIT 1`

// replayOperatorSQL says why a job's operator may no longer replay in the
// tenant, "" when they still may: enabled, and an admin or at least an
// operator member.
const replayOperatorSQL = `
SELECT CASE WHEN u.disabled_at IS NOT NULL THEN 'was disabled'
            WHEN u.is_admin OR m.role IN ('operator', 'owner') THEN ''
            WHEN m.role IS NULL THEN 'is no longer a member of the workspace'
            ELSE 'is no longer an operator of the workspace' END
FROM users u LEFT JOIN memberships m ON m.tenant_id = @tenant_id AND m.user_id = u.id
WHERE u.id = @id OR (@id = 0 AND u.email = @name)
ORDER BY 1 LIMIT 1`

// CheckReplayActor implements domain.ReplayService.
func (q *Jobs) CheckReplayActor(ctx context.Context, job domain.ReplayJob) error {
	a := job.CreatedBy
	sql, who := replayTokenSQL, fmt.Sprintf("the API token %q that started the job", a.Name)
	switch a.Kind {
	case domain.ActorToken:
	case domain.ActorOperator:
		sql, who = replayOperatorSQL, fmt.Sprintf("the operator %s who started the job", a.Name)
	default: // the CLI acts with the database's authority
		return nil
	}
	var why string
	err := q.pool.QueryRow(ctx, sql, pgx.NamedArgs{"tenant_id": job.TenantID, "id": a.ID, "name": a.Name}).Scan(&why)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		why = "no longer exists"
	case err != nil:
		return pg.Translate(err)
	case why == "":
		return nil
	}
	return domain.Errorf(domain.EFORBIDDEN, "%s %s", who, why)
}

package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
)

const insertAuditSQL = `INSERT INTO audit_log (tenant_id, actor_kind, actor, action, target, summary, client_address)
VALUES (@tenant_id, @actor_kind, @actor, @action, @target, @summary, @client_address)`

// audit records a change in tx, the transaction that makes it, so that the
// entry exists exactly when the change does. The actor comes from ctx; a
// change without one is refused rather than left unrecorded. tenantID is 0
// for changes outside any tenant. summary must never hold a secret.
func audit(ctx context.Context, tx pgx.Tx, tenantID int64, action, target, summary string) error {
	a, ok := domain.ActorFrom(ctx)
	if !ok {
		return domain.Errorf(domain.EINTERNAL, "change %s on %q has no actor to record", action, target)
	}
	_, err := tx.Exec(ctx, insertAuditSQL, pgx.NamedArgs{
		"tenant_id": tenantID, "actor_kind": a.Kind, "actor": a.Name, "action": action,
		"target": target, "summary": summary, "client_address": a.Address,
	})
	return err
}

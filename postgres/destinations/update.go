package destinations

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/shape"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// updateExpressionsSQL sets the expressions given (@set_filter,
// @set_transform), NULL for "": the sender reads them at its next lease
// renewal.
const updateExpressionsSQL = `
UPDATE destinations SET filter = CASE WHEN @set_filter THEN @filter::text ELSE filter END,
                        transform = CASE WHEN @set_transform THEN @transform::text ELSE transform END
WHERE tenant_id = @tenant_id AND id = @id`

// UpdateDestination implements stream.DestinationService: the expressions
// are checked (shape.Check) before anything is written, and the audit
// entry says what each was and became.
func (m *Manager) UpdateDestination(ctx context.Context, tenantID, id int64, u stream.DestinationUpdate) (stream.Destination, error) {
	var d stream.Destination
	if u.IsZero() {
		return d, domain.Errorf(domain.EINVALID, "give filter or transform (null removes one)")
	}
	if err := shape.Check(deref(u.Filter), deref(u.Transform)); err != nil {
		return d, err
	}
	err := pg.WithTx(ctx, m.pool, func(tx pgx.Tx) error {
		was, err := destination(ctx, tx, tenantID, id)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, updateExpressionsSQL, pgx.NamedArgs{"tenant_id": tenantID, "id": id,
			"set_filter": u.Filter != nil, "filter": pg.NullString(deref(u.Filter)),
			"set_transform": u.Transform != nil, "transform": pg.NullString(deref(u.Transform))})
		if err != nil {
			return err
		}
		if d, err = destination(ctx, tx, tenantID, id); err != nil {
			return err
		}
		var parts []string
		if u.Filter != nil {
			parts = append(parts, "filter "+expression(d.Filter)+" (was "+expression(was.Filter)+")")
		}
		if u.Transform != nil {
			parts = append(parts, "transform "+expression(d.Transform)+" (was "+expression(was.Transform)+")")
		}
		return pg.Audit(ctx, tx, tenantID, stream.AuditDestinationUpdate, stream.DestinationLabel(id), strings.Join(parts, "; "))
	})
	if err != nil {
		return stream.Destination{}, pg.Translate(err)
	}
	return d, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// expression is an expression as the audit log quotes it.
func expression(e string) string {
	if e == "" {
		return "none"
	}
	return "`" + e + "`"
}

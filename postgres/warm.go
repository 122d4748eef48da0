package postgres

import (
	"github.com/tidemark/tidemark/postgres/internal/pg"

	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// PrepareIngest readies a new connection for the ingest statements: it
// prepares them and has PostgreSQL build their generic plans, in a
// transaction that writes nothing and is rolled back. Set it as the
// AfterConnect of a pool that ingests. Without it the first group a
// connection writes waits for those plans (about 50 ms here, 27 ms of it
// for the outcome statement), and the tenant's other deliveries wait
// behind that group.
func PrepareIngest(ctx context.Context, conn *pgx.Conn) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("prepare ingest statements: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	// No event and no delivery: every statement runs on empty arrays, so
	// it is planned and writes nothing.
	args := roundArgs(0, nil, 0)
	var none deliveryRows
	none.set(args)
	batch := &pgx.Batch{}
	batch.Queue(genericPlansSQL)
	for _, st := range []pg.Statement{deliveriesSQL, claimSQL, claimApplySQL, claimApplyPropertySQL, claimApplyBothSQL,
		applySQL, applyPropertySQL, outcomeSQL} {
		batch.Queue(st.SQL, st.Args(args)...)
	}
	// A lead signup of tenant 0, which has no claim: it writes nothing.
	// Its lock is released with the rollback.
	batch.Queue(leadLockSQL.SQL, leadLockSQL.Args(pgx.NamedArgs{"key": int64(0)})...)
	lead := pgx.NamedArgs{"tenant_id": int64(0), "key": []byte{}, "delivery_id": nil, "seq": 0, "now": nil,
		"email": "", "name": nil, "company": nil, "domain": nil, "campaign": "", "source": nil}
	batch.Queue(leadSQL.SQL, leadSQL.Args(lead)...)
	err = tx.SendBatch(ctx, batch).Close()
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "42") {
		// An undefined table, column or function: the database is not
		// yet migrated to the schema of this build, as when serve starts
		// on a new one. The connection serves as it is, and prepares the
		// statements when it first writes.
		return nil
	}
	if err != nil {
		return fmt.Errorf("prepare ingest statements: %w", err)
	}
	return nil
}

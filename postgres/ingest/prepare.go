package ingest

import (
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
	// Every statement of the registry, in the form for this database, on
	// arguments on which it writes nothing (statements.go).
	var citus bool
	if err := tx.QueryRow(ctx, citusSQL, pgx.QueryExecModeSimpleProtocol).Scan(&citus); err != nil {
		return fmt.Errorf("prepare ingest statements: %w", err)
	}
	batch := &pgx.Batch{}
	for _, st := range ingestStatements {
		if st.lazy {
			continue
		}
		var args pgx.NamedArgs
		if st.idle != nil {
			args = st.idle()
		}
		sent := st.sent(citus)
		batch.Queue(sent.SQL, sent.Args(args)...)
	}
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

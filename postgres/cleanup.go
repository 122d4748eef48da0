package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
)

// Maintenance of the partitioned logs and the idempotency claims.
//
// Every statement in this file is cross-tenant by nature and so carries no
// tenant filter: key expiry, partition management and retention apply to
// all tenants at once, and touch no tenant's live data.

// partitionLockKey is the transaction-level advisory lock taken around
// partition DDL, so that two nodes preparing or dropping partitions at the
// same time take turns instead of colliding ("tidemark" in ASCII).
const partitionLockKey int64 = 0x746964656d61726b

// cleanupBatch bounds every DELETE of Cleanup, so that each one is a short
// statement that never holds its locks for long.
const cleanupBatch = 5000

// partitionedTables lists the day-partitioned logs, in the order ingest
// writes them (deliveries, then events); locks are taken in that order too.
var partitionedTables = []string{"deliveries", "events"}

const (
	lockPartitionsSQL = `SELECT pg_advisory_xact_lock(@key)`
	lockDropSQL       = `LOCK TABLE ONLY deliveries, ONLY events IN ACCESS EXCLUSIVE MODE`
)

// The daily partitions attached to the logs; their day is in their name.
const listPartitionsSQL = `
SELECT p.relname, c.relname
FROM pg_inherits i
JOIN pg_class c ON c.oid = i.inhrelid
JOIN pg_class p ON p.oid = i.inhparent
WHERE i.inhparent IN ('deliveries'::regclass, 'events'::regclass)
  AND c.relname ~ '^(deliveries|events)_p[0-9]{8}$'`

// A claim is forgotten once expires_at has passed on the database's clock,
// which claimSQL sets it by. Rows being reclaimed right now are skipped, and
// the outer WHERE re-checks expiry so a claim renewed meanwhile is never
// deleted.
const deleteExpiredKeysSQL = `
DELETE FROM idempotency_keys k
USING (SELECT tenant_id, key FROM idempotency_keys WHERE expires_at <= statement_timestamp() LIMIT @limit FOR UPDATE SKIP LOCKED) e
WHERE k.tenant_id = e.tenant_id AND k.key = e.key AND k.expires_at <= statement_timestamp()`

// Rows of a default partition past retention, one batch at a time
// (%s is deliveries_default or events_default).
const deleteOldDefaultSQL = `
DELETE FROM %[1]s WHERE ctid = ANY (ARRAY (SELECT ctid FROM %[1]s WHERE received_at < @cutoff LIMIT @limit))`

// A new day's partition is built standalone, filled with the rows of that
// day the default partition caught, and attached, all in one transaction:
// PostgreSQL refuses to attach a range the default partition has rows for.
//
// Writes to both logs wait until commit (reads go on): a writer that routed
// its row to the default partition before the new partition was attached
// would otherwise fail its partition check once let through. The locks are
// taken in the order ingest writes, deliveries then events, so the two
// never deadlock.
//
// DDL takes no parameters: each %s is a table name quoted with
// pgx.Identifier{...}.Sanitize(), and the attach bounds are timestamps
// formatted in Go.
const (
	lockWritesSQL      = `LOCK TABLE ONLY deliveries, ONLY events IN EXCLUSIVE MODE`
	createPartitionSQL = `CREATE TABLE %s (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`
	movePartitionSQL   = `
WITH moved AS (DELETE FROM %s WHERE received_at >= @from AND received_at < @to RETURNING *)
INSERT INTO %s SELECT * FROM moved`
	attachPartitionSQL = `ALTER TABLE %s ATTACH PARTITION %s FOR VALUES FROM ('%s') TO ('%s')`
)

// dropPartitionSQL drops a whole daily partition (%s is its name).
const dropPartitionSQL = `DROP TABLE %s`

// CleanupReport says what one Cleanup removed.
type CleanupReport struct {
	ExpiredKeys        int64    // idempotency keys deleted
	DroppedPartitions  []string // whole daily partitions dropped (older than retention)
	DefaultRowsDeleted int64    // rows past retention deleted from the default partitions
	CreatedPartitions  []string // daily partitions created ahead
}

// String describes the report in one line.
func (r CleanupReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "removed %d expired idempotency keys; dropped %d partitions", r.ExpiredKeys, len(r.DroppedPartitions))
	if len(r.DroppedPartitions) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(r.DroppedPartitions, ", "))
	}
	fmt.Fprintf(&b, "; deleted %d old rows from default partitions", r.DefaultRowsDeleted)
	if len(r.CreatedPartitions) > 0 {
		fmt.Fprintf(&b, "; created %d partitions ahead", len(r.CreatedPartitions))
	}
	return b.String()
}

// partitionName is the name of table's partition for the UTC day of day.
func partitionName(table string, day time.Time) string {
	return table + "_p" + day.UTC().Format("20060102")
}

func utcDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// listPartitions returns the daily partitions attached to the logs, by name,
// with the UTC day each one holds.
func listPartitions(ctx context.Context, tx pgx.Tx) (map[string]time.Time, error) {
	rows, err := tx.Query(ctx, listPartitionsSQL)
	if err != nil {
		return nil, err
	}
	days := map[string]time.Time{}
	var parent, name string
	_, err = pgx.ForEachRow(rows, []any{&parent, &name}, func() error {
		day, err := time.Parse("20060102", strings.TrimPrefix(name, parent+"_p"))
		if err != nil {
			return fmt.Errorf("partition %s: %w", name, err)
		}
		days[name] = day
		return nil
	})
	return days, err
}

// EnsurePartitions creates the daily partitions of events and deliveries for
// the days from `from` through `from+ahead` (UTC days), named
// events_pYYYYMMDD / deliveries_pYYYYMMDD, skipping ones that exist. Rows
// of those days already in a default partition move into the new partition.
// Returns the names created.
func (s *Store) EnsurePartitions(ctx context.Context, from time.Time, ahead int) ([]string, error) {
	if ahead < 0 {
		return nil, domain.Errorf(domain.EINVALID, "ahead must not be negative")
	}
	var created []string
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		created = nil
		if _, err := tx.Exec(ctx, lockPartitionsSQL, pgx.NamedArgs{"key": partitionLockKey}); err != nil {
			return err
		}
		existing, err := listPartitions(ctx, tx)
		if err != nil {
			return err
		}
		locked := false
		first := utcDay(from)
		for i := 0; i <= ahead; i++ {
			day := first.AddDate(0, 0, i)
			for _, table := range partitionedTables {
				name := partitionName(table, day)
				if _, ok := existing[name]; ok {
					continue
				}
				if !locked {
					if _, err := tx.Exec(ctx, lockWritesSQL); err != nil {
						return err
					}
					locked = true
				}
				if err := createPartition(ctx, tx, table, name, day); err != nil {
					return fmt.Errorf("create partition %s: %w", name, err)
				}
				created = append(created, name)
			}
		}
		return nil
	})
	if err != nil {
		return nil, translate(err)
	}
	return created, nil
}

func createPartition(ctx context.Context, tx pgx.Tx, table, name string, day time.Time) error {
	next := day.AddDate(0, 0, 1)
	id := pgx.Identifier{name}.Sanitize()
	parent := pgx.Identifier{table}.Sanitize()
	def := pgx.Identifier{table + "_default"}.Sanitize()
	const bound = "2006-01-02 15:04:05-07"
	stmts := []struct {
		sql  string
		args []any
	}{
		{fmt.Sprintf(createPartitionSQL, id, parent), nil},
		{fmt.Sprintf(movePartitionSQL, def, id), []any{pgx.NamedArgs{"from": day, "to": next}}},
		{fmt.Sprintf(attachPartitionSQL, parent, id, day.Format(bound), next.Format(bound)), nil},
	}
	for _, st := range stmts {
		if _, err := tx.Exec(ctx, st.sql, st.args...); err != nil {
			return err
		}
	}
	return nil
}

// Cleanup removes expired idempotency keys, drops the daily partitions of
// events and deliveries whose whole day ended before now-retention, and
// deletes past-retention rows from the default partitions. Deletes run in
// batches of bounded size, each its own short statement. It also makes
// sure the partitions of the next 7 days exist.
func (s *Store) Cleanup(ctx context.Context, now time.Time, retention time.Duration) (CleanupReport, error) {
	return s.cleanup(ctx, now, retention, cleanupBatch)
}

func (s *Store) cleanup(ctx context.Context, now time.Time, retention time.Duration, batch int) (CleanupReport, error) {
	var r CleanupReport
	if retention <= 0 {
		return r, domain.Errorf(domain.EINVALID, "retention must be positive")
	}
	cutoff := now.Add(-retention)
	var err error
	if r.CreatedPartitions, err = s.EnsurePartitions(ctx, now, 7); err != nil {
		return r, err
	}
	if r.ExpiredKeys, err = s.deleteBatches(ctx, deleteExpiredKeysSQL, pgx.NamedArgs{"limit": batch}); err != nil {
		return r, fmt.Errorf("delete expired idempotency keys: %w", err)
	}
	if r.DroppedPartitions, err = s.dropPartitions(ctx, cutoff); err != nil {
		return r, fmt.Errorf("drop old partitions: %w", err)
	}
	for _, table := range partitionedTables {
		sql := fmt.Sprintf(deleteOldDefaultSQL, pgx.Identifier{table + "_default"}.Sanitize())
		n, err := s.deleteBatches(ctx, sql, pgx.NamedArgs{"cutoff": cutoff, "limit": batch})
		r.DefaultRowsDeleted += n
		if err != nil {
			return r, fmt.Errorf("delete old rows of %s_default: %w", table, err)
		}
	}
	return r, nil
}

// deleteBatches runs a bounded DELETE, each time in its own implicit
// transaction, until it deletes nothing, and returns the rows deleted.
func (s *Store) deleteBatches(ctx context.Context, sql string, args pgx.NamedArgs) (int64, error) {
	var total int64
	for {
		tag, err := s.pool.Exec(ctx, sql, args)
		if err != nil {
			return total, translate(err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() == 0 {
			return total, nil
		}
	}
}

// dropPartitions drops the daily partitions whose day ends at or before
// cutoff, deliveries' before events' like every other lock taker here.
func (s *Store) dropPartitions(ctx context.Context, cutoff time.Time) ([]string, error) {
	var dropped []string
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		dropped = nil
		if _, err := tx.Exec(ctx, lockPartitionsSQL, pgx.NamedArgs{"key": partitionLockKey}); err != nil {
			return err
		}
		existing, err := listPartitions(ctx, tx)
		if err != nil {
			return err
		}
		for _, table := range partitionedTables {
			var old []string
			for name, day := range existing {
				if strings.HasPrefix(name, table+"_p") && !day.AddDate(0, 0, 1).After(cutoff) {
					old = append(old, name)
				}
			}
			slices.Sort(old)
			dropped = append(dropped, old...)
		}
		if len(dropped) > 0 {
			// DROP locks the parent anyway; take both up front, in
			// ingest's order, so the drops never deadlock with a writer.
			if _, err := tx.Exec(ctx, lockDropSQL); err != nil {
				return err
			}
		}
		for _, name := range dropped {
			if _, err := tx.Exec(ctx, fmt.Sprintf(dropPartitionSQL, pgx.Identifier{name}.Sanitize())); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, translate(err)
	}
	return dropped, nil
}

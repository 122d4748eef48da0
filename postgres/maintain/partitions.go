package maintain

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// The partitions of the logs, and how a pass changes them without making
// ingest wait.
//
// Each log (deliveries, events) is range-partitioned on received_at into
// daily partitions, <log>_pYYYYMMDD, kept at least PartitionsAhead days
// ahead, and one catch-all, <log>_fromYYYYMMDD, for every instant from the
// day after the newest daily partition on. There is no DEFAULT partition
// (migration 00010): PostgreSQL refuses DETACH ... CONCURRENTLY on a table
// that has one, and attaching a partition beside one takes ACCESS
// EXCLUSIVE on it, which every reader of the log holds a lock against.
//
//   - A new day is a new table (LIKE the log) attached with ATTACH
//     PARTITION: SHARE UPDATE EXCLUSIVE on the log, which neither readers
//     nor writers conflict with, and ACCESS EXCLUSIVE only on the new table.
//   - A day past retention is detached with DETACH ... CONCURRENTLY, then
//     dropped. The detach takes SHARE UPDATE EXCLUSIVE on the log and the
//     partition, then waits, holding no lock, for every transaction that
//     had the log open (a pg_dump, a long API read) to end; lock_timeout
//     bounds that wait. Then it takes ACCESS EXCLUSIVE on the partition,
//     which no new query plans any more. A detach cut short (lock_timeout,
//     a crash) stays pending; the next pass finishes it with DETACH ...
//     FINALIZE. A log has one pending detach at most, so a step that gives
//     up ends the pass's partition work on that log.
//   - A day at or after the catch-all's start cannot be attached beside it,
//     so the catch-all is rotated: detached concurrently, the new days and a
//     new catch-all attached, and the rows the old one held re-inserted
//     through the log in batches. Those rows would be dated PartitionsAhead
//     days ahead, so in normal operation there are none. They are moved out
//     of a table no longer attached, which no writer can reach: no row is
//     ever moved under a lock that blocks writes. While the catch-all's
//     detach is pending, or a pass cut short has not attached the new
//     one yet, a row dated after the daily partitions has no partition and
//     its delivery fails (the provider retries it).
//   - A row dated before the oldest daily partition, or on a day that has
//     none, has no partition either. Deliveries are dated by the receiving
//     server's clock, today, so this happens only to back-dated test or
//     demo data, which creates its days first (EnsurePartitions).
//
// DDL takes no parameters: each %s is a table name quoted with
// pgx.Identifier{...}.Sanitize(), and the bounds are timestamps formatted
// in Go.

// PartitionsAhead is how many days after today always have their daily
// partitions, so that no row of normal operation lands in a catch-all.
const PartitionsAhead = 30

// partitionedTables lists the day-partitioned logs, in the order ingest
// writes them.
var partitionedTables = []string{"deliveries", "events"}

// Our partitions, attached or not, with whether a detach is pending.
const listPartitionsSQL = `
SELECT c.relname, i.inhrelid IS NOT NULL, coalesce(i.inhdetachpending, false)
FROM pg_class c
LEFT JOIN pg_inherits i ON i.inhrelid = c.oid
WHERE c.relkind = 'r' AND pg_table_is_visible(c.oid) AND c.relname ~ '^(deliveries|events)_(p|from)[0-9]{8}$'`

var partitionPattern = regexp.MustCompile(`^(deliveries|events)_(p|from)([0-9]{8})$`)

const (
	createPartitionSQL = `CREATE TABLE %s (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`
	attachPartitionSQL = `ALTER TABLE %s ATTACH PARTITION %s FOR VALUES FROM ('%s') TO ('%s')`
	attachCatchAllSQL  = `ALTER TABLE %s ATTACH PARTITION %s FOR VALUES FROM ('%s') TO (MAXVALUE)`
	detachPartitionSQL = `ALTER TABLE %s DETACH PARTITION %s CONCURRENTLY`
	// On Citus: ACCESS EXCLUSIVE on the log for the moment of the detach,
	// so ingest waits that moment on every worker.
	detachDistributedSQL = `ALTER TABLE %s DETACH PARTITION %s`
	finalizePartitionSQL = `ALTER TABLE %s DETACH PARTITION %s FINALIZE`
	dropPartitionSQL     = `DROP TABLE %s`
	partitionBoundFormat = "2006-01-02 15:04:05-07"
	partitionDayFormat   = "20060102"
	catchAllInfix        = "_from"
	dailyInfix           = "_p"
)

// moveDistributedRowsSQL moves them all at once on Citus, which deletes by
// ctid on no shard: a statement each worker runs on its shards, whose rows
// no writer reaches any more. Run again after a crash before the drop, it
// skips the rows already moved.
const moveDistributedRowsSQL = `INSERT INTO %[2]s SELECT * FROM %[1]s ON CONFLICT DO NOTHING`

// The days that rows of a detached catch-all (%s) fall on, before @before.
const detachedRowDaysSQL = `
SELECT DISTINCT date_trunc('day', received_at, 'UTC') FROM %s WHERE received_at < @before`

// One batch of a detached catch-all's rows (%[1]s) moved into its log
// (%[2]s), which routes each to its partition.
const moveDetachedRowsSQL = `
WITH moved AS (DELETE FROM %[1]s WHERE ctid = ANY (ARRAY (SELECT ctid FROM %[1]s LIMIT @limit)) RETURNING *)
INSERT INTO %[2]s SELECT * FROM moved`

// pass runs one pass's statements on its connection.
type pass struct {
	conn   *pgx.Conn
	report *Report
	logs   []*logPartitions
	// distributed: the database is distributed by Citus, which runs
	// neither DETACH ... CONCURRENTLY nor locks rows across tenants.
	distributed bool
}

// logPartitions is what one log's partitions look like.
type logPartitions struct {
	table    string
	daily    map[time.Time]string // attached daily partitions by UTC day
	catchAll string               // the attached catch-all, "" when none
	from     time.Time            // where the catch-all starts
	pending  string               // a partition whose detach has not finished
	loose    []string             // our tables no longer attached: to drop, or (catch-alls) to empty first
	stalled  bool                 // a step gave up: no more DDL on this log in this pass
}

func ident(name string) string { return pgx.Identifier{name}.Sanitize() }

// partitionName is the name of table's daily partition for the UTC day of day.
func partitionName(table string, day time.Time) string {
	return table + dailyInfix + day.UTC().Format(partitionDayFormat)
}

// partitions loads the partitions, finishes detaches left pending, and
// runs fn.
func (m *pass) partitions(ctx context.Context, fn func() error) error {
	if err := m.load(ctx); err != nil {
		return err
	}
	if err := m.eachLog(func(lp *logPartitions) error { return m.finishDetach(ctx, lp) }); err != nil {
		return err
	}
	return fn()
}

// eachLog runs fn for every log no step has given up on yet in this pass.
// A step that gives up (it is in the report's Deferred list) stalls its
// log only: a reader of events does not hold up the work on deliveries.
func (m *pass) eachLog(fn func(*logPartitions) error) error {
	for _, lp := range m.logs {
		if lp.stalled {
			continue
		}
		err := fn(lp)
		if errors.Is(err, errGaveUp) {
			lp.stalled = true
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (m *pass) load(ctx context.Context) error {
	byTable := map[string]*logPartitions{}
	m.logs = nil
	for _, table := range partitionedTables {
		lp := &logPartitions{table: table, daily: map[time.Time]string{}}
		byTable[table] = lp
		m.logs = append(m.logs, lp)
	}
	rows, err := m.conn.Query(ctx, listPartitionsSQL)
	if err != nil {
		return pg.Translate(err)
	}
	var (
		name              string
		attached, pending bool
	)
	_, err = pgx.ForEachRow(rows, []any{&name, &attached, &pending}, func() error {
		parts := partitionPattern.FindStringSubmatch(name)
		day, err := time.Parse(partitionDayFormat, parts[3])
		if err != nil {
			return fmt.Errorf("partition %s: %w", name, err)
		}
		lp := byTable[parts[1]]
		switch {
		case pending:
			lp.pending = name
		case !attached:
			lp.loose = append(lp.loose, name)
		case "_"+parts[2] == catchAllInfix:
			lp.catchAll, lp.from = name, day
		default:
			lp.daily[day] = name
		}
		return nil
	})
	return pg.Translate(err)
}

// ddl runs one DDL statement of the step named.
func (m *pass) ddl(ctx context.Context, step, sql string) error {
	if _, err := m.conn.Exec(ctx, sql); err != nil {
		return m.failed(ctx, step, err)
	}
	return nil
}

// lockTimeout sets how long the pass's next statements wait for a lock.
func (m *pass) lockTimeout(ctx context.Context, timeout string) error {
	_, err := m.conn.Exec(ctx, setLockTimeoutSQL, pgx.NamedArgs{"lock_timeout": timeout})
	return pg.Translate(err)
}

// failed names the step in its error. A lock or statement timeout is
// recorded as deferred and becomes errGaveUp.
func (m *pass) failed(ctx context.Context, step string, err error) error {
	if why, ok := gaveUp(err); ok && ctx.Err() == nil {
		m.report.Deferred = append(m.report.Deferred, step+": "+why)
		return errGaveUp
	}
	return fmt.Errorf("%s: %w", step, pg.Translate(err))
}

// finishDetach completes a detach an earlier pass left pending.
func (m *pass) finishDetach(ctx context.Context, lp *logPartitions) error {
	if lp.pending == "" {
		return nil
	}
	// FINALIZE waits for ACCESS EXCLUSIVE on the pending partition, and a
	// delivery whose cached plan still names it would queue behind that
	// request: give up after exclusiveLockTimeout, not the usual second.
	if err := m.lockTimeout(ctx, maintenanceExclusiveLockTimeout); err != nil {
		return err
	}
	err := m.ddl(ctx, "finish detaching "+lp.pending, fmt.Sprintf(finalizePartitionSQL, ident(lp.table), ident(lp.pending)))
	if rerr := m.lockTimeout(ctx, maintenanceLockTimeout); err == nil {
		err = rerr
	}
	if err != nil {
		return err
	}
	lp.loose, lp.pending = append(lp.loose, lp.pending), ""
	return nil
}

// ensure makes sure every log has its daily partitions for the UTC days
// from `from` through `from+ahead`, and a catch-all after them.
func (m *pass) ensure(ctx context.Context, from time.Time, ahead int) error {
	first := pg.UTCDay(from)
	last := first.AddDate(0, 0, ahead)
	return m.eachLog(func(lp *logPartitions) error {
		// Days before the catch-all are attached beside it at once;
		// days at or after its start need it rotated.
		var later []time.Time
		for day := first; !day.After(last); day = day.AddDate(0, 0, 1) {
			switch {
			case lp.daily[day] != "":
			case lp.catchAll != "" && !day.Before(lp.from):
				later = append(later, day)
			default:
				if err := m.attachDay(ctx, lp, day); err != nil {
					return err
				}
			}
		}
		if lp.catchAll == "" || len(later) > 0 || slices.ContainsFunc(lp.loose, isCatchAll) {
			return m.rotate(ctx, lp, later, last.AddDate(0, 0, 1))
		}
		return nil
	})
}

func isCatchAll(name string) bool {
	parts := partitionPattern.FindStringSubmatch(name)
	return parts != nil && "_"+parts[2] == catchAllInfix
}

// rotate gives lp a catch-all again after `days` are attached: when the
// current one covers some of them, it is detached first and a new one
// starts at `after` (or after the newest daily partition). Rows of
// detached catch-alls then move to their partitions (their days are
// attached too) and the emptied tables are dropped.
func (m *pass) rotate(ctx context.Context, lp *logPartitions, days []time.Time, after time.Time) error {
	if lp.catchAll != "" && len(days) > 0 {
		err := m.ddl(ctx, "detach "+lp.catchAll, fmt.Sprintf(m.detachSQL(), ident(lp.table), ident(lp.catchAll)))
		if err != nil {
			return err
		}
		lp.loose, lp.catchAll = append(lp.loose, lp.catchAll), ""
	}
	if lp.catchAll != "" {
		after = lp.from
	}
	for day := range lp.daily {
		if !day.Before(after) {
			after = day.AddDate(0, 0, 1)
		}
	}
	for _, name := range lp.loose {
		if isCatchAll(name) {
			held, err := m.rowDays(ctx, name, after)
			if err != nil {
				return err
			}
			days = append(days, held...)
		}
	}
	slices.SortFunc(days, func(a, b time.Time) int { return a.Compare(b) })
	for _, day := range slices.Compact(days) {
		if lp.daily[day] == "" {
			if err := m.attachDay(ctx, lp, day); err != nil {
				return err
			}
		}
	}
	if lp.catchAll == "" {
		name := lp.table + catchAllInfix + after.Format(partitionDayFormat)
		err := m.attach(ctx, lp, name, fmt.Sprintf(attachCatchAllSQL, ident(lp.table), ident(name), after.Format(partitionBoundFormat)))
		if err != nil {
			return err
		}
		lp.catchAll, lp.from = name, after
	}
	for _, old := range slices.DeleteFunc(slices.Clone(lp.loose), func(n string) bool { return !isCatchAll(n) }) {
		var err error
		if m.distributed {
			_, err = m.conn.Exec(ctx, fmt.Sprintf(moveDistributedRowsSQL, ident(old), ident(lp.table)))
		} else {
			_, err = execBatches(ctx, m.conn, fmt.Sprintf(moveDetachedRowsSQL, ident(old), ident(lp.table)),
				pgx.NamedArgs{"limit": cleanupBatch})
		}
		if err != nil {
			return m.failed(ctx, "move the rows of "+old, err)
		}
		if err := m.ddl(ctx, "drop "+old, fmt.Sprintf(dropPartitionSQL, ident(old))); err != nil {
			return err
		}
		lp.loose = slices.DeleteFunc(lp.loose, func(n string) bool { return n == old })
	}
	return nil
}

// rowDays returns the UTC days before `before` that rows of table fall on.
func (m *pass) rowDays(ctx context.Context, table string, before time.Time) ([]time.Time, error) {
	rows, err := m.conn.Query(ctx, fmt.Sprintf(detachedRowDaysSQL, ident(table)),
		pgx.NamedArgs{"before": before})
	if err != nil {
		return nil, pg.Translate(err)
	}
	days, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
	for i := range days {
		days[i] = days[i].UTC()
	}
	return days, pg.Translate(err)
}

// attachDay creates and attaches lp's daily partition for day.
func (m *pass) attachDay(ctx context.Context, lp *logPartitions, day time.Time) error {
	name := partitionName(lp.table, day)
	next := day.AddDate(0, 0, 1)
	err := m.attach(ctx, lp, name, fmt.Sprintf(attachPartitionSQL, ident(lp.table), ident(name),
		day.Format(partitionBoundFormat), next.Format(partitionBoundFormat)))
	if err == nil {
		lp.daily[day] = name
	}
	return err
}

// attach creates a table like the log and attaches it with attachSQL, in
// one transaction, so that no pass leaves a table made but not attached.
// A detached table of that name is attached again as it is: it holds rows
// of that range only (the detach left a CHECK constraint saying so, which
// spares the attach its scan).
func (m *pass) attach(ctx context.Context, lp *logPartitions, name, attachSQL string) error {
	stmts := []string{fmt.Sprintf(createPartitionSQL, ident(name), ident(lp.table)), attachSQL}
	if slices.Contains(lp.loose, name) {
		stmts = stmts[1:]
	}
	tx, err := m.conn.Begin(ctx)
	if err != nil {
		return pg.Translate(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	for _, sql := range stmts {
		if _, err := tx.Exec(ctx, sql); err != nil {
			return m.failed(ctx, "attach "+name, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return pg.Translate(err)
	}
	lp.loose = slices.DeleteFunc(lp.loose, func(n string) bool { return n == name })
	m.report.CreatedPartitions = append(m.report.CreatedPartitions, name)
	return nil
}

// dropBefore detaches and drops the daily partitions whose whole day ended
// at or before cutoff, and drops the daily tables earlier passes detached
// (those were past the retention of their time).
func (m *pass) dropBefore(ctx context.Context, cutoff time.Time) error {
	return m.eachLog(func(lp *logPartitions) error {
		var old []time.Time
		for day := range lp.daily {
			if !day.AddDate(0, 0, 1).After(cutoff) {
				old = append(old, day)
			}
		}
		slices.SortFunc(old, func(a, b time.Time) int { return a.Compare(b) })
		for _, day := range old {
			name := lp.daily[day]
			if err := m.ddl(ctx, "detach "+name, fmt.Sprintf(m.detachSQL(), ident(lp.table), ident(name))); err != nil {
				return err
			}
			delete(lp.daily, day)
			lp.loose = append(lp.loose, name)
		}
		for _, name := range slices.Clone(lp.loose) {
			if isCatchAll(name) {
				continue // emptied and dropped by rotate
			}
			if err := m.ddl(ctx, "drop "+name, fmt.Sprintf(dropPartitionSQL, ident(name))); err != nil {
				return err
			}
			lp.loose = slices.DeleteFunc(lp.loose, func(n string) bool { return n == name })
			m.report.DroppedPartitions = append(m.report.DroppedPartitions, name)
		}
		return nil
	})
}

// detachSQL is the detach of this database.
func (m *pass) detachSQL() string {
	if m.distributed {
		return detachDistributedSQL
	}
	return detachPartitionSQL
}

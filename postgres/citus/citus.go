// Package citus distributes a migrated Tidemark database over a Citus
// cluster, on its coordinator: tables without a tenant that tenant tables
// refer to become reference tables (a copy on every node), and every table
// with a tenant_id is distributed by it, all in one co-location group, so
// that each tenant's rows of every table live on one worker and a tenant's
// statements go to that worker alone. The rest (sessions, sign-in
// throttling, goose's version table, the search indexer's position) stay
// on the coordinator.
package citus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// ReferenceTables are the tables without a tenant that tenant tables keep
// foreign keys to, in the order they are created: enabled_admins is the
// count of enabled admins that the users' write paths keep; id_hash_key,
// the sealed key of domain.IDHasher, is read beside tenant tables; apps,
// their secrets and installs are global, and the app endpoint finds a
// portal's install (app_installs has a tenant_id) without its tenant;
// app_unrouted and its samples count the events of portals installed for
// no tenant; app_oauth_states, the OAuth installs under way, refer to
// users and apps; admin_tokens, the admin API's tokens, refer to the
// users who created them; sso_config and sso_rules, single sign-on, are
// an admin's, the rules referring to tenants.
var ReferenceTables = []string{"tenants", "users", "enabled_admins", "id_hash_key", "apps", "app_secrets", "app_installs",
	"app_unrouted", "app_unrouted_samples", "app_oauth_states", "admin_tokens", "sso_config", "sso_rules"}

// LocalTables are the tables without a tenant that stay on the
// coordinator, which alone reads and writes them: sessions, sign-in
// throttling and its refusals counted per address and window, goose's
// version, and the search indexer's position (IndexSearch).
var LocalTables = []string{"sessions", "login_throttle", "sign_in_refusals", "goose_db_version", "search_progress"}

// Report says what Distribute found and did.
type Report struct {
	Version     string   // the citus extension's
	Workers     int      // active primary workers
	Reference   []string // tables it made reference tables
	Distributed []string // tables it distributed by tenant_id
	Already     int      // tables that were already one or the other
	ForeignKeys int      // foreign keys it dropped and created again around the change
	Database    string   // the database whose JIT compilation it turned off
}

// String says what the report holds, a line each, as the CLI prints it.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "citus %s with %d workers\n", r.Version, r.Workers)
	fmt.Fprintf(&b, "jit off for database %s\n", r.Database)
	if len(r.Reference)+len(r.Distributed) == 0 {
		fmt.Fprintf(&b, "nothing to do: %d tables were already distributed or reference tables\n", r.Already)
		return b.String()
	}
	if len(r.Reference) > 0 {
		fmt.Fprintf(&b, "reference tables: %s\n", strings.Join(r.Reference, ", "))
	}
	if len(r.Distributed) > 0 {
		fmt.Fprintf(&b, "distributed by tenant_id: %s\n", strings.Join(r.Distributed, ", "))
	}
	fmt.Fprintf(&b, "foreign keys dropped and created again: %d\n", r.ForeignKeys)
	fmt.Fprintf(&b, "local to the coordinator: %s\n", strings.Join(LocalTables, ", "))
	return b.String()
}

// Options tune a distribution.
type Options struct {
	// ShardCount is the number of shards of each distributed table; 0 keeps
	// Citus' citus.shard_count (32).
	ShardCount int
}

// Distribute makes the database's tables reference and distributed tables
// as the package comment says, in one transaction: an error leaves the
// database as it was. Run again, it finds them done and changes nothing.
func Distribute(ctx context.Context, pool *pgxpool.Pool, o Options) (Report, error) {
	var r Report
	err := pool.QueryRow(ctx, `SELECT extversion FROM pg_extension WHERE extname = 'citus'`).Scan(&r.Version)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, domain.Errorf(domain.EINVALID, "this database has no citus extension: run CREATE EXTENSION citus on the coordinator, add the workers with citus_add_node, then run this again")
	}
	if err != nil {
		return r, err
	}
	err = pg.WithTx(ctx, pool, func(tx pgx.Tx) error {
		r.Reference, r.Distributed, r.Already, r.ForeignKeys = nil, nil, 0, 0
		if err := tx.QueryRow(ctx, workersSQL).Scan(&r.Workers); err != nil {
			return err
		}
		if err := jitOff(ctx, tx, &r); err != nil {
			return err
		}
		plan, err := planOf(ctx, tx)
		if err != nil {
			return err
		}
		r.Already = plan.already
		if len(plan.reference)+len(plan.distributed) == 0 {
			return nil
		}
		return plan.apply(ctx, tx, o, &r)
	})
	return r, err
}

// jitOff turns JIT compilation off for the database's new sessions. Citus
// estimates every CTE it reads back from an intermediate result at 1,000
// rows, so a join of two crosses jit_above_cost, and compiling took
// 170-250 ms of a statement that handles one row (docs/scale.md).
func jitOff(ctx context.Context, tx pgx.Tx, r *Report) error {
	if err := tx.QueryRow(ctx, `SELECT current_database()`).Scan(&r.Database); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %s SET jit = off`, pgx.Identifier{r.Database}.Sanitize()))
	return err
}

// Every active primary node but the coordinator (group 0).
const workersSQL = `SELECT count(*) FROM pg_dist_node WHERE noderole = 'primary' AND isactive AND groupid <> 0`

// plan is what is left to do.
type plan struct {
	reference, distributed []string
	already                int
	keys                   []foreignKey // to drop first and create again last
}

type foreignKey struct{ table, name, def string }

// tablesSQL lists the schema's tables (partitions go with their parent),
// whether they have a tenant_id and whether Citus already holds them.
const tablesSQL = `
SELECT c.relname,
       EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped),
       EXISTS (SELECT FROM pg_dist_partition d WHERE d.logicalrelid = c.oid)
FROM pg_class c
WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
ORDER BY c.relname`

// keysSQL lists the foreign keys that touch a table in @tables (partitions'
// copies of a parent's key go with it).
const keysSQL = `
SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid)
FROM pg_constraint
WHERE contype = 'f' AND conparentid = 0 AND connamespace = 'public'::regnamespace
  AND (conrelid::regclass::text = ANY (@tables) OR confrelid::regclass::text = ANY (@tables))
ORDER BY 1, 2`

func planOf(ctx context.Context, tx pgx.Tx) (plan, error) {
	var p plan
	rows, err := tx.Query(ctx, tablesSQL)
	if err != nil {
		return p, err
	}
	for rows.Next() {
		var name string
		var tenant, inCitus bool
		if err := rows.Scan(&name, &tenant, &inCitus); err != nil {
			return p, err
		}
		switch {
		case slices.Contains(LocalTables, name):
		case inCitus:
			p.already++
		case slices.Contains(ReferenceTables, name):
			p.reference = append(p.reference, name)
		case tenant:
			p.distributed = append(p.distributed, name)
		default:
			return p, fmt.Errorf("table %s has no tenant_id and is neither a reference nor a local table of this package: say what it is", name)
		}
	}
	if err := rows.Err(); err != nil {
		return p, err
	}
	// Reference tables in their listed order: users before enabled_admins.
	slices.SortStableFunc(p.reference, func(a, b string) int {
		return slices.Index(ReferenceTables, a) - slices.Index(ReferenceTables, b)
	})
	pending := append(slices.Clone(p.reference), p.distributed...)
	rows, err = tx.Query(ctx, keysSQL, pgx.NamedArgs{"tables": pending})
	if err != nil {
		return p, err
	}
	p.keys, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (foreignKey, error) {
		var k foreignKey
		return k, r.Scan(&k.table, &k.name, &k.def)
	})
	return p, err
}

// apply drops the foreign keys, converts the tables and adds the keys back.
// Without the keys, Citus would turn every table that refers to a new
// reference table into a coordinator-local table at once, which cannot
// then be distributed. The audit log's append-only triggers run on the
// workers holding its shards, which is what citus.enable_unsafe_triggers
// allows: they only refuse a change of their own row.
func (p plan) apply(ctx context.Context, tx pgx.Tx, o Options, r *Report) error {
	settings := []string{
		`SET LOCAL citus.enable_unsafe_triggers = on`,
		// Statements on distributed tables with keys to reference tables,
		// in a transaction that changed reference tables, must go one
		// connection per node.
		`SET LOCAL citus.multi_shard_modify_mode = 'sequential'`,
	}
	if o.ShardCount > 0 {
		settings = append(settings, fmt.Sprintf(`SET LOCAL citus.shard_count = %d`, o.ShardCount))
	}
	for _, s := range settings {
		if _, err := tx.Exec(ctx, s); err != nil {
			return err
		}
	}
	for _, k := range p.keys {
		if _, err := tx.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s DROP CONSTRAINT %s`, pgx.Identifier{k.table}.Sanitize(),
			pgx.Identifier{k.name}.Sanitize())); err != nil {
			return fmt.Errorf("drop foreign key %s of %s: %w", k.name, k.table, err)
		}
	}
	for _, t := range p.reference {
		if _, err := tx.Exec(ctx, `SELECT create_reference_table($1)`, t); err != nil {
			return fmt.Errorf("make %s a reference table: %w", t, err)
		}
		r.Reference = append(r.Reference, t)
	}
	group, err := colocationTable(ctx, tx)
	if err != nil {
		return err
	}
	for _, t := range p.distributed {
		with := "default"
		if group != "" {
			with = group
		}
		if _, err := tx.Exec(ctx, `SELECT create_distributed_table($1, 'tenant_id', colocate_with => $2)`, t, with); err != nil {
			return fmt.Errorf("distribute %s by tenant_id: %w", t, err)
		}
		if group == "" {
			group = t
		}
		r.Distributed = append(r.Distributed, t)
	}
	for _, k := range p.keys {
		if _, err := tx.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s ADD CONSTRAINT %s %s`, pgx.Identifier{k.table}.Sanitize(),
			pgx.Identifier{k.name}.Sanitize(), k.def)); err != nil {
			return fmt.Errorf("create foreign key %s of %s again: %w", k.name, k.table, err)
		}
	}
	r.ForeignKeys = len(p.keys)
	return nil
}

// colocationTable names a table already distributed by tenant_id, whose
// group new ones join, or "" when there is none yet.
func colocationTable(ctx context.Context, tx pgx.Tx) (string, error) {
	var name string
	err := tx.QueryRow(ctx, `
SELECT logicalrelid::regclass::text FROM pg_dist_partition
WHERE partmethod = 'h' AND logicalrelid::regclass::text <> ALL (@local)
ORDER BY logicalrelid::regclass::text LIMIT 1`, pgx.NamedArgs{"local": LocalTables}).Scan(&name)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return name, err
}

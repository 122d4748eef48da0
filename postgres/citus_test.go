package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres/citus"
)

// tenantlessTables are the tables without a tenant, and what `tidemark
// citus distribute` makes them (postgres/citus, docs/scale.md): reference
// tables are copied to every worker, so that tenant tables may keep
// foreign keys to them; local tables stay on the coordinator, which alone
// reads and writes them.
var tenantlessTables = func() map[string]string {
	roles := map[string]string{}
	for _, t := range citus.ReferenceTables {
		roles[t] = "reference"
	}
	for _, t := range citus.LocalTables {
		roles[t] = "local"
	}
	return roles
}()

// TestSchemaDistributable inspects the migrated catalog for the rules that
// let Citus distribute every tenant-owned table by tenant_id and co-locate
// them: a tenant_id column, a primary key, unique keys that include it,
// and foreign keys between tenant tables that join on it. A migration that
// breaks one fails here, naming the table and the constraint.
func TestSchemaDistributable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)

	tables := map[string]bool{} // name → has tenant_id
	rows, err := pool.Query(ctx, `
SELECT c.relname, EXISTS (SELECT FROM pg_attribute a
                          WHERE a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped AND a.attnotnull)
FROM pg_class c
WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		var tenant bool
		if err := rows.Scan(&name, &tenant); err != nil {
			t.Fatal(err)
		}
		// A reference table with a tenant_id (app_installs) is global:
		// every node holds all of it, and its unique keys hold there.
		tables[name] = tenant && tenantlessTables[name] != "reference"
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for name, role := range tenantlessTables {
		if _, ok := tables[name]; !ok {
			t.Errorf("tenantless table %s (%s) is listed but does not exist: update the list and docs/scale.md", name, role)
		}
	}
	for name, tenant := range tables {
		if _, listed := tenantlessTables[name]; !listed && !tenant {
			t.Errorf("table %s has no NOT NULL tenant_id column: give it one, or list it as a reference or local table", name)
		}
	}

	// Primary keys and every unique index (constraints, partial and
	// expression indexes alike) of tenant tables include tenant_id.
	rows, err = pool.Query(ctx, `
SELECT c.relname, i.relname, x.indisprimary,
       EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'tenant_id'
               AND a.attnum = ANY (x.indkey::int2[]))
FROM pg_index x
JOIN pg_class c ON c.oid = x.indrelid
JOIN pg_class i ON i.oid = x.indexrelid
WHERE c.relnamespace = 'public'::regnamespace AND NOT c.relispartition AND (x.indisunique OR x.indisprimary)`)
	if err != nil {
		t.Fatal(err)
	}
	hasPK := map[string]bool{}
	for rows.Next() {
		var table, index string
		var primary, withTenant bool
		if err := rows.Scan(&table, &index, &primary, &withTenant); err != nil {
			t.Fatal(err)
		}
		hasPK[table] = hasPK[table] || primary
		if tables[table] && !withTenant {
			t.Errorf("table %s: unique index %s does not include tenant_id, so Citus cannot enforce it across shards", table, index)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for name, tenant := range tables {
		if tenant && !hasPK[name] {
			t.Errorf("table %s has no primary key (Citus needs one with tenant_id)", name)
		}
	}

	// Foreign keys: between tenant tables they pair tenant_id with
	// tenant_id, so both rows live on one shard; a tenantless table refers
	// to no tenant table (a reference table cannot point into shards).
	rows, err = pool.Query(ctx, `
SELECT c.relname, f.relname, k.conname,
       ARRAY(SELECT a.attname::text FROM unnest(k.conkey) WITH ORDINALITY u(n, i)
             JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.n ORDER BY u.i),
       ARRAY(SELECT a.attname::text FROM unnest(k.confkey) WITH ORDINALITY u(n, i)
             JOIN pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = u.n ORDER BY u.i)
FROM pg_constraint k
JOIN pg_class c ON c.oid = k.conrelid
JOIN pg_class f ON f.oid = k.confrelid
WHERE k.contype = 'f' AND k.connamespace = 'public'::regnamespace AND NOT c.relispartition AND k.conparentid = 0`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var table, target, name string
		var cols, refs []string
		if err := rows.Scan(&table, &target, &name, &cols, &refs); err != nil {
			t.Fatal(err)
		}
		switch {
		case !tables[table] && tables[target]:
			t.Errorf("tenantless table %s refers to tenant table %s (%s): a %s table cannot point into shards",
				table, target, name, tenantlessTables[table])
		case tables[table] && tables[target]:
			i := slices.Index(cols, "tenant_id")
			if i < 0 || refs[i] != "tenant_id" {
				t.Errorf("table %s: foreign key %s (%s) → %s (%s) does not pair tenant_id with tenant_id",
					table, name, strings.Join(cols, ", "), target, strings.Join(refs, ", "))
			}
		case tables[table] && tenantlessTables[target] != "reference":
			t.Errorf("table %s: foreign key %s refers to %s, which is %s; only reference tables may be referred to",
				table, name, target, describeRole(target))
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

func describeRole(table string) string {
	if role, ok := tenantlessTables[table]; ok {
		return "a " + role + " table"
	}
	return fmt.Sprintf("not listed (%s)", table)
}

package testdb

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/internal/citustest"
	"github.com/tidemark/tidemark/postgres/citus"
)

// With TIDEMARK_TEST_CITUS=1, every database a test gets is a Citus
// database distributed as `tidemark citus distribute` distributes it, on a
// coordinator and two workers this test process starts once (about 2 s):
// `make test-citus` runs the suites that must hold on Citus this way. The
// migrated and distributed template is copied on every node for each test.

// citusShards keeps tests' databases small: 4 shards per table over 2
// workers still spreads tenants across both.
const citusShards = 4

// OnCitus reports whether tests run on Citus (TIDEMARK_TEST_CITUS=1).
func OnCitus() bool { return os.Getenv("TIDEMARK_TEST_CITUS") == "1" }

// SkipOnCitus skips t on Citus, saying why: for what docs/scale.md states
// as a limit of Tidemark on Citus.
func SkipOnCitus(t testing.TB, why string) {
	t.Helper()
	if OnCitus() {
		t.Skip("not on Citus: " + why)
	}
}

var citusCluster struct {
	once sync.Once
	c    *citustest.Cluster
	err  error
	tpl  sync.Mutex
	made map[string]bool
}

// startCitus starts this process's cluster, once. Its nodes die with the
// process.
func startCitus(ctx context.Context) (*citustest.Cluster, error) {
	citusCluster.once.Do(func() {
		citusCluster.c, citusCluster.err = citustest.New(ctx, io.Discard)
	})
	return citusCluster.c, citusCluster.err
}

// newCitusURL creates a database on the cluster for t: a copy of the
// migrated and distributed template, or, unmigrated, an empty one with the
// citus extension and the workers registered.
func newCitusURL(t testing.TB, c *citustest.Cluster, migrated bool) string {
	t.Helper()
	ctx := context.Background()
	name := "tidemark_test_" + randomHex(6)
	var err error
	if migrated {
		var tpl string
		if tpl, err = citusTemplate(ctx, c); err == nil {
			err = c.CloneDatabase(ctx, name, tpl)
		}
	} else {
		err = c.CreateDatabase(ctx, name)
	}
	if err != nil {
		t.Fatalf("citus test database: %v", err)
	}
	t.Cleanup(func() { c.DropDatabase(context.Background(), name) })
	return c.DatabaseURL(name)
}

// citusTemplate makes the template once per process and migration set.
func citusTemplate(ctx context.Context, c *citustest.Cluster) (string, error) {
	citusCluster.tpl.Lock()
	defer citusCluster.tpl.Unlock()
	name := "tidemark_tpl_" + migrationsHash()
	if citusCluster.made[name] {
		return name, nil
	}
	if err := c.CreateDatabase(ctx, name); err != nil {
		return "", err
	}
	if err := migrate(ctx, c.DatabaseURL(name)); err != nil {
		return "", fmt.Errorf("migrate the citus template: %w", err)
	}
	if err := addPastDays(ctx, c.DatabaseURL(name)); err != nil {
		return "", fmt.Errorf("prepare the citus template: %w", err)
	}
	pool, err := pgxpool.New(ctx, c.DatabaseURL(name))
	if err != nil {
		return "", err
	}
	_, err = citus.Distribute(ctx, pool, citus.Options{ShardCount: citusShards})
	pool.Close()
	if err != nil {
		return "", fmt.Errorf("distribute the citus template: %w", err)
	}
	if err := c.FreezeTemplate(ctx, name); err != nil {
		return "", err
	}
	if citusCluster.made == nil {
		citusCluster.made = map[string]bool{}
	}
	citusCluster.made[name] = true
	return name, nil
}

// LockWaits counts the backends of q's database that wait for a lock of
// type locktype (pg_locks.locktype). On Citus a statement takes its row
// locks on the worker that holds the shard, so there every node is asked:
// a test that proves a wait by observing pg_locks sees it wherever it is.
func LockWaits(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, locktype string) (int, error) {
	var n int
	if !OnCitus() {
		err := q.QueryRow(ctx, localWaitsSQL, locktype).Scan(&n)
		return n, err
	}
	err := q.QueryRow(ctx, `
SELECT coalesce(sum(result::int), 0)::int
FROM run_command_on_all_nodes(format($q$`+strings.ReplaceAll(localWaitsSQL, "$1", "%L")+`$q$, $1::text))`, locktype).Scan(&n)
	return n, err
}

const localWaitsSQL = `SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE NOT l.granted AND l.locktype = $1 AND a.datname = current_database()`

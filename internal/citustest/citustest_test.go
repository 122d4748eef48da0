package citustest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestCluster(t *testing.T) {
	var (
		c    *Cluster
		pids []int
	)
	// The cluster lives in a subtest so that its cleanup has run when the
	// subtest returns, and what it leaves behind can be checked.
	t.Run("distributes", func(t *testing.T) {
		began := time.Now()
		c = Start(t)
		t.Logf("cluster started in %v: coordinator %s, workers %v", time.Since(began).Round(time.Millisecond), c.URL(), c.WorkerURLs())
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, c.URL())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)

		var active int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM citus_get_active_worker_nodes()").Scan(&active); err != nil {
			t.Fatal(err)
		}
		if active != 2 {
			t.Fatalf("active worker nodes = %d, want 2", active)
		}
		var version string
		if err := conn.QueryRow(ctx, "SELECT citus_version()").Scan(&version); err != nil {
			t.Fatal(err)
		}
		t.Log(version)

		for _, q := range []string{
			"CREATE TABLE items (tenant_id bigint NOT NULL, id bigint NOT NULL, body text, PRIMARY KEY (tenant_id, id))",
			"SELECT create_distributed_table('items', 'tenant_id')",
			"INSERT INTO items SELECT t, i, 'row ' || i FROM generate_series(1, 20) t, generate_series(1, 5) i",
		} {
			if _, err := conn.Exec(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		var rows int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM items").Scan(&rows); err != nil {
			t.Fatal(err)
		}
		if rows != 100 {
			t.Fatalf("rows read through the coordinator = %d, want 100", rows)
		}
		var body string
		if err := conn.QueryRow(ctx, "SELECT body FROM items WHERE tenant_id = 7 AND id = 3").Scan(&body); err != nil || body != "row 3" {
			t.Fatalf("one tenant's row = %q, %v; want row 3", body, err)
		}

		// Where the shards are, by the catalog, and what each worker holds,
		// by asking the worker itself.
		perPort := map[int]int{}
		r, err := conn.Query(ctx, "SELECT nodeport, count(*) FROM citus_shards WHERE table_name = 'items'::regclass GROUP BY nodeport")
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			var port, shards int
			if err := r.Scan(&port, &shards); err != nil {
				t.Fatal(err)
			}
			perPort[port] = shards
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		total := 0
		for i, w := range c.workers {
			if perPort[w.port] == 0 {
				t.Errorf("worker %d (port %d) holds no shard of items: %v", i+1, w.port, perPort)
			}
			n := countOnWorker(t, c.WorkerURLs()[i])
			if n == 0 {
				t.Errorf("worker %d (port %d) holds no row of items", i+1, w.port)
			}
			t.Logf("worker %d (port %d): %d shards, %d rows", i+1, w.port, perPort[w.port], n)
			total += n
		}
		if total != 100 {
			t.Errorf("rows on the workers = %d, want 100", total)
		}

		for _, n := range append([]*node{c.coordinator}, c.workers...) {
			pids = append(pids, n.cmd.Process.Pid)
			pids = append(pids, children(n.cmd.Process.Pid)...)
		}
	})
	if c == nil || t.Failed() {
		return
	}

	for _, pid := range pids {
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("process %d of the cluster is still running after cleanup", pid)
		}
	}
	for _, n := range append([]*node{c.coordinator}, c.workers...) {
		if conn, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(n.port), time.Second); err == nil {
			conn.Close()
			t.Errorf("%s's port %d still answers after cleanup", n.name, n.port)
		}
	}
	if _, err := os.Stat(c.dir); !os.IsNotExist(err) {
		t.Errorf("the cluster's folder %s is still there after cleanup (%v)", c.dir, err)
	}
	t.Logf("after cleanup: none of the cluster's %d processes runs, its ports are closed, %s is gone", len(pids), c.dir)
}

// countOnWorker counts the rows of items' shards on a worker, connected to
// the worker directly: the shards are tables named items_<shardid>.
func countOnWorker(t *testing.T, url string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// Workers hide shards from the catalog by default.
	if _, err := conn.Exec(ctx, "SET citus.show_shards_for_app_name_prefixes = '*'"); err != nil {
		t.Fatal(err)
	}
	r, err := conn.Query(ctx, "SELECT relname FROM pg_class WHERE relname ~ '^items_[0-9]+$' AND relkind = 'r'")
	if err != nil {
		t.Fatal(err)
	}
	shards, err := pgx.CollectRows(r, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, s := range shards {
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{s}.Sanitize()).Scan(&n); err != nil {
			t.Fatal(err)
		}
		total += n
	}
	return total
}

// children lists the processes whose parent is pid: a server's backends
// and background workers.
func children(pid int) []int {
	var out []int
	entries, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, e := range entries {
		b, err := os.ReadFile(e)
		if err != nil {
			continue
		}
		// The command may hold spaces; the fields after its ")" do not.
		_, rest, ok := strings.Cut(string(b[strings.LastIndexByte(string(b), ')'):]), " ")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			child, _ := strconv.Atoi(filepath.Base(filepath.Dir(e)))
			out = append(out, child)
		}
	}
	return out
}

// TestCreateDatabasesAtOnce: databases created on one cluster at the same
// time, as parallel tests create them, are each registered with both
// workers. Unserialised, several of the eight failed in citus_add_node ("tuple
// concurrently updated" on the worker's roles).
func TestCreateDatabasesAtOnce(t *testing.T) {
	c := Start(t)
	ctx := context.Background()
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			name := "at_once_" + strconv.Itoa(i)
			err := c.CreateDatabase(ctx, name)
			if err == nil {
				var conn *pgx.Conn
				if conn, err = pgx.Connect(ctx, c.DatabaseURL(name)); err == nil {
					var workers int
					err = conn.QueryRow(ctx, "SELECT count(*) FROM citus_get_active_worker_nodes()").Scan(&workers)
					if err == nil && workers != 2 {
						err = fmt.Errorf("%s has %d active workers, want 2", name, workers)
					}
					conn.Close(ctx)
				}
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

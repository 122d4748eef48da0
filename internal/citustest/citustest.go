// Package citustest starts a local Citus cluster, a coordinator and two
// workers, each a PostgreSQL 15 server of its own on a free TCP port of
// 127.0.0.1, for tests (Start) and for development (New, behind
// `make citus`).
//
// Citus is not packaged for this machine: scripts/citus-build builds it
// from ../shared/citus and installs it into PostgreSQL 15 once per machine.
// Every cluster is new (initdb in a temporary folder) and removed when it
// stops, so tests in parallel never share one.
package citustest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/internal/e2e"
)

// binDir holds Debian's PostgreSQL 15 server binaries; citus-build installs
// Citus into this PostgreSQL, so no other version would load it.
const binDir = "/usr/lib/postgresql/15/bin"

const (
	// dbName is the database of the cluster on every node: Citus finds a
	// distributed table's shards in the database of the same name.
	dbName  = "tidemark"
	dbUser  = "postgres"
	workers = 2
	timeout = 30 * time.Second
)

// ErrNotInstalled is returned (wrapped) when PostgreSQL 15 has no Citus.
var ErrNotInstalled = errors.New("citus is not installed in PostgreSQL 15: run scripts/citus-build (it builds Citus from ../shared/citus once per machine)")

// Cluster is a running coordinator and its workers, owned by this process.
type Cluster struct {
	dir         string // removed by Stop
	log         io.Writer
	coordinator *node
	workers     []*node

	registering sync.Mutex // register, one database at a time
	stopOnce    sync.Once
	stopErr     error
}

// Start starts a cluster for t and stops and removes it when t ends. It
// skips t unless TIDEMARK_E2E=1, and fails it when Citus is not installed.
func Start(t testing.TB) *Cluster {
	t.Helper()
	e2e.Require(t, "a Citus cluster (scripts/citus-build)")
	ctx, cancel := context.WithTimeout(context.Background(), 2*timeout)
	defer cancel()
	c, err := New(ctx, io.Discard)
	if err != nil {
		t.Fatalf("citus cluster: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			c.logTails(t)
		}
		if err := c.Stop(); err != nil {
			t.Errorf("citus cluster: %v", err)
		}
	})
	return c
}

// New initialises and starts a coordinator and two workers in a new
// temporary folder, creates database "tidemark" with the citus extension on
// each and registers the workers on the coordinator. The servers outlive
// ctx and die with this process; call Stop to stop them and remove the
// folder. log receives progress lines.
func New(ctx context.Context, log io.Writer) (*Cluster, error) {
	if err := installed(); err != nil {
		return nil, err
	}
	if err := Sweep(log); err != nil {
		fmt.Fprintf(log, "citustest: %v\n", err) // costs disk, not correctness
	}
	dir, err := os.MkdirTemp("", folderPrefix)
	if err != nil {
		return nil, err
	}
	if err := writeOwner(dir); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	c := &Cluster{dir: dir, log: log}
	if err := c.start(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// installed checks for citus.so up front: without it every server would
// refuse to start with a line in its log that does not say what to do.
func installed() error {
	lib := filepath.Join(filepath.Dir(binDir), "lib", "citus.so")
	if _, err := os.Stat(filepath.Join(binDir, "postgres")); err != nil {
		return fmt.Errorf("%w (no PostgreSQL 15 server binaries in %s: apt-get install postgresql-15)", ErrNotInstalled, binDir)
	}
	if _, err := os.Stat(lib); err != nil {
		return fmt.Errorf("%w (no %s)", ErrNotInstalled, lib)
	}
	return nil
}

func (c *Cluster) start(ctx context.Context) error {
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		// initdb and postgres refuse to run as root.
		var err error
		if cred, err = postgresUser(); err != nil {
			return err
		}
		if err := os.Chown(c.dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return err
		}
	}
	c.coordinator = &node{name: "coordinator", dir: filepath.Join(c.dir, "coordinator"), cred: cred}
	all := []*node{c.coordinator}
	for i := range workers {
		w := &node{name: fmt.Sprintf("worker%d", i+1), dir: filepath.Join(c.dir, fmt.Sprintf("worker%d", i+1)), cred: cred}
		c.workers = append(c.workers, w)
		all = append(all, w)
	}

	// The nodes are independent until registration: initdb, start and
	// CREATE EXTENSION run side by side, which keeps a cluster's start
	// near one server's.
	fmt.Fprintf(c.log, "starting a Citus coordinator and %d workers in %s\n", workers, c.dir)
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	for i, n := range all {
		wg.Go(func() {
			if err := n.initdb(ctx); err != nil {
				errs[i] = err
				return
			}
			if err := n.start(ctx); err != nil {
				errs[i] = err
				return
			}
			errs[i] = n.createDatabase(ctx)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return c.register(ctx, dbName)
}

// register tells the coordinator where it and its workers are: by
// 127.0.0.1 and port, the address the nodes reach one another on.
func (c *Cluster) register(ctx context.Context, db string) error {
	// One at a time: citus_add_node copies the roles to the worker (ALTER
	// ROLE, a row of a catalog all of the worker's databases share), and
	// two databases registered at once failed with "tuple concurrently
	// updated" there, which Citus reports as "failure on connection
	// marked as essential".
	c.registering.Lock()
	defer c.registering.Unlock()
	conn, err := pgx.Connect(ctx, c.coordinator.url(db))
	if err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SELECT citus_set_coordinator_host('127.0.0.1', $1)", c.coordinator.port); err != nil {
		return fmt.Errorf("coordinator: citus_set_coordinator_host: %w", err)
	}
	for _, w := range c.workers {
		if _, err := conn.Exec(ctx, "SELECT citus_add_node('127.0.0.1', $1)", w.port); err != nil {
			return fmt.Errorf("coordinator: citus_add_node %s (port %d): %w", w.name, w.port, err)
		}
	}
	return nil
}

// URL is the coordinator's database, usable as DATABASE_URL.
func (c *Cluster) URL() string { return c.coordinator.url(dbName) }

// WorkerURLs are the workers' databases, in the order they were added.
func (c *Cluster) WorkerURLs() []string {
	urls := make([]string, len(c.workers))
	for i, w := range c.workers {
		urls[i] = w.url(dbName)
	}
	return urls
}

// Stop stops every node (fast shutdown) and removes the cluster's folder.
// Safe to call more than once.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		var errs []error
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, n := range append([]*node{c.coordinator}, c.workers...) {
			if n == nil {
				continue
			}
			wg.Go(func() {
				if err := n.stop(); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if err := os.RemoveAll(c.dir); err != nil {
			errs = append(errs, err)
		}
		c.stopErr = errors.Join(errs...)
	})
	return c.stopErr
}

// logTails puts the end of each server's log in a failed test's output,
// before Stop removes the logs.
func (c *Cluster) logTails(t testing.TB) {
	for _, n := range append([]*node{c.coordinator}, c.workers...) {
		if n != nil {
			t.Logf("%s (port %d), end of %s:\n%s", n.name, n.port, n.logPath(), tail(n.logPath(), 0))
		}
	}
}

// postgresUser returns the credentials of the postgres system user.
func postgresUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, so the Citus nodes must run as the postgres system user, but: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}
